//! `aiperf profile --shard K/N --start-at T`: shard processes on loopback send exactly the
//! requests one process sends to the mock, wait for the shared instant, and write
//! `shard.json` beside normal artifacts; `aiperf merge` makes them one run; bad shard flags
//! are usage errors.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, read_jsonl, recorded_body, stat};
use parquet::file::reader::FileReader;
use serde_json::Value;

const BENCHMARK: &str = "-m mock-model --random-seed 7 --concurrency 4 --request-count 16 \
     --isl 24 --osl 3 --warmup-request-count 4 --no-server-metrics --no-gpu-telemetry";

/// The shards of the main test, as many as the proof on one machine runs.
const SHARDS: u32 = 4;

async fn recording_mock(dir: &Path) -> (MockServer, std::path::PathBuf) {
    let record = dir.join("requests.jsonl");
    let config = MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(5.0, 1.0)
    };
    (MockServer::start(config).await.unwrap(), record)
}

fn run_args(server: &MockServer, artifacts: &Path, extra: &str) -> Vec<String> {
    let mut argv = args(&format!("{BENCHMARK} --url {} {extra}", server.url()));
    argv.extend(["--artifact-dir".into(), artifacts.display().to_string()]);
    argv
}

/// Runs `count` shard processes at once, shard `k` with `argv(k)`; each must exit 0.
async fn run_shards(count: u32, argv: impl Fn(u32) -> Vec<String>) {
    let runs: Vec<_> = (0..count).map(|k| tokio::spawn(profile(argv(k)))).collect();
    for run in runs {
        assert_exit(&run.await.unwrap(), 0);
    }
}

