//! The load flags: concurrency, rates, stop conditions, trace replay, simulated users,
//! warmup and cancellation.

use std::time::SystemTime;

use aiperf_core::config::{
    ArrivalPattern, FixedScheduleConfig, LoadConfig, Shard, UserCentricConfig, WarmupConfig,
};
use clap::{Args, ValueEnum};

use super::{count, count_at_least_one};

/// How the load is applied and when the benchmark stops.
#[derive(Debug, Args)]
#[command(next_help_heading = "Load")]
pub(crate) struct LoadArgs {
    /// Maximum sessions in flight (closed loop); with --request-rate, a cap. A comma
    /// list (1,2,4) runs a parameter sweep, one point per value (see --sweep-type).
    #[arg(long, value_parser = count_at_least_one::<usize>)]
    pub concurrency: Option<usize>,

    /// Raise the concurrency limit from 1 to --concurrency over this many seconds.
    #[arg(long = "concurrency-ramp-duration")]
    pub concurrency_ramp_duration: Option<f64>,

    /// Maximum requests waiting for their first token (streaming only). A comma list
    /// runs a sweep.
    #[arg(long = "prefill-concurrency", value_parser = count_at_least_one::<usize>)]
    pub prefill_concurrency: Option<usize>,

    /// Raise the prefill limit from 1 to --prefill-concurrency over this many seconds.
    #[arg(long = "prefill-concurrency-ramp-duration")]
    pub prefill_concurrency_ramp_duration: Option<f64>,

    /// Target requests per second (open loop). A comma list (5,10,20) runs a sweep.
    #[arg(long = "request-rate")]
    pub request_rate: Option<f64>,

    /// Raise the rate linearly to --request-rate over this many seconds.
    #[arg(long = "request-rate-ramp-duration")]
    pub request_rate_ramp_duration: Option<f64>,

    /// A JSON file of request-rate points instead of --request-rate: `[{"time_s": 0,
    /// "qps": 5}, {"time_s": 60, "qps": 20}]` (or `{"points": […]}`). The rate follows
    /// the points linearly (after --request-rate-ramp-duration), then keeps the last.
    #[arg(long = "request-rate-series", value_name = "FILE")]
    pub request_rate_series: Option<std::path::PathBuf>,

