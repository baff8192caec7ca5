//! Helpers shared by the end-to-end tests: find the `aiperf` binary, run it, read artifacts.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The `aiperf` binary of this build, brought up to date once per test process (a no-op
/// when `cargo test --workspace` already built it).
pub(crate) fn aiperf_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "--quiet", "-p", "aiperf-cli", "--bin", "aiperf"])
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building the aiperf binary failed");
            let exe = std::env::current_exe().expect("test executable path");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("target/<profile>/deps/<test>");
            profile_dir.join(format!("aiperf{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

/// Runs `aiperf profile` with `args` plus `--ui-type none`, off the async runtime so an
/// in-process mock server keeps serving.
pub(crate) async fn profile(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(aiperf_binary())
            .arg("profile")
            .args(&args)
            .args(["--ui-type", "none"])
            .output()
            .expect("aiperf runs")
    })
    .await
    .expect("the blocking task finishes")
}

/// Runs `aiperf profile` with `line`'s words plus `--ui-type none`, offline
/// (`HF_HUB_OFFLINE=1`) with `HF_HOME` = `hf_home`, off the async runtime.
#[allow(dead_code)] // not every test binary reads Hugging Face datasets
pub(crate) async fn profile_offline(hf_home: &Path, line: &str) -> Output {
    let hf_home = hf_home.to_path_buf();
    let argv = args(line);
    tokio::task::spawn_blocking(move || {
        Command::new(aiperf_binary())
            .arg("profile")
            .args(&argv)
            .args(["--ui-type", "none"])
            .env("HF_HOME", &hf_home)
            .env("HF_HUB_OFFLINE", "1")
            .env_remove("HF_HUB_CACHE")
            .output()
            .expect("aiperf runs")
    })
    .await
    .expect("the blocking task finishes")
}

/// A command line's words (split on whitespace) as owned strings.
pub(crate) fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_owned).collect()
}

/// A JSON file.
pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every line of a JSONL file.
pub(crate) fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// A metric's statistic from `profile_export_aiperf.json`.
pub(crate) fn stat(summary: &Value, tag: &str, stat: &str) -> f64 {
    summary[tag][stat]
        .as_f64()
        .unwrap_or_else(|| panic!("{tag}.{stat} missing in {summary}"))
}

/// Fails with the process output when it did not exit with `code`.
pub(crate) fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A header of a request the mock server recorded (`--record-requests`), by name in any
/// case.
pub(crate) fn recorded_header<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request["headers"]
        .as_object()
        .expect("recorded headers are an object")
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .and_then(|(_, value)| value.as_str())
}

/// The body of a request the mock server recorded, as JSON.
pub(crate) fn recorded_body(request: &Value) -> Value {
    match &request["body"] {
        Value::String(text) => serde_json::from_str(text).expect("the body is JSON"),
        other => other.clone(),
    }
}
