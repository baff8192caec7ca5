//! The runner as an embedder calls it: a specification in, files and a typed report out,
//! against the in-process mock server with known timings.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use aiperf_core::dataset::DatasetError;
use aiperf_core::{
    BenchmarkConfig, BuiltRequest, CancellationToken, Conversation, Dataset, DatasetSource,
    Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange, RequestInput,
    SamplingStrategy, Turn, ValidatedConfig,
};
use aiperf_endpoints::{endpoint_for, EndpointOptions};
use aiperf_metrics::slo::parse_slos;
use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_runner::{
    run, run_with, ErrorKind, MultiRunOptions, NoHooks, Notice, Outcome, RunError, RunHooks,
    RunParts, RunReport, RunSpec, RunWatch, Sweep, SweepPoint, SweepType, TelemetryOptions,
    WorkloadError, LARGE_DATASET,
};

/// A streaming chat benchmark of `url`: 12 requests at concurrency 3, no telemetry.
fn config(url: &str, dir: &Path) -> BenchmarkConfig {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.urls = vec![url.into()];
    config.endpoint.streaming = true;
    config.input.tokenizer = Some("builtin".into());
    config.input.isl_mean = 32;
    config.input.osl_mean = Some(8);
    config.load.concurrency = Some(3);
    config.load.request_count = Some(12);
    config.output.artifact_dir = Some(dir.to_path_buf());
    config
}

fn spec(config: BenchmarkConfig) -> RunSpec {
    let mut spec = RunSpec::new(config.validate().unwrap());
    spec.telemetry = TelemetryOptions {
        gpu: false,
        server_metrics: false,
        ..TelemetryOptions::default()
    };
    spec
}

async fn mock() -> MockServer {
    let mock = MockConfig {
        ttft_ms: 30.0,
        itl_ms: 2.0,
        ..MockConfig::default()
    };
    MockServer::start(mock).await.unwrap()
}

/// Every hook call, in order.
#[derive(Default)]
struct Recorder {
    calls: Vec<String>,
}

impl RunHooks for Recorder {
    fn notice(&mut self, notice: &Notice<'_>) {
        // Said when this machine was too busy to read in time: not a call the tests order.
        if matches!(notice, Notice::LateReads(_)) {
            return;
        }
        self.calls.push(format!("notice: {notice}"));
    }
    fn artifacts_at(&mut self, dir: &Path) {
        assert!(dir.is_dir());
        self.calls.push("artifacts_at".into());
    }
    fn sending(&mut self, watch: &RunWatch) {
        assert!(watch.live.is_none(), "live stats are off unless asked for");
        self.calls.push("sending".into());
    }
    fn sending_ended(&mut self) {
        self.calls.push("sending_ended".into());
    }
    fn run_finished(&mut self, run: &RunReport) {
        self.calls
            .push(format!("run_finished: {}", run.summary.request_count()));
    }
}

