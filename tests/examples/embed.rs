//! Embedding aiperf-rs in another program: benchmark a server from Rust and check an SLO.
//!
//! Run it with `cargo run -p aiperf-tests --example embed` (it starts the mock server on a
//! free loopback port; point `url` at a real server instead).

use std::sync::Arc;

use aiperf_core::config::InputConfig;
use aiperf_core::{Benchmark, BenchmarkConfig, DatasetSource, PhasePlan, SamplingStrategy};
use aiperf_datasets::{SyntheticDataset, Tokenizer};
use aiperf_endpoints::{build_url, endpoint_for, EndpointOptions, HttpTransport};
use aiperf_metrics::MetricsSink;
use aiperf_mock_server::{MockConfig, MockServer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let server = MockServer::start(MockConfig::with_timing(20.0, 5.0)).await?;

    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.streaming = true;
    config.load.concurrency = Some(8);
    config.load.request_count = Some(64);
    let config = config.validate()?;

    let tokenizer = Tokenizer::builtin();
    let conversations = SyntheticDataset::new(
        &InputConfig {
            isl_mean: 128,
            osl_mean: Some(32),
            random_seed: Some(1),
            ..InputConfig::default()
        },
        &config.endpoint.models,
        tokenizer.clone(),
    )?
    .load()?;
    let endpoint = endpoint_for("chat", EndpointOptions::default())?;
    let sink = MetricsSink::new(&config, endpoint.info(), Arc::new(tokenizer))?;

    let summary = Benchmark::builder()
        .url(build_url(&server.url(), None, endpoint.info().default_path))
        .endpoint(endpoint)
        .transport(Arc::new(HttpTransport::builder().build()?))
        .model(config.primary_model())
        .streaming(true)
        .conversations(conversations, SamplingStrategy::Shuffle, 1)
        .phases(PhasePlan::from_config(&config)?)
        .sink(sink)?
        .run()
        .await?;

    let ttft = summary
        .metric("time_to_first_token")
        .ok_or("no TTFT in the summary")?;
    println!(
        "{} requests, TTFT avg {:.2} ms, p99 {:.2} ms",
        summary.request_count(),
        ttft.avg,
        ttft.p99.unwrap_or(f64::NAN)
    );
    server.shutdown().await;
    Ok(())
}
