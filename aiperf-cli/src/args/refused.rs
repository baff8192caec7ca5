//! The Python AIPerf 0.13 options that aiperf-rs recognises but does not offer. A 0.13
//! command line using one stops with a usage error (exit status 2) that names the flag,
//! says why it is not available here and what to do instead — never clap's "unexpected
//! argument". Each option is a hidden argument taking the values 0.13 gives it, so the
//! rest of the command line still parses around it.

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

/// How a refused option is written: alone, or followed by its value(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A boolean flag, e.g. `--zmq-dual-bind`.
    Switch,
    /// An option with one or more values, e.g. `--mlflow-tag a=b c=d`.
    Values,
}

/// One refused option.
#[derive(Debug)]
pub(crate) struct RefusedOption {
    /// The long name, without the dashes.
    pub name: &'static str,
    shape: Shape,
    /// Why it is not available and what to do instead.
    pub reason: &'static str,
}

const fn switch(name: &'static str, reason: &'static str) -> RefusedOption {
    RefusedOption {
        name,
        shape: Shape::Switch,
        reason,
    }
}

const fn values(name: &'static str, reason: &'static str) -> RefusedOption {
    RefusedOption {
        name,
        shape: Shape::Values,
        reason,
    }
}

const ONE_PROCESS: &str = "aiperf-rs runs in one process, so there is no service, \
    message bus or API server to configure; drop the flag";
const STATS_INTERVAL: &str = "the live display refreshes on its own schedule and there is no \
    periodic stats log; drop the flag (the final metrics are in the artifacts)";
const EXPORTERS: &str = "the OpenTelemetry, MLflow and Weights & Biases exporters are not \
    available; upload the run's JSON, CSV or Parquet artifacts (profile_export_aiperf.json, \
    profile_export_aiperf.csv, profile_export.parquet) instead";
const SEARCH: &str = "adaptive search, SLA search and search recipes are not available; \
    sweep with comma lists instead (e.g. --concurrency 1,2,4,8 --isl 128,1024 with \
    --sweep-type grid or zip) and gate results with --slo";
const VARIANT: &str = "sweep variants are not available; run one `aiperf profile` command \
    per variant, or sweep with comma lists (e.g. --concurrency 1,2,4)";
const CONVERGENCE: &str = "convergence stopping is not available; use --num-profile-runs N \
    for a fixed number of runs with confidence intervals";
const SWEEP_MODE: &str = "profile runs and parameter sweeps are not combined here, so there is \
    no loop order to choose; drop the flag";
const SCENARIO: &str = "named scenarios are not available; give their settings as flags";
const SERVER_CONTROL: &str = "aiperf-rs does not send control requests to the server; reset \
    its KV cache or start its profiler yourself (e.g. with curl) before the run";
const AGENTIC_REPLAY: &str = "this replay option is not available: weka_trace, \
    baseten_trace and tracelab files replay as the Python AIPerf 0.13 does by default \
    (see docs/datasets.md#custom-dataset-files)";
const IMAGE_SOURCE: &str = "images are always generated (noise); pass your own images with \
    --input-file";
const VIDEO: &str = "video audio tracks are not available; drop the flag";
const VLLM_IMAGE_CACHE: &str = "image stripping for vLLM's multimodal cache is not available; \
    drop the flag";
const NETWORK_LATENCY: &str = "network-latency adjustment is not available; the metrics \
    include the network round trip";
const PREFILL_WARMUP_RAMP: &str = "a prefill-concurrency ramp during warmup is not yet \
    available; warm up without it (--warmup-concurrency-ramp-duration ramps concurrency)";
const SEED_PER_TRIAL: &str = "not yet available: every profile run uses the same seed \
    (--random-seed, or 42); --no-set-consistent-seed lets each run draw its own";
const SWEEP_SEED: &str = "not yet available: every sweep point uses the same dataset seed";