    /// Distribution of gaps between arrivals in request-rate mode.
    #[arg(
        long = "arrival-pattern",
        visible_alias = "request-rate-mode",
        value_enum
    )]
    pub arrival_pattern: Option<ArrivalPatternArg>,

    /// Gamma shape for --arrival-pattern gamma: 1 is Poisson, below 1 burstier, above smoother.
    #[arg(long = "arrival-smoothness", visible_alias = "vllm-burstiness")]
    pub arrival_smoothness: Option<f64>,

    /// Stop after this many requests (default 10 when no stop condition is given). A
    /// comma list runs a sweep.
    #[arg(long = "request-count", value_parser = count_at_least_one::<u64>,
          visible_alias = "num-requests")]
    pub request_count: Option<u64>,

    /// Stop starting sessions after this many; started sessions send all their turns.
    #[arg(long = "num-sessions", value_parser = count_at_least_one::<u64>,
          visible_aliases = ["conversation-num", "num-conversations"])]
    pub num_sessions: Option<u64>,

    /// Stop sending after this many seconds. A comma list runs a sweep.
    #[arg(long = "benchmark-duration")]
    pub benchmark_duration: Option<f64>,

    /// Seconds to wait for in-flight requests after --benchmark-duration (default 30; `inf`).
    #[arg(long = "benchmark-grace-period")]
    pub benchmark_grace_period: Option<f64>,

    /// Stop sending once more than this fraction (0–1) of the requests failed, checked
    /// from the max(--concurrency, 10)-th request on; the run then exits 1.
    #[arg(long = "failed-request-threshold")]
    pub failed_request_threshold: Option<f64>,

    /// Threads that send requests (default: 3/4 of the CPUs less one, 1–32, at most the
    /// concurrency, as in the Python AIPerf). Stamps are the kernel's either way.
    #[arg(long = "workers-max", visible_alias = "max-workers",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers_max: Option<u16>,

    /// Replay the input trace's timestamps (automatic for traces whose first entry has one).
    #[arg(long = "fixed-schedule", conflicts_with = "no_fixed_schedule")]
    pub fixed_schedule: bool,

    /// Do not replay a trace's timestamps even though it has them.
    #[arg(long = "no-fixed-schedule")]
    pub no_fixed_schedule: bool,

    /// Time zero of the replay is the earliest timestamp.
    #[arg(long = "fixed-schedule-auto-offset")]
    pub fixed_schedule_auto_offset: bool,

    /// Replay only entries at or after this many ms; time zero is the offset.
    #[arg(long = "fixed-schedule-start-offset", value_parser = count::<u64>)]
    pub fixed_schedule_start_offset: Option<u64>,

    /// Replay only entries at or before this many ms.
    #[arg(long = "fixed-schedule-end-offset", value_parser = count::<u64>)]
    pub fixed_schedule_end_offset: Option<u64>,

    /// Aggregate requests per second of --num-users simulated users, each sending its next
    /// turn num_users/rate seconds after the previous one.
    #[arg(long = "user-centric-rate")]
    pub user_centric_rate: Option<f64>,

    /// Simulated users of --user-centric-rate. A comma list runs a sweep.
    #[arg(long = "num-users", value_parser = count_at_least_one::<usize>)]
    pub num_users: Option<usize>,

    /// Percent of requests the client cancels on purpose (0 < x <= 100).
    #[arg(long = "request-cancellation-rate")]
    pub request_cancellation_rate: Option<f64>,

    /// Seconds after sending at which those requests are cancelled (default 0).
    #[arg(long = "request-cancellation-delay")]
    pub request_cancellation_delay: Option<f64>,

    /// Requests to send before measuring; their results are discarded.
    #[arg(long = "warmup-request-count", value_parser = count_at_least_one::<u64>,
          visible_alias = "num-warmup-requests")]
    pub warmup_request_count: Option<u64>,

    /// Seconds of warmup before measuring.
    #[arg(long = "warmup-duration")]
    pub warmup_duration: Option<f64>,

    /// Sessions to run as warmup.
    #[arg(long = "num-warmup-sessions", value_parser = count_at_least_one::<u64>)]
    pub num_warmup_sessions: Option<u64>,

    /// Warmup concurrency (default --concurrency).
    #[arg(long = "warmup-concurrency", value_parser = count_at_least_one::<usize>)]
    pub warmup_concurrency: Option<usize>,

    /// Warmup prefill concurrency (default --prefill-concurrency).
    #[arg(long = "warmup-prefill-concurrency", value_parser = count_at_least_one::<usize>)]
    pub warmup_prefill_concurrency: Option<usize>,

    /// Warmup request rate (default --request-rate; closed loop without either).
    #[arg(long = "warmup-request-rate")]
    pub warmup_request_rate: Option<f64>,

    /// Warmup arrival pattern (default --arrival-pattern).
    #[arg(long = "warmup-arrival-pattern", value_enum)]
    pub warmup_arrival_pattern: Option<ArrivalPatternArg>,

    /// Seconds to wait for in-flight warmup requests after --warmup-duration (default: all).
    #[arg(long = "warmup-grace-period")]
    pub warmup_grace_period: Option<f64>,

    /// Warmup concurrency ramp (default --concurrency-ramp-duration).
    #[arg(long = "warmup-concurrency-ramp-duration")]
    pub warmup_concurrency_ramp_duration: Option<f64>,

    /// Warmup rate ramp (default --request-rate-ramp-duration).
    #[arg(long = "warmup-request-rate-ramp-duration")]
    pub warmup_request_rate_ramp_duration: Option<f64>,

    /// Run shard K of N of this benchmark (e.g. 2/8, K from 0): the processes of shards
    /// 0..N, started with the same flags and --random-seed, send exactly the requests one
    /// process would (docs/scale-out.md). Merge their directories with `aiperf merge`.
    #[arg(long = "shard", value_name = "K/N", value_parser = parse_shard,
          conflicts_with = "shard_count", help_heading = "Scale-out")]
    pub shard: Option<Shard>,

    /// Run one of N shards, its index from --shard-index or JOB_COMPLETION_INDEX (what a
    /// Kubernetes Indexed Job sets in each pod).
    #[arg(long = "shard-count", value_name = "N", value_parser = count_at_least_one::<u32>,
          help_heading = "Scale-out")]
    pub shard_count: Option<u32>,

    /// This process's shard (0-based) with --shard-count.
    #[arg(
        long = "shard-index",
        value_name = "K",
        env = "JOB_COMPLETION_INDEX",
        help_heading = "Scale-out"
    )]
    pub shard_index: Option<u32>,

    /// Wait for this wall-clock instant before the first request (RFC 3339, e.g.
    /// 2026-11-26T10:00:00Z, or seconds since the Unix epoch), so that shards on several
    /// machines start together; a shard that starts more than 0.1 s late says so.
    #[arg(long = "start-at", value_name = "TIME", value_parser = parse_start_at_arg,
          help_heading = "Scale-out")]
    pub start_at: Option<SystemTime>,

    /// Measure this machine's clock against the SNTP time server HOST[:PORT] (port 123 by
    /// default) before the run, so that shards on machines whose clocks disagree still
    /// start together and stamp their records on one time axis: --start-at is then the
    /// server's time, and shard.json records the offset. Give every shard the same server.
    #[arg(
        long = "clock-reference",
        value_name = "HOST[:PORT]",
        help_heading = "Scale-out"
    )]
    pub clock_reference: Option<String>,
}

