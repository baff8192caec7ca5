//! Several runs in one invocation: a multi-run repeats the benchmark and aggregates the
//! runs with confidence intervals; a sweep runs one configuration per point, one
//! directory each (each point may itself be a multi-run).
//!
//! Layout under the artifact directory:
//! `profile_runs/run_0001/…` and `aggregate/` for a multi-run; `<point>/…` per sweep
//! point (e.g. `concurrency_4/`, holding `profile_runs/` when multi-run, and its
//! `aggregate/` either way) and `sweep_aggregate/` for a sweep.

use std::path::Path;

use aiperf_core::config::WarmupConfig;
use aiperf_core::ValidatedConfig;
use aiperf_metrics::aggregate::{ConfidenceAggregate, FailedRun};
use aiperf_metrics::export::{resolve_artifact_dir, resolve_sweep_artifact_dir};
use aiperf_metrics::sweep::{SweepParameter, SweepPoint as SweepSummaryPoint, SweepSummary};
use aiperf_metrics::Summary;

use crate::config_file::RunConfig;
use crate::error::ErrorKind;
use crate::hooks::{Notice, RunHooks};
use crate::report::{AggregateReport, Outcome, Report, SweepReport};
use crate::session::Session;
use crate::shard::{PlannedPoint, SweepPlan};
use crate::spec::{RunSpec, CONSISTENT_SEED};
use crate::RunError;

/// Runs what `spec` asks for with `session`: one run, a multi-run, or a sweep.
pub(crate) async fn run(
    session: &Session,
    spec: &RunSpec,
    hooks: &mut dyn RunHooks,
) -> Result<Report, RunError> {
    let mut report = Report {
        outcome: Outcome::Completed,
        runs: Vec::new(),
        aggregates: Vec::new(),
        sweep: None,
    };
    let benchmark = session.adopt(&spec.benchmark)?;
    let Some(sweep) = &spec.sweep else {
        let dir = resolve_artifact_dir(&benchmark);
        report.outcome = if spec.runs.count == 1 {
            // The configuration as given (`mock` stays `mock`), its seed drawn here so
            // that run_config.json records it.
            let config = spec.benchmark.clone().with_seed_drawn(rand::random::<u64>);
            let run = session.run_once(spec, config.clone(), None, hooks).await?;
            write_run_config(&run.files.dir, spec, &config)?;
            hooks.run_finished(&run);
            let outcome = run.outcome;
            report.runs.push(run);
            outcome
        } else {
            run_point(
                session,
                spec,
                spec.benchmark.clone(),
                &dir,
                &mut report,
                hooks,
            )
            .await?
        };
        return Ok(report);
    };

    // One directory holds every point of a sweep.
    let root = resolve_sweep_artifact_dir(&benchmark);
    if benchmark.load.shard.is_some() {
        sweep_plan(sweep).write(&root)?;
    }
    let total = sweep.points.len();
    let mut outcomes = Vec::with_capacity(total);
    let mut summary_points = Vec::with_capacity(total);
    for (i, point) in sweep.points.iter().enumerate() {
        if i > 0 {
            session.cool_down(sweep.cooldown).await;
        }
        if session.is_cancelled() {
            break;
        }
        hooks.notice(&Notice::SweepPoint {
            number: i + 1,
            total,
            label: &point.label,
        });
        let runs_before = (report.runs.len(), report.aggregates.len());
        let dir = root.join(&point.label);
        // Checked against the session before anything runs; each run adopts it again.
        session.adopt(&point.benchmark)?;
        let config = point.benchmark.clone();
        let outcome = match run_point(session, spec, config, &dir, &mut report, hooks).await {
            Ok(outcome) => outcome,
            Err(error) if error.kind() == ErrorKind::Usage => return Err(error),
            Err(error) => {
                hooks.notice(&Notice::RunFailed {
                    label: &point.label,
                    error: &error,
                });
                Outcome::RunsFailed
            }
        };
        let aggregate = if !outcome.succeeded() {
            None
        } else if report.aggregates.len() > runs_before.1 {
            report.aggregates.last().map(|a| a.aggregate.clone())
        } else {
            // A point run once gets its aggregate too, as 0.13 writes it: every
            // statistic a point estimate, in the same place as a multi-run point's.
            let run = report.runs[runs_before.0..].last();
            let aggregate = run.map(|run| {
                ConfidenceAggregate::from_single_run(
                    "run_0001".into(),
                    &run.summary,
                    spec.runs.confidence_level,
                    spec.runs.cooldown.as_secs_f64(),
                )
            });
            if let Some(aggregate) = &aggregate {
                aggregate.write_files(&dir.join("aggregate"))?;
            }
            aggregate
        };
        outcomes.push(outcome);
        summary_points.push(summary_point(&point.label, &point.parameters, aggregate));
    }
    let summary = SweepSummary {
        sweep_type: sweep.sweep_type.name().into(),
        points: summary_points,
    };
    let dir = root.join("sweep_aggregate");
    summary.write_files(&dir)?;
    hooks.sweep_finished(&summary, &dir);
    report.sweep = Some(SweepReport { dir, summary });
    report.outcome = if session.is_cancelled() {
        Outcome::Cancelled
    } else {
        Outcome::worst(outcomes)
    };
    Ok(report)
}

