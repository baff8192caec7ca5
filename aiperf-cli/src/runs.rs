//! Several runs in one invocation: `--num-profile-runs N` repeats the benchmark and
//! aggregates the runs with confidence intervals; comma lists run a parameter sweep,
//! one directory per point (each point may itself be a multi-run).
//!
//! Layout under the artifact directory:
//! `profile_runs/run_0001/…` and `aggregate/` for a multi-run; `<point>/…` per sweep
//! point (e.g. `concurrency_4/`, holding `profile_runs/` when multi-run) and
//! `sweep_aggregate/` for a sweep.

use std::path::{Path, PathBuf};

use aiperf_core::config::WarmupConfig;
use aiperf_core::BenchmarkConfig;
use aiperf_metrics::aggregate::{ConfidenceAggregate, FailedRun};
use aiperf_metrics::export::{resolve_artifact_dir, resolve_sweep_artifact_dir};
use aiperf_metrics::slo::Slo;
use aiperf_metrics::sweep::{SweepParameter, SweepPoint, SweepSummary};
use aiperf_metrics::Summary;
use anyhow::Context;

use crate::args::ProfileArgs;
use crate::profile::{Outcome, Session};
use crate::workload::UsageError;

/// The dataset seed of every run of a multi-run without `--random-seed` (as the Python
/// AIPerf's `--set-consistent-seed`).
const CONSISTENT_SEED: u64 = 42;

/// One benchmark configuration to run (`--num-profile-runs` times).
pub struct Point {
    /// The sweep point's directory name; `None` when there is no sweep.
    pub label: Option<String>,
    /// The swept flags and their values here.
    pub parameters: Vec<(String, String)>,
    /// The point's parsed command line.
    pub args: ProfileArgs,
    /// The point's configuration.
    pub config: BenchmarkConfig,
}

/// Runs every point in order and writes the aggregates. All points share one session:
/// one transport, tokenizer and (with `--url mock`) one embedded server.
///
/// Exit outcome: cancelled when Ctrl-C stopped the sequence (what finished is kept);
/// [`Outcome::RunsFailed`] when a multi-run kept fewer than two successful runs or a
/// sweep point failed; SLOs missed when a successful run missed one.
pub async fn run_points(
    mut points: Vec<Point>,
    slos: &[Slo],
    cli_command: String,
) -> anyhow::Result<Outcome> {
    let Some(first) = points.first_mut() else {
        anyhow::bail!("nothing to run");
    };
    let Some(session) = Session::start(&first.args, &mut first.config).await? else {
        return Ok(Outcome::Cancelled);
    };
    let is_sweep = first.label.is_some();
    // One directory holds every point of a sweep.
    let root = if is_sweep {
        resolve_sweep_artifact_dir(&first.config)
    } else {
        resolve_artifact_dir(&first.config)
    };
    let runs = &first.args.runs;
    let (sweep_type, sweep_cooldown, sweep_table) = (
        runs.sweep_type,
        runs.parameter_sweep_cooldown_seconds,
        !runs.no_sweep_table,
    );

    let mut results = Vec::with_capacity(points.len());
    let total = points.len();
    for (i, mut point) in points.into_iter().enumerate() {
        if i > 0 {
            session.cool_down(sweep_cooldown).await;
        }
        if session.is_cancelled() {
            break;
        }
        session.adopt(&mut point.config);
        let dir = match &point.label {
            Some(label) => {
                eprintln!("Sweep point {}/{total}: {label}", i + 1);
                root.join(label)
            }
            None => root.clone(),
        };
        let result = run_point(&session, &point, &dir, slos, &cli_command).await?;
        results.push((point, result));
    }

    if is_sweep {
        let summary = SweepSummary {
            sweep_type: sweep_type.name().into(),
            points: results
                .iter()
                .map(|(point, result)| SweepPoint {
                    label: point.label.clone().unwrap_or_default(),
                    parameters: point
                        .parameters
                        .iter()
                        .map(|(name, value)| SweepParameter {
                            name: name.clone(),
                            value: value.parse().unwrap_or(f64::NAN),
                        })
                        .collect(),
                    metrics: result.metrics.clone(),
                })
                .collect(),
        };
        let dir = root.join("sweep_aggregate");
        summary.write_files(&dir)?;
        if sweep_table {
            print!("{}", summary.render_table());
        }
        println!("Sweep Summary: {}", absolute(&dir).display());
    }
    let outcomes: Vec<Outcome> = results.iter().map(|(_, r)| r.outcome).collect();
    Ok(if session.is_cancelled() {
        Outcome::Cancelled
    } else {
        combine(&outcomes)
    })
}

/// How a point ended and its key metrics for the sweep summary (`None`: it failed).
struct PointResult {
    outcome: Outcome,
    metrics: Option<Vec<Option<f64>>>,
}

/// The worst outcome of the points, as the exit status reports it.
fn combine(outcomes: &[Outcome]) -> Outcome {
    [
        Outcome::Cancelled,
        Outcome::RunsFailed,
        Outcome::AllFailed,
        Outcome::SlosMissed,
    ]
    .into_iter()
    .find(|worst| outcomes.contains(worst))
    .unwrap_or(Outcome::Completed)
}

