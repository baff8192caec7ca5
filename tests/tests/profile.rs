//! `aiperf profile`, the built binary, against the in-process mock server: exact counts,
//! every artifact, timings recovered, faults counted, goodput, all-failed and Ctrl-C runs.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aiperf_mock_server::{decide_fault, FaultConfig, FaultKind, MockConfig, MockServer};
use common::{args, assert_exit, profile, read_json, read_jsonl, stat};
use serde_json::Value;

/// Seeds the example JSON check: keys every `profile_export_aiperf.json` carries.
const SUMMARY_KEYS: [&str; 9] = [
    "schema_version",
    "aiperf_version",
    "benchmark_id",
    "input_config",
    "was_cancelled",
    "is_complete",
    "error_summary",
    "start_time",
    "end_time",
];

fn artifact_args(dir: &Path) -> Vec<String> {
    vec!["--artifact-dir".into(), dir.to_str().unwrap().into()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_run_recovers_the_mock_timings_and_exact_lengths() {
    let server = MockServer::start(MockConfig::with_timing(50.0, 10.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --streaming --concurrency 4 --request-count 24 --isl 64 --osl 20 --random-seed 7 --warmup-request-count 3",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);

    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    for key in SUMMARY_KEYS {
        assert!(summary.get(key).is_some(), "summary lacks {key}");
    }
    assert_eq!(stat(&summary, "request_count", "avg"), 24.0);
    assert_eq!(summary["time_to_first_token"]["unit"], "ms");
    for tag in ["input_sequence_length", "output_sequence_length"] {
        let expected = if tag == "input_sequence_length" {
            64.0
        } else {
            20.0
        };
        assert_eq!(stat(&summary, tag, "min"), expected, "{tag}");
        assert_eq!(stat(&summary, tag, "max"), expected, "{tag}");
    }
    // The mock sends token k at 50 + 10·k ms; the client sees it after a loopback hop.
    let ttft = stat(&summary, "time_to_first_token", "avg");
    let itl = stat(&summary, "inter_token_latency", "avg");
    let latency = stat(&summary, "request_latency", "avg");
    // Other tests of this file run at the same time on the same 2 cores: the upper bounds
    // leave room for a loaded machine; the lower bounds of TTFT and latency are the
    // mock's exact schedule. The mock keeps to its schedule from the request's start, so
    // a first token it sent late shortens the gaps after it: ITL's lower bound allows a
    // few milliseconds of that (9.865 ms seen on a loaded machine).
    assert!((50.0..62.0).contains(&ttft), "TTFT {ttft}");
    assert!((9.5..10.6).contains(&itl), "ITL {itl}");
    assert!((240.0..256.0).contains(&latency), "latency {latency}");

    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 24);
    let mut session_nums: Vec<u64> = records
        .iter()
        .map(|r| r["metadata"]["session_num"].as_u64().unwrap())
        .collect();
    session_nums.sort_unstable();
    assert_eq!(session_nums, (0..24).collect::<Vec<_>>());
    assert!(records
        .iter()
        .all(|r| r["metrics"]["output_sequence_length"]["value"] == 20));
    // Each record's ITL spreads what follows its first token over the 19 later ones.
    for record in &records {
        let value = |tag: &str| record["metrics"][tag]["value"].as_f64().unwrap();
        let after_first = value("request_latency") - value("time_to_first_token");
        let itl = value("inter_token_latency");
        assert!(
            (itl * 19.0 - after_first).abs() < 1e-6,
            "{itl} × 19 vs {after_first}"
        );
    }

    let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).unwrap();
    assert!(csv.starts_with("Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std"));
    // One conversation per request: 24 requests send 24 different prompts.
    let inputs = read_json(&dir.path().join("inputs.json"));
    assert_eq!(inputs["data"].as_array().unwrap().len(), 24);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("NVIDIA AIPerf | LLM Metrics"), "{stdout}");
    // The console's tables and lines are kept as text, the command line among them.
    let console = std::fs::read_to_string(dir.path().join("profile_export_console.txt")).unwrap();
    assert!(stdout.starts_with(&console), "{console}");
    assert!(
        console.contains(&format!(
            "CLI Command: aiperf profile -m mock-model --url {}",
            server.url()
        )),
        "{console}"
    );
    // The marker that every file is in place comes last.
    assert_eq!(
        read_json(&dir.path().join(".aiperf_results_ready.json")),
        serde_json::json!({"ready": true, "was_cancelled": false, "partial": false})
    );
    // Warmup requests reached the server but not the records.
    assert_eq!(server.stats().tokens_generated, (3 + 24) * 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_rate_sends_on_a_constant_schedule_and_reports_lag() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --request-rate 100 --arrival-pattern constant --request-count 20 --isl 16 --osl 4",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);

    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 20);
    let mut starts: Vec<u64> = records
        .iter()
        .map(|r| r["metadata"]["request_start_ns"].as_u64().unwrap())
        .collect();
    starts.sort_unstable();
    // 20 arrivals 10 ms apart span 190 ms. On a loaded machine a send can start late
    // (its lag is reported): a late first send shortens the span by at most the largest
    // lag, a late last one lengthens it.
    let span_ms = (starts[19] - starts[0]) as f64 / 1e6;
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let max_lag = stat(&summary, "schedule_lag", "max");
    assert!(
        (190.0 - max_lag - 0.5..260.0).contains(&span_ms),
        "span {span_ms} ms, max lag {max_lag} ms"
    );
    assert_eq!(summary["schedule_lag"]["count"], 20);
    assert!(stat(&summary, "schedule_lag", "p50") < 5.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_are_counted_by_type_while_the_run_completes() {
    let faults = FaultConfig {
        error_rate: 20.0,
        rate_limit_rate: 10.0,
        ..FaultConfig::default()
    };
    let seed = 11;
    let server = MockServer::start(MockConfig {
        fast: true,
        random_seed: Some(seed),
        faults: faults.clone(),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --concurrency 4 --request-count 60 --isl 16 --osl 8",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);

    // The mock decides faults from (seed, arrival number): 60 requests, a known set.
    let expected = |kind: FaultKind| {
        (0..60)
            .filter(|seq| decide_fault(&faults, seed, *seq) == Some(kind))
            .count() as u64
    };
    let (errors_500, errors_429) = (expected(FaultKind::Error), expected(FaultKind::RateLimit));
    assert!(errors_500 > 0 && errors_429 > 0);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let count_of = |code: u64| -> u64 {
        summary["error_summary"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["error_details"]["code"] == code)
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(count_of(500), errors_500);
    assert_eq!(count_of(429), errors_429);
    assert_eq!(
        stat(&summary, "error_request_count", "avg") as u64,
        errors_500 + errors_429
    );
    assert_eq!(
        stat(&summary, "request_count", "avg") as u64,
        60 - errors_500 - errors_429
    );
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 60);
    let failed = records.iter().filter(|r| r.get("error").is_some()).count() as u64;
    assert_eq!(failed, errors_500 + errors_429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goodput_counts_exactly_the_requests_that_met_the_slo() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Input lengths vary around 100 tokens; "good" means ISL ≥ 100 (larger is better).
    let mut argv = args(&format!(
        "-m mock-model --url {url} --concurrency 2 --request-count 40 --isl 100 --isl-stddev 20 --osl 4 --random-seed 5 --goodput input_sequence_length:100",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);

    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let good = records
        .iter()
        .filter(|r| {
            r["metrics"]["input_sequence_length"]["value"]
                .as_f64()
                .unwrap()
                >= 100.0
        })
        .count();
    assert!(
        good > 0 && good < 40,
        "the case must split the requests: {good}"
    );
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "good_request_count", "avg") as usize, good);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slo_gates_pass_with_status_0_and_fail_with_status_3() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 2.0))
        .await
        .unwrap();
    let run = |slo: &str| {
        let dir = tempfile::tempdir().unwrap();
        let mut argv = args(&format!(
            "-m mock-model --url {url} --streaming --concurrency 2 --request-count 10 --isl 16 --osl 8",
            url = server.url()
        ));
        argv.extend(["--slo".to_owned(), slo.to_owned()]);
        argv.extend(artifact_args(dir.path()));
        async move { (profile(argv).await, dir) }
    };
    let (output, _dir) = run("time_to_first_token:p99:500 output_sequence_length:avg:8").await;
    assert_exit(&output, 0);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("All SLOs met."), "{stdout}");

    // TTFT cannot be under the server's 20 ms.
    let (output, dir) = run("time_to_first_token:avg:10").await;
    assert_exit(&output, 3);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("time_to_first_token avg") && stdout.contains("FAIL"),
        "{stdout}"
    );
    // The artifacts are written whatever the verdict.
    assert!(dir.path().join("profile_export_aiperf.json").exists());

    let (output, _dir) = run("ttft:p99:10").await;
    assert_exit(&output, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rankings_runs_compose_a_query_and_passages_per_request() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --endpoint-type nim_rankings --request-count 6 \
         --rankings-passages-mean 4 --rankings-query-prompt-token-mean 10 \
         --rankings-passages-prompt-token-mean 30 --random-seed 2",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let inputs = read_json(&dir.path().join("inputs.json"));
    let payload = &inputs["data"][0]["payloads"][0];
    assert_eq!(payload["passages"].as_array().unwrap().len(), 4);
    assert!(payload["query"]["text"].is_string());
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 6.0);
    // Rankings produce no tokens: no output metrics, but the input is counted.
    assert!(summary.get("output_sequence_length").is_none());
    let isl = stat(&summary, "input_sequence_length", "avg");
    assert!(
        (128.0..=132.0).contains(&isl),
        "10 + 4 × 30 tokens, give or take joins: {isl}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_pooled_by_default_and_new_per_request_with_never() {
    // Pooled: one connection per concurrent slot; a slot may briefly open another while
    // hyper returns the previous connection to the pool, hence a small margin. The HTTP
    // trace of each record says whether it waited for a connection to be set up. With
    // `never` that is every record, exactly the server's count. Pooled, it is at least the
    // first record and at most the server's count: a request whose connect races an idle
    // connection coming back takes the idle one (it waited for no set-up), and the
    // connection it started goes to the pool for a later request, which finds it ready.
    for (strategy, connections) in [("pooled", 2..=4), ("never", 12..=12)] {
        let server = MockServer::start(MockConfig::fast()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut argv = args(&format!(
            "-m mock-model --url {url} --concurrency 2 --request-count 12 --isl 8 --osl 2 \
             --connection-reuse-strategy {strategy} --export-http-trace --show-trace-timing \
             --no-server-metrics",
            url = server.url()
        ));
        argv.extend(artifact_args(dir.path()));
        let output = profile(argv).await;
        assert_exit(&output, 0);
        let accepted = server.stats().connections_accepted;
        assert!(connections.contains(&accepted), "{strategy}: {accepted}");

        let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
        let opened = records
            .iter()
            .filter(|r| r["metrics"]["http_req_connection_reused"]["value"] == 0)
            .count() as u64;
        let expected_opened = if strategy == "never" {
            accepted..=accepted
        } else {
            1..=accepted
        };
        assert!(
            expected_opened.contains(&opened),
            "{strategy}: {opened} records opened a connection, the server accepted {accepted}"
        );
        for record in &records {
            let trace = &record["trace_data"];
            assert_eq!(
                trace["connection_reused"] == true,
                record["metrics"]["http_req_connection_reused"]["value"] == 1
            );
            let start = trace["request_send_start_ns"].as_u64().unwrap();
            let sent = trace["request_send_end_ns"].as_u64().unwrap();
            let end = trace["response_receive_end_ns"].as_u64().unwrap();
            assert!(start <= sent && sent <= end, "{trace}");
            assert!(trace["request_bytes_total"].as_u64().unwrap() > 100);
        }
        let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
        assert_eq!(summary["http_req_total"]["unit"], "ms");
        assert_eq!(summary["http_req_data_sent"]["unit"], "KB");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("HTTP Trace") && stdout.contains("HTTP Waiting (TTFB)"));
        let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).unwrap();
        // The trace metrics are CSV rows, as 0.13 writes them.
        assert!(csv.contains("\r\nHTTP Waiting (TTFB) (ms),"), "{csv}");
    }
}

/// `aiperf profile FLAGS` against a `--fast` mock with `faults`: the output and the
/// summary JSON.
async fn profile_fast_mock_with(faults: FaultConfig, flags: &str) -> (std::process::Output, Value) {
    let server = MockServer::start(MockConfig {
        fast: true,
        faults,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!("-m mock-model --url {} {flags}", server.url()));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    (output, summary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_where_every_request_fails_writes_its_error_summary_and_exits_1() {
    let faults = FaultConfig {
        error_rate: 100.0,
        ..FaultConfig::default()
    };
    let (output, summary) = profile_fast_mock_with(faults, "--request-count 5").await;
    assert_exit(&output, 1);
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["count"], 5);
    assert_eq!(errors[0]["error_details"]["code"], 500);
    assert!(String::from_utf8_lossy(&output.stdout).contains("All 5 request(s) failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duration_run_where_nothing_returns_reports_the_requests_cut_off_and_exits_1() {
    // The server accepts every request and holds its answer for a minute.
    let faults = FaultConfig {
        slow_headers_rate: 100.0,
        slow_headers_ms: 60_000.0,
        ..FaultConfig::default()
    };
    let (output, summary) = profile_fast_mock_with(
        faults,
        "--concurrency 3 --benchmark-duration 1 --benchmark-grace-period 1",
    )
    .await;
    assert_exit(&output, 1);
    assert_eq!(
        summary["cancelled_in_flight"],
        serde_json::json!({"count": 3, "cause": "grace_period_expired"})
    );
    assert_eq!(summary["error_summary"], serde_json::json!([]));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "Cancelled In Flight: 3 requests were still waiting for the server when the grace \
             period after the benchmark duration ended"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("No request completed: all 3 were still in flight when the run ended."),
        "{stdout}"
    );
}

/// Runs `aiperf profile` under `sh -c 'SETUP && exec aiperf …'` (resource limits).
#[cfg(unix)]
async fn profile_in_shell(setup: &'static str, argv: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        Command::new("sh")
            .arg("-c")
            .arg(format!("{setup} && exec \"$0\" \"$@\""))
            .arg(common::aiperf_binary())
            .arg("profile")
            .args(&argv)
            .args(["--ui-type", "none"])
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// 120 concurrent requests, each held 300 ms by the mock, under the shell's `ulimit`:
/// the output and the summary.
#[cfg(unix)]
async fn run_120_concurrent_under(ulimit: &'static str) -> (std::process::Output, Value) {
    let server = MockServer::start(MockConfig::with_timing(300.0, 1.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --concurrency 120 --request-count 120 --isl 8 --osl 2",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile_in_shell(ulimit, argv).await;
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    (output, summary)
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_open_files_is_the_clients_failure_said_before_sending() {
    // 120 concurrent connections cannot fit in 100 descriptors, and the hard limit is
    // 100 too: the run says so, then counts the failures as the client's.
    let (output, summary) = run_120_concurrent_under("ulimit -n 100").await;
    assert_exit(&output, 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--concurrency needs about 184 open files but this process may open 100"),
        "{stderr}"
    );
    let errors = summary["error_summary"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["error_details"]["type"], "ClientResourceError");
    let failed = errors[0]["count"].as_u64().unwrap();
    let succeeded = stat(&summary, "request_count", "avg") as u64;
    assert!(
        failed > 0 && succeeded > 0,
        "{failed} failed, {succeeded} succeeded"
    );
    assert_eq!(failed + succeeded, 120);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "{failed} request(s) failed because this client ran out of open files"
        )),
        "{stdout}{stderr}"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_soft_open_file_limit_is_raised_to_the_hard_one() {
    // Only the soft limit is low; the hard one (this machine's) leaves room.
    let (output, summary) = run_120_concurrent_under("ulimit -S -n 100").await;
    assert_exit(&output, 0);
    assert_eq!(summary["error_summary"], serde_json::json!([]));
    assert_eq!(stat(&summary, "request_count", "avg"), 120.0);
}

/// A full disk, as the process sees it: files may not grow past 200 KiB (`ulimit -f`
/// counts 512-byte blocks in POSIX sh), and the signal that would kill the process is
/// ignored, so writes fail with EFBIG as they would with ENOSPC.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_error_stops_sending_keeps_whole_lines_and_exits_1_with_the_summary() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        // A hundred prompts keep inputs.json small: the records are the file that grows.
        "-m mock-model --url {url} --concurrency 4 --request-count 2000 --num-dataset-entries 100 \
         --isl 16 --osl 4",
        url = server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile_in_shell("trap '' XFSZ && ulimit -f 400", argv).await;
    assert_exit(&output, 1);
    let jsonl = dir.path().join("profile_export.jsonl");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "error: cannot write {}: File too large (os error 27). Sending stopped at the \
             first failed write",
            jsonl.display()
        )),
        "{stderr}"
    );
    // The summary reached the console and its files (they are small enough to fit).
    assert!(String::from_utf8_lossy(&output.stdout).contains("NVIDIA AIPerf | LLM Metrics"));
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let finished = stat(&summary, "request_count", "avg") as u64;
    assert!(
        finished < 1000,
        "sending went on: {finished} requests finished"
    );
    // Every line kept is whole; the batch that did not fit is cut back.
    let text = std::fs::read_to_string(&jsonl).unwrap();
    assert!(text.ends_with('\n'));
    let lines = read_jsonl(&jsonl).len() as u64;
    assert!(
        lines > 0 && lines < finished,
        "{lines} lines, {finished} requests"
    );
    assert!(server.stats().requests_total < 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_an_error_summary_not_a_crash() {
    // Bind and drop a listener so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let mut argv = args(&format!("-m mock-model --url {url} --request-count 3"));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 1);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(
        summary["error_summary"][0]["error_details"]["type"],
        "ClientConnectorError"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_run_keeps_complete_artifacts_for_what_finished() {
    signal_mid_run_keeps_complete_artifacts("INT", 130).await;
}

/// `docker stop`, Kubernetes, Slurm and `timeout` send SIGTERM; a closed terminal SIGHUP.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sighup_mid_run_finish_like_ctrl_c_with_their_own_status() {
    signal_mid_run_keeps_complete_artifacts("TERM", 143).await;
    signal_mid_run_keeps_complete_artifacts("HUP", 129).await;
}

/// Sends `signal` to a running `aiperf profile` once records are being written; the run
/// stops sending, writes every artifact for what finished and exits with `status`.
#[cfg(unix)]
async fn signal_mid_run_keeps_complete_artifacts(signal: &'static str, status: i32) {
    let server = MockServer::start(MockConfig::with_timing(20.0, 5.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let dir_arg = dir.path().to_str().unwrap().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        let child = Command::new(common::aiperf_binary())
            .args([
                "profile",
                "-m",
                "mock-model",
                "--url",
                &url,
                "--streaming",
                "--concurrency",
                "4",
                "--benchmark-duration",
                "60",
                "--osl",
                "10",
                "--isl",
                "16",
                "--ui-type",
                "none",
                "--artifact-dir",
                &dir_arg,
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Interrupt once the run is under way (records are being written), however long
        // the start took on a loaded machine.
        let records = std::path::Path::new(&dir_arg).join("profile_export.jsonl");
        let started = std::time::Instant::now();
        while std::fs::read_to_string(&records).map_or(0, |t| t.lines().count()) < 4 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the run never started"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_exit(&output, status);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["was_cancelled"], true);
    assert!(dir.path().join("profile_export_aiperf.csv").is_file());
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let completed = stat(&summary, "request_count", "avg") as usize;
    assert!(completed > 0);
    assert_eq!(
        records.len(),
        completed,
        "every finished request has its record line"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_urls_share_the_conversations_round_robin() {
    let first = MockServer::start(MockConfig::fast()).await.unwrap();
    let second = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --url {} --concurrency 3 --request-count 12 --isl 8 --osl 2 \
         --no-server-metrics",
        first.url(),
        second.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    assert_eq!(first.stats().requests_total, 6);
    assert_eq!(second.stats().requests_total, 6);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 12.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_slices_split_the_profiling_phase_from_its_start() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Arrivals every 50 ms from 50 ms to 2000 ms; slices of 500 ms from the phase start.
    let mut argv = args(&format!(
        "-m mock-model --url {} --request-rate 20 --arrival-pattern constant \
         --request-count 40 --isl 8 --osl 2 --slice-duration 0.5",
        server.url()
    ));
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let doc = read_json(&dir.path().join("profile_export_aiperf_timeslices.json"));
    let slices = doc["timeslices"].as_array().unwrap();
    let counts: Vec<f64> = slices
        .iter()
        .map(|s| s["request_count"]["avg"].as_f64().unwrap())
        .collect();
    assert_eq!(counts, [9.0, 10.0, 10.0, 10.0, 1.0]);
    for pair in slices.windows(2) {
        assert_eq!(
            pair[0]["end_ns"], pair[1]["start_ns"],
            "slices are contiguous"
        );
    }
    let width =
        |s: &serde_json::Value| s["end_ns"].as_u64().unwrap() - s["start_ns"].as_u64().unwrap();
    assert_eq!(width(&slices[1]), 500_000_000);
    assert_eq!(slices[1]["request_throughput"]["avg"], 20.0);
    assert!(doc.get("input_config").is_some());
    let csv =
        std::fs::read_to_string(dir.path().join("profile_export_aiperf_timeslices.csv")).unwrap();
    assert!(csv.starts_with("Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value\r\n"));
    assert!(
        csv.contains(",Request Count,requests,avg,10.00\r\n"),
        "{csv:.400}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_mock_reports_usage_that_agrees_with_the_clients_counts() {
    // `--url mock` (the README's first command, smaller): the mock counts prompts with the
    // run's tokenizer, so no token-count discrepancy is reported.
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(
        "-m mock-model --url mock --streaming --concurrency 4 --request-count 20 --isl 128 \
         --osl 16 --no-server-metrics",
    );
    argv.extend(artifact_args(dir.path()));
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 20.0);
    assert_eq!(stat(&summary, "usage_prompt_tokens", "avg"), 128.0);
    assert_eq!(stat(&summary, "usage_discrepancy_count", "avg"), 0.0);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("Discrepancy Warning"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn osl_without_length_control_and_missing_cache_reports_are_warned_as_python_does() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, extra) in [
        ("plain", ""),
        ("ignore-eos", "--extra-inputs ignore_eos:true"),
    ] {
        let out = dir.path().join(name);
        let mut argv = args(&format!(
            "-m mock-model --url {url} --request-count 2 --osl 4 {extra}",
            url = server.url()
        ));
        argv.extend(artifact_args(&out));
        let output = profile(argv).await;
        assert_exit(&output, 0);
        let log = std::fs::read_to_string(out.join("logs").join("aiperf.log")).unwrap();
        assert_eq!(
            log.contains(aiperf_core::config::OSL_WITHOUT_LENGTH_CONTROL),
            extra.is_empty(),
            "{log}"
        );
        // The mock reports usage without `prompt_tokens_details.cached_tokens`: hinted
        // once mid-run and once under the console summary.
        assert_eq!(log.matches(aiperf_metrics::CACHE_REPORTING_HINT).count(), 1);
        let console = String::from_utf8_lossy(&output.stdout);
        assert!(
            console.contains(aiperf_metrics::CACHE_REPORTING_HINT),
            "{console}"
        );
    }
    server.shutdown().await;
}
