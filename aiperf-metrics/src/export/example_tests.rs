//! Export tests: structure compared with the real Python AIPerf 0.13 files in
//! `../../shared/examples/` (skipped with a message when that folder is absent).

use std::path::PathBuf;
use std::sync::Arc;

use aiperf_core::{BenchmarkConfig, ErrorDetails, Phase, PhaseStats, RunInfo};
use serde_json::Value;

use crate::catalogue::{metric_def, ConsoleGroup, MetricKind, MetricsContext};
use crate::export::console::{metrics_table, render_console};
use crate::export::{csv, json};
use crate::record_metrics::testkit::*;
use crate::sink::MetricsSink;
use crate::summary::{ErrorCount, MetricResult, ScheduleLag, Summary};

const MS: u64 = 1_000_000;

fn example(dir: &str, file: &str) -> Option<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/examples")
        .join(dir)
        .join(file);
    if let Ok(text) = std::fs::read_to_string(&path) {
        Some(text)
    } else {
        eprintln!("skipping: {} not found", path.display());
        None
    }
}

/// A streaming run with usage, reasoning-free text and requested max tokens.
fn streaming_summary() -> Summary {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.streaming = true;
    config.input.random_seed = Some(42);
    config.input.osl_mean = Some(4);
    config.load.concurrency = Some(2);
    config.load.request_count = Some(3);
    let mut sink =
        MetricsSink::with_context(&config, MetricsContext::streaming_chat(), Arc::new(Words))
            .unwrap()
            .with_cli_command("aiperf profile --model mock-model --streaming");
    for i in 0..3u64 {
        let start = i * 50;
        let mut r = record(
            start * MS,
            "one two three",
            (0..4)
                .map(|k| resp((start + 20 + k * 5 + i) * MS, "tok ", "", None))
                .collect(),
        );
        r.requested_max_tokens = Some(4);
        r.credit.id = i;
        sink.process(&r).unwrap();
    }
    sink.process(&failed(0, "x y", 500, "boom")).unwrap();
    let run = RunInfo {
        clock: Some(clock()),
        phases: vec![PhaseStats {
            phase: Phase::Profiling,
            start_ns: 0,
            sending_end_ns: 100 * MS,
            end_ns: 200 * MS,
            sent: 4,
            completed: 4,
            cancelled: 0,
            grace_expired: false,
        }],
        was_cancelled: false,
    };
    sink.summarize(&run).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    k.sort_unstable();
    k
}

#[test]
fn json_keys_nesting_and_units_match_the_example() {
    let Some(text) = example(
        "streaming-chat-c64-ttft20-itl5",
        "profile_export_aiperf.json",
    ) else {
        return;
    };
    let theirs: Value = serde_json::from_str(&text).unwrap();
    let ours: Value =
        serde_json::from_str(&json::to_json_string(&streaming_summary()).unwrap()).unwrap();
    assert_eq!(ours["schema_version"], theirs["schema_version"]);
    assert_eq!(ours["benchmark_id"].as_str().unwrap().len(), 12);
    assert_eq!(ours["benchmark_id"], ours["run_info"]["benchmark_id"]);
    for (key, value) in ours.as_object().unwrap() {
        let Some(their) = theirs.get(key) else {
            continue;
        };
        if their.get("unit").is_some() {
            assert_eq!(value["unit"], their["unit"], "unit of {key}");
            assert_eq!(keys(value), keys(their), "statistics of {key}");
        } else if key == "run_info" {
            for k in keys(value) {
                assert!(their.get(k).is_some(), "run_info.{k}");
            }
        } else if key == "input_config" {
            for k in keys(value) {
                if let Some(t) = their.get(k) {
                    assert_eq!(
                        std::mem::discriminant(&value[k]),
                        std::mem::discriminant(t),
                        "input_config.{k}"
                    );
                }
            }
        } else {
            assert_eq!(
                std::mem::discriminant(value),
                std::mem::discriminant(their),
                "{key}"
            );
        }
    }
    // every metric the example has, except the HTTP trace ones, we produce too
    for key in keys(&theirs) {
        if theirs[key].get("unit").is_some() && !key.starts_with("http_req_") {
            assert!(ours.get(key).is_some(), "missing {key}");
        }
    }
    for key in ["start_time", "end_time"] {
        let t = ours[key].as_str().unwrap();
        assert_eq!(t.len(), theirs[key].as_str().unwrap().len(), "{t}");
    }
    assert_eq!(
        ours["error_summary"],
        serde_json::json!([{"error_details": {"code": 500, "type": "Internal Server Error", "message": "boom"}, "count": 1}])
    );
    assert!(ours["schedule_lag"]["p99"].is_number());
}