#[tokio::test]
async fn one_run_writes_every_file_and_reports_what_ran() {
    let server = mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(config(&server.url(), dir.path()));
    spec.slos = parse_slos("time_to_first_token:p99:10000").unwrap();
    let mut hooks = Recorder::default();
    let report = run(&spec, &mut hooks, CancellationToken::new())
        .await
        .unwrap();

    assert_eq!(report.outcome, Outcome::Completed);
    assert_eq!(
        hooks.calls,
        [
            "artifacts_at",
            "sending",
            "sending_ended",
            "run_finished: 12"
        ]
    );
    let [run] = report.runs.as_slice() else {
        panic!("one run expected, got {}", report.runs.len());
    };
    assert!(report.aggregates.is_empty() && report.sweep.is_none());
    assert_eq!(run.summary.request_count(), 12);
    let ttft = run.summary.metric("time_to_first_token").unwrap();
    let fastest = ttft.min.unwrap();
    assert!(
        fastest >= 30.0,
        "TTFT {fastest} ms is below the mock's 30 ms"
    );
    assert!(run.slo_report.as_ref().unwrap().passed());
    assert_eq!(run.files.dir, dir.path());
    for name in [
        "profile_export_aiperf.json",
        "profile_export_aiperf.csv",
        "profile_export.jsonl",
        "profile_export.parquet",
        "inputs.json",
    ] {
        assert!(dir.path().join(name).is_file(), "{name} is missing");
    }
    // The summary's input_config is the configuration that ran.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run.files.json).unwrap()).unwrap();
    let input_config = &json["input_config"];
    assert_eq!(input_config["endpoint"]["urls"][0], server.url());
    let phases = input_config["phases"].as_array().unwrap();
    assert_eq!(phases.last().unwrap()["concurrency"], 3);
    let records = std::fs::read_to_string(dir.path().join("profile_export.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 12);
}

#[tokio::test]
async fn a_missed_slo_and_a_cancelled_run_are_outcomes_not_errors() {
    let server = mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(config(&server.url(), dir.path()));
    spec.slos = parse_slos("time_to_first_token:p50:1").unwrap();
    let report = run(&spec, &mut NoHooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, Outcome::SlosMissed);
    assert!(!report.runs[0].slo_report.as_ref().unwrap().passed());

    let cancel = CancellationToken::new();
    cancel.cancel();
    let report = run(&spec, &mut NoHooks, cancel).await.unwrap();
    assert_eq!(report.outcome, Outcome::Cancelled);
}

#[tokio::test]
async fn requests_waiting_longer_than_the_threshold_are_said_while_they_wait() {
    // Every response head comes 1.5 s late; waits over 300 ms are reported every 300 ms.
    let server = MockServer::start(MockConfig {
        faults: aiperf_mock_server::FaultConfig {
            slow_headers_rate: 100.0,
            slow_headers_ms: 1500.0,
            ..aiperf_mock_server::FaultConfig::default()
        },
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&server.url(), dir.path());
    config.load.request_count = Some(3);
    let mut spec = spec(config);
    spec.long_wait = Duration::from_millis(300);
    let mut hooks = Recorder::default();
    let report = run(&spec, &mut hooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, Outcome::Completed);
    let waits: Vec<&String> = hooks
        .calls
        .iter()
        .filter(|call| call.contains("waited more than"))
        .collect();
    assert!(!waits.is_empty(), "{:?}", hooks.calls);
    assert!(
        waits.iter().all(|call| call
            .contains(" request(s) have waited more than 0.3 s for the server (the longest ")),
        "{waits:?}"
    );
    assert!(
        waits
            .iter()
            .any(|call| call.starts_with("notice: 3 request(s)")),
        "{waits:?}"
    );
    // Each is said between sending and its end.
    let sending = hooks.calls.iter().position(|c| c == "sending").unwrap();
    let ended = hooks
        .calls
        .iter()
        .position(|c| c == "sending_ended")
        .unwrap();
    let first_wait = hooks
        .calls
        .iter()
        .position(|c| c.contains("waited"))
        .unwrap();
    assert!(sending < first_wait && first_wait < ended);
}

#[tokio::test]
async fn a_multi_run_aggregates_and_a_sweep_summarises() {
    let server = mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(config(&server.url(), dir.path()));
    spec.runs = MultiRunOptions {
        count: 2,
        ..MultiRunOptions::default()
    };
    let report = run(&spec, &mut NoHooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, Outcome::Completed);
    assert_eq!(report.runs.len(), 2);
    let [aggregate] = report.aggregates.as_slice() else {
        panic!("one aggregate expected");
    };
    assert_eq!(aggregate.dir, dir.path().join("aggregate"));
    assert_eq!(aggregate.aggregate.run_labels, ["run_0001", "run_0002"]);
    // Both runs used the consistent seed and recorded it.
    let run_config = |run: &str| -> serde_json::Value {
        let path = dir
            .path()
            .join("profile_runs")
            .join(run)
            .join("run_config.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    assert_eq!(run_config("run_0001")["input"]["random_seed"], 42);
    assert_eq!(run_config("run_0002")["input"]["random_seed"], 42);

    let sweep_dir = tempfile::tempdir().unwrap();
    let point = |concurrency: usize| -> SweepPoint {
        let mut config = config(&server.url(), sweep_dir.path());
        config.load.concurrency = Some(concurrency);
        SweepPoint {
            label: format!("concurrency_{concurrency}"),
            parameters: vec![("concurrency".into(), concurrency.to_string())],
            benchmark: config.validate().unwrap(),
        }
    };
    let points = vec![point(1), point(4)];
    let mut spec = spec_for_sweep(points[0].benchmark.clone());
    spec.sweep = Some(Sweep {
        sweep_type: SweepType::Grid,
        points,
        cooldown: Duration::ZERO,
    });
    let report = run(&spec, &mut NoHooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, Outcome::Completed);
    let sweep = report.sweep.unwrap();
    let labels: Vec<&str> = sweep
        .summary
        .points
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert_eq!(labels, ["concurrency_1", "concurrency_4"]);
    assert!(sweep.summary.points.iter().all(|p| p.aggregate.is_some()));
    let run_dirs: Vec<PathBuf> = report.runs.iter().map(|r| r.files.dir.clone()).collect();
    assert_eq!(
        run_dirs
            .iter()
            .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        ["concurrency_1", "concurrency_4"]
    );
}

fn spec_for_sweep(benchmark: ValidatedConfig) -> RunSpec {
    spec(benchmark.into_inner())
}

#[tokio::test]
async fn a_bad_dataset_line_is_a_usage_error_naming_file_and_line() {
    let server = mock().await;
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("prompts.jsonl");
    std::fs::write(&dataset, "{\"text\": \"hello\"}\n{\"text\": 3}\n").unwrap();
    let mut config = config(&server.url(), dir.path());
    config.input.input_file = Some(dataset.clone());
    let error = run(&spec(config), &mut NoHooks, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    assert!(
        matches!(error, RunError::Workload(WorkloadError::Dataset(_))),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}:2:", dataset.display())),
        "{message}"
    );
}

#[tokio::test]
async fn an_unreachable_server_fails_every_request_without_an_error() {
    // A port nothing listens on: every request fails, the run still writes its files.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &spec(config(&url, dir.path())),
        &mut NoHooks,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(report.outcome, Outcome::AllFailed);
    assert_eq!(report.runs[0].summary.error_count(), 12);
    assert!(report.runs[0].files.json.is_file());
}

/// The chat format under a name of its own: an embedder's endpoint.
struct MyChat {
    chat: Arc<dyn Endpoint>,
    info: EndpointInfo,
}

impl Endpoint for MyChat {
    fn info(&self) -> &EndpointInfo {
        &self.info
    }
    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        self.chat.build(input)
    }
    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        self.chat.parse(exchange)
    }
}

/// Three fixed conversations, meant to be sent in order.
struct ThreeQuestions;

impl DatasetSource for ThreeQuestions {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        let conversations = ["q1", "q2", "q3"]
            .map(|id| Conversation {
                session_id: id.into(),
                turns: vec![Turn::text(format!("question {id}"))],
                ..Conversation::default()
            })
            .to_vec();
        Ok(Dataset {
            conversations,
            preferred_sampling: SamplingStrategy::Sequential,
            timestamped: false,
        })
    }
}

#[tokio::test]
async fn an_embedders_endpoint_and_dataset_run_like_built_in_ones() {
    let server = mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&server.url(), dir.path());
    config.load.concurrency = Some(1);
    config.load.request_count = Some(6);
    let chat = endpoint_for("chat", EndpointOptions::default()).unwrap();
    let info = EndpointInfo {
        name: "my_chat",
        ..chat.info().clone()
    };
    let parts = RunParts {
        endpoint: Some(Arc::new(MyChat { chat, info })),
        dataset: Some(Box::new(ThreeQuestions)),
    };
    let report = run_with(&spec(config), parts, &mut NoHooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.outcome, Outcome::Completed);
    assert_eq!(report.runs[0].summary.request_count(), 6);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report.runs[0].files.json).unwrap())
            .unwrap();
    assert_eq!(json["input_config"]["endpoint"]["type"], "my_chat");
    let inputs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    let sessions: Vec<&str> = inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["q1", "q2", "q3"]);
    // Sent in the dataset's preferred (sequential) order: q1 q2 q3 q1 q2 q3.
    let records = std::fs::read_to_string(dir.path().join("profile_export.jsonl")).unwrap();
    let mut sent: Vec<(u64, String)> = records
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let metadata = &record["metadata"];
            (
                metadata["request_start_ns"].as_u64().unwrap(),
                metadata["conversation_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    sent.sort();
    let order: Vec<&str> = sent.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(order, ["q1", "q2", "q3", "q1", "q2", "q3"]);
}

/// A synthetic dataset of one conversation per request made whole (here because the
/// sampling strategy is named) is announced when it is large, so the seconds spent
/// generating it before the first request are explained; made as the run goes (the
/// default), nothing is generated up front and nothing is announced, and `inputs.json`
/// still lists every conversation.
#[tokio::test]
async fn a_large_synthetic_dataset_is_announced_before_it_is_generated() {
    let server = mock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&server.url(), dir.path());
    config.input.isl_mean = 1;
    config.load.request_count = Some(LARGE_DATASET as u64);
    config.load.benchmark_duration = Some(0.2);
    let mut hooks = Recorder::default();
    run(&spec(config.clone()), &mut hooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(hooks.calls[0], "artifacts_at");
    let inputs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    assert_eq!(inputs["data"].as_array().unwrap().len(), LARGE_DATASET);

    config.input.sampling_strategy = Some(SamplingStrategy::Shuffle);
    let mut hooks = Recorder::default();
    run(&spec(config.clone()), &mut hooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        hooks.calls[0],
        "notice: Generating 10000 synthetic conversations, one per request (set \
         --num-dataset-entries to use fewer)…"
    );
    let inputs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    assert_eq!(inputs["data"].as_array().unwrap().len(), LARGE_DATASET);

    config.input.num_dataset_entries = Some(100);
    let mut hooks = Recorder::default();
    run(&spec(config), &mut hooks, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(hooks.calls[0], "artifacts_at");
}

/// At the end of sending: whether the run's `inputs.json` existed yet, and optionally a
/// cancellation (Ctrl-C pressed as the requests finished).
struct InputsAtSendingEnd {
    file: PathBuf,
    existed: Option<bool>,
    cancel: Option<CancellationToken>,
}

impl RunHooks for InputsAtSendingEnd {
    fn sending_ended(&mut self) {
        self.existed = Some(self.file.exists());
        if let Some(cancel) = &self.cancel {
            cancel.cancel();
        }
    }
}

/// A trace whose prompts are made as the run goes has its `inputs.json` written once
/// sending ended, so making its prompts again takes no CPU from the requests measured;
/// after a cancellation the file is left out rather than waited for.
#[tokio::test]
async fn a_traces_inputs_json_is_written_after_sending_and_left_out_when_cancelled() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let lines: String = (0..6)
        .map(|i| {
            format!("{{\"timestamp\": {}, \"input_length\": 40, \"output_length\": 2, \"hash_ids\": [1, {}]}}\n", i * 10, i + 2)
        })
        .collect();
    std::fs::write(&trace, lines).unwrap();
    for cancelled in [false, true] {
        let artifacts = dir.path().join(format!("cancelled-{cancelled}"));
        let mut config = config(&server.url(), &artifacts);
        config.input.input_file = Some(trace.clone());
        config.input.custom_dataset_type =
            Some(aiperf_core::config::CustomDatasetType::MooncakeTrace);
        config.input.isl_block_size = Some(20);
        config.load.concurrency = None;
        config.load.request_count = None;
        let cancel = CancellationToken::new();
        let mut hooks = InputsAtSendingEnd {
            file: artifacts.join("inputs.json"),
            existed: None,
            cancel: cancelled.then(|| cancel.clone()),
        };
        let report = run(&spec(config), &mut hooks, cancel).await.unwrap();
        assert_eq!(hooks.existed, Some(false), "cancelled: {cancelled}");
        assert_eq!(report.runs[0].summary.request_count(), 6);
        let inputs = artifacts.join("inputs.json");
        if cancelled {
            assert!(!inputs.exists());
        } else {
            let written: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(inputs).unwrap()).unwrap();
            assert_eq!(written["data"].as_array().unwrap().len(), 6);
        }
        assert!(artifacts.join(".aiperf_results_ready.json").is_file());
    }
}
