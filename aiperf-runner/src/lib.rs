//! Runs a whole benchmark from one [`RunSpec`]: everything `aiperf profile` does, as a
//! library call.
//!
//! [`run`] builds the workload (synthetic, a dataset file, ShareGPT; a timestamped trace
//! becomes a fixed-schedule replay), waits for the server when asked, scrapes GPU
//! telemetry and server metrics beside the run, runs the warmup and profiling phases,
//! repeats the run for confidence intervals or runs every point of a sweep, writes every
//! artifact, and returns a typed [`Report`]. Progress reaches a [`RunHooks`]
//! implementation; the `aiperf` command line is one such caller, which only turns flags
//! into a [`RunSpec`] and prints what the hooks and the report say.
//!
//! ```no_run
//! use aiperf_core::{BenchmarkConfig, CancellationToken};
//! use aiperf_runner::{run, NoHooks, Outcome, RunSpec};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = BenchmarkConfig::default();
//! config.endpoint.models = vec!["Qwen/Qwen3-0.6B".into()];
//! config.endpoint.urls = vec!["http://127.0.0.1:8000".into()];
//! config.endpoint.streaming = true;
//! config.load.concurrency = Some(8);
//! config.load.request_count = Some(100);
//! config.output.artifact_dir = Some(std::env::temp_dir().join("aiperf-run"));
//!
//! let report = run(&RunSpec::new(config.validate()?), &mut NoHooks, CancellationToken::new()).await?;
//! assert_eq!(report.outcome, Outcome::Completed);
//! let ttft = report.runs[0].summary.metric("time_to_first_token").expect("streaming");
//! println!("p99 TTFT: {:?} ms", ttft.p99);
//! # Ok(()) }
//! ```
//!
//! Cargo features, all on by default: `mock` lets the URL [`MOCK_URL`] start the embedded
//! mock server; `parquet` writes the Parquet exports; `hf-tokenizers` loads Hugging Face
//! `tokenizer.json` files and hub repositories (without it, only the builtin tiktoken
//! encodings); `media` synthesises images, audio and video in prompts; `templates` offers
//! the `template` endpoint type.

pub mod chat;
pub mod clock_reference;
pub mod config_file;
mod descriptors;
mod error;
mod hooks;
mod inputs;
pub mod kube;
pub mod merge;
mod report;
mod runtime;
mod sequence;
mod session;
pub mod shard;
mod spec;
mod telemetry;
mod workload;

use std::sync::Arc;

use aiperf_core::{CancellationToken, DatasetSource, Endpoint};

pub use error::{ErrorKind, RunError};
pub use hooks::{
    NoHooks, Notice, PhaseTargets, RunHooks, RunWatch, StopCondition, LARGE_DATASET,
    LATE_READS_NOTICED,
};
pub use report::{AggregateReport, Outcome, Report, RunFiles, RunReport, SweepReport};
pub use runtime::Workers;
pub use spec::{
    ConnectionReuse, MultiRunOptions, ReadinessOptions, RecordOptions, RunSpec, Sweep, SweepPoint,
    SweepType, TelemetryOptions, TransportOptions, CONSISTENT_SEED, DEFAULT_LONG_WAIT, MOCK_URL,
};
pub use workload::WorkloadError;

/// Runs what `spec` describes and writes every artifact.
///
/// `cancel` stops the run early (for example on Ctrl-C): sending stops, what finished is
/// written, and the report's outcome is [`Outcome::Cancelled`]. A run whose requests
/// failed is not an error: its report says so ([`Outcome::AllFailed`]); errors are what
/// prevented a run (see [`RunError::kind`]).
pub async fn run(
    spec: &RunSpec,
    hooks: &mut dyn RunHooks,
    cancel: CancellationToken,
) -> Result<Report, RunError> {
    run_with(spec, RunParts::default(), hooks, cancel).await
}

/// [`run`] with parts of your own in place of the configured ones.
pub async fn run_with(
    spec: &RunSpec,
    parts: RunParts,
    hooks: &mut dyn RunHooks,
    cancel: CancellationToken,
) -> Result<Report, RunError> {
    spec.telemetry.check()?;
    let Some(session) = session::Session::start(spec, parts, hooks, cancel).await? else {
        return Ok(Report::cancelled());
    };
    sequence::run(&session, spec, hooks).await
}

/// Parts of a run that are code rather than configuration. Each replaces what the
/// configuration would choose; everything else (readiness, telemetry, multi-run, sweeps,
/// artifacts) works as for the built-in parts.
#[derive(Default)]
pub struct RunParts {
    /// An API format of your own instead of the configured endpoint type (the summary's
    /// `input_config` records its name).
    pub endpoint: Option<Arc<dyn Endpoint>>,
    /// A dataset of your own instead of the configured one; loaded anew for every run of
    /// a multi-run or sweep. Its properties decide sampling and trace replay as a file's
    /// would.
    pub dataset: Option<Box<dyn DatasetSource + Send>>,
}

impl std::fmt::Debug for RunParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunParts")
            .field("endpoint", &self.endpoint.as_ref().map(|e| e.info().name))
            .field("dataset", &self.dataset.is_some())
            .finish()
    }
}
