//! The live display and the log file, through the built binary: a piped run draws no
//! dashboard and keeps the console to warnings, `logs/aiperf.log` follows the Python
//! AIPerf's line format at the chosen level without secrets, and on a terminal the
//! dashboard takes the alternate screen and gives it back before the final tables.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::process::{Command, Output};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{aiperf_binary, args, assert_exit};

/// Runs `aiperf profile` with exactly `argv` (no `--ui-type`), stdout and stderr piped.
async fn profile_as_given(argv: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(aiperf_binary())
            .arg("profile")
            .args(&argv)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// The warning a run gives when this machine was too busy to read the responses in time
/// (the suite under `stress-ng`): not among the warnings these tests count.
fn says_reads_were_late(line: &str) -> bool {
    line.contains(" response reads (") && line.contains("came more than 1 ms after")
}

fn run_args(url: &str, dir: &Path, extra: &str) -> Vec<String> {
    let mut argv = args(&format!(
        "-m mock-model --url {url} --streaming --concurrency 2 --request-count 12 --isl 16 \
         --osl 8 --random-seed 5 {extra}"
    ));
    argv.extend(["--artifact-dir".into(), dir.to_str().unwrap().into()]);
    argv
}

/// `YYYY-MM-DD HH:MM:SS.mmm - <source> - <LEVEL> - <message>`; returns the level.
fn level_of(line: &str) -> &str {
    let shape: String = line
        .chars()
        .take(23)
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect();
    assert_eq!(shape, "0000-00-00 00:00:00.000", "timestamp of {line:?}");
    let parts: Vec<&str> = line[23..].splitn(4, " - ").collect();
    assert_eq!(parts.len(), 4, "fields of {line:?}");
    assert_eq!(parts[0], "", "separator after the timestamp in {line:?}");
    assert!(!parts[1].is_empty(), "source of {line:?}");
    parts[2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_run_logs_to_the_file_and_keeps_the_console_clean() {
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let argv = run_args(
        &server.url(),
        dir.path(),
        "-v --api-key sk-secret-4711 -H X-Token:tok-0815",
    );
    let output = profile_as_given(argv).await;
    assert_exit(&output, 0);
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();

    // No dashboard on a pipe: not a single escape sequence.
    assert!(!stdout.contains('\u{1b}'), "escape sequences on stdout");
    assert!(!stderr.contains('\u{1b}'), "escape sequences on stderr");
    // -v drives the console as well as the file, as in the Python AIPerf 0.13: DEBUG and
    // INFO lines too, still without secrets.
    for line in stderr.lines() {
        assert!(
            ["warning: ", "info: ", "debug: "]
                .iter()
                .any(|level| line.starts_with(level)),
            "console line {line:?}"
        );
    }
    assert!(
        stderr.contains("\ninfo: profiling phase started\n"),
        "{stderr}"
    );
    assert!(stderr.contains("\ndebug: "), "-v shows DEBUG:\n{stderr}");
    assert!(!stderr.contains("sk-secret-4711") && !stderr.contains("tok-0815"));

    let log_path = std::path::absolute(dir.path().join("logs/aiperf.log")).unwrap();
    assert!(
        stdout.contains(&format!("\nLog File: {}\n", log_path.display())),
        "footer names the log file:\n{stdout}"
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    let levels: Vec<&str> = log.lines().map(level_of).collect();
    assert!(levels.contains(&"DEBUG"), "-v logs DEBUG:\n{log}");
    assert!(
        levels.contains(&"WARNING"),
        "warnings reach the file:\n{log}"
    );
    assert!(!levels.contains(&"TRACE"), "-v stops at DEBUG:\n{log}");
    assert!(log.contains(" - aiperf_core.engine - INFO - profiling phase started\n"));
    assert!(log.contains(
        " - aiperf_core.engine - INFO - profiling phase finished: 12 sent, 12 completed, 0 cancelled\n"
    ));
    assert!(log.contains(&format!(
        " - aiperf_runner.session - INFO - Artifacts: {}\n",
        dir.path().display()
    )));
    assert!(log.contains("--api-key *** -H X-Token:***"), "{log}");
    assert!(
        !log.contains("sk-secret-4711"),
        "the API key leaked into the log"
    );
    assert!(
        !log.contains("tok-0815"),
        "a header value leaked into the log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_level_decides_what_the_file_keeps() {
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let quiet = tempfile::tempdir().unwrap();
    let output = profile_as_given(run_args(
        &server.url(),
        quiet.path(),
        "--ui-type none --log-level warning",
    ))
    .await;
    assert_exit(&output, 0);
    // The console too keeps to warnings.
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line.starts_with("warning: ") && !says_reads_were_late(line))
            .count(),
        3,
        "{stderr}"
    );
    assert!(!stderr.contains("info: "), "{stderr}");
    let log = std::fs::read_to_string(quiet.path().join("logs/aiperf.log")).unwrap();
    let levels: Vec<&str> = log
        .lines()
        .filter(|line| !says_reads_were_late(line))
        .map(level_of)
        .collect();
    assert_eq!(
        levels, ["WARNING"; 3],
        "only the warnings the Python AIPerf also gives (--osl without ignore_eos, the \
         placeholder model, usage without cache reads):\n{log}"
    );
    for warning in [
        "Using --osl without ignore_eos",
        "looks like a placeholder model name",
        "no prompt-cache read tokens were seen",
    ] {
        assert!(log.contains(warning), "{warning}: {log}");
    }

    let chatty = tempfile::tempdir().unwrap();
    let output =
        profile_as_given(run_args(&server.url(), chatty.path(), "--ui-type none -vv")).await;
    assert_exit(&output, 0);
    let log = std::fs::read_to_string(chatty.path().join("logs/aiperf.log")).unwrap();
    let parsed = log
        .lines()
        .filter(|line| level_of(line) == "TRACE" && line.contains("parsed exchange"))
        .count();
    assert_eq!(parsed, 12, "-vv traces each parsed exchange:\n{log}");
}

/// On a pseudo-terminal (util-linux `script`) the dashboard is the default: it enters the
/// alternate screen, draws, and leaves it before the final tables are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_dashboard_draws_then_gives_the_screen_back() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    }
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "stty cols 100 rows 30; {} profile {}",
        aiperf_binary().display(),
        run_args(&server.url(), dir.path(), "").join(" ")
    );
    let output = tokio::task::spawn_blocking(move || {
        Command::new("script")
            .args(["-qefc", &command, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_exit(&output, 0);
    let screen = String::from_utf8_lossy(&output.stdout);
    let enter = screen
        .find("\u{1b}[?1049h")
        .expect("enters the alternate screen");
    let leave = screen
        .rfind("\u{1b}[?1049l")
        .expect("leaves the alternate screen");
    assert!(enter < leave);
    // Unchanged cells (blanks on a fresh screen) are skipped with cursor moves: look for
    // words without spaces.
    let dashboard = &screen[enter..leave];
    for word in ["AIPerf", "Requests/s:", "TTFT", "Sched.", "In", "flight"] {
        assert!(dashboard.contains(word), "{word:?} not drawn");
    }
    let after = &screen[leave..];
    assert!(after.contains("NVIDIA AIPerf | LLM Metrics"), "{after}");
    assert!(after.contains("Log File: "), "{after}");
}
