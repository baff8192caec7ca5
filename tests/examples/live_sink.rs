//! A live consumer beside the standard summary: `MetricsSink::tee` feeds every finished
//! request to both the metrics sink and a sink of your own, here one that prints a
//! progress line every 16 requests while the run goes on.
//!
//! Run it with `cargo run -p aiperf-tests --example live_sink` (it starts the mock server
//! on a free loopback port).
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example reports its result on the terminal

use std::sync::Arc;

use aiperf_core::config::InputConfig;
use aiperf_core::sink::SinkError;
use aiperf_core::{
    Benchmark, BenchmarkConfig, DatasetSource, RecordSink, RequestRecord, RunInfo, SamplingStrategy,
};
use aiperf_datasets::{SyntheticDataset, Tokenizer};
use aiperf_endpoints::{endpoint_for, EndpointOptions, HttpTransport};
use aiperf_metrics::MetricsSink;
use aiperf_mock_server::{MockConfig, MockServer};

/// Counts finished requests and errors as they arrive; returns both at the end.
#[derive(Default)]
struct Progress {
    finished: u64,
    failed: u64,
}

impl RecordSink for Progress {
    type Output = (u64, u64);

    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError> {
        self.finished += 1;
        if !record.is_valid() {
            self.failed += 1;
        }
        if self.finished % 16 == 0 {
            println!(
                "{} requests finished, {} failed",
                self.finished, self.failed
            );
        }
        Ok(())
    }

    fn finish(self, _run: &RunInfo) -> Result<Self::Output, SinkError> {
        Ok((self.finished, self.failed))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let server = MockServer::start(MockConfig::with_timing(10.0, 2.0)).await?;

    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.urls = vec![server.url()];
    config.endpoint.streaming = true;
    config.load.concurrency = Some(4);
    config.load.request_count = Some(64);
    let config = config.validate()?;
    let tokenizer = Tokenizer::builtin();
    let input = InputConfig {
        isl_mean: 64,
        osl_mean: Some(16),
        random_seed: Some(1),
        ..InputConfig::default()
    };
    let conversations = SyntheticDataset::new(&input, &config.endpoint.models, tokenizer.clone())?
        .load()?
        .conversations;
    let endpoint = endpoint_for("chat", EndpointOptions::default())?;
    let metrics = MetricsSink::new(&config, endpoint.info(), Arc::new(tokenizer))?;

    let (summary, (finished, failed)) = Benchmark::builder(&config)
        .endpoint(endpoint)
        .transport(Arc::new(HttpTransport::builder().build()?))
        .conversations(conversations, SamplingStrategy::Shuffle)
        .sink(metrics.tee(Progress::default()))?
        .run()
        .await?;

    assert_eq!(summary.request_count(), finished - failed);
    println!(
        "{finished} requests ({failed} failed); the summary counts {} successful",
        summary.request_count()
    );
    server.shutdown().await;
    Ok(())
}