/// `aiperf merge` of the shard directories `dir/shard-K` (in the order of `order`) into
/// `dir/merged`, which must exit 0: the merged directory and what the command printed.
fn merge_shards(dir: &Path, order: &[u32]) -> (PathBuf, String) {
    let merged = dir.join("merged");
    let mut argv: Vec<String> = vec!["merge".into()];
    argv.extend(
        order
            .iter()
            .map(|k| dir.join(format!("shard-{k}")).display().to_string()),
    );
    argv.extend(["-o".into(), merged.display().to_string()]);
    let out = aiperf(&argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_exit(&out, 0);
    (merged, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The bodies the mock received, sorted.
fn bodies(requests: &[Value]) -> Vec<String> {
    let mut bodies: Vec<String> = requests
        .iter()
        .map(|r| recorded_body(r).to_string())
        .collect();
    bodies.sort();
    bodies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_shard_processes_send_what_one_process_sends_from_one_instant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let (whole_server, whole_record) = recording_mock(&dir.path().join("a")).await;
    let whole = profile(run_args(&whole_server, &dir.path().join("whole"), "")).await;
    assert_exit(&whole, 0);
    whole_server.shutdown().await;
    let whole_requests = read_jsonl(&whole_record);
    assert_eq!(whole_requests.len(), 20, "16 requests and 4 warmup");

    let (server, record) = recording_mock(dir.path()).await;
    let start_at = SystemTime::now() + Duration::from_secs(3);
    let start_secs = start_at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    run_shards(SHARDS, |k| {
        run_args(
            &server,
            &dir.path().join(format!("shard-{k}")),
            &format!("--shard {k}/{SHARDS} --start-at {start_secs:.3}"),
        )
    })
    .await;
    server.shutdown().await;
    let shard_requests = read_jsonl(&record);

    assert_eq!(bodies(&shard_requests), bodies(&whole_requests));
    let start_ns = start_at.duration_since(UNIX_EPOCH).unwrap().as_nanos() as f64;
    let first_ns = shard_requests
        .iter()
        .map(|r| r["timestamp_ns"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    // The ms the start instant was written with.
    assert!(
        first_ns >= start_ns - 1e6,
        "a request before the start instant"
    );

    for k in 0..SHARDS {
        let artifacts = dir.path().join(format!("shard-{k}"));
        let manifest = read_json(&artifacts.join("shard.json"));
        assert_eq!(manifest["index"], k);
        assert_eq!(manifest["count"], SHARDS);
        assert_eq!(
            manifest["run_id"],
            read_json(&dir.path().join("shard-0/shard.json"))["run_id"]
        );
        assert!(manifest["started_ns"].as_f64().unwrap() >= start_ns - 1e6);
        let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
        assert_eq!(
            summary["request_count"]["avg"], 4.0,
            "16 requests over 4 shards"
        );
        // A shard's run_config.json says which shard it ran.
        let run_config = read_json(&artifacts.join("run_config.json"));
        assert_eq!(run_config["load"]["shard"]["index"], k);
    }
    assert!(!dir.path().join("whole/shard.json").exists());

    check_merge(
        dir.path(),
        &read_json(&dir.path().join("whole/profile_export_aiperf.json")),
    );
}

fn aiperf(args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::aiperf_binary())
        .args(args)
        .output()
        .unwrap()
}

/// `aiperf merge` of the four shards: the whole benchmark's counts, statistics from the
/// union of the shards' records, records in end-time order with unique session numbers;
/// and the refusals.
fn check_merge(dir: &Path, whole: &Value) {
    let shard = |k: u32| dir.join(format!("shard-{k}")).display().to_string();
    let (merged, stdout) = merge_shards(dir, &[2, 0, 3, 1]);
    assert!(
        stdout.contains("Merged shards 0, 1, 2, 3 of 4 (16 records)"),
        "{stdout}"
    );

    let summary = read_json(&merged.join("profile_export_aiperf.json"));
    assert_eq!(
        summary["request_count"]["avg"],
        whole["request_count"]["avg"]
    );
    assert_eq!(summary["total_isl"]["avg"], whole["total_isl"]["avg"]);
    assert_eq!(summary["total_osl"]["avg"], whole["total_osl"]["avg"]);
    // Statistics of the union of the shards' records, not averages of shard statistics.
    let mut latencies: Vec<f64> = (0..SHARDS)
        .flat_map(|k| read_jsonl(&dir.join(format!("shard-{k}/profile_export.jsonl"))))
        .map(|r| r["metrics"]["request_latency"]["value"].as_f64().unwrap())
        .collect();
    latencies.sort_by(f64::total_cmp);
    assert_eq!(latencies.len(), 16);
    for (name, p) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0)] {
        let expected = aiperf_metrics::stats::percentile_sorted(&latencies, p).unwrap();
        let got = stat(&summary, "request_latency", name);
        assert!((got - expected).abs() < 1e-9, "{name}: {got} vs {expected}");
    }
    assert_eq!(stat(&summary, "request_latency", "max"), latencies[15]);

    let records = read_jsonl(&merged.join("profile_export.jsonl"));
    assert_eq!(records.len(), 16);
    let ends: Vec<u64> = records
        .iter()
        .map(|r| r["metadata"]["request_end_ns"].as_u64().unwrap())
        .collect();
    assert!(ends.windows(2).all(|w| w[0] <= w[1]), "{ends:?}");
    let mut sessions: Vec<u64> = records
        .iter()
        .map(|r| r["metadata"]["session_num"].as_u64().unwrap())
        .collect();
    sessions.sort_unstable();
    assert_eq!(sessions, (0..16).collect::<Vec<u64>>());
    let parquet = std::fs::File::open(merged.join("profile_export.parquet")).unwrap();
    let rows = parquet::file::reader::SerializedFileReader::new(parquet).unwrap();
    assert_eq!(rows.metadata().file_metadata().num_rows(), 16);
    assert_eq!(
        std::fs::read(merged.join("inputs.json")).unwrap(),
        std::fs::read(dir.join("shard-0/inputs.json")).unwrap()
    );
    let manifest = read_json(&merged.join("merge.json"));
    assert_eq!(manifest["records"], 16);
    assert_eq!(manifest["missing"], serde_json::json!([]));

    let refused = |args: &[&str], message: &str| {
        let out = aiperf(args);
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{stderr}");
    };
    let elsewhere = dir.join("elsewhere");
    let elsewhere = elsewhere.to_str().unwrap();
    refused(
        &["merge", &shard(0), &shard(1), &shard(3), "-o", elsewhere],
        "shards 2 of 4 are missing; merge them too, or pass --allow-missing",
    );
    refused(
        &["merge", &shard(0), &shard(1), &shard(0), "-o", elsewhere],
        "shard 0 appears twice",
    );
    let whole_dir = dir.join("whole").display().to_string();
    refused(
        &["merge", &shard(0), &whole_dir, "-o", elsewhere],
        "not a shard's run directory",
    );

    let out = aiperf(&[
        "merge",
        &shard(0),
        &shard(1),
        "--allow-missing",
        "-o",
        elsewhere,
    ]);
    assert_exit(&out, 0);
    let partial = read_json(&dir.join("elsewhere/profile_export_aiperf.json"));
    assert_eq!(partial["request_count"]["avg"], 8.0);
    assert_eq!(
        read_json(&dir.join("elsewhere/merge.json"))["missing"],
        serde_json::json!([2, 3])
    );

    // The benchmark's run-level SLOs (run_config.json's `slos`, which each shard records)
    // are checked on the merged summary: missed, the merge exits 3 as profile would.
    let manifest_path = dir.join("shard-0/shard.json");
    let mut manifest = read_json(&manifest_path);
    manifest["results"]["slos"] =
        serde_json::json!([{"tag": "request_latency", "stat": "avg", "threshold": 0.001}]);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let gated = dir.join("gated");
    let out = aiperf(&[
        "merge",
        &shard(0),
        &shard(1),
        &shard(2),
        &shard(3),
        "-o",
        gated.to_str().unwrap(),
    ]);
    assert_exit(&out, 3);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("NVIDIA AIPerf | SLO Check"), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_flags_that_cannot_work_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let cases = [
        ("--shard 3/3", "K counts from 0 and must be below N"),
        (
            "--shard-count 4",
            "set --shard-index K or the JOB_COMPLETION_INDEX",
        ),
        (
            "--shard 0/4 --concurrency 2",
            "cannot be split over 4 shards",
        ),
        (
            "--shard 0/2 --start-at tomorrow",
            "invalid start time \"tomorrow\"",
        ),
    ];
    for (flags, message) in cases {
        let mut argv = args(&format!(
            "-m mock-model --url {} --random-seed 1 {flags}",
            server.url()
        ));
        argv.extend(["--artifact-dir".into(), dir.path().display().to_string()]);
        let output = profile(argv).await;
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{flags}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_of_repeated_runs_merge_run_by_run_and_aggregate_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let repeated = "--num-profile-runs 2 --profile-run-cooldown-seconds 0";
    run_shards(2, |k| {
        run_args(
            &server,
            &dir.path().join(format!("shard-{k}")),
            &format!("--shard {k}/2 {repeated}"),
        )
    })
    .await;
    server.shutdown().await;

    let (merged, stdout) = merge_shards(dir.path(), &[0, 1]);
    for run in ["run_0001", "run_0002"] {
        let summary = read_json(
            &merged
                .join("profile_runs")
                .join(run)
                .join("profile_export_aiperf.json"),
        );
        assert_eq!(summary["request_count"]["avg"], 16.0, "{run}");
    }
    let aggregate = read_json(&merged.join("aggregate/profile_export_aiperf_aggregate.json"));
    assert_eq!(aggregate["metadata"]["num_profile_runs"], 2);
    assert!(
        stdout.contains("Aggregated the merged runs into"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_of_a_sweep_merge_point_by_point_and_rebuild_the_sweep_summary() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig::with_timing(5.0, 1.0))
        .await
        .unwrap();
    let sweep = "--concurrency 2,4 --num-requests 8,16 --sweep-type zip \
                 --profile-run-cooldown-seconds 0 --no-sweep-table";
    run_shards(2, |k| {
        args(&format!(
            "-m mock-model --random-seed 7 --isl 24 --osl 3 --no-server-metrics \
             --no-gpu-telemetry --url {} {sweep} --shard {k}/2 --artifact-dir {}",
            server.url(),
            dir.path().join(format!("shard-{k}")).display()
        ))
    })
    .await;
    server.shutdown().await;

    let (merged, stdout) = merge_shards(dir.path(), &[0, 1]);
    assert!(stdout.contains("Parameter Sweep Summary"), "{stdout}");
    assert!(stdout.contains("Rebuilt the sweep summary in"), "{stdout}");
    for (label, requests) in [
        ("concurrency_2_request_count_8", 8.0),
        ("concurrency_4_request_count_16", 16.0),
    ] {
        let summary = read_json(&merged.join(label).join("profile_export_aiperf.json"));
        assert_eq!(stat(&summary, "request_count", "avg"), requests, "{label}");
        let aggregate = read_json(
            &merged
                .join(label)
                .join("aggregate/profile_export_aiperf_aggregate.json"),
        );
        assert_eq!(aggregate["metrics"]["request_count_avg"]["mean"], requests);
    }
    let json = read_json(&merged.join("sweep_aggregate/profile_export_aiperf_sweep.json"));
    assert_eq!(json["metadata"]["sweep_type"], "zip");
    assert_eq!(json["metadata"]["num_combinations"], 2);
    let combinations = json["per_combination_metrics"].as_array().unwrap();
    assert_eq!(combinations.len(), 2);
    assert_eq!(combinations[0]["parameters"]["concurrency"], 2.0);
    assert_eq!(
        combinations[1]["metrics"]["request_count_avg"]["mean"], 16.0,
        "the merged point's count, not a shard's 8"
    );
}

/// A shard measured against a time server 250 ms ahead waits for the start instant in the
/// server's time and stamps its records in it: 250 ms later than the mock's own clock
/// says the requests arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_with_a_clock_reference_starts_and_stamps_in_the_reference_time() {
    const AHEAD_NS: i64 = 250_000_000;
    let dir = tempfile::tempdir().unwrap();
    let reference = aiperf_mock_server::SntpServer::start(AHEAD_NS)
        .await
        .unwrap();
    let (server, record) = recording_mock(dir.path()).await;
    let start_at = SystemTime::now() + Duration::from_secs(5);
    let start_ns = start_at.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64;
    let artifacts = dir.path().join("shard-0");
    let argv = args(&format!(
        "-m mock-model --random-seed 7 --concurrency 1 --request-count 3 --isl 24 --osl 3 \
         --no-server-metrics --no-gpu-telemetry --url {} --shard 0/1 --start-at {:.3} \
         --clock-reference {} --artifact-dir {}",
        server.url(),
        start_ns as f64 / 1e9,
        reference.addr(),
        artifacts.display()
    ));
    assert_exit(&profile(argv).await, 0);
    server.shutdown().await;

    let manifest = read_json(&artifacts.join("shard.json"));
    let clock = &manifest["clock"];
    assert_eq!(clock["reference"], reference.addr().to_string());
    let offset = clock["offset_ns"].as_i64().unwrap();
    let bound = clock["round_trip_ns"].as_i64().unwrap() / 2 + 1_000_000;
    assert!((offset - AHEAD_NS).abs() <= bound, "{clock}");
    assert!(manifest["started_ns"].as_i64().unwrap() >= start_ns - 1_000_000);

    let received: Vec<i64> = read_jsonl(&record)
        .iter()
        .map(|r| r["timestamp_ns"].as_i64().unwrap())
        .collect();
    let records = read_jsonl(&artifacts.join("profile_export.jsonl"));
    assert_eq!((received.len(), records.len()), (3, 3));
    // The mock's clock is this machine's: the start instant, in the reference's time,
    // came 250 ms early by it (unless a saturated machine started the shard late).
    if manifest["late_ms"].as_f64().unwrap() < 50.0 {
        assert!(
            received[0] < start_ns - 150_000_000,
            "{received:?} vs {start_ns}"
        );
    }
    for (record, received) in records.iter().zip(&received) {
        let stamped = record["metadata"]["request_start_ns"].as_i64().unwrap();
        let shift = stamped - received;
        assert!(
            (shift - offset).abs() < 50_000_000,
            "stamped {stamped}, received {received}: {shift} ns apart"
        );
    }

    let (merged, _) = merge_shards(dir.path(), &[0]);
    let merged = read_json(&merged.join("merge.json"));
    assert_eq!(merged["shards"][0]["clock"]["offset_ns"], offset);
}
