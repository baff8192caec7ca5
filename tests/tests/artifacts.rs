//! The artifact reader behind `aiperf compare` and `aiperf plot`
//! (`aiperf_metrics::artifacts`) on a run the binary made against the in-process mock and
//! on the Python AIPerf 0.13's example runs (`../shared/examples`).
#![allow(clippy::unwrap_used)] // tests fail loudly by design
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped

mod common;

use std::path::{Path, PathBuf};

use aiperf_metrics::artifacts::{
    read_timeslices, RunArtifacts, GPU_TELEMETRY_FILE, RECORDS_FILE, SUMMARY_FILE, TIMESLICES_FILE,
};
use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, read_jsonl, stat};

/// An example run under `../shared/examples`, or `None` (skip) when absent and `CI` is
/// not `true`.
fn example(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/examples")
        .join(name);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_run_reads_back_as_it_was_written() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 2.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --streaming --concurrency 2 --request-count 12 --osl 8 \
         --slice-duration 0.2 --no-server-metrics --no-gpu-telemetry",
        server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.path().to_str().unwrap().into()]);
    assert_exit(&profile(argv).await, 0);

    let run = RunArtifacts::read(dir.path()).unwrap();
    let written = read_json(&dir.path().join(SUMMARY_FILE));
    for (tag, statistic) in [
        ("time_to_first_token", "avg"),
        ("time_to_first_token", "p99"),
        ("request_latency", "p50"),
        ("request_count", "avg"),
    ] {
        assert_eq!(
            run.summary.stat(tag, statistic),
            Some(stat(&written, tag, statistic)),
            "{tag} {statistic}"
        );
    }
    assert_eq!(run.summary.metrics["time_to_first_token"].unit, "ms");
    assert_eq!(run.summary.stat("request_count", "avg"), Some(12.0));
    assert!(!run.summary.metrics.contains_key("input_config"));
    assert_eq!(run.summary.gpu_count, None);

    let records = run.records.as_ref().expect("profile_export.jsonl is read");
    let lines = read_jsonl(&dir.path().join(RECORDS_FILE));
    let written = |tag: &str| -> Vec<f64> {
        lines
            .iter()
            .flat_map(|line| match &line["metrics"][tag]["value"] {
                serde_json::Value::Array(items) => {
                    items.iter().filter_map(serde_json::Value::as_f64).collect()
                }
                value => value.as_f64().into_iter().collect::<Vec<_>>(),
            })
            .collect()
    };
    assert_eq!(records["time_to_first_token"].len(), 12);
    assert_eq!(
        records["time_to_first_token"],
        written("time_to_first_token")
    );
    // A list metric is flattened: every gap of every request.
    assert!(records["inter_chunk_latency"].len() > 12);
    assert_eq!(
        records["inter_chunk_latency"],
        written("inter_chunk_latency")
    );

    let slices = read_timeslices(&dir.path().join(TIMESLICES_FILE)).unwrap();
    assert!(!slices.is_empty());
    assert!(slices
        .iter()
        .any(|slice| slice.metrics.contains_key("time_to_first_token")));
}

