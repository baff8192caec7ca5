//! `aiperf merge`: the run directories of a benchmark's shards ([`crate::shard`]) become
//! one run directory, the one a single process would have written for the same requests.
//!
//! The summary is recomputed from every shard's record digests
//! ([`aiperf_metrics::digest`]): percentiles from the union of the values, never averaged;
//! throughputs over the union of the profiling windows; errors, goodput and time slices
//! from all records. `profile_export.jsonl` and `profile_export.parquet` are interleaved
//! in end-time order with `session_num` renumbered ([`aiperf_metrics::merge`]). Every
//! shard scrapes the same telemetry endpoints over the same window, so the telemetry of
//! the lowest shard stands for the run; its energy-per-token figures are recomputed with
//! the merged token counts. `inputs.json` is the same in every shard (the same dataset
//! from the same seed) and is copied from the lowest one. The merged summary is checked
//! against the benchmark's run-level SLOs, as one process's would be.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use aiperf_runner::merge::{merge, MergeOptions};
//!
//! let shards: Vec<PathBuf> = (0..4).map(|k| PathBuf::from(format!("results/shard-{k}"))).collect();
//! let merged = merge(&shards, "results/merged".as_ref(), &MergeOptions::default())?;
//! println!("{} records, p99 TTFT {:?} ms", merged.records,
//!     merged.summary.metric("time_to_first_token").and_then(|m| m.p99));
//! # Ok::<(), aiperf_runner::merge::MergeError>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aiperf_core::{Clock, Phase, PhaseStats, RunInfo};
use aiperf_metrics::aggregate::ConfidenceAggregate;
use aiperf_metrics::digest::DIGEST_FILE;
use aiperf_metrics::export::{export_paths, write_results_ready, write_summary_files};
use aiperf_metrics::merge::absorb_digests;
use aiperf_metrics::slo::SloReport;
use aiperf_metrics::sweep::SweepSummary;
use aiperf_metrics::{MetricsError, MetricsSink, Summary};
use serde::Serialize;

use crate::clock_reference::ClockOffset;
use crate::report::Outcome;
use crate::sequence::summary_point;
use crate::shard::{ShardManifest, ShardResults, SweepPlan, MANIFEST_FILE, SWEEP_PLAN_FILE};

/// The merged run's own manifest, beside its artifacts.
pub const MERGE_MANIFEST_FILE: &str = "merge.json";

/// How to merge.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// Merge even when shards of the benchmark are missing (the result is then not the
    /// whole benchmark, and its manifest says which shards it lacks).
    pub allow_missing: bool,
    /// Wait up to this long for every directory to hold a finished shard, checking every
    /// second (a merge started beside the shards, as the Kubernetes merge Job is).
    /// `None`: the shards must have finished already.
    pub wait: Option<Duration>,
}

/// What a merge wrote.
#[derive(Debug)]
pub struct MergeReport {
    /// The merged run directory.
    pub dir: PathBuf,
    /// The benchmark's run identity.
    pub run_id: String,
    /// How many shards the benchmark has.
    pub count: u32,
    /// The shards merged, by index.
    pub merged: Vec<u32>,
    /// The shards that were not there (only with [`MergeOptions::allow_missing`]).
    pub missing: Vec<u32>,
    /// Profiling records in the merged run.
    pub records: u64,
    /// The merged run's summary, as written.
    pub summary: Summary,
    /// Shard files that were left out of the merged run, and why.
    pub left_out: Vec<String>,
    /// The merged run checked against the benchmark's run-level SLOs, if it has any.
    pub slo_report: Option<SloReport>,
    /// What the merge could not make exact, one sentence each (shards on different
    /// time axes).
    pub warnings: Vec<String>,
    /// How the merged run ended, judged as one process judges its run.
    pub outcome: Outcome,
}

