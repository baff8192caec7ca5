//! One shard of a benchmark run by several processes (`load.shard`): the shared start
//! instant every shard waits for, the run identity that tells shards of one benchmark from
//! shards of another, and the `shard.json` manifest each shard writes beside its
//! artifacts for `aiperf merge`.
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use aiperf_runner::shard::parse_start_at;
//!
//! let at = parse_start_at("2026-11-26T10:00:00Z")?;
//! assert_eq!(at, UNIX_EPOCH + Duration::from_secs(1_795_687_200));
//! assert_eq!(parse_start_at("1795687200.5")?, at + Duration::from_millis(500));
//! # Ok::<(), aiperf_runner::shard::StartAtError>(())
//! ```

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aiperf_core::config::Shard;
use aiperf_core::{BenchmarkConfig, CancellationToken};
use aiperf_metrics::slo::Slo;
use aiperf_metrics::{MetricsContext, Summary, SummaryAdditions};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock_reference::ClockOffset;
use crate::RunError;

/// The manifest's file name in a shard's artifact directory.
pub const MANIFEST_FILE: &str = "shard.json";

/// The sweep plan's file name in a sharded sweep's directory.
pub const SWEEP_PLAN_FILE: &str = "sweep_plan.json";

/// A shard that starts later than this after the shared instant says so: its first
/// arrivals are late against the other shards'.
pub const LATE_START: Duration = Duration::from_millis(100);

/// A start instant that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid start time {0:?}: give an RFC 3339 time (2026-11-26T10:00:00Z) or seconds \
     since the Unix epoch"
)]
pub struct StartAtError(pub String);

/// The instant `text` names: an RFC 3339 / ISO 8601 date-time (UTC when it has no offset)
/// or seconds since the Unix epoch (fractions allowed).
pub fn parse_start_at(text: &str) -> Result<SystemTime, StartAtError> {
    let invalid = || StartAtError(text.to_owned());
    let trimmed = text.trim();
    let seconds = match trimmed.parse::<f64>() {
        Ok(seconds) => seconds,
        Err(_) => aiperf_datasets::custom::iso_time::unix_ms(trimmed).ok_or_else(invalid)? / 1e3,
    };
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(invalid());
    }
    Duration::try_from_secs_f64(seconds)
        .ok()
        .and_then(|offset| UNIX_EPOCH.checked_add(offset))
        .ok_or_else(invalid)
}

/// `at` as nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Waits until the wall clock reaches `start_at`; returns how late the wait ended (zero
/// when on time or early), or `None` when cancelled first. Sleeps in short steps so that a
/// wall-clock correction (NTP) during a long wait still ends it on time.
pub(crate) async fn wait_for_start(
    start_at: SystemTime,
    cancel: &CancellationToken,
) -> Option<Duration> {
    const STEP: Duration = Duration::from_millis(250);
    loop {
        let now = SystemTime::now();
        let Ok(left) = start_at.duration_since(now) else {
            return Some(now.duration_since(start_at).unwrap_or_default());
        };
        tokio::select! {
            () = tokio::time::sleep(left.min(STEP)) => {}
            () = cancel.cancelled() => return None,
        }
    }
}

/// What identifies a benchmark across its shards: the SHA-256 (first 16 hex digits) of its
/// configuration as JSON, without the parts that differ between shards of one benchmark
/// (the shard, the artifact directory). Secrets are not part of the serialised
/// configuration.
pub fn run_identity(config: &BenchmarkConfig) -> String {
    let mut shared = config.clone();
    shared.load.shard = None;
    shared.output.artifact_dir = None;
    let json = serde_json::to_vec(&shared).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `shard.json`: which shard of which benchmark a run directory holds, and when it
/// started against the shared instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// [`run_identity`] of the benchmark.
    pub run_id: String,
    /// This shard, 0-based.
    pub index: u32,
    /// How many shards the benchmark has.
    pub count: u32,
    /// The shared start instant, ns since the Unix epoch (`None`: started at once).
    pub start_at_ns: Option<u64>,
    /// When this shard began sending, ns since the Unix epoch.
    pub started_ns: u64,
    /// How late after the shared instant it began, ms (0 when on time or without one).
    pub late_ms: f64,
    /// This machine's clock against the clock reference (`--clock-reference`), when one
    /// was given: the times above and the records' wall-clock stamps are then the
    /// reference's. Without one, shards are assumed to have synchronised clocks (NTP).
    #[serde(default)]
    pub clock: Option<ClockOffset>,
    /// What the shard's run came to, for `aiperf merge`; `None` until it finished.
    pub results: Option<ShardResults>,
}

/// What `aiperf merge` needs of a shard's run besides its record digests: the facts of the
/// run as a whole that the summary reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardResults {
    /// The configuration that ran (the whole benchmark's, with this shard in `load.shard`).
    pub config: BenchmarkConfig,
    /// Which metrics applied.
    pub context: MetricsContext,
    /// The profiling phase's window, Unix ns.
    pub window_ns: Option<(u64, u64)>,
    /// `--slice-duration`, ns.
    pub slice_duration_ns: Option<u64>,
    /// The run was cancelled before its stop condition.
    pub was_cancelled: bool,
    /// Requests still in flight when the run ended early.
    pub cancelled_in_flight: u64,
    /// The grace period expired with requests in flight.
    pub grace_period_expired: bool,
    /// The first export that failed, if any.
    pub export_failure: Option<String>,
    /// Why sending stopped on too many failures, if it did.
    pub failure_threshold_exceeded: Option<String>,
    /// The shard's command line.
    pub cli_command: Option<String>,
    /// What telemetry added to the shard's summary.
    pub additions: SummaryAdditions,
    /// The run-level SLOs the benchmark is checked against (`RunSpec::slos`).
    #[serde(default)]
    pub slos: Vec<Slo>,
}