/// `aiperf validate ARGS…`, blocking.
fn validate(args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::aiperf_binary())
        .arg("validate")
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_passes_a_run_with_errors_and_names_what_a_damaged_one_gets_wrong() {
    let server = MockServer::start(MockConfig {
        random_seed: Some(3),
        faults: aiperf_mock_server::FaultConfig {
            error_rate: 30.0,
            ..aiperf_mock_server::FaultConfig::default()
        },
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --streaming --concurrency 2 --request-count 20 \
         --no-server-metrics --no-gpu-telemetry --random-seed 1",
        server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.path().to_str().unwrap().into()]);
    assert_exit(&profile(argv).await, 0);
    server.shutdown().await;
    let errors = read_jsonl(&dir.path().join(RECORDS_FILE))
        .iter()
        .filter(|r| !r["error"].is_null())
        .count();
    assert!(
        errors > 0 && errors < 20,
        "the run should have some errors: {errors}"
    );

    let run_dir = dir.path().to_str().unwrap();
    let passed = validate(&["run", run_dir]);
    assert_exit(&passed, 0);
    let stdout = String::from_utf8_lossy(&passed.stdout);
    assert!(stdout.starts_with("Validation passed: "), "{stdout}");
    assert!(stdout.trim_end().ends_with(", 20 records."), "{stdout}");

    // Drop one error record: the summary's error count no longer adds up.
    let records = std::fs::read_to_string(dir.path().join(RECORDS_FILE)).unwrap();
    let kept: Vec<&str> = {
        let mut dropped = false;
        records
            .lines()
            .filter(|line| {
                let is_error =
                    !serde_json::from_str::<serde_json::Value>(line).unwrap()["error"].is_null();
                let drop = is_error && !dropped;
                dropped |= drop;
                !drop
            })
            .collect()
    };
    std::fs::write(dir.path().join(RECORDS_FILE), kept.join("\n") + "\n").unwrap();
    let failed = validate(&["--target", "run", "--input", run_dir]);
    assert_exit(&failed, 1);
    assert_eq!(
        String::from_utf8_lossy(&failed.stdout),
        format!(
            "Validation failed with 1 problem(s):\n  profile_export_aiperf.json: \
             error_request_count is {errors}, but profile_export.jsonl has {} error records\n",
            errors - 1
        )
    );
}

#[test]
fn validate_checks_a_mooncake_trace_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"input_length\": 12, \"output_length\": 3, \"hash_ids\": [1]}\n\
         {\"timestamp\": 5, \"input_length\": 20, \"output_length\": 4}\n",
    )
    .unwrap();
    let passed = validate(&["mooncake-trace", "--input", trace.to_str().unwrap()]);
    assert_exit(&passed, 0);
    assert_eq!(
        String::from_utf8_lossy(&passed.stdout),
        "Validation passed: 2 rows are Mooncake-compatible.\n"
    );
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"input_length\": 12}\n{\"timestamp\": 1}\n",
    )
    .unwrap();
    let failed = validate(&["mooncake-trace", trace.to_str().unwrap()]);
    assert_exit(&failed, 1);
    assert_eq!(
        String::from_utf8_lossy(&failed.stdout),
        format!(
            "Validation failed: {}:2: exactly one of input_length, text_input, messages or \
             payload is required\n",
            trace.display()
        )
    );
    let missing = validate(&["mooncake-trace", "/nonexistent/trace.jsonl"]);
    assert_exit(&missing, 1);
}

#[test]
fn a_python_aiperf_run_reads_with_every_statistic() {
    let (Some(run_dir), Some(sliced)) = (
        example("streaming-chat-c64-ttft20-itl5"),
        example("streaming-c4-raw-export-timeslices"),
    ) else {
        return;
    };
    let run = RunArtifacts::read(&run_dir).unwrap();
    let ttft = &run.summary.metrics["time_to_first_token"];
    assert_eq!(ttft.unit, "ms");
    // serde_json's fast float parsing may land one ulp from Python's value.
    let close = |statistic: &str, expected: f64| {
        let value = ttft.stat(statistic).unwrap();
        assert!((value - expected).abs() < 1e-9, "{statistic}: {value}");
    };
    close("avg", 98.120_636_82);
    close("p1", 26.653_771_79);
    close("std", 47.630_370_457_836_95);
    assert_eq!(ttft.stat("count"), Some(1000.0));
    assert_eq!(run.summary.stat("request_count", "avg"), Some(1000.0));
    assert!(!run.summary.metrics.contains_key("input_config"));
    // The example keeps its records as `profile_export.head3.jsonl`.
    assert!(run.records.is_none());

    let slices = read_timeslices(&sliced.join(TIMESLICES_FILE)).unwrap();
    assert_eq!(slices.len(), 2);
    assert!(slices.iter().all(|slice| slice.start_ns.is_some()));
    assert_eq!(slices[0].metrics["time_to_first_token"].unit, "ms");
}

#[test]
fn the_gpu_telemetry_file_is_looked_for_under_the_name_it_is_written() {
    assert_eq!(GPU_TELEMETRY_FILE, aiperf_telemetry::export::GPU_JSONL);
}