async fn run_point(
    session: &Session,
    point: &Point,
    dir: &Path,
    slos: &[Slo],
    cli_command: &str,
) -> anyhow::Result<PointResult> {
    let runs = &point.args.runs;
    let count = runs.num_profile_runs;
    if count == 1 {
        write_run_config(dir, &point.config)?;
        let report = match session
            .run_once(
                &point.args,
                point.config.clone(),
                Some(dir),
                slos,
                cli_command.to_owned(),
            )
            .await
        {
            Ok(report) => report,
            Err(error) if error.is::<UsageError>() => return Err(error),
            Err(error) => {
                eprintln!("error: {error:#}");
                return Ok(PointResult {
                    outcome: Outcome::RunsFailed,
                    metrics: None,
                });
            }
        };
        let metrics =
            succeeded(report.outcome).then(|| SweepPoint::metrics_of_run(&report.summary));
        return Ok(PointResult {
            outcome: report.outcome,
            metrics,
        });
    }

    let mut config = point.config.clone();
    if runs.consistent_seed() && config.input.random_seed.is_none() {
        config.input.random_seed = Some(CONSISTENT_SEED);
    }
    let mut successes: Vec<(String, Summary)> = Vec::new();
    let mut failures: Vec<FailedRun> = Vec::new();
    let mut slos_missed = false;
    for run in 1..=count {
        if run > 1 {
            session.cool_down(runs.profile_run_cooldown_seconds).await;
            if runs.warmup_only_before_first_run() {
                config.load.warmup = WarmupConfig::default();
            }
        }
        if session.is_cancelled() {
            break;
        }
        let label = format!("run_{run:04}");
        eprintln!("Profile run {run}/{count} ({label})");
        let run_dir = dir.join("profile_runs").join(&label);
        write_run_config(&run_dir, &config)?;
        let result = session
            .run_once(
                &point.args,
                config.clone(),
                Some(&run_dir),
                slos,
                cli_command.to_owned(),
            )
            .await;
        match result {
            Ok(report) if succeeded(report.outcome) => {
                slos_missed |= report.outcome == Outcome::SlosMissed;
                successes.push((label, report.summary));
            }
            Ok(report) => failures.push(FailedRun {
                label,
                error: describe_failure(report.outcome).into(),
            }),
            Err(error) if error.is::<UsageError>() => return Err(error),
            Err(error) => {
                eprintln!("error: {label}: {error:#}");
                failures.push(FailedRun {
                    label,
                    error: format!("{error:#}"),
                });
            }
        }
    }

    let cancelled = session.is_cancelled();
    if successes.len() < 2 {
        eprintln!(
            "Only {} of {count} profile runs succeeded: no aggregate written (it needs 2).",
            successes.len()
        );
        return Ok(PointResult {
            outcome: if cancelled {
                Outcome::Cancelled
            } else {
                Outcome::RunsFailed
            },
            metrics: None,
        });
    }
    let labelled: Vec<(String, &Summary)> = successes
        .iter()
        .map(|(label, summary)| (label.clone(), summary))
        .collect();
    // A run cut short by Ctrl-C counts as failed; the runs never started are not listed.
    let mut aggregate = ConfidenceAggregate::from_runs(
        &labelled,
        failures,
        runs.confidence_level,
        runs.profile_run_cooldown_seconds,
    )?;
    // The runs asked for, also when Ctrl-C left some unstarted.
    aggregate.num_profile_runs = count as usize;
    let aggregate_dir = dir.join("aggregate");
    aggregate.write_files(&aggregate_dir)?;
    eprintln!(
        "Aggregated {} of {count} profile runs (confidence level {}): {}",
        aggregate.run_labels.len(),
        runs.confidence_level,
        absolute(&aggregate_dir).display()
    );
    let outcome = if cancelled {
        Outcome::Cancelled
    } else if slos_missed {
        Outcome::SlosMissed
    } else {
        Outcome::Completed
    };
    Ok(PointResult {
        outcome,
        metrics: Some(SweepPoint::metrics_of_runs(&aggregate)),
    })
}

/// `run_config.json`: the configuration the run was given (warmup and seed as this
/// run has them), so a single run of a sequence can be understood and repeated.
/// Secrets (API key, header values) are not part of the serialised configuration.
fn write_run_config(dir: &Path, config: &BenchmarkConfig) -> anyhow::Result<()> {
    let path = dir.join("run_config.json");
    std::fs::create_dir_all(dir)
        .and_then(|()| {
            let json = serde_json::to_string_pretty(config).map_err(std::io::Error::other)?;
            std::fs::write(&path, json)
        })
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A run whose summary enters the aggregate: it completed, SLOs met or not.
fn succeeded(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::Completed | Outcome::SlosMissed)
}

fn describe_failure(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Cancelled => "cancelled by Ctrl-C",
        _ => "every request failed",
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_point_decides_the_outcome() {
        use Outcome::*;
        assert_eq!(combine(&[Completed, Completed]), Completed);
        assert_eq!(combine(&[Completed, SlosMissed]), SlosMissed);
        assert_eq!(combine(&[SlosMissed, AllFailed, Completed]), AllFailed);
        assert_eq!(combine(&[RunsFailed, AllFailed]), RunsFailed);
        assert_eq!(combine(&[RunsFailed, Cancelled]), Cancelled);
    }
}
