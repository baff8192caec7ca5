//! `aiperf speed-bench-report` over fixture run directories: acceptance length and rate
//! from vLLM's counters and from SGLang's gauges, throughput from the summary, the matrix
//! in CSV and as a table, and what is skipped said as warnings.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use aiperf_metrics::speed_bench::{build_report, SpeedBenchMetric, SpeedBenchReportError};
use serde_json::{json, Value};

fn write_run(
    dir: &Path,
    model: &str,
    format: Option<&str>,
    throughput: f64,
    server: Option<Value>,
) {
    std::fs::create_dir_all(dir).unwrap();
    let dataset = match format {
        Some(format) => json!({"name": "main", "type": "file", "format": format}),
        None => json!({"name": "main", "type": "synthetic", "entries": 10}),
    };
    let profile = json!({
        "schema_version": "1.3",
        "output_token_throughput": {"unit": "tokens/sec", "avg": throughput},
        "input_config": {"models": {"items": [{"name": model}]}, "datasets": [dataset]},
    });
    std::fs::write(dir.join("profile_export_aiperf.json"), profile.to_string()).unwrap();
    if let Some(server) = server {
        std::fs::write(dir.join("server_metrics_export.json"), server.to_string()).unwrap();
    }
}

fn counter(totals: &[f64]) -> Value {
    let series: Vec<Value> = totals
        .iter()
        .map(|total| json!({"endpoint_url": "http://s:8000/metrics", "stats": {"total": total, "rate": 1.0}}))
        .collect();
    json!({"type": "counter", "description": "", "series": series})
}

fn gauge(avg: f64) -> Value {
    json!({"type": "gauge", "description": "", "series": [{"endpoint_url": "http://s:30000/metrics", "stats": {"avg": avg}}]})
}

/// llama: coding on vLLM (two engines' counters), math on SGLang (gauges); qwen: coding
/// without a server-metrics export; and a synthetic run that is not SPEED-Bench.
fn fixture(root: &Path) {
    let vllm = json!({"schema_version": "1.1", "metrics": {
        "vllm:spec_decode_num_accepted_tokens": counter(&[200.0, 100.0]),
        "vllm:spec_decode_num_drafts": counter(&[60.0, 40.0]),
        "vllm:spec_decode_num_draft_tokens": counter(&[240.0, 160.0]),
    }});
    let sglang = json!({"schema_version": "1.1", "metrics": {
        "sglang:spec_accept_length": gauge(2.5),
        "sglang:spec_accept_rate": gauge(0.6),
    }});
    write_run(
        &root.join("a"),
        "llama",
        Some("speed_bench_coding"),
        123.456,
        Some(vllm),
    );
    write_run(
        &root.join("b"),
        "llama",
        Some("speed_bench_math"),
        50.0,
        Some(sglang),
    );
    write_run(
        &root.join("c"),
        "qwen",
        Some("speed_bench_coding"),
        80.0,
        None,
    );
    write_run(&root.join("d"), "qwen", None, 99.0, None);
}

#[test]
fn acceptance_length_comes_from_vllm_counters_and_sglang_gauges() {
    let root = tempfile::tempdir().unwrap();
    fixture(root.path());
    let report =
        build_report(&[root.path().to_path_buf()], SpeedBenchMetric::AcceptLength).unwrap();
    assert_eq!(report.run_dirs, 4);
    // coding: 300 accepted over 100 drafts, + 1 verified token per step.
    assert_eq!(
        report.csv(),
        "Model,coding,math,Overall\r\nllama,4.00,2.50,3.25\r\nqwen,,,\r\n"
    );
    assert_eq!(
        report.table(),
        "Acceptance Length Report\n   \
            Model    coding      math   Overall\n\
         --------  --------  --------  --------\n   \
            llama      4.00      2.50      3.25\n    \
             qwen         -         -         -\n"
    );
    assert_eq!(
        report.warnings,
        [
            format!(
                "no server_metrics_export.json in {}",
                root.path().join("c").display()
            ),
            format!(
                "cannot determine the SPEED-Bench category of {}, skipping",
                root.path().join("d").display()
            ),
        ]
    );
}

#[test]
fn acceptance_rate_is_accepted_over_drafted_tokens_and_throughput_reads_the_summary() {
    let root = tempfile::tempdir().unwrap();
    fixture(root.path());
    let dirs: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|d| root.path().join(d))
        .collect();
    let rate = build_report(&dirs, SpeedBenchMetric::AcceptRate).unwrap();
    // coding: 300 / 400 drafted; math: SGLang's gauge.
    assert_eq!(
        rate.csv(),
        "Model,coding,math,Overall\r\nllama,0.75,0.60,0.68\r\nqwen,,,\r\n"
    );

    let throughput = build_report(&dirs, SpeedBenchMetric::Throughput).unwrap();
    assert_eq!(
        throughput.csv(),
        "Model,coding,math,Overall\r\nllama,123.46,50.00,86.73\r\nqwen,80.00,,80.00\r\n"
    );
    assert!(throughput.warnings.is_empty());

    let csv = root.path().join("out.csv");
    throughput.write_csv(&csv).unwrap();
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), throughput.csv());
}

#[test]
fn no_runs_or_no_figures_are_errors() {
    let root = tempfile::tempdir().unwrap();
    let error =
        build_report(&[root.path().join("missing")], SpeedBenchMetric::Throughput).unwrap_err();
    assert!(matches!(error, SpeedBenchReportError::NoRunDirectories));

    write_run(
        &root.path().join("c"),
        "qwen",
        Some("speed_bench_coding"),
        80.0,
        None,
    );
    let error =
        build_report(&[root.path().to_path_buf()], SpeedBenchMetric::AcceptLength).unwrap_err();
    assert_eq!(error.to_string(), "no SPEED-Bench results extracted");
    let SpeedBenchReportError::NoResults { warnings } = error else {
        panic!("{error:?}")
    };
    assert_eq!(
        warnings,
        [format!(
            "no server_metrics_export.json in {}",
            root.path().join("c").display()
        )]
    );
}

#[test]
fn columns_follow_the_variants_order_across_throughput_buckets() {
    let root = tempfile::tempdir().unwrap();
    for (dir, format) in [
        ("x", "speed_bench_throughput_2k_mixed"),
        ("y", "speed_bench_throughput_1k_high_entropy"),
        ("z", "speed_bench_throughput_1k_low_entropy"),
    ] {
        write_run(&root.path().join(dir), "m", Some(format), 10.0, None);
    }
    let report = build_report(&[root.path().to_path_buf()], SpeedBenchMetric::Throughput).unwrap();
    assert_eq!(
        report.columns,
        [
            "throughput_1k_low_entropy",
            "throughput_1k_high_entropy",
            "throughput_2k_mixed"
        ]
    );
}