/// Every 0.13 `profile` option that aiperf-rs refuses, grouped by reason.
pub(crate) const REFUSED: &[RefusedOption] = &[
    values("record-processor-service-count", ONE_PROCESS),
    values("record-processors", ONE_PROCESS),
    values("api-port", ONE_PROCESS),
    values("api-host", ONE_PROCESS),
    values("zmq-host", ONE_PROCESS),
    values("zmq-ipc-path", ONE_PROCESS),
    switch("zmq-dual-bind", ONE_PROCESS),
    values("stats-interval", STATS_INTERVAL),
    values("otel-url", EXPORTERS),
    values("stream", EXPORTERS),
    values("otel-resource-attributes", EXPORTERS),
    values("gen-ai-provider", EXPORTERS),
    values("mlflow-tracking-uri", EXPORTERS),
    values("mlflow-experiment", EXPORTERS),
    values("mlflow-run-name", EXPORTERS),
    values("mlflow-tag", EXPORTERS),
    values("mlflow-parent-run-id", EXPORTERS),
    values("mlflow-artifact-glob", EXPORTERS),
    values("wandb-project", EXPORTERS),
    values("wandb-entity", EXPORTERS),
    values("wandb-run-name", EXPORTERS),
    values("wandb-tag", EXPORTERS),
    values("search-space", SEARCH),
    values("search-metric", SEARCH),
    values("search-stat", SEARCH),
    values("search-direction", SEARCH),
    values("search-max-iterations", SEARCH),
    values("search-initial-points", SEARCH),
    values("search-random-seed", SEARCH),
    values("search-planner", SEARCH),
    values("optuna-sampler", SEARCH),
    values("optuna-acquisition", SEARCH),
    values("optuna-terminator", SEARCH),
    values("search-percentile-pooling", SEARCH),
    values("bo-constraint-mode", SEARCH),
    values("search-sla", SEARCH),
    values("search-sla-tier", SEARCH),
    values("search-recipe", SEARCH),
    values("ttft-sla-ms", SEARCH),
    values("isl-osl-pairs", SEARCH),
    values("itl-sla-ms", SEARCH),
    values("tpot-sla-ms", SEARCH),
    values("e2e-sla-ms", SEARCH),
    values("error-rate-sla", SEARCH),
    values("slo-attainment-fraction", SEARCH),
    values("search-style", SEARCH),
    values("degradation-threshold", SEARCH),
    values("degradation-metric-tag", SEARCH),
    values("degradation-stat", SEARCH),
    values("isl-min", SEARCH),
    values("isl-max", SEARCH),
    values("isl-steps", SEARCH),
    values("concurrency-min", SEARCH),
    values("concurrency-max", SEARCH),
    values("concurrency-steps", SEARCH),
    values("osl-min", SEARCH),
    values("osl-max", SEARCH),
    values("osl-steps", SEARCH),
    values("variant", VARIANT),
    values("sweep-variant", VARIANT),
    values("convergence-metric", CONVERGENCE),
    values("convergence-stat", CONVERGENCE),
    values("convergence-threshold", CONVERGENCE),
    values("convergence-mode", CONVERGENCE),
    values("parameter-sweep-mode", SWEEP_MODE),
    values("scenario", SCENARIO),
    switch("unsafe-override", SCENARIO),
    switch("reset-kv-cache", SERVER_CONTROL),
    values("reset-kv-cache-timeout-seconds", SERVER_CONTROL),
    values("reset-kv-cache-path", SERVER_CONTROL),
    switch("server-profiler", SERVER_CONTROL),
    values("server-profiler-timeout-seconds", SERVER_CONTROL),
    values("server-profiler-start-path", SERVER_CONTROL),
    values("server-profiler-stop-path", SERVER_CONTROL),
    values("trajectory-start-min-ratio", AGENTIC_REPLAY),
    values("trajectory-start-max-ratio", AGENTIC_REPLAY),
    switch("burst-phase-starts", AGENTIC_REPLAY),
    values("trace-idle-gap-cap-seconds", AGENTIC_REPLAY),
    values("system-idle-gap-cap-seconds", AGENTIC_REPLAY),
    values("agentic-cache-warmup-duration", AGENTIC_REPLAY),
    values("agentic-warmup-grace-period", AGENTIC_REPLAY),
    values("max-idle-gap-cap-seconds", AGENTIC_REPLAY),
    switch("open-loop-replay", AGENTIC_REPLAY),
    switch("no-open-loop-replay", AGENTIC_REPLAY),
    switch("open-loop-strict", AGENTIC_REPLAY),
    values("image-source", IMAGE_SOURCE),
    values("image-source-sampling", IMAGE_SOURCE),
    values("video-audio-sample-rate", VIDEO),
    values("video-audio-num-channels", VIDEO),
    values("video-audio-codec", VIDEO),
    values("video-audio-depth", VIDEO),
    switch("uuid-and-strip", VLLM_IMAGE_CACHE),
    switch("network-latency-automatic", NETWORK_LATENCY),
    values("network-latency-mean", NETWORK_LATENCY),
    values("network-latency-ping-interval", NETWORK_LATENCY),
    values(
        "warmup-prefill-concurrency-ramp-duration",
        PREFILL_WARMUP_RAMP,
    ),
    switch("vary-seed-per-trial", SEED_PER_TRIAL),
    switch("no-vary-seed-per-trial", SEED_PER_TRIAL),
    switch("parameter-sweep-same-seed", SWEEP_SEED),
    switch("no-parameter-sweep-same-seed", SWEEP_SEED),
];

/// The refused option a command line used: the run stops with [`Refusal`]'s message.
#[derive(Debug)]
pub(crate) struct Refusal {
    option: &'static RefusedOption,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--{} (a Python AIPerf option) is not available in aiperf-rs: {}.",
            self.option.name, self.option.reason
        )
    }
}

/// The refused options as hidden `profile` arguments, and which one was used.
#[derive(Debug, Default)]
pub(crate) struct RefusedArgs {
    /// The first refused option on the command line, if any.
    pub used: Option<Refusal>,
}

impl FromArgMatches for RefusedArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let used = REFUSED
            .iter()
            .filter(|option| matches.value_source(option.name) == Some(ValueSource::CommandLine))
            .min_by_key(|option| matches.index_of(option.name))
            .map(|option| Refusal { option });
        Ok(Self { used })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for RefusedArgs {
    fn augment_args(command: Command) -> Command {
        command.args(REFUSED.iter().map(|option| {
            let arg = Arg::new(option.name).long(option.name).hide(true);
            match option.shape {
                Shape::Switch => arg.action(ArgAction::SetTrue),
                Shape::Values => arg.action(ArgAction::Append).num_args(1..),
            }
        }))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}
