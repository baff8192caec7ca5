//! Embedding aiperf-rs in another program: run a whole benchmark from Rust, as
//! `aiperf profile` would, and check an SLO on the result.
//!
//! Run it with `cargo run -p aiperf-tests --example embed` (it starts the mock server on a
//! free loopback port; point the URL at a real server instead).
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example reports its result on the terminal

use aiperf_core::{BenchmarkConfig, CancellationToken};
use aiperf_metrics::slo::parse_slos;
use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_runner::{run, NoHooks, Outcome, RunSpec};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let server = MockServer::start(MockConfig::with_timing(20.0, 5.0)).await?;

    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.urls = vec![server.url()];
    config.endpoint.streaming = true;
    config.input.isl_mean = 128;
    config.input.osl_mean = Some(32);
    config.load.concurrency = Some(8);
    config.load.request_count = Some(64);
    config.output.artifact_dir = Some(std::env::temp_dir().join("aiperf-embed-example"));
    let mut spec = RunSpec::new(config.validate()?);
    spec.slos = parse_slos("time_to_first_token:p99:200")?;

    let report = run(&spec, &mut NoHooks, CancellationToken::new()).await?;
    let run = &report.runs[0];
    let ttft = run
        .summary
        .metric("time_to_first_token")
        .ok_or("no TTFT in the summary")?;
    println!(
        "{} requests, TTFT avg {:.2} ms, p99 {:.2} ms; files in {}",
        run.summary.request_count(),
        ttft.avg,
        ttft.p99.unwrap_or(f64::NAN),
        run.files.dir.display()
    );
    assert_eq!(report.outcome, Outcome::Completed, "the SLO was missed");
    server.shutdown().await;
    Ok(())
}
