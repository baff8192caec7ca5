//! `aiperf profile --num-profile-runs` and parameter sweeps, the built binary against the
//! in-process mock server: the directory layout, the aggregate numbers recomputed by
//! hand from the runs' own summaries, warmup only before the first run, the sweep
//! summary and its Pareto flags, and the usage errors.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, stat};
use serde_json::Value;

/// t(0.975, 2): the two-sided 95 % Student-t critical value for three runs (scipy's
/// `t.ppf(0.975, 2)`).
const T_95_TWO_DF: f64 = 4.302_652_729_749_464;

fn artifact_args(dir: &Path) -> Vec<String> {
    vec!["--artifact-dir".into(), dir.to_str().unwrap().into()]
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_runs_write_each_run_and_an_aggregate_computed_as_by_hand() {
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --streaming --concurrency 2 --request-count 5 --isl 16 --osl 4 \
         --warmup-request-count 2 --num-profile-runs 3 --no-server-metrics",
        server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);

    // Warmup only before the first run: 2 + 3 × 5 requests reached the server.
    assert_eq!(server.stats().requests_total, 17);

    let runs: Vec<Value> = (1..=3)
        .map(|i| {
            let run_dir = dir.path().join(format!("profile_runs/run_{i:04}"));
            read_json(&run_dir.join("profile_export_aiperf.json"))
        })
        .collect();
    for run in &runs {
        assert_eq!(stat(run, "request_count", "avg"), 5.0);
        // No --random-seed: every run gets the consistent seed 42.
        assert_eq!(run["run_info"]["random_seed"], 42);
    }
    let inputs: Vec<String> = (1..=3)
        .map(|i| {
            let path = dir
                .path()
                .join(format!("profile_runs/run_{i:04}/inputs.json"));
            std::fs::read_to_string(path).unwrap()
        })
        .collect();
    assert_eq!(inputs[0], inputs[1]);
    assert_eq!(inputs[0], inputs[2]);
    // Each run records the configuration it was given: the warmup only in the first.
    let run_config = |i: usize| {
        read_json(
            &dir.path()
                .join(format!("profile_runs/run_{i:04}/run_config.json")),
        )
    };
    assert_eq!(run_config(1)["load"]["warmup"]["request_count"], 2);
    assert!(run_config(2)["load"]["warmup"]["request_count"].is_null());
    assert_eq!(run_config(3)["input"]["random_seed"], 42);

    let aggregate = read_json(
        &dir.path()
            .join("aggregate/profile_export_aiperf_aggregate.json"),
    );
    assert_eq!(
        keys(&aggregate),
        ["schema_version", "aiperf_version", "metadata", "metrics"]
    );
    let metadata = &aggregate["metadata"];
    assert_eq!(
        keys(metadata),
        [
            "aggregation_type",
            "num_profile_runs",
            "num_successful_runs",
            "failed_runs",
            "confidence_level",
            "run_labels",
            "cooldown_seconds"
        ]
    );
    assert_eq!(metadata["aggregation_type"], "confidence");
    assert_eq!(metadata["num_profile_runs"], 3);
    assert_eq!(metadata["num_successful_runs"], 3);
    assert_eq!(metadata["failed_runs"], serde_json::json!([]));
    assert_eq!(metadata["confidence_level"], 0.95);
    assert_eq!(
        metadata["run_labels"],
        serde_json::json!(["run_0001", "run_0002", "run_0003"])
    );
    assert_eq!(metadata["cooldown_seconds"], 0.0);

    // Recompute two entries from the runs' summaries.
    for (tag, statistic) in [("time_to_first_token", "avg"), ("request_latency", "p99")] {
        let values: Vec<f64> = runs.iter().map(|r| stat(r, tag, statistic)).collect();
        let mean = values.iter().sum::<f64>() / 3.0;
        let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let se = std / 3f64.sqrt();
        let entry = &aggregate["metrics"][format!("{tag}_{statistic}")];
        assert_eq!(
            keys(entry),
            [
                "mean",
                "std",
                "min",
                "max",
                "cv",
                "se",
                "ci_low",
                "ci_high",
                "t_critical",
                "unit"
            ]
        );
        let field = |name: &str| entry[name].as_f64().unwrap();
        assert!(close(field("mean"), mean), "{tag} mean {entry}");
        assert!(close(field("std"), std), "{tag} std {entry}");
        assert!(close(field("se"), se), "{tag} se {entry}");
        assert!(close(field("cv"), std / mean), "{tag} cv {entry}");
        assert!((field("t_critical") - T_95_TWO_DF).abs() < 1e-9);
        assert!(close(field("ci_low"), mean - T_95_TWO_DF * se));
        assert!(close(field("ci_high"), mean + T_95_TWO_DF * se));
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(field("min"), min);
        assert_eq!(entry["unit"], "ms");
    }
    let count = &aggregate["metrics"]["request_count_avg"];
    assert_eq!(
        (count["mean"].as_f64(), count["std"].as_f64()),
        (Some(5.0), Some(0.0))
    );

    let csv = std::fs::read_to_string(
        dir.path()
            .join("aggregate/profile_export_aiperf_aggregate.csv"),
    )
    .unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit"
    );
    assert!(lines.contains(
        &"request_count_avg,5.00,0.00,5.00,5.00,0.0000,0.0000,5.00,5.00,4.3027,requests"
    ));
    assert_eq!(
        lines[lines.len() - 7..],
        [
            "",
            "Aggregation Type,confidence",
            "Total Runs,3",
            "Successful Runs,3",
            "Confidence Level,0.95",
            "Run Labels,\"['run_0001', 'run_0002', 'run_0003']\"",
            "Cooldown Seconds,0.0",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_repeats_before_every_run_when_asked() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --request-count 3 --isl 16 --osl 4 --warmup-request-count 1 \
         --num-profile-runs 2 --no-profile-run-disable-warmup-after-first --random-seed 9 \
         --confidence-level 0.9 --no-server-metrics",
        server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    assert_eq!(server.stats().requests_total, 2 * (1 + 3));
    let aggregate = read_json(
        &dir.path()
            .join("aggregate/profile_export_aiperf_aggregate.json"),
    );
    assert_eq!(aggregate["metadata"]["confidence_level"], 0.9);
    // t(0.95, 1) = tan(0.45 π).
    let t = aggregate["metrics"]["request_count_avg"]["t_critical"]
        .as_f64()
        .unwrap();
    assert!((t - 6.313_751_514_675_043).abs() < 1e-9, "{t}");
    let run = read_json(
        &dir.path()
            .join("profile_runs/run_0002/profile_export_aiperf.json"),
    );
    assert_eq!(run["run_info"]["random_seed"], 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_that_all_fail_write_no_aggregate_and_exit_1() {
    // Bind and drop a listener so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url http://127.0.0.1:{port} --request-count 2 --num-profile-runs 2 \
         --no-server-metrics"
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 1);
    assert!(dir
        .path()
        .join("profile_runs/run_0002/profile_export_aiperf.json")
        .exists());
    assert!(!dir.path().join("aggregate").exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Only 0 of 2 profile runs succeeded"),
        "{stderr}"
    );
}

fn read_csv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| line.split(',').map(str::to_owned).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grid_sweep_writes_a_directory_per_point_and_a_summary_with_pareto_flags() {
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --streaming --request-count 4 --osl 4 --concurrency 1,2 \
         --isl=16,32 --no-server-metrics",
        server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    assert_eq!(server.stats().requests_total, 4 * 4);

    let labels = [
        "concurrency_1_isl_16",
        "concurrency_1_isl_32",
        "concurrency_2_isl_16",
        "concurrency_2_isl_32",
    ];
    for label in labels {
        let summary = read_json(&dir.path().join(label).join("profile_export_aiperf.json"));
        let isl: f64 = label.rsplit('_').next().unwrap().parse().unwrap();
        assert_eq!(
            stat(&summary, "input_sequence_length", "avg"),
            isl,
            "{label}"
        );
        assert_eq!(stat(&summary, "request_count", "avg"), 4.0, "{label}");
    }

    let csv = read_csv(
        &dir.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.csv"),
    );
    let header = &csv[0];
    assert_eq!(header[..4], ["point", "concurrency", "isl", "status"]);
    assert_eq!(header.last().unwrap(), "pareto_optimal");
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows = &csv[1..];
    let points: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        points,
        [
            (labels[0], "1", "16"),
            (labels[1], "1", "32"),
            (labels[2], "2", "16"),
            (labels[3], "2", "32"),
        ]
    );
    // The flags are the Pareto front of the CSV's own numbers, on 0.13's objectives
    // (request throughput against TTFT p99): no other point has at least the throughput
    // and at most the latency, better on one.
    let objectives: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r[column("request_throughput_avg")].parse().unwrap(),
                r[column("time_to_first_token_p99")].parse().unwrap(),
            )
        })
        .collect();
    // The CSV rounds to 0.01 and the flags come from the unrounded numbers, so two
    // points within that of each other may go either way (seen: two throughputs both
    // printed 100.01): only a difference beyond the rounding decides.
    let rounding = 0.01;
    for (index, (row, &(t, l))) in rows.iter().zip(&objectives).enumerate() {
        let others = || {
            objectives
                .iter()
                .enumerate()
                .filter(move |(other, _)| *other != index)
                .map(|(_, objective)| *objective)
        };
        let surely_dominated = others().any(|(t2, l2)| t2 - t >= rounding && l - l2 >= rounding);
        let maybe_dominated = others().any(|(t2, l2)| t2 >= t - rounding && l2 <= l + rounding);
        match row.last().unwrap().as_str() {
            "true" => assert!(!surely_dominated, "{row:?} is dominated"),
            "false" => assert!(maybe_dominated, "{row:?} is on the front"),
            other => panic!("pareto_optimal {other}"),
        }
        assert_eq!(row[column("status")], "ok");
    }

    let json = read_json(
        &dir.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    // The Python AIPerf 0.13's sweep schema.
    assert_eq!(json["metadata"]["sweep_type"], "grid");
    assert_eq!(
        json["metadata"]["sweep_parameters"],
        serde_json::json!([
            {"name": "concurrency", "values": [1.0, 2.0]},
            {"name": "isl", "values": [16.0, 32.0]},
        ])
    );
    assert_eq!(json["metadata"]["num_combinations"], 4);
    assert_eq!(
        (
            json["num_profile_runs"].clone(),
            json["num_successful_runs"].clone()
        ),
        (4.into(), 4.into())
    );
    let combination = &json["per_combination_metrics"][3];
    assert_eq!(
        combination["parameters"],
        serde_json::json!({"concurrency": 2.0, "isl": 32.0})
    );
    let per_point = read_json(
        &dir.path()
            .join(labels[3])
            .join("profile_export_aiperf.json"),
    );
    assert_eq!(
        combination["metrics"]["request_throughput_avg"]["mean"],
        per_point["request_throughput"]["avg"]
    );
    let optimal: Vec<&serde_json::Value> = rows
        .iter()
        .zip(json["per_combination_metrics"].as_array().unwrap())
        .filter(|(row, _)| row.last().unwrap() == "true")
        .map(|(_, combination)| &combination["parameters"])
        .collect();
    assert_eq!(
        json["pareto_optimal"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        optimal
    );
    assert!(json["best_configurations"]["best_throughput"]["metric"].is_number());
    assert!(json["best_configurations"]["best_latency_p99"]["metric"].is_number());
    // Each point run once has its aggregate, as a multi-run point does.
    let aggregate = read_json(
        &dir.path()
            .join(labels[3])
            .join("aggregate/profile_export_aiperf_aggregate.json"),
    );
    assert_eq!(aggregate["metadata"]["single_run"], true);
    assert_eq!(aggregate["metrics"]["request_count_avg"]["mean"], 4.0);

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Parameter Sweep Summary"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_sweep_of_multi_runs_aggregates_each_point() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --isl 16 --osl 4 --concurrency 1,2 --num-requests 3,6 \
         --sweep-type zip --num-profile-runs 2 --no-sweep-table --no-server-metrics",
        server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    assert_eq!(server.stats().requests_total, 2 * 3 + 2 * 6);
    for (label, requests) in [
        ("concurrency_1_request_count_3", 3.0),
        ("concurrency_2_request_count_6", 6.0),
    ] {
        let point = dir.path().join(label);
        for run in ["run_0001", "run_0002"] {
            let summary = read_json(
                &point
                    .join("profile_runs")
                    .join(run)
                    .join("profile_export_aiperf.json"),
            );
            assert_eq!(stat(&summary, "request_count", "avg"), requests, "{label}");
        }
        let aggregate = read_json(&point.join("aggregate/profile_export_aiperf_aggregate.json"));
        assert_eq!(aggregate["metrics"]["request_count_avg"]["mean"], requests);
    }
    let json = read_json(
        &dir.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    assert_eq!(json["metadata"]["sweep_type"], "zip");
    assert_eq!(json["metadata"]["num_combinations"], 2);
    assert_eq!(json["num_profile_runs"], 4);
    assert_eq!(
        json["per_combination_metrics"][1]["metrics"]["request_count_avg"]["mean"],
        6.0
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("Parameter Sweep Summary"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zip_lists_of_different_lengths_are_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(
        "-m mock-model --url http://127.0.0.1:9 --concurrency 1,2,4 --isl 16,32 --sweep-type zip",
    );
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--sweep-type zip needs comma lists of the same length: \
             --concurrency has 3 values, --isl has 2 values"
        ),
        "{stderr}"
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_the_cooldown_stops_the_sequence_and_keeps_the_finished_run() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "profile -m mock-model --url {} --request-count 3 --isl 16 --osl 4 --num-profile-runs 3 \
         --profile-run-cooldown-seconds 120 --no-server-metrics --ui-type none",
        server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let first_run = dir
        .path()
        .join("profile_runs/run_0001/profile_export_aiperf.json");
    let (output, elapsed) = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let child = std::process::Command::new(common::aiperf_binary())
            .args(&argv)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Interrupt once the first run has written its summary, however long that took.
        while !first_run.exists() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "the first run never finished"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let status = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        (child.wait_with_output().unwrap(), started.elapsed())
    })
    .await
    .unwrap();
    assert_exit(&output, 130);
    // The 120 s cooldown was cut short.
    assert!(elapsed < std::time::Duration::from_secs(60), "{elapsed:?}");
    assert_eq!(server.stats().requests_total, 3);
    let run = read_json(
        &dir.path()
            .join("profile_runs/run_0001/profile_export_aiperf.json"),
    );
    assert_eq!(stat(&run, "request_count", "avg"), 3.0);
    assert!(!dir.path().join("profile_runs/run_0002").exists());
    assert!(!dir.path().join("aggregate").exists());
}