/// `K/N` with K below N.
fn parse_shard(text: &str) -> Result<Shard, String> {
    let (index, count) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not K/N (e.g. 0/4)"))?;
    let number = |part: &str| {
        part.trim()
            .parse::<u32>()
            .map_err(|e| format!("{part:?}: {e}"))
    };
    let (index, count) = (number(index)?, number(count)?);
    Shard::new(index, count)
        .ok_or_else(|| format!("shard {index} of {count}: K counts from 0 and must be below N"))
}

fn parse_start_at_arg(text: &str) -> Result<SystemTime, String> {
    aiperf_runner::shard::parse_start_at(text).map_err(|error| error.to_string())
}

/// The arrival patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ArrivalPatternArg {
    Poisson,
    Constant,
    Gamma,
    #[value(alias = "concurrency-burst")]
    ConcurrencyBurst,
}

impl From<ArrivalPatternArg> for ArrivalPattern {
    fn from(pattern: ArrivalPatternArg) -> Self {
        match pattern {
            ArrivalPatternArg::Poisson => ArrivalPattern::Poisson,
            ArrivalPatternArg::Constant => ArrivalPattern::Constant,
            ArrivalPatternArg::Gamma => ArrivalPattern::Gamma,
            ArrivalPatternArg::ConcurrencyBurst => ArrivalPattern::ConcurrencyBurst,
        }
    }
}

impl LoadArgs {
    /// The shard `--shard`, or `--shard-count` with `--shard-index` (or
    /// JOB_COMPLETION_INDEX), say this process runs.
    pub(crate) fn shard(&self) -> anyhow::Result<Option<Shard>> {
        let Some(count) = self.shard_count else {
            return Ok(self.shard);
        };
        let index = self.shard_index.ok_or_else(|| {
            anyhow::anyhow!(
                "--shard-count {count} needs this process's shard: set --shard-index K or the \
                 JOB_COMPLETION_INDEX environment variable (a Kubernetes Indexed Job sets it)"
            )
        })?;
        Shard::new(index, count).map(Some).ok_or_else(|| {
            anyhow::anyhow!("shard index {index} must be below --shard-count {count}")
        })
    }

    /// The load configuration these flags describe (validated with the whole config).
    pub(crate) fn to_config(&self) -> LoadConfig {
        LoadConfig {
            concurrency: self.concurrency,
            concurrency_ramp_duration: self.concurrency_ramp_duration,
            prefill_concurrency: self.prefill_concurrency,
            prefill_concurrency_ramp_duration: self.prefill_concurrency_ramp_duration,
            request_rate: self.request_rate,
            request_rate_ramp_duration: self.request_rate_ramp_duration,
            // Read from its file when the configuration is assembled.
            request_rate_series: None,
            failed_request_threshold: self.failed_request_threshold,
            arrival_pattern: self.arrival_pattern.map(ArrivalPattern::from),
            arrival_smoothness: self.arrival_smoothness,
            request_count: self.request_count,
            num_sessions: self.num_sessions,
            benchmark_duration: self.benchmark_duration,
            benchmark_grace_period: self.benchmark_grace_period,
            fixed_schedule: FixedScheduleConfig {
                enabled: if self.fixed_schedule {
                    Some(true)
                } else if self.no_fixed_schedule {
                    Some(false)
                } else {
                    None
                },
                auto_offset: self.fixed_schedule_auto_offset,
                start_offset_ms: self.fixed_schedule_start_offset,
                end_offset_ms: self.fixed_schedule_end_offset,
            },
            user_centric: self.user_centric_rate.map(|rate| UserCentricConfig {
                rate,
                num_users: self.num_users.unwrap_or(0),
            }),
            num_users: self.num_users,
            request_cancellation_rate: self.request_cancellation_rate,
            request_cancellation_delay: self.request_cancellation_delay,
            warmup: WarmupConfig {
                request_count: self.warmup_request_count,
                duration: self.warmup_duration,
                num_sessions: self.num_warmup_sessions,
                concurrency: self.warmup_concurrency,
                prefill_concurrency: self.warmup_prefill_concurrency,
                request_rate: self.warmup_request_rate,
                arrival_pattern: self.warmup_arrival_pattern.map(ArrivalPattern::from),
                grace_period: self.warmup_grace_period,
                concurrency_ramp_duration: self.warmup_concurrency_ramp_duration,
                request_rate_ramp_duration: self.warmup_request_rate_ramp_duration,
            },
            // Resolved with its environment variable when the configuration is assembled.
            shard: None,
        }
    }
}