#[test]
fn non_finite_numbers_become_null() {
    let mut s = Summary::new(BenchmarkConfig::default(), MetricsContext::streaming_chat());
    let def = metric_def("request_throughput").unwrap();
    s.metrics.push(MetricResult::single(def, f64::NAN));
    let mut r = MetricResult::single(metric_def("request_latency").unwrap(), f64::INFINITY);
    r.p50 = Some(f64::NAN);
    s.metrics.push(r);
    let text = json::to_json_string(&s).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["request_throughput"],
        serde_json::json!({"unit": "requests/sec", "avg": null})
    );
    assert_eq!(
        v["request_latency"],
        serde_json::json!({"unit": "ms", "avg": null})
    );
}

#[test]
fn csv_layout_matches_the_example() {
    let Some(text) = example(
        "streaming-chat-c64-ttft20-itl5",
        "profile_export_aiperf.csv",
    ) else {
        return;
    };
    let summary = streaming_summary();
    let ours = csv::to_csv_string(&summary);
    let their_lines: Vec<&str> = text.split("\r\n").collect();
    let our_lines: Vec<&str> = ours.split("\r\n").collect();
    assert_eq!(our_lines[0], their_lines[0]);
    let blank = our_lines.iter().position(|l| l.is_empty()).unwrap();
    assert_eq!(our_lines[blank + 1], "Metric,Value");
    assert_eq!(
        their_lines[their_lines.iter().position(|l| l.is_empty()).unwrap() + 1],
        "Metric,Value"
    );
    let their_labels: Vec<&str> = their_lines
        .iter()
        .filter_map(|l| l.split(',').next())
        .collect();
    let theirs_json: Value = serde_json::from_str(
        &example(
            "streaming-chat-c64-ttft20-itl5",
            "profile_export_aiperf.json",
        )
        .unwrap(),
    )
    .unwrap();
    for m in &summary.metrics {
        if theirs_json.get(m.tag).is_some() {
            assert!(
                their_labels.contains(&csv::label(m).as_str()),
                "label of {}",
                m.tag
            );
        }
    }
    // every distribution row has 15 cells; time-weighted rows leave sum/p1/p5/p10/p25/p75 empty
    for line in &our_lines[1..blank] {
        assert_eq!(line.split(',').count(), 15, "{line}");
    }
    let conc = our_lines
        .iter()
        .find(|l| l.starts_with("Effective Concurrency,"))
        .unwrap();
    let cells: Vec<&str> = conc.split(',').collect();
    assert_eq!(&cells[4..9], &["", "", "", "", ""]);
    assert_eq!(cells[10], "");
}

/// Rebuilds the example's results from its JSON and renders our tables.
fn summary_from_example(json_text: &str, ctx: MetricsContext) -> Summary {
    let theirs: Value = serde_json::from_str(json_text).unwrap();
    let mut s = Summary::new(BenchmarkConfig::default(), ctx);
    for (tag, v) in theirs.as_object().unwrap() {
        let Some(def) = metric_def(tag) else { continue };
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        let mut m = MetricResult::single(def, f("avg").unwrap());
        if def.kind != MetricKind::Aggregate && def.kind != MetricKind::Derived {
            (m.min, m.max, m.std) = (f("min"), f("max"), f("std"));
            (m.p1, m.p5, m.p10, m.p25) = (f("p1"), f("p5"), f("p10"), f("p25"));
            (m.p50, m.p75, m.p90, m.p95, m.p99) =
                (f("p50"), f("p75"), f("p90"), f("p95"), f("p99"));
        }
        s.metrics.push(m);
    }
    s
}