/// Why shard directories could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No directories were given.
    #[error("no shard directories to merge")]
    NoShards,
    /// A directory has no readable `shard.json`.
    #[error(
        "{dir}: not a shard's run directory ({source}); shards are run with --shard K/N or \
         --shard-count N"
    )]
    NotAShard {
        /// The directory.
        dir: PathBuf,
        /// Why `shard.json` could not be read.
        #[source]
        source: std::io::Error,
    },
    /// A shard's manifest has no results: it did not finish.
    #[error("{dir}: shard {index} did not finish (its {MANIFEST_FILE} has no results)")]
    Unfinished {
        /// The directory.
        dir: PathBuf,
        /// Its shard index.
        index: u32,
    },
    /// Shards of different benchmarks.
    #[error(
        "{dir} holds shard {index} of {count} of run {found}, but {first} holds one of {first_count} \
         of run {expected}: merge the shards of one benchmark only"
    )]
    MixedRuns {
        /// The directory that differs.
        dir: PathBuf,
        /// Its shard index.
        index: u32,
        /// Its shard count.
        count: u32,
        /// Its run identity.
        found: String,
        /// The first directory.
        first: PathBuf,
        /// The first directory's shard count.
        first_count: u32,
        /// The first directory's run identity.
        expected: String,
    },
    /// One shard given twice.
    #[error("shard {index} appears twice: {first} and {second}")]
    DuplicateShard {
        /// The shard index.
        index: u32,
        /// The first directory holding it.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// Shards are missing and [`MergeOptions::allow_missing`] is off.
    #[error(
        "shards {} of {count} are missing; merge them too, or pass --allow-missing to merge \
         the others alone", shard_list(.missing)
    )]
    MissingShards {
        /// The missing indices.
        missing: Vec<u32>,
        /// How many shards the benchmark has.
        count: u32,
    },
    /// [`MergeOptions::wait`] passed before every shard finished.
    #[error(
        "waited {}s for the shards, but these have not finished: {}",
        .waited.as_secs(), .unfinished.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    Timeout {
        /// How long it waited.
        waited: Duration,
        /// The directories without a finished shard.
        unfinished: Vec<PathBuf>,
    },
    /// The merged runs of `--num-profile-runs` cannot be aggregated.
    #[error(transparent)]
    Aggregate(#[from] aiperf_metrics::aggregate::AggregateError),
    /// Reading a shard's records or writing the merged files failed.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// Writing or copying a file of the merged run failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Shard indices as text: `0, 1, 3`.
pub fn shard_list(indices: &[u32]) -> String {
    let items: Vec<String> = indices.iter().map(u32::to_string).collect();
    items.join(", ")
}

/// One shard to merge.
struct ShardDir {
    dir: PathBuf,
    manifest: ShardManifest,
    results: ShardResults,
}

/// What [`merge_runs`] wrote.
#[derive(Debug)]
pub struct MergedRuns {
    /// Each merged run, in path order.
    pub runs: Vec<MergeReport>,
    /// The `aggregate` folders written from merged `--num-profile-runs` runs.
    pub aggregates: Vec<PathBuf>,
    /// A sharded sweep's summary rebuilt from the merged points, and its folder.
    pub sweep: Option<(SweepSummary, PathBuf)>,
}

/// Merges shard directories that are runs themselves (see [`merge`]) or hold runs below
/// them: the `profile_runs/run_NNNN` folders of `--num-profile-runs`, or a sweep's
/// points. Every run folder of the first directory is merged across all of them into
/// the same place under `output`; the merged runs of each `profile_runs` folder are
/// aggregated again into its `aggregate` folder, as one process aggregates its runs.
pub fn merge_runs(
    dirs: &[PathBuf],
    output: &Path,
    options: &MergeOptions,
) -> Result<MergedRuns, MergeError> {
    let Some(first) = dirs.first() else {
        return Err(MergeError::NoShards);
    };
    let mut relative = Vec::new();
    find_runs(first, Path::new(""), 4, &mut relative);
    if relative.is_empty() || relative == [PathBuf::new()] {
        return Ok(MergedRuns {
            runs: vec![merge(dirs, output, options)?],
            aggregates: Vec::new(),
            sweep: None,
        });
    }
    relative.sort();
    let mut runs = Vec::with_capacity(relative.len());
    for rel in &relative {
        let shard_dirs: Vec<PathBuf> = dirs.iter().map(|d| d.join(rel)).collect();
        runs.push(merge(&shard_dirs, &output.join(rel), options)?);
    }
    let aggregates = aggregate_profile_runs(first, output, &relative, &runs)?;
    let sweep = match SweepPlan::read(first) {
        Some(plan) => Some(rebuild_sweep(
            &plan,
            first,
            output,
            &relative,
            &runs,
            &aggregates,
        )?),
        None => None,
    };
    Ok(MergedRuns {
        runs,
        aggregates: aggregates.into_values().map(|(dir, _)| dir).collect(),
        sweep,
    })
}

/// The sweep summary of the merged points, written to `output/sweep_aggregate` as one
/// process writes it: each point's aggregate of its merged runs (a point estimate for a
/// point run once, written into its `aggregate` folder too); no aggregate for a point
/// that failed.
fn rebuild_sweep(
    plan: &SweepPlan,
    first: &Path,
    output: &Path,
    relative: &[PathBuf],
    runs: &[MergeReport],
    aggregates: &BTreeMap<PathBuf, (PathBuf, ConfidenceAggregate)>,
) -> Result<(SweepSummary, PathBuf), MergeError> {
    let mut points = Vec::with_capacity(plan.points.len());
    for planned in &plan.points {
        let point = Path::new(&planned.label);
        let merged: Vec<&MergeReport> = relative
            .iter()
            .zip(runs)
            .filter(|(rel, _)| rel.starts_with(point))
            .map(|(_, run)| run)
            .collect();
        let aggregate = if let Some((_, aggregate)) = aggregates.get(point) {
            Some(aggregate.clone())
        } else if let [run] = merged[..] {
            run.outcome.succeeded().then(|| {
                let (confidence, cooldown) = aggregate_settings(first, point);
                ConfidenceAggregate::from_single_run(
                    "run_0001".into(),
                    &run.summary,
                    confidence,
                    cooldown,
                )
            })
        } else {
            None
        };
        if let (Some(aggregate), [_]) = (&aggregate, &merged[..]) {
            aggregate.write_files(&output.join(point).join("aggregate"))?;
        }
        points.push(summary_point(
            &planned.label,
            &planned.parameters,
            aggregate,
        ));
    }
    let summary = SweepSummary {
        sweep_type: plan.sweep_type.clone(),
        points,
    };
    let dir = output.join("sweep_aggregate");
    summary.write_files(&dir)?;
    copy_if_present(&first.join(SWEEP_PLAN_FILE), &output.join(SWEEP_PLAN_FILE))?;
    Ok((summary, dir))
}

/// The folders below `dir` (up to `depth` levels) that hold a shard's run, relative to
/// the top.
fn find_runs(dir: &Path, rel: &Path, depth: u32, found: &mut Vec<PathBuf>) {
    if dir.join(MANIFEST_FILE).is_file() {
        found.push(rel.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    if depth == 0 {
        return;
    }
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            find_runs(
                &entry.path(),
                &rel.join(entry.file_name()),
                depth - 1,
                found,
            );
        }
    }
}

/// For every `…/profile_runs` folder among `relative`: the confidence aggregate of its
/// merged runs, written to the sibling `aggregate` folder under `output` with the
/// confidence level and cool-down the shards' own aggregate recorded.
///
/// Returns each aggregate with its folder, by the point (folder relative to the top) it
/// belongs to.
fn aggregate_profile_runs(
    first: &Path,
    output: &Path,
    relative: &[PathBuf],
    runs: &[MergeReport],
) -> Result<BTreeMap<PathBuf, (PathBuf, ConfidenceAggregate)>, MergeError> {
    let mut groups: BTreeMap<PathBuf, Vec<(String, &Summary)>> = BTreeMap::new();
    for (rel, run) in relative.iter().zip(runs) {
        let Some(parent) = rel.parent().filter(|p| p.ends_with("profile_runs")) else {
            continue;
        };
        let point = parent.parent().unwrap_or(Path::new("")).to_path_buf();
        groups
            .entry(point)
            .or_default()
            .push((file_name(rel), &run.summary));
    }
    let mut written = BTreeMap::new();
    for (point, labelled) in groups {
        if labelled.len() < 2 {
            continue;
        }
        let (confidence, cooldown) = aggregate_settings(first, &point);
        let aggregate =
            ConfidenceAggregate::from_runs(&labelled, Vec::new(), confidence, cooldown)?;
        let dir = output.join(&point).join("aggregate");
        aggregate.write_files(&dir)?;
        written.insert(point, (dir, aggregate));
    }
    Ok(written)
}

/// The confidence level and cool-down a shard's own aggregate of `point` recorded (0.95
/// and 0 s when it has none).
fn aggregate_settings(first: &Path, point: &Path) -> (f64, f64) {
    let shard_aggregate = first
        .join(point)
        .join("aggregate")
        .join(aiperf_metrics::aggregate::AGGREGATE_JSON);
    let metadata = std::fs::read_to_string(&shard_aggregate)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .map(|json| json["metadata"].clone())
        .unwrap_or_default();
    (
        metadata["confidence_level"].as_f64().unwrap_or(0.95),
        metadata["cooldown_seconds"].as_f64().unwrap_or(0.0),
    )
}

/// Merges the shard run directories `dirs` into `output` (see the module documentation).
pub fn merge(
    dirs: &[PathBuf],
    output: &Path,
    options: &MergeOptions,
) -> Result<MergeReport, MergeError> {
    if let Some(wait) = options.wait {
        wait_for_shards(dirs, wait)?;
    }
    let shards = read_shards(dirs)?;
    let first = &shards[0];
    let count = first.manifest.count;
    let present: Vec<u32> = shards.iter().map(|s| s.manifest.index).collect();
    let missing: Vec<u32> = (0..count).filter(|k| !present.contains(k)).collect();
    if !missing.is_empty() && !options.allow_missing {
        return Err(MergeError::MissingShards { missing, count });
    }
    std::fs::create_dir_all(output).map_err(write_error(output))?;

    let mut config = first.results.config.clone();
    config.load.shard = None;
    config.output.artifact_dir = Some(output.to_path_buf());
    let window = union_window(&shards);
    let mut sink = MetricsSink::for_digests(&config, first.results.context)?;
    if let Some(accuracy) = &config.accuracy {
        sink = sink.tally_digested_grades(accuracy.effective_grader());
    }
    if let Some(cli) = &first.results.cli_command {
        sink = sink.with_cli_command(cli.clone());
    }
    if let Some(ns) = first.results.slice_duration_ns {
        sink = sink.with_time_slices(std::time::Duration::from_nanos(ns));
    }
    if let Some((start, _)) = window {
        sink.phase_started(Phase::Profiling, start);
    }
    let digests: Vec<PathBuf> = shards.iter().map(|s| s.dir.join(DIGEST_FILE)).collect();
    let (records, numbers) = absorb_digests(&digests, &mut sink)?;
    let mut summary = sink.summarize(&run_info(&shards, window))?;
    summary.cancelled_in_flight = shards.iter().map(|s| s.results.cancelled_in_flight).sum();
    summary.grace_period_expired = shards.iter().any(|s| s.results.grace_period_expired);
    summary.export_failure = shards.iter().find_map(|s| s.results.export_failure.clone());
    summary.failure_threshold_exceeded = shards
        .iter()
        .find_map(|s| s.results.failure_threshold_exceeded.clone());
    summary.additions = merged_additions(&first.results, &summary);

    let prefix = config.output.export_prefix.as_deref();
    let paths = export_paths(output, prefix);
    let shard_paths: Vec<_> = shards
        .iter()
        .map(|s| export_paths(&s.dir, prefix))
        .collect();
    let mut left_out = Vec::new();
    let jsonl: Vec<PathBuf> = shard_paths.iter().map(|p| p.jsonl.clone()).collect();
    if jsonl.iter().all(|p| p.exists()) {
        aiperf_metrics::merge::merge_jsonl(&jsonl, &numbers, &paths.jsonl)?;
    }
    #[cfg(feature = "parquet")]
    {
        let parquet: Vec<PathBuf> = shard_paths.iter().map(|p| p.parquet.clone()).collect();
        if parquet.iter().all(|p| p.exists()) {
            aiperf_metrics::merge::merge_parquet(&parquet, &numbers, &paths.parquet)?;
        }
    }
    copy_if_present(&shard_paths[0].inputs_json, &paths.inputs_json)?;
    let graded: Vec<PathBuf> = shard_paths
        .iter()
        .map(|p| p.accuracy_jsonl.clone())
        .collect();
    if graded.iter().all(|p| p.exists()) {
        aiperf_metrics::merge::merge_grades_jsonl(&graded, &numbers, &paths.accuracy_jsonl)?;
    }
    copy_telemetry_files(&first.dir, output)?;
    for (file, why) in [
        (
            &shard_paths[0].raw_jsonl,
            "raw exchanges stay in each shard's directory",
        ),
        (
            &shard_paths[0].outputs_json,
            "generated texts stay in each shard's directory",
        ),
    ] {
        if file.exists() {
            left_out.push(format!("{}: {why}", file_name(file)));
        }
    }
    write_summary_files(&summary, &paths)?;
    write_merge_manifest(output, &shards, count, &missing, records)?;
    let failed: Vec<String> = summary.export_failure.iter().cloned().collect();
    write_results_ready(output, summary.was_cancelled, &failed)?;
    let slos = &first.results.slos;
    let slo_report = (!slos.is_empty()).then(|| summary.check_slos(slos));
    let slos_met = slo_report.as_ref().is_none_or(SloReport::passed);
    Ok(MergeReport {
        warnings: clock_warnings(&shards),
        outcome: crate::session::outcome(&summary, slos_met),
        slo_report,
        dir: output.to_path_buf(),
        run_id: first.manifest.run_id.clone(),
        count,
        merged: present,
        missing,
        records,
        summary,
        left_out,
    })
}

/// A sentence when the shards' wall-clock stamps are not on one time axis: some measured
/// against a clock reference and some not, or against different references.
fn clock_warnings(shards: &[ShardDir]) -> Vec<String> {
    let references: Vec<Option<&str>> = shards
        .iter()
        .map(|s| s.manifest.clock.as_ref().map(|c| c.reference.as_str()))
        .collect();
    if references.windows(2).all(|w| w[0] == w[1]) {
        return Vec::new();
    }
    let described: Vec<String> = shards
        .iter()
        .zip(&references)
        .map(|(s, r)| format!("shard {}: {}", s.manifest.index, r.unwrap_or("none")))
        .collect();
    vec![format!(
        "the shards stamped their records against different clock references ({}): \
         their times may be off against each other by the difference of those clocks",
        described.join(", ")
    )]
}

/// Returns once every directory of `dirs` holds a finished shard, or fails after `wait`.
fn wait_for_shards(dirs: &[PathBuf], wait: Duration) -> Result<(), MergeError> {
    let started = Instant::now();
    loop {
        let unfinished: Vec<PathBuf> = dirs
            .iter()
            .filter(|dir| ShardManifest::read(dir).map_or(true, |m| m.results.is_none()))
            .cloned()
            .collect();
        if unfinished.is_empty() {
            return Ok(());
        }
        let waited = started.elapsed();
        if waited >= wait {
            return Err(MergeError::Timeout { waited, unfinished });
        }
        tracing::info!("waiting for {} shards to finish", unfinished.len());
        std::thread::sleep(Duration::from_secs(1).min(wait.saturating_sub(waited)));
    }
}

/// The manifests of `dirs`, checked to be distinct finished shards of one benchmark,
/// in shard order.
fn read_shards(dirs: &[PathBuf]) -> Result<Vec<ShardDir>, MergeError> {
    let mut by_index: BTreeMap<u32, ShardDir> = BTreeMap::new();
    let mut first: Option<(PathBuf, String, u32)> = None;
    for dir in dirs {
        let manifest = ShardManifest::read(dir).map_err(|source| MergeError::NotAShard {
            dir: dir.clone(),
            source,
        })?;
        let (first_dir, expected, first_count) = first
            .get_or_insert_with(|| (dir.clone(), manifest.run_id.clone(), manifest.count))
            .clone();
        if manifest.run_id != expected || manifest.count != first_count {
            return Err(MergeError::MixedRuns {
                dir: dir.clone(),
                index: manifest.index,
                count: manifest.count,
                found: manifest.run_id,
                first: first_dir,
                first_count,
                expected,
            });
        }
        let Some(results) = manifest.results.clone() else {
            return Err(MergeError::Unfinished {
                dir: dir.clone(),
                index: manifest.index,
            });
        };
        let index = manifest.index;
        if let Some(earlier) = by_index.get(&index) {
            return Err(MergeError::DuplicateShard {
                index,
                first: earlier.dir.clone(),
                second: dir.clone(),
            });
        }
        by_index.insert(
            index,
            ShardDir {
                dir: dir.clone(),
                manifest,
                results,
            },
        );
    }
    let shards: Vec<ShardDir> = by_index.into_values().collect();
    if shards.is_empty() {
        return Err(MergeError::NoShards);
    }
    Ok(shards)
}

/// From the earliest shard's profiling start to the latest one's end, Unix ns.
fn union_window(shards: &[ShardDir]) -> Option<(u64, u64)> {
    let windows = shards.iter().filter_map(|s| s.results.window_ns);
    windows.reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

/// The run as the merged sink summarises it: one profiling phase over the union window.
fn run_info(shards: &[ShardDir], window: Option<(u64, u64)>) -> RunInfo {
    let was_cancelled = shards.iter().any(|s| s.results.was_cancelled);
    RunInfo {
        clock: Some(Clock::unix()),
        phases: window
            .map(|(start_ns, end_ns)| PhaseStats::window(Phase::Profiling, start_ns, end_ns))
            .into_iter()
            .collect(),
        was_cancelled,
    }
}

/// The lowest shard's telemetry additions, with the figures that divide by the run's
/// tokens or users recomputed for the whole benchmark.
fn merged_additions(
    first: &ShardResults,
    summary: &Summary,
) -> aiperf_metrics::summary::SummaryAdditions {
    let mut additions = first.additions.clone();
    let energy = additions
        .metrics
        .iter()
        .find(|m| m.tag == "total_gpu_energy")
        .map(|m| m.value);
    let output_tokens = summary.metric("total_output_tokens").map(|m| m.avg);
    let users = summary.config.load.concurrency.map(|c| c as f64);
    for metric in &mut additions.metrics {
        match (metric.tag.as_str(), energy) {
            ("output_tokens_per_joule", Some(energy)) if energy > 0.0 => {
                if let Some(tokens) = output_tokens {
                    metric.value = tokens / energy;
                }
            }
            ("energy_per_user", Some(energy)) => {
                if let Some(users) = users.filter(|u| *u > 0.0) {
                    metric.value = energy / users;
                }
            }
            _ => {}
        }
    }
    additions
}

fn write_error(path: &Path) -> impl Fn(std::io::Error) -> MergeError + '_ {
    move |source| MergeError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn copy_if_present(from: &Path, to: &Path) -> Result<(), MergeError> {
    if from.exists() {
        std::fs::copy(from, to).map_err(write_error(to))?;
    }
    Ok(())
}

/// Copies `gpu_telemetry_export.*` and `server_metrics_export.*` of `dir` into `output`.
fn copy_telemetry_files(dir: &Path, output: &Path) -> Result<(), MergeError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains("gpu_telemetry_export") || name.contains("server_metrics_export") {
            copy_if_present(&entry.path(), &output.join(&name))?;
        }
    }
    Ok(())
}

