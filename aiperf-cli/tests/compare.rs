#![allow(clippy::unwrap_used)]
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped
//! `aiperf compare` end to end: the built binary on the fixture runs of aiperf-metrics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn aiperf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aiperf"))
        .args(args)
        .output()
        .expect("the aiperf binary runs")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../aiperf-metrics/tests/fixtures/compare")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

/// A fresh, empty scratch folder for one test (removed when dropped).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("aiperf-compare-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn stat<'a>(report: &'a Value, tag: &str, stat: &str) -> &'a Value {
    let metric = report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tag"] == tag)
        .unwrap();
    metric["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stat"] == stat)
        .unwrap()
}

#[test]
fn a_significant_regression_beyond_the_limit_exits_4_and_writes_the_reports() {
    let out = Scratch::new("regression");
    let run = aiperf(&[
        "compare",
        &fixture("baseline"),
        &fixture("ttft_plus_30pct"),
        "--output",
        out.path(),
        "--fail-on-regression",
        "time_to_first_token:p50:10 time_to_first_token:p90:30",
        "--fail-on-regression",
        "inter_token_latency:avg:0.01",
    ]);
    let stdout = text(&run.stdout);
    assert_eq!(run.status.code(), Some(4), "{stdout}{}", text(&run.stderr));
    assert!(stdout.contains("NVIDIA AIPerf | Compare (candidate vs baseline)"));
    assert!(
        stdout.contains(
            "│ Time to First Token              │ avg  │   100.25 │    127.01 │ +26.77 │ +26.70 % │ \
             t-test p < 0.0001          │ worse             │"
        ),
        "{stdout}"
    );
    // 60 requests are too few for a p99 bootstrap: Mann-Whitney decides.
    assert!(stdout.contains(
        "│ p99  │   138.61 │    188.01 │ +49.40 │ +35.64 % │ Mann-Whitney (few samples) │ worse "
    ));
    assert!(
        stdout.contains("│ time_to_first_token:p50:10   │ +25.59 % │         yes │ REGRESSED │")
    );
    assert!(
        stdout.contains("│ time_to_first_token:p90:30   │ +24.45 % │         yes │ ok        │")
    );
    assert!(
        stdout.contains("│ inter_token_latency:avg:0.01 │  +0.10 % │          no │ ok        │")
    );
    assert!(stdout.contains("1 regression check(s) failed."));

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.0.join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(report["alpha"], 0.05);
    assert_eq!(report["per_request_data"], true);
    let avg = stat(&report, "time_to_first_token", "avg");
    assert_eq!(avg["baseline"], 100.246_303_550_000_02);
    assert_eq!(avg["candidate"], 127.011_797_016_666_66);
    assert!((avg["percent"].as_f64().unwrap() - 26.699_731_081_173_25).abs() < 1e-9);
    assert_eq!(avg["significant"], true);
    assert_eq!(avg["change"], "worse");
    let p50 = stat(&report, "time_to_first_token", "p50");
    assert!(p50["interval"]["low"].as_f64().unwrap() > 0.0);
    let checks = report["regression_checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[0]["gate"]["tag"], "time_to_first_token");
    assert_eq!(checks[0]["regressed"], true);
    assert_eq!(checks[2]["significant"], false);

    let markdown = std::fs::read_to_string(out.0.join("compare.md")).unwrap();
    assert!(markdown.starts_with("## aiperf compare\n"));
    assert!(markdown.contains(
        "| Time to First Token (ms)<br>Mann-Whitney p < 0.0001 | avg | 100.25 | 127.01 | \
         +26.77 | +26.70 % | t-test p < 0.0001 | **worse** |"
    ));
    assert!(markdown.contains("| `time_to_first_token:p50:10` | +25.59 % | yes | REGRESSED |"));
}

#[test]
fn no_regression_exits_0_and_writes_into_the_candidate_by_default() {
    let candidate = Scratch::new("candidate");
    for file in ["profile_export_aiperf.json", "profile_export.jsonl"] {
        std::fs::copy(
            Path::new(&fixture("rerun")).join(file),
            candidate.0.join(file),
        )
        .unwrap();
    }
    let run = aiperf(&[
        "compare",
        &fixture("baseline"),
        candidate.path(),
        "--fail-on-regression",
        "time_to_first_token:avg:0",
        "--fail-on-regression=request_latency:p50:0",
    ]);
    let stdout = text(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{stdout}{}", text(&run.stderr));
    assert!(stdout.contains("No regression beyond the limits."));
    assert!(candidate.0.join("compare.json").is_file());
    assert!(candidate.0.join("compare.md").is_file());
}

#[test]
fn identical_runs_exit_0_even_with_zero_tolerance() {
    let out = Scratch::new("identical");
    let run = aiperf(&[
        "compare",
        &fixture("baseline"),
        &fixture("baseline"),
        "--output",
        out.path(),
        "--fail-on-regression",
        "time_to_first_token:p99:0 request_throughput:avg:0",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.0.join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(
        stat(&report, "time_to_first_token", "avg")["change"],
        "same"
    );
    assert_eq!(
        stat(&report, "time_to_first_token", "avg")["significant"],
        false
    );
}

#[test]
fn bad_limits_and_arguments_exit_2_and_unreadable_runs_exit_1() {
    let out = Scratch::new("bad");
    let bad_gate = aiperf(&[
        "compare",
        &fixture("baseline"),
        &fixture("rerun"),
        "--output",
        out.path(),
        "--fail-on-regression",
        "time_to_first_token:p75:10",
    ]);
    assert_eq!(bad_gate.status.code(), Some(2));
    assert_eq!(
        text(&bad_gate.stderr),
        "error: invalid --fail-on-regression \"time_to_first_token:p75:10\": unknown statistic \
         \"p75\" (one of avg, p50, p90, p99)\n"
    );
    assert!(!out.0.join("compare.json").exists());

    let bad_alpha = aiperf(&[
        "compare",
        &fixture("baseline"),
        &fixture("rerun"),
        "--alpha",
        "1.5",
    ]);
    assert_eq!(bad_alpha.status.code(), Some(2));
    assert!(text(&bad_alpha.stderr).contains("--alpha 1.5 must lie strictly between 0 and 1"));

    let missing = fixture("no_such_run");
    let unreadable = aiperf(&["compare", &fixture("baseline"), &missing]);
    assert_eq!(unreadable.status.code(), Some(1));
    assert_eq!(
        text(&unreadable.stderr),
        format!(
            "error: cannot read the candidate run: {missing} is not a directory (expected an \
             aiperf artifact directory)\n"
        )
    );
}

/// A folder of `../shared/examples`, or `None` (skip) when absent and `CI` is not `true`.
fn example(name: &str) -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/examples")
        .join(name);
    if path.exists() {
        return Some(path.to_str().unwrap().to_owned());
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing and CI=true",
        path.display()
    );
    eprintln!("skipping: {} not found", path.display());
    None
}

#[test]
fn python_aiperf_summaries_alone_gate_on_the_percentage_and_say_so() {
    let (Some(baseline), Some(candidate)) = (
        example("streaming-chat-c64-ttft20-itl5"),
        example("nonstreaming-chat-c256"),
    ) else {
        return;
    };
    let out = Scratch::new("summaries");
    let run = aiperf(&[
        "compare",
        &baseline,
        &candidate,
        "--output",
        out.path(),
        "--fail-on-regression",
        "request_latency:p99:5",
    ]);
    let stdout = text(&run.stdout);
    assert_eq!(run.status.code(), Some(4), "{stdout}{}", text(&run.stderr));
    assert!(stdout.contains(
        "No per-request records (profile_export.jsonl) in both runs: significance is \
         untested, and --fail-on-regression decides on the percentage alone."
    ));
    assert!(stdout.contains(
        "│ request_latency:p99:5 │ +1,908.75 % │ untested (percentage alone decides) │ REGRESSED │"
    ), "{stdout}");
}
