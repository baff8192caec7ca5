//! How a run reports while it goes: a small trait whose methods all default to doing
//! nothing, so an embedder implements only what it shows.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aiperf_core::config::Shard;
use aiperf_core::{BenchmarkConfig, CancellationToken, Progress};
use aiperf_endpoints::readiness::ReadinessEvent;
use aiperf_endpoints::ReadLateness;
use aiperf_metrics::live::LiveStats;
use aiperf_metrics::sweep::SweepSummary;

use crate::report::RunReport;
use crate::RunError;

/// Receives what happens during [`run`](crate::run). Called on the runner's task: keep
/// each call short (hand long work to a thread of your own).
pub trait RunHooks: Send {
    /// Something a person watching would want to know (see [`Notice`]).
    fn notice(&mut self, notice: &Notice<'_>) {
        let _ = notice;
    }

    /// Whether the metrics sink should keep live latency statistics for
    /// [`RunWatch::live`] (it costs a little per record, so it is off by default).
    fn wants_live_stats(&self) -> bool {
        false
    }

    /// A run's artifact directory exists and nothing is written in it yet.
    fn artifacts_at(&mut self, dir: &Path) {
        let _ = dir;
    }

    /// A run starts sending; `watch` is what a live display can read until
    /// [`sending_ended`](Self::sending_ended).
    fn sending(&mut self, watch: &RunWatch) {
        let _ = watch;
    }

    /// The run stopped sending (finished, failed or cancelled); its files come next.
    fn sending_ended(&mut self) {}

    /// A run finished and every file of it is written.
    fn run_finished(&mut self, run: &RunReport) {
        let _ = run;
    }

    /// Every point of a sweep ran; its summary is written to `dir`.
    fn sweep_finished(&mut self, sweep: &SweepSummary, dir: &Path) {
        let _ = (sweep, dir);
    }
}

/// Hooks that do nothing: a run that only returns its report.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl RunHooks for NoHooks {}

/// What a live display of one run reads.
#[derive(Debug, Clone)]
pub struct RunWatch {
    /// The engine's counters for the current phase.
    pub progress: Arc<Progress>,
    /// Latencies and token counts of the profiling records processed so far, when
    /// [`RunHooks::wants_live_stats`] asked for them.
    pub live: Option<Arc<LiveStats>>,
    /// What ends each phase.
    pub targets: PhaseTargets,
    /// Cancels the run (what finished is still written).
    pub cancel: CancellationToken,
    /// Requests on the wire longer than this are worth showing
    /// ([`RunSpec::long_wait`](crate::RunSpec::long_wait)).
    pub long_wait: Duration,
}

/// What ends the warmup and the profiling phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseTargets {
    /// `None` when there is no warmup.
    pub warmup: Option<StopCondition>,
    /// The profiling phase's stop condition.
    pub profiling: StopCondition,
}

/// When a phase ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopCondition {
    /// After this many requests.
    Requests(u64),
    /// After this many seconds.
    Seconds(f64),
    /// When the dataset or schedule runs out (no known total).
    Open,
}

impl PhaseTargets {
    /// The stop conditions `config` sets.
    pub fn from_config(config: &BenchmarkConfig) -> Self {
        let stop = |requests: Option<u64>, seconds: Option<f64>| match (requests, seconds) {
            (Some(n), _) => StopCondition::Requests(n),
            (None, Some(secs)) => StopCondition::Seconds(secs),
            (None, None) => StopCondition::Open,
        };
        let warmup = &config.load.warmup;
        Self {
            warmup: warmup
                .is_enabled()
                .then(|| stop(warmup.request_count, warmup.duration)),
            profiling: stop(config.load.request_count, config.load.benchmark_duration),
        }
    }
}

/// Synthetic datasets at least this large are announced before they are generated
/// ([`Notice::GeneratingDataset`]): about 2 s of work at the default prompt length.
pub const LARGE_DATASET: usize = 10_000;

