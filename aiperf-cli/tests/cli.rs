//! The binary's own contract: help, version and usage errors. (Its presence also makes
//! `cargo test` build the `aiperf` binary that the end-to-end tests in `tests/` run.)

use std::process::Command;

fn aiperf(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_aiperf"))
        .args(args)
        .output()
        .expect("the aiperf binary runs")
}

#[test]
fn profile_help_lists_the_python_aiperf_flags() {
    let output = aiperf(&["profile", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--model",
        "--url",
        "--endpoint-type",
        "--streaming",
        "--concurrency",
        "--request-rate",
        "--request-count",
        "--benchmark-duration",
        "--isl",
        "--osl",
        "--goodput",
        "--artifact-dir",
        "--export-level",
        "--ui-type",
    ] {
        assert!(help.contains(flag), "help lacks {flag}");
    }
}

#[test]
fn a_configuration_error_exits_2_with_one_clear_line() {
    let output = aiperf(&["profile", "-m", "m", "--benchmark-grace-period", "5"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "error: --benchmark-grace-period requires --benchmark-duration"
    );
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let output = aiperf(&["profile", "-m", "m", "--no-such-flag"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn version_and_shell_completions() {
    let output = aiperf(&["--version"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("aiperf {}", env!("CARGO_PKG_VERSION"))
    );
    for (shell, marker) in [
        ("bash", "_aiperf()"),
        ("zsh", "#compdef aiperf"),
        ("fish", "complete -c aiperf"),
    ] {
        let output = aiperf(&["completions", shell]);
        assert!(output.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains(marker), "{shell}: {script:.200}");
        assert!(
            script.contains("--request-rate"),
            "{shell} completes profile's flags"
        );
    }
}