impl ShardResults {
    /// The results of a run that ended with `summary`, sliced by `slice_duration` and
    /// checked against `slos`.
    pub fn of(summary: &Summary, slice_duration: Option<Duration>, slos: &[Slo]) -> Self {
        Self {
            config: summary.config.clone(),
            context: summary.context,
            window_ns: summary.start_time_ns.zip(summary.end_time_ns),
            slice_duration_ns: slice_duration
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            was_cancelled: summary.was_cancelled,
            cancelled_in_flight: summary.cancelled_in_flight,
            grace_period_expired: summary.grace_period_expired,
            export_failure: summary.export_failure.clone(),
            failure_threshold_exceeded: summary.failure_threshold_exceeded.clone(),
            cli_command: summary.cli_command.clone(),
            additions: summary.additions.clone(),
            slos: slos.to_vec(),
        }
    }
}

impl ShardManifest {
    /// The manifest of `shard` of the benchmark `config`, started at `started`.
    pub fn new(
        config: &BenchmarkConfig,
        shard: Shard,
        start_at: Option<SystemTime>,
        started: SystemTime,
    ) -> Self {
        let late = start_at
            .and_then(|at| started.duration_since(at).ok())
            .unwrap_or_default();
        Self {
            run_id: run_identity(config),
            index: shard.index,
            count: shard.count,
            start_at_ns: start_at.map(unix_ns),
            started_ns: unix_ns(started),
            late_ms: late.as_secs_f64() * 1e3,
            clock: None,
            results: None,
        }
    }

    /// Reads `dir/shard.json`.
    pub fn read(dir: &Path) -> Result<Self, std::io::Error> {
        let text = std::fs::read_to_string(dir.join(MANIFEST_FILE))?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// Writes it as `dir/shard.json`.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), RunError> {
        let path = dir.join(MANIFEST_FILE);
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other);
        json.and_then(|json| std::fs::write(&path, json))
            .map_err(RunError::write(path))
    }
}

/// `sweep_plan.json`: the points a sharded sweep runs, written beside them so that
/// `aiperf merge` can rebuild `sweep_aggregate/` from the merged points (its JSON keeps
/// neither the point directories nor the parameters of failed points).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// `grid` or `zip`.
    pub sweep_type: String,
    /// The points in the order they run.
    pub points: Vec<PlannedPoint>,
}

/// One point of a [`SweepPlan`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedPoint {
    /// The point's directory name, e.g. `concurrency_8`.
    pub label: String,
    /// Each swept flag (underscored) with its value as given.
    pub parameters: Vec<(String, String)>,
}

impl SweepPlan {
    /// Writes it as `dir/sweep_plan.json`.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), RunError> {
        std::fs::create_dir_all(dir).map_err(RunError::write(dir.to_path_buf()))?;
        let path = dir.join(SWEEP_PLAN_FILE);
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other);
        json.and_then(|json| std::fs::write(&path, json))
            .map_err(RunError::write(path))
    }

    /// Reads `dir/sweep_plan.json`; `None` when `dir` holds no sharded sweep.
    pub fn read(dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(dir.join(SWEEP_PLAN_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_read_as_rfc_3339_or_epoch_seconds_and_nothing_else() {
        let at = parse_start_at("2026-11-26T11:00:00+01:00").unwrap();
        assert_eq!(unix_ns(at), 1_795_687_200_000_000_000);
        assert_eq!(parse_start_at(" 1795687200 ").unwrap(), at);
        for bad in ["tomorrow", "-5", "NaN", "2026-13-01T00:00:00Z", ""] {
            assert_eq!(
                parse_start_at(bad).unwrap_err().to_string(),
                format!(
                    "invalid start time {bad:?}: give an RFC 3339 time (2026-11-26T10:00:00Z) \
                     or seconds since the Unix epoch"
                )
            );
        }
    }

    #[test]
    fn shards_of_one_benchmark_share_an_identity_and_other_benchmarks_do_not() {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        config.load.request_count = Some(100);
        let whole = run_identity(&config);
        assert_eq!(whole.len(), 16);
        let mut shard = config.clone();
        shard.load.shard = Shard::new(2, 4);
        shard.output.artifact_dir = Some("results/shard-2".into());
        assert_eq!(run_identity(&shard), whole);
        config.load.request_count = Some(101);
        assert_ne!(run_identity(&config), whole);
    }

    #[tokio::test]
    async fn the_wait_ends_at_the_instant_or_says_how_late_it_is() {
        let cancel = CancellationToken::new();
        let soon = SystemTime::now() + Duration::from_millis(300);
        let late = wait_for_start(soon, &cancel).await.unwrap();
        assert!(SystemTime::now() >= soon);
        assert!(late < Duration::from_secs(2), "{late:?}");
        let past = SystemTime::now() - Duration::from_secs(5);
        let late = wait_for_start(past, &cancel).await.unwrap();
        assert!(late >= Duration::from_secs(5), "{late:?}");
        cancel.cancel();
        let far = SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(wait_for_start(far, &cancel).await, None);
    }
}