/// The fields of the Python AIPerf 0.13's record models, as the fixture lists them.
fn python_record_fields() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/python_aiperf_0.13_record_fields.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The problems of `object` as an instance of the fixture's `model`: a missing required
/// field, a field the model does not have, a value of the wrong JSON type.
fn check_against_model(
    object: &serde_json::Value,
    model: &serde_json::Value,
    at: &str,
) -> Vec<String> {
    let object = object.as_object().unwrap();
    let fields = model.as_object().unwrap();
    let mut problems = Vec::new();
    for (name, field) in fields {
        if field["required"] == true && !object.contains_key(name) {
            problems.push(format!("{at}.{name}: required, missing"));
        }
    }
    for (name, value) in object {
        let Some(field) = fields.get(name) else {
            problems.push(format!("{at}.{name}: not a field of the Python model"));
            continue;
        };
        let json_type = match value {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "boolean",
            serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            serde_json::Value::Number(_) => "number",
            serde_json::Value::String(_) => "string",
            serde_json::Value::Array(_) => "array",
            serde_json::Value::Object(_) => "object",
        };
        let allowed = field["type"].as_str().unwrap();
        let fits = allowed == "any"
            || allowed
                .split('|')
                .any(|t| t == json_type || (t == "number" && json_type == "integer"));
        if !fits {
            problems.push(format!(
                "{at}.{name}: {json_type}, the model takes {allowed}"
            ));
        }
        if let (Some(values), Some(text)) = (field["values"].as_array(), value.as_str()) {
            if !values.iter().any(|v| v == text) {
                problems.push(format!("{at}.{name}: {text:?} is not one of {values:?}"));
            }
        }
    }
    problems
}

/// The Python `aiperf plot` validates every `profile_export.jsonl` line as a
/// `MetricRecordInfo`; a line missing `worker_id` made it reject whole runs. Every line of
/// ours, successful, failed and cancelled, has each required field, no field the model
/// lacks, and the model's JSON types.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_line_fits_the_python_record_model() {
    let server = MockServer::start(MockConfig::with_timing(100.0, 2.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --streaming --concurrency 4 --request-count 24 --osl 4 \
         --request-cancellation-rate 50 --request-cancellation-delay 0.05 --export-http-trace \
         --random-seed 3 --no-server-metrics --no-gpu-telemetry",
        server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.path().to_str().unwrap().into()]);
    assert_exit(&profile(argv).await, 0);

    let models = python_record_fields();
    let lines = read_jsonl(&dir.path().join(RECORDS_FILE));
    assert_eq!(lines.len(), 24);
    let mut problems = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let at = format!("line {}", index + 1);
        problems.extend(check_against_model(line, &models["MetricRecordInfo"], &at));
        let metadata = &line["metadata"];
        problems.extend(check_against_model(
            metadata,
            &models["MetricRecordMetadata"],
            &format!("{at}: metadata"),
        ));
        for (tag, value) in line["metrics"].as_object().unwrap() {
            problems.extend(check_against_model(
                value,
                &models["MetricValue"],
                &format!("{at}: metrics.{tag}"),
            ));
        }
        let cancelled = metadata["was_cancelled"] == true;
        if line.get("error").is_some() {
            problems.extend(check_against_model(
                &line["error"],
                &models["ErrorDetails"],
                &format!("{at}: error"),
            ));
            assert_eq!(cancelled, line["error"]["code"] == 499, "{at}");
        }
        assert_eq!(
            metadata.get("cancellation_time_ns"),
            cancelled.then(|| &metadata["request_end_ns"]),
            "{at}"
        );
        assert_eq!(metadata["context_overflow_skip"], false, "{at}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let cancelled = lines
        .iter()
        .filter(|l| l["metadata"]["was_cancelled"] == true)
        .count();
    assert!(
        (1..24).contains(&cancelled),
        "{cancelled} of 24 cancelled at 50 %"
    );
    // Conversation ids are numbered as the Python tool numbers seeded ones, and 24
    // requests draw 24 different conversations: the dataset is sized by the request count.
    let mut ids: Vec<&str> = lines
        .iter()
        .map(|l| l["metadata"]["conversation_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert!(
        ids.iter().all(|id| id.starts_with("session_0000")),
        "{ids:?}"
    );
    assert_eq!(ids.len(), 24, "{ids:?}");
}
