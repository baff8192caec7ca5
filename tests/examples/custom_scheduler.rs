//! A load shape of your own: a `Scheduler` that sends bursts of 8 sessions every 250 ms,
//! and paces each session's later turns 100 ms apart, run by the engine with the standard
//! metrics sink.
//!
//! Run it with `cargo run -p aiperf-tests --example custom_scheduler` (it starts the mock
//! server on a free loopback port).
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example reports its result on the terminal

use std::sync::Arc;
use std::time::Duration;

use aiperf_core::config::InputConfig;
use aiperf_core::{
    Arrival, Benchmark, BenchmarkConfig, DatasetSource, Phase, PhasePlan, Scheduler, TurnPacing,
};
use aiperf_datasets::{SyntheticDataset, Tokenizer};
use aiperf_endpoints::{endpoint_for, EndpointOptions, HttpTransport};
use aiperf_metrics::MetricsSink;
use aiperf_mock_server::{MockConfig, MockServer};

/// `size` sessions at once every `every`, `count` times.
struct Bursts {
    size: u32,
    every: Duration,
    count: u32,
    sent: u32,
}

impl Scheduler for Bursts {
    fn next_arrival(&mut self) -> Arrival {
        if self.sent == self.size * self.count {
            return Arrival::Exhausted;
        }
        let burst = self.sent / self.size;
        self.sent += 1;
        Arrival::At(self.every * burst)
    }

    /// Each later turn of a session 100 ms after the previous one was due.
    fn turn_pacing(&self) -> TurnPacing {
        TurnPacing::Gap(Duration::from_millis(100))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let server = MockServer::start(MockConfig::with_timing(10.0, 2.0)).await?;

    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.urls = vec![server.url()];
    config.endpoint.streaming = true;
    let config = config.validate()?;
    let tokenizer = Tokenizer::builtin();
    let input = InputConfig {
        isl_mean: 64,
        osl_mean: Some(8),
        random_seed: Some(1),
        session: aiperf_core::config::SessionOptions {
            turns_mean: 2,
            ..Default::default()
        },
        ..InputConfig::default()
    };
    let dataset =
        SyntheticDataset::new(&input, &config.endpoint.models, tokenizer.clone())?.load()?;
    let endpoint = endpoint_for("chat", EndpointOptions::default())?;
    let metrics = MetricsSink::new(&config, endpoint.info(), Arc::new(tokenizer))?;

    let bursts = Bursts {
        size: 8,
        every: Duration::from_millis(250),
        count: 4,
        sent: 0,
    };
    let summary = Benchmark::builder(&config)
        .endpoint(endpoint)
        .transport(Arc::new(HttpTransport::builder().build()?))
        .conversations(dataset.conversations, dataset.preferred_sampling)
        .phase(PhasePlan::new(Phase::Profiling, Box::new(bursts)))
        .sink(metrics)?
        .run()
        .await?;

    let ttft = summary.metric("time_to_first_token").ok_or("no TTFT")?;
    println!(
        "{} requests in 4 bursts of 8 two-turn sessions: TTFT avg {:.2} ms, p99 {:.2} ms",
        summary.request_count(),
        ttft.avg,
        ttft.p99.unwrap_or(f64::NAN)
    );
    assert_eq!(summary.request_count(), 64);
    server.shutdown().await;
    Ok(())
}