/// Progress worth a line on a console; `Display` gives that line.
#[derive(Debug)]
#[non_exhaustive]
pub enum Notice<'a> {
    /// The server is being probed before the run.
    Readiness(ReadinessEvent<'a>),
    /// The endpoint does not stream, so the run does not ask for streaming.
    StreamingUnsupported {
        /// The endpoint type.
        endpoint: &'static str,
    },
    /// An explicit header has the name the API key's header would have, so it replaces
    /// it and the API key is not sent.
    ApiKeyHeaderReplaced,
    /// The planned concurrency needs more open files than the process may hold, even
    /// with its soft limit raised to the hard one: requests beyond it will fail on the
    /// client's side (`ClientResourceError`).
    OpenFileLimit {
        /// About how many descriptors the run needs.
        needed: u64,
        /// The limit in force.
        limit: u64,
    },
    /// Requests have been on the wire longer than [`RunSpec::long_wait`](crate::RunSpec):
    /// said once per such interval while any are.
    LongWaits {
        /// How many.
        count: usize,
        /// How long the oldest has waited.
        longest: Duration,
        /// The threshold.
        threshold: Duration,
    },
    /// The ShareGPT dataset is downloaded into the cache (once).
    DownloadingShareGpt {
        /// Where it is saved.
        path: &'a Path,
        /// How long the download may take.
        timeout: Duration,
    },
    /// A synthetic dataset of at least [`LARGE_DATASET`] conversations is being generated
    /// (one per request or session): this takes seconds before the first request.
    GeneratingDataset {
        /// Conversations to generate.
        entries: usize,
    },
    /// The dataset's timestamps turned on the fixed schedule.
    ReplayingTimestamps,
    /// This shard waits for the shared start instant before its first request.
    WaitingForStart {
        /// The shard.
        shard: Option<Shard>,
        /// How long until the instant.
        wait: Duration,
    },
    /// This shard began sending more than [`LATE_START`](crate::shard::LATE_START) after
    /// the shared start instant, so its first arrivals are late against the others'.
    LateStart {
        /// The shard.
        shard: Option<Shard>,
        /// How late.
        late: Duration,
    },
    /// A sweep point starts.
    SweepPoint {
        /// 1-based.
        number: usize,
        /// Points in the sweep.
        total: usize,
        /// The point's directory name.
        label: &'a str,
    },
    /// A run of a multi-run starts.
    ProfileRun {
        /// 1-based.
        number: u32,
        /// Runs asked for.
        total: u32,
        /// The run's directory name.
        label: &'a str,
    },
    /// A run of a sequence failed; the sequence goes on.
    RunFailed {
        /// The run's or point's label.
        label: &'a str,
        /// Why.
        error: &'a RunError,
    },
    /// Too few runs succeeded for an aggregate (it needs two).
    TooFewRunsToAggregate {
        /// Runs that succeeded.
        succeeded: usize,
        /// Runs asked for.
        total: u32,
    },
    /// Sending ended and `profile_export.parquet` is being written from the run's
    /// JSONL records, which takes about 6 s per million records: said when there are
    /// enough of them for the wait to show.
    WritingParquet {
        /// The file being written.
        path: &'a Path,
        /// The records it is written from.
        records: u64,
    },
    /// The socket reader read at least [`LATE_READS_NOTICED`] of the run's response reads
    /// more than [`ReadLateness::LATE`] after their bytes arrived: the client's CPUs were
    /// busy, and chunks that arrived closer together than that may share the later one's
    /// stamp.
    LateReads(ReadLateness),
    /// The aggregate of a multi-run is written.
    Aggregated {
        /// Runs that entered it.
        runs: usize,
        /// Runs asked for.
        total: u32,
        /// Its confidence level.
        confidence_level: f64,
        /// Where it is.
        dir: &'a Path,
    },
}