#[test]
fn console_tables_match_the_example_exactly() {
    for (dir, streaming) in [
        ("streaming-chat-c64-ttft20-itl5", true),
        ("nonstreaming-chat-c256", false),
    ] {
        let (Some(json_text), Some(console)) = (
            example(dir, "profile_export_aiperf.json"),
            example(dir, "profile_export_console.txt"),
        ) else {
            return;
        };
        let ctx = MetricsContext {
            streaming,
            ..MetricsContext::streaming_chat()
        };
        let s = summary_from_example(&json_text, ctx);
        let mut groups = vec![ConsoleGroup::Effective, ConsoleGroup::Active];
        if !streaming {
            groups.push(ConsoleGroup::Usage);
        }
        groups.push(ConsoleGroup::Default);
        let mut expected_from = 0;
        for g in groups {
            let table = metrics_table(&s, g).unwrap().render();
            let at = console[expected_from..]
                .find(&table)
                .unwrap_or_else(|| panic!("{dir} {g:?} table differs:\n{table}"));
            expected_from += at + table.len();
        }
    }
}

#[test]
fn console_snapshot() {
    let mut s = Summary::new(BenchmarkConfig::default(), MetricsContext::streaming_chat());
    let mut ttft = MetricResult::single(metric_def("time_to_first_token").unwrap(), 12.5);
    (ttft.min, ttft.max, ttft.p99, ttft.p90, ttft.p50, ttft.std) = (
        Some(1.0),
        Some(1234.567),
        Some(1000.0),
        Some(900.0),
        Some(10.0),
        Some(3.25),
    );
    s.metrics.push(ttft);
    s.metrics.push(MetricResult::single(
        metric_def("request_count").unwrap(),
        1000.0,
    ));
    s.metrics.push(MetricResult::single(
        metric_def("benchmark_duration").unwrap(),
        12.3456,
    ));
    s.errors.push(ErrorCount {
        error: ErrorDetails {
            code: Some(500),
            kind: Some("Internal Server Error".into()),
            message: "boom".into(),
        },
        count: 3,
    });
    s.schedule_lag = Some(ScheduleLag {
        p50_ms: 0.01,
        p99_ms: 0.5,
        max_ms: 2.25,
        late_count: 1,
        count: 1003,
    });
    let expected = [
        "                                NVIDIA AIPerf | LLM Metrics                                 ",
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━┳━━━━━━━┳━━━━━━┓",
        "┃                   Metric ┃      avg ┃  min ┃      max ┃      p99 ┃    p90 ┃   p50 ┃  std ┃",
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━╇━━━━━━━╇━━━━━━┩",
        "│ Time to First Token (ms) │    12.50 │ 1.00 │ 1,234.57 │ 1,000.00 │ 900.00 │ 10.00 │ 3.25 │",
        "│ Request Count (requests) │ 1,000.00 │  N/A │      N/A │      N/A │    N/A │   N/A │  N/A │",
        "└──────────────────────────┴──────────┴──────┴──────────┴──────────┴────────┴───────┴──────┘",
        "          NVIDIA AIPerf | Error Summary           ",
        "┏━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━┓",
        "┃ Code ┃ Type                  ┃ Message ┃ Count ┃",
        "┡━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━┩",
        "│  500 │ Internal Server Error │ boom    │     3 │",
        "└──────┴───────────────────────┴─────────┴───────┘",
        "Benchmark Duration: 12.35 sec",
        "Schedule Lag: p50 0.01 ms, p99 0.50 ms, max 2.25 ms; 1 of 1003 requests sent more than 1 ms late",
        "",
    ]
    .join("\n");
    assert_eq!(render_console(&s), expected);
}

/// The example's metrics written back as our CSV have the example's rows in the
/// example's order, its 14 `HTTP …` rows included.
#[test]
fn csv_rows_are_the_examples_rows_in_its_order() {
    let dir = "streaming-chat-c64-ttft20-itl5";
    let (Some(their_csv), Some(their_json)) = (
        example(dir, "profile_export_aiperf.csv"),
        example(dir, "profile_export_aiperf.json"),
    ) else {
        return;
    };
    let summary = summary_from_example(&their_json, MetricsContext::streaming_chat());
    let labels = |text: &str| -> Vec<String> {
        text.split("\r\n")
            .filter_map(|line| line.split(',').next())
            .filter(|label| !label.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let theirs = labels(&their_csv);
    let ours: Vec<String> = labels(&csv::to_csv_string(&summary))
        .into_iter()
        .filter(|label| theirs.contains(label))
        .collect();
    assert_eq!(theirs.iter().filter(|l| l.starts_with("HTTP ")).count(), 14);
    assert_eq!(ours, theirs);
}
