//! `aiperf analyze-trace` end to end: the built binary against the Python AIPerf's report.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn aiperf(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_aiperf"))
        .args(args)
        .output()
        .expect("the aiperf binary runs")
}

/// A file under `../shared`, or `None` (skip) when it is absent and `CI` is not `true`.
fn shared(relative: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing and CI=true",
        path.display()
    );
    eprintln!("skipping: {} not found", path.display());
    None
}

/// A fresh, empty scratch folder for one test (removed when dropped).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "aiperf-analyze-trace-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder can be created");
        Self(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn example_trace_report_and_console_match_the_python_aiperf() {
    let (Some(trace), Some(console)) = (
        shared("traces/mooncake_synthetic_trace.jsonl"),
        shared("examples/analyze-trace/console.txt"),
    ) else {
        return;
    };
    let dir = Scratch::new("example");
    let output = dir
        .path()
        .join("nested/mooncake_synthetic_trace.report.json");
    let run = aiperf(&[
        "analyze-trace",
        trace.to_str().unwrap(),
        "--block-size",
        "512",
        "--output-file",
        output.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // The file holds exactly the library's statistics, which the datasets crate's tests
    // compare number for number with the Python AIPerf's report.
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    let stats = aiperf_datasets::analyze_trace_file(&trace, 512).unwrap();
    // Both sides go through the same text parse (serde_json's float parsing may differ
    // from the f64 in the last bit).
    let expected: Value = serde_json::from_str(&serde_json::to_string(&stats).unwrap()).unwrap();
    assert_eq!(written, expected);

    let console = std::fs::read_to_string(console).unwrap();
    assert!(
        stdout.starts_with(console.trim_end_matches('\n')),
        "console differs:\n{stdout}\nexpected:\n{console}"
    );
    assert!(stdout.contains(&format!("Analysis report saved to {}", output.display())));
}

#[test]
fn without_output_file_nothing_is_written() {
    let dir = Scratch::new("no-output");
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"input_length\": 600, \"output_length\": 3, \"hash_ids\": [1, 2]}\n",
    )
    .unwrap();
    let run = aiperf(&["analyze-trace", trace.to_str().unwrap()]);
    assert!(run.status.success());
    assert!(String::from_utf8_lossy(&run.stdout).contains("Total requests:   1\n"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn malformed_and_empty_traces_fail_with_the_line() {
    let dir = Scratch::new("malformed");
    let trace = dir.path().join("bad.jsonl");
    std::fs::write(
        &trace,
        "{\"input_length\": 5, \"output_length\": 1}\n\n{\"input_length\": 5.5, \"output_length\": 1}\n",
    )
    .unwrap();
    let run = aiperf(&["analyze-trace", trace.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&run.stderr),
        format!(
            "error: {}:3: field \"input_length\": expected an integer\n",
            trace.display()
        )
    );

    std::fs::write(&trace, "").unwrap();
    let run = aiperf(&["analyze-trace", trace.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("holds no requests"));

    let run = aiperf(&["analyze-trace", "x.jsonl", "--block-size", "0"]);
    assert_eq!(run.status.code(), Some(2));
}
