//! The library API as a Rust test harness uses it: benchmark a server in-process and
//! assert an SLO on the summary.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;

use aiperf_core::config::InputConfig;
use aiperf_core::{
    Benchmark, BenchmarkBuilder, BenchmarkConfig, CollectRecords, DatasetSource, SamplingStrategy,
    ValidatedConfig,
};
use aiperf_datasets::{SyntheticDataset, Tokenizer};
use aiperf_endpoints::{endpoint_for, EndpointOptions, HttpTransport};
use aiperf_metrics::slo::parse_slos;
use aiperf_metrics::MetricsSink;
use aiperf_mock_server::{MockConfig, MockServer};

fn config(server: &MockServer, concurrency: usize, requests: u64) -> ValidatedConfig {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.urls = vec![server.url()];
    config.endpoint.streaming = true;
    config.load.concurrency = Some(concurrency);
    config.load.request_count = Some(requests);
    config.validate().unwrap()
}

fn conversations(tokenizer: &Tokenizer) -> Vec<aiperf_core::Conversation> {
    SyntheticDataset::new(
        &InputConfig {
            isl_mean: 32,
            osl_mean: Some(16),
            num_dataset_entries: Some(10),
            random_seed: Some(3),
            ..InputConfig::default()
        },
        &[],
        tokenizer.clone(),
    )
    .unwrap()
    .load()
    .unwrap()
    .conversations
}

/// A chat benchmark as `config` describes it.
fn chat_benchmark(config: &ValidatedConfig) -> BenchmarkBuilder {
    Benchmark::builder(config)
        .endpoint(endpoint_for("chat", EndpointOptions::default()).unwrap())
        .transport(Arc::new(HttpTransport::builder().build().unwrap()))
        .conversations(
            conversations(&Tokenizer::builtin()),
            SamplingStrategy::Sequential,
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p99_time_to_first_token_meets_an_slo_against_the_mock_server() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 2.0))
        .await
        .unwrap();
    let config = config(&server, 4, 32);
    let info = endpoint_for("chat", EndpointOptions::default())
        .unwrap()
        .info()
        .clone();
    let sink = MetricsSink::new(&config, &info, Arc::new(Tokenizer::builtin())).unwrap();
    let summary = chat_benchmark(&config)
        .sink(sink)
        .unwrap()
        .run()
        .await
        .unwrap();

    assert_eq!(summary.request_count(), 32);
    let ttft = summary.metric("time_to_first_token").unwrap();
    assert!(
        ttft.avg >= 20.0,
        "TTFT cannot beat the server's 20 ms: {}",
        ttft.avg
    );
    assert!(ttft.p99.unwrap() < 200.0, "p99 TTFT {:?}", ttft.p99);

    // The same gate as `aiperf profile --slo`, from Rust.
    let met = summary.check_slos(
        &parse_slos("time_to_first_token:p99:200 output_sequence_length:min:16").unwrap(),
    );
    assert!(met.passed(), "{}", met.render());
    let missed = summary.check_slos(
        &parse_slos("time_to_first_token:avg:5 request_throughput:avg:1000000").unwrap(),
    );
    assert!(!missed.passed());
    assert!(
        missed.outcomes.iter().all(|o| !o.passed),
        "{}",
        missed.render()
    );
    let osl = summary.metric("output_sequence_length").unwrap();
    assert_eq!((osl.min, osl.max), (Some(16.0), Some(16.0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_records_carry_parsed_responses_and_exact_payloads() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let tokenizer = Tokenizer::builtin();
    let records = chat_benchmark(&config(&server, 2, 6))
        .sink(CollectRecords::default())
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(records.len(), 6);
    for record in &records {
        assert!(record.is_valid(), "{:?}", record.error);
        assert_eq!(record.status, Some(200));
        // 16 content deltas, one token each, in arrival order.
        let texts: Vec<&str> = record
            .content_responses()
            .map(|r| r.response.text.as_str())
            .collect();
        assert_eq!(texts.len(), 16);
        assert_eq!(tokenizer.count(&texts.concat()), 16);
        let payload: serde_json::Value = serde_json::from_slice(&record.payload).unwrap();
        assert_eq!(payload["max_completion_tokens"], 16);
        assert_eq!(payload["stream"], true);
        assert_eq!(record.input_text, payload["messages"][0]["content"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_describes_what_ran_whatever_the_sink_was_built_with() {
    // A sink built from a configuration other than the run's (no streaming, the default
    // URL) once dropped TTFT and echoed a URL never used; the engine now hands the sink
    // the configuration that runs.
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let ran = config(&server, 2, 6);
    let mut other = BenchmarkConfig::default();
    other.endpoint.models = vec!["another-model".into()];
    let other = other.validate().unwrap();
    let info = endpoint_for("chat", EndpointOptions::default())
        .unwrap()
        .info()
        .clone();
    let sink = MetricsSink::new(&other, &info, Arc::new(Tokenizer::builtin())).unwrap();
    let summary = chat_benchmark(&ran)
        .sink(sink)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(summary.request_count(), 6);
    assert!(summary.metric("time_to_first_token").is_some());
    assert_eq!(summary.config.endpoint.urls, [server.url()]);
    assert_eq!(summary.config.primary_model(), "mock-model");
    assert!(summary.config.endpoint.streaming);
}
