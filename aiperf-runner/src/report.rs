//! What a run returns: each run's summary and files, the aggregates, the sweep, and
//! how it all ended.

use std::path::PathBuf;

use aiperf_metrics::aggregate::ConfidenceAggregate;
use aiperf_metrics::slo::SloReport;
use aiperf_metrics::sweep::SweepSummary;
use aiperf_metrics::Summary;

/// How an invocation ended, from best to worst as [`Outcome::worst`] ranks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// At least one request succeeded (in every run).
    Completed,
    /// A run completed but missed at least one SLO.
    SlosMissed,
    /// Some requests failed because the client ran out of its own resources (open
    /// files, `ClientResourceError`): the run does not measure the server.
    ClientLimited,
    /// No request of a run succeeded: every one failed, or was still in flight when the
    /// grace period ended (its files still hold the error summary).
    AllFailed,
    /// More requests failed than `load.failed_request_threshold` allows: sending stopped
    /// early and [`Summary::failure_threshold_exceeded`](aiperf_metrics::Summary::failure_threshold_exceeded)
    /// says why; what finished was written.
    TooManyFailures,
    /// Fewer than two runs of a multi-run succeeded, or a sweep point failed.
    RunsFailed,
    /// An artifact could not be written (a full disk): sending stopped at the first
    /// failed write, the summary covers what finished, and
    /// [`Summary::export_failure`](aiperf_metrics::Summary::export_failure) names the
    /// file and the OS error.
    ExportFailed,
    /// The cancellation token stopped the run; what finished was written.
    Cancelled,
}

impl Outcome {
    /// The worst of `outcomes` (`Completed` when empty).
    pub fn worst(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
        outcomes
            .into_iter()
            .max_by_key(|outcome| *outcome as u8)
            .unwrap_or(Outcome::Completed)
    }

    /// A run whose summary enters an aggregate: it completed, SLOs met or not.
    pub fn succeeded(self) -> bool {
        matches!(self, Outcome::Completed | Outcome::SlosMissed)
    }
}

/// One finished run.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The run's metrics.
    pub summary: Summary,
    /// How the run ended.
    pub outcome: Outcome,
    /// The files it wrote.
    pub files: RunFiles,
    /// The GPU telemetry tables as the console shows them, when GPUs answered.
    pub gpu_tables: Option<String>,
    /// Each run-level SLO against the summary (`None` without SLOs).
    pub slo_report: Option<SloReport>,
}

/// Where a run's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    /// The artifact directory.
    pub dir: PathBuf,
    /// `profile_export_aiperf.csv`.
    pub csv: PathBuf,
    /// `profile_export_aiperf.json`.
    pub json: PathBuf,
    /// The raw records, when the export level is `raw`.
    pub raw_records: Option<PathBuf>,
    /// GPU telemetry and server-metrics files.
    pub telemetry: Vec<PathBuf>,
}

/// The aggregate of a multi-run.
#[derive(Debug, Clone)]
pub struct AggregateReport {
    /// Its `aggregate/` directory.
    pub dir: PathBuf,
    /// Mean, spread and confidence interval per metric.
    pub aggregate: ConfidenceAggregate,
}

/// The summary of a sweep.
#[derive(Debug, Clone)]
pub struct SweepReport {
    /// Its `sweep_aggregate/` directory.
    pub dir: PathBuf,
    /// Each point's key metrics.
    pub summary: SweepSummary,
}

/// Everything one [`run`](crate::run) did.
#[derive(Debug, Clone)]
pub struct Report {
    /// How it ended overall.
    pub outcome: Outcome,
    /// Every run that finished, in order.
    pub runs: Vec<RunReport>,
    /// The aggregate of each multi-run that had two successful runs.
    pub aggregates: Vec<AggregateReport>,
    /// The sweep's summary, for a sweep.
    pub sweep: Option<SweepReport>,
}

impl Report {
    /// A report of nothing run: cancelled before the first request.
    pub(crate) fn cancelled() -> Self {
        Self {
            outcome: Outcome::Cancelled,
            runs: Vec::new(),
            aggregates: Vec::new(),
            sweep: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_outcome_wins() {
        use Outcome::*;
        assert_eq!(Outcome::worst([Completed, Completed]), Completed);
        assert_eq!(Outcome::worst([Completed, SlosMissed]), SlosMissed);
        assert_eq!(
            Outcome::worst([SlosMissed, AllFailed, Completed]),
            AllFailed
        );
        assert_eq!(Outcome::worst([RunsFailed, AllFailed]), RunsFailed);
        assert_eq!(Outcome::worst([RunsFailed, Cancelled]), Cancelled);
        assert_eq!(Outcome::worst([]), Completed);
    }
}