/// `merge.json`: which shards of which benchmark the directory merges, and how each began.
fn write_merge_manifest(
    output: &Path,
    shards: &[ShardDir],
    count: u32,
    missing: &[u32],
    records: u64,
) -> Result<(), MergeError> {
    #[derive(Serialize)]
    struct Shard<'a> {
        index: u32,
        dir: &'a Path,
        start_at_ns: Option<u64>,
        started_ns: u64,
        late_ms: f64,
        clock: Option<&'a ClockOffset>,
    }
    #[derive(Serialize)]
    struct Manifest<'a> {
        run_id: &'a str,
        count: u32,
        missing: &'a [u32],
        records: u64,
        shards: Vec<Shard<'a>>,
    }
    let manifest = Manifest {
        run_id: &shards[0].manifest.run_id,
        count,
        missing,
        records,
        shards: shards
            .iter()
            .map(|s| Shard {
                index: s.manifest.index,
                dir: &s.dir,
                start_at_ns: s.manifest.start_at_ns,
                started_ns: s.manifest.started_ns,
                late_ms: s.manifest.late_ms,
                clock: s.manifest.clock.as_ref(),
            })
            .collect(),
    };
    let path = output.join(MERGE_MANIFEST_FILE);
    let json = serde_json::to_string_pretty(&manifest).map_err(std::io::Error::other);
    json.and_then(|json| std::fs::write(&path, json))
        .map_err(write_error(&path))
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use aiperf_core::config::Shard;
    use aiperf_core::BenchmarkConfig;

    use super::*;

    /// A directory whose shard started but has not finished.
    fn unfinished_shard(dir: &Path, index: u32) {
        std::fs::create_dir_all(dir).unwrap();
        let shard = Shard::new(index, 2).unwrap();
        let manifest =
            ShardManifest::new(&BenchmarkConfig::default(), shard, None, SystemTime::now());
        manifest.write(dir).unwrap();
    }

    #[test]
    fn unfinished_shards_are_refused_at_once_or_after_the_wait() {
        let root = tempfile::tempdir().unwrap();
        let dirs = vec![root.path().join("shard-0"), root.path().join("shard-1")];
        unfinished_shard(&dirs[0], 0);
        let out = root.path().join("merged");

        let error = merge(&dirs[1..], &out, &MergeOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: not a shard's run directory (No such file or directory (os error 2)); \
                 shards are run with --shard K/N or --shard-count N",
                dirs[1].display()
            )
        );
        let error = merge(&dirs[..1], &out, &MergeOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: shard 0 did not finish (its shard.json has no results)",
                dirs[0].display()
            )
        );

        let waiting = MergeOptions {
            wait: Some(Duration::from_millis(1_500)),
            ..MergeOptions::default()
        };
        let started = Instant::now();
        match merge(&dirs, &out, &waiting).unwrap_err() {
            MergeError::Timeout { waited, unfinished } => {
                assert!(waited >= Duration::from_millis(1_500), "{waited:?}");
                assert_eq!(unfinished, dirs);
            }
            other => panic!("{other}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(1_500));
        assert!(
            !out.exists(),
            "nothing is written before the shards are there"
        );
    }
}