/// Runs one configuration (`runs.count` times) into `dir`, adding what finished to
/// `report`; the point's outcome.
async fn run_point(
    session: &Session,
    spec: &RunSpec,
    config: ValidatedConfig,
    dir: &Path,
    report: &mut Report,
    hooks: &mut dyn RunHooks,
) -> Result<Outcome, RunError> {
    let runs = &spec.runs;
    let count = runs.count;
    if count == 1 {
        let config = config.with_seed_drawn(rand::random::<u64>);
        write_run_config(dir, spec, &config)?;
        let run = session.run_once(spec, config, Some(dir), hooks).await?;
        hooks.run_finished(&run);
        let outcome = run.outcome;
        report.runs.push(run);
        return Ok(outcome);
    }

    let mut config = if runs.consistent_seed {
        config.with_seed_drawn(|| CONSISTENT_SEED)
    } else {
        config
    };
    let mut successes: Vec<(String, Summary)> = Vec::new();
    let mut failures: Vec<FailedRun> = Vec::new();
    let mut slos_missed = false;
    for run in 1..=count {
        if run > 1 {
            session.cool_down(runs.cooldown).await;
            if runs.warmup_only_before_first_run && config.load.warmup.is_enabled() {
                config = config.modified(|c| c.load.warmup = WarmupConfig::default())?;
            }
        }
        if session.is_cancelled() {
            break;
        }
        let label = format!("run_{run:04}");
        hooks.notice(&Notice::ProfileRun {
            number: run,
            total: count,
            label: &label,
        });
        let run_dir = dir.join("profile_runs").join(&label);
        let run_config = config.clone().with_seed_drawn(rand::random::<u64>);
        write_run_config(&run_dir, spec, &run_config)?;
        match session
            .run_once(spec, run_config, Some(&run_dir), hooks)
            .await
        {
            Ok(run) => {
                hooks.run_finished(&run);
                if run.outcome.succeeded() {
                    slos_missed |= run.outcome == Outcome::SlosMissed;
                    successes.push((label, run.summary.clone()));
                } else {
                    failures.push(FailedRun {
                        label,
                        error: describe_failure(run.outcome).into(),
                    });
                }
                report.runs.push(run);
            }
            Err(error) if error.kind() == ErrorKind::Usage => return Err(error),
            Err(error) => {
                hooks.notice(&Notice::RunFailed {
                    label: &label,
                    error: &error,
                });
                failures.push(FailedRun {
                    label,
                    error: error.to_string(),
                });
            }
        }
    }

    let cancelled = session.is_cancelled();
    if successes.len() < 2 {
        hooks.notice(&Notice::TooFewRunsToAggregate {
            succeeded: successes.len(),
            total: count,
        });
        return Ok(if cancelled {
            Outcome::Cancelled
        } else {
            Outcome::RunsFailed
        });
    }
    let labelled: Vec<(String, &Summary)> = successes
        .iter()
        .map(|(label, summary)| (label.clone(), summary))
        .collect();
    // A run cut short by cancellation counts as failed; runs never started are not listed.
    let mut aggregate = ConfidenceAggregate::from_runs(
        &labelled,
        failures,
        runs.confidence_level,
        runs.cooldown.as_secs_f64(),
    )?;
    // The runs asked for, also when cancellation left some unstarted.
    aggregate.num_profile_runs = count as usize;
    let aggregate_dir = dir.join("aggregate");
    aggregate.write_files(&aggregate_dir)?;
    hooks.notice(&Notice::Aggregated {
        runs: aggregate.run_labels.len(),
        total: count,
        confidence_level: runs.confidence_level,
        dir: &aggregate_dir,
    });
    report.aggregates.push(AggregateReport {
        dir: aggregate_dir,
        aggregate,
    });
    Ok(if cancelled {
        Outcome::Cancelled
    } else if slos_missed {
        Outcome::SlosMissed
    } else {
        Outcome::Completed
    })
}

/// `run_config.json`: the configuration the run was given (warmup and seed as this
/// run has them) and the options around it ([`RunConfig`]), so that
/// `aiperf profile -f run_config.json` repeats the run. Secrets (API key, header values)
/// are not part of the serialised configuration.
fn write_run_config(dir: &Path, spec: &RunSpec, config: &ValidatedConfig) -> Result<(), RunError> {
    let path = dir.join("run_config.json");
    std::fs::create_dir_all(dir)
        .and_then(|()| {
            let run_config = RunConfig::of_run(spec, config);
            let json = serde_json::to_string_pretty(&run_config).map_err(std::io::Error::other)?;
            std::fs::write(&path, json)
        })
        .map_err(RunError::write(&path))
}

fn describe_failure(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Cancelled => "cancelled by Ctrl-C",
        Outcome::TooManyFailures => "more requests failed than the failed-request threshold allows",
        _ => "every request failed",
    }
}

/// What `aiperf merge` needs to rebuild a sharded sweep's summary.
fn sweep_plan(sweep: &crate::spec::Sweep) -> SweepPlan {
    SweepPlan {
        sweep_type: sweep.sweep_type.name().into(),
        points: sweep
            .points
            .iter()
            .map(|point| PlannedPoint {
                label: point.label.clone(),
                parameters: point.parameters.clone(),
            })
            .collect(),
    }
}

/// A point of the sweep summary: its swept values as numbers, and its aggregate (`None`
/// when it failed).
pub(crate) fn summary_point(
    label: &str,
    parameters: &[(String, String)],
    aggregate: Option<ConfidenceAggregate>,
) -> SweepSummaryPoint {
    SweepSummaryPoint {
        label: label.to_owned(),
        parameters: parameters
            .iter()
            .map(|(name, value)| SweepParameter {
                name: name.clone(),
                value: value.parse().unwrap_or(f64::NAN),
            })
            .collect(),
        aggregate,
    }
}
