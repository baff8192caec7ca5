//! The Python AIPerf 0.13's artifacts (`../shared/examples`) plot like ours: a streaming
//! run with records and timeslices, a non-streaming run, and both compared.
#![allow(clippy::unwrap_used)] // tests fail loudly by design
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped

use std::path::{Path, PathBuf};

use aiperf_plot::{plot, Mode, PlotOptions, Theme};

/// `../shared/examples`, or `None` (skip) when absent and `CI` is not `true`.
fn examples() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/examples");
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

/// A run folder under the default names: the example's summary and its first three
/// records (stored as `*.head3.jsonl`), plus a timeslices file when given.
fn python_run(into: &Path, example: &Path, timeslices: Option<&Path>) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    std::fs::copy(
        example.join("profile_export_aiperf.json"),
        into.join("profile_export_aiperf.json"),
    )
    .unwrap();
    std::fs::copy(
        example.join("profile_export.head3.jsonl"),
        into.join("profile_export.jsonl"),
    )
    .unwrap();
    if let Some(timeslices) = timeslices {
        std::fs::copy(
            timeslices,
            into.join("profile_export_aiperf_timeslices.json"),
        )
        .unwrap();
    }
    into.to_path_buf()
}

fn chart_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".png").map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[test]
fn a_python_streaming_run_with_timeslices_gets_every_single_run_chart() {
    let Some(examples) = examples() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = python_run(
        &dir.path().join("run"),
        &examples.join("streaming-chat-c64-ttft20-itl5"),
        Some(
            &examples
                .join("streaming-c4-raw-export-timeslices/profile_export_aiperf_timeslices.json"),
        ),
    );
    let outcome = plot(std::slice::from_ref(&run), &PlotOptions::default()).unwrap();
    assert_eq!(outcome.mode, Mode::Single(run.clone()));
    assert_eq!(outcome.output, run.join("plots"));
    assert_eq!(
        outcome.charts,
        [
            "ttft_distribution",
            "itl_distribution",
            "latency_distribution",
            "ttft_vs_isl",
            "ttft_over_time",
            "latency_over_time",
            "itl_by_position",
            "isl_vs_osl",
            "throughput_over_time",
            "timeslices_ttft",
            "timeslices_itl",
        ]
    );
    let mut expected: Vec<String> = outcome.charts.clone();
    expected.sort();
    assert_eq!(chart_names(&outcome.output), expected);

    let report = std::fs::read_to_string(&outcome.report).unwrap();
    // The summary table: output token throughput 10318.95 tokens/s, 1,000 requests.
    assert!(report.contains("<td>output_token_throughput</td><td>tokens/sec</td><td>10318.95</td>"));
    // The slices' throughput, as data: 18176 and 17988.75 tokens/s, 1 s apart.
    assert!(
        report.contains("[[0.0,18176.0],[1.0,17988.74648831755]]"),
        "timeslice data"
    );
    // The first record's ISL and TTFT, as data: 108.20690499999999 ms exactly as Python
    // wrote it (JSON numbers are parsed exactly since the merge's record digests needed
    // serde_json's float_roundtrip; the fast parser read it one ULP off, as 108.206905).
    assert!(report.contains("\"points\":[[128.0,108.20690499999999],"));
}

#[test]
fn a_python_non_streaming_run_gets_the_charts_without_ttft() {
    let Some(examples) = examples() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = python_run(
        &dir.path().join("run"),
        &examples.join("nonstreaming-chat-c256"),
        None,
    );
    let options = PlotOptions {
        output: Some(dir.path().join("out")),
        theme: Theme::Dark,
    };
    let outcome = plot(&[run], &options).unwrap();
    assert_eq!(
        outcome.charts,
        [
            "latency_distribution",
            "latency_over_time",
            "isl_vs_osl",
            "throughput_over_time"
        ]
    );
}

#[test]
fn two_python_runs_are_compared() {
    let Some(examples) = examples() else { return };
    let dir = tempfile::tempdir().unwrap();
    let streaming = python_run(
        &dir.path().join("runs/streaming"),
        &examples.join("streaming-chat-c64-ttft20-itl5"),
        None,
    );
    python_run(
        &dir.path().join("runs/nonstreaming"),
        &examples.join("nonstreaming-chat-c256"),
        None,
    );
    let outcome = plot(&[dir.path().join("runs")], &PlotOptions::default()).unwrap();
    let Mode::Multi(runs) = &outcome.mode else {
        panic!("expected a comparison, got {:?}", outcome.mode);
    };
    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["nonstreaming", "streaming"]);
    assert_eq!(runs[1].dir, streaming);
    assert_eq!(
        outcome.charts,
        [
            "pareto_throughput_vs_latency",
            "pareto_throughput_per_gpu_vs_interactivity",
            "ttft_by_run",
            "itl_by_run",
            "latency_by_run",
            "throughput_by_run"
        ]
    );
    let report = std::fs::read_to_string(&outcome.report).unwrap();
    // Both runs' request latency and throughput averages, as data.
    for number in [
        "961.5441590875786",
        "732.613419714",
        "32252.82112465705",
        "10318.950533231471",
    ] {
        assert!(report.contains(number), "{number}");
    }
}