impl fmt::Display for Notice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::Readiness(event) => event.fmt(f),
            Notice::StreamingUnsupported { endpoint } => {
                write!(
                    f,
                    "the {endpoint} endpoint does not stream; streaming is off"
                )
            }
            Notice::ApiKeyHeaderReplaced => f.write_str(
                "an explicit header replaces the one the API key would send; the API key is \
                 not used",
            ),
            Notice::OpenFileLimit { needed, limit } => write!(
                f,
                "the planned concurrency needs about {needed} open files but this process may \
                 open {limit}: requests beyond that will fail as ClientResourceError"
            ),
            Notice::LongWaits {
                count,
                longest,
                threshold,
            } => write!(
                f,
                "{count} request(s) have waited more than {} s for the server (the longest \
                 {} s)",
                seconds(*threshold),
                seconds(*longest)
            ),
            Notice::DownloadingShareGpt { path, timeout } => write!(
                f,
                "Downloading ShareGPT to {} (once; up to {} s)…",
                path.display(),
                timeout.as_secs()
            ),
            Notice::GeneratingDataset { entries } => write!(
                f,
                "Generating {entries} synthetic conversations, one per request (set \
                 --num-dataset-entries to use fewer)…"
            ),
            Notice::WaitingForStart { shard, wait } => write!(
                f,
                "{} waits {:.1} s for the shared start instant",
                shard_name(*shard),
                wait.as_secs_f64()
            ),
            Notice::LateStart { shard, late } => write!(
                f,
                "{} started {:.3} s after the shared start instant: its first arrivals are late \
                 against the other shards' (check that the machines' clocks are synchronised \
                 and that --start-at leaves time to start)",
                shard_name(*shard),
                late.as_secs_f64()
            ),
            Notice::ReplayingTimestamps => {
                f.write_str("The input trace has timestamps: replaying them on a fixed schedule.")
            }
            Notice::SweepPoint {
                number,
                total,
                label,
            } => write!(f, "Sweep point {number}/{total}: {label}"),
            Notice::ProfileRun {
                number,
                total,
                label,
            } => write!(f, "Profile run {number}/{total} ({label})"),
            Notice::RunFailed { label, error } => write!(f, "error: {label}: {error}"),
            Notice::TooFewRunsToAggregate { succeeded, total } => write!(
                f,
                "Only {succeeded} of {total} profile runs succeeded: no aggregate written (it \
                 needs 2)."
            ),
            Notice::WritingParquet { path, records } => write!(
                f,
                "Writing {} from {records} records (about {} s)…",
                path.display(),
                seconds(PARQUET_TIME_PER_RECORD * u32::try_from(*records).unwrap_or(u32::MAX))
            ),
            Notice::LateReads(lateness) => write!(
                f,
                "{} of {} response reads ({:.1} %) came more than {} ms after their bytes \
                 arrived ({} more than {} ms, the latest {:.1} ms late): the client's CPUs \
                 were busy. Chunks that arrived closer together than that share the later \
                 one's stamp, so TTFT and ITL may be late by up to as much \
                 (docs/metrics.md, \"Where stamps come from\").",
                lateness.late,
                lateness.reads,
                lateness.late_share() * 100.0,
                ReadLateness::LATE.as_millis(),
                lateness.very_late,
                ReadLateness::VERY_LATE.as_millis(),
                lateness.latest.as_secs_f64() * 1e3,
            ),
            Notice::Aggregated {
                runs,
                total,
                confidence_level,
                dir,
            } => write!(
                f,
                "Aggregated {runs} of {total} profile runs (confidence level \
                 {confidence_level}): {}",
                std::path::absolute(dir)
                    .unwrap_or_else(|_| dir.to_path_buf())
                    .display()
            ),
        }
    }
}

/// About how long writing one Parquet row from its JSONL line takes (bench/README.md).
const PARQUET_TIME_PER_RECORD: Duration = Duration::from_micros(6);

/// From which share of late reads [`Notice::LateReads`] is given: one in a hundred.
pub const LATE_READS_NOTICED: f64 = 0.01;

/// The notice for a run's read lateness, when enough reads were late.
pub(crate) fn late_reads(lateness: ReadLateness) -> Option<Notice<'static>> {
    (lateness.late_share() >= LATE_READS_NOTICED).then_some(Notice::LateReads(lateness))
}

/// Seconds to one decimal, without a trailing `.0`: `0.3`, `60`, `1.2`.
fn seconds(duration: Duration) -> String {
    let tenths = (duration.as_secs_f64() * 10.0).round() / 10.0;
    format!("{tenths}")
}

/// "Shard K/N", or "The run" without one.
fn shard_name(shard: Option<Shard>) -> String {
    shard.map_or_else(|| "The run".to_owned(), |shard| format!("Shard {shard}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lateness(late: u64, reads: u64) -> ReadLateness {
        ReadLateness {
            reads,
            late,
            very_late: 4_845,
            latest: Duration::from_micros(21_440),
        }
    }

    /// One late read in a hundred is said; fewer, or no reads at all, are not.
    #[test]
    fn late_reads_are_said_from_one_in_a_hundred() {
        assert!(late_reads(lateness(99, 10_000)).is_none());
        assert!(late_reads(lateness(0, 0)).is_none());
        let notice = late_reads(lateness(79_243, 130_008)).unwrap();
        assert_eq!(
            notice.to_string(),
            "79243 of 130008 response reads (61.0 %) came more than 1 ms after their bytes \
             arrived (4845 more than 5 ms, the latest 21.4 ms late): the client's CPUs were \
             busy. Chunks that arrived closer together than that share the later one's \
             stamp, so TTFT and ITL may be late by up to as much (docs/metrics.md, \
             \"Where stamps come from\")."
        );
        assert!(late_reads(lateness(100, 10_000)).is_some());
    }
}
