//! `aiperf merge`: the flags turned into the runner's merge, and its result printed.

use std::path::PathBuf;
use std::process::ExitCode;

use aiperf_metrics::export::console::render_console;
use aiperf_runner::merge::{merge_runs, shard_list, MergeError, MergeOptions, MergeReport};

use crate::args::MergeArgs;

/// Merges, prints the merged summary and where it went. Exit 3 when a merged run misses
/// the benchmark's run-level SLOs, 2 when the directories are not the shards of one
/// benchmark (or some are missing), 1 when a file cannot be read or written or the
/// shards did not finish within `--wait`.
pub(crate) fn run(args: &MergeArgs) -> ExitCode {
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.dirs));
    let options = MergeOptions {
        allow_missing: args.allow_missing,
        wait: args.wait.map(std::time::Duration::from_secs),
    };
    match merge_runs(&args.dirs, &output, &options) {
        Ok(merged) => {
            if let [report] = merged.runs.as_slice() {
                print!("{}", render_console(&report.summary));
            }
            for report in &merged.runs {
                print_report(report);
            }
            for dir in &merged.aggregates {
                println!("Aggregated the merged runs into {}", dir.display());
            }
            if let Some((sweep, dir)) = &merged.sweep {
                print!("{}", sweep.render_table());
                println!("Rebuilt the sweep summary in {}", dir.display());
            }
            let mut slos_met = true;
            for report in merged.runs.iter().filter_map(|r| r.slo_report.as_ref()) {
                print!("{}", report.render());
                slos_met &= report.passed();
            }
            // As `aiperf profile` exits when its run missed an SLO.
            if slos_met {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            match error {
                MergeError::Metrics(_)
                | MergeError::Write { .. }
                | MergeError::Timeout { .. }
                | MergeError::Aggregate(_) => ExitCode::FAILURE,
                _ => ExitCode::from(2),
            }
        }
    }
}

fn print_report(report: &MergeReport) {
    println!(
        "Merged shards {} of {} ({} records) of run {} into {}",
        shard_list(&report.merged),
        report.count,
        report.records,
        report.run_id,
        report.dir.display()
    );
    if !report.missing.is_empty() {
        eprintln!(
            "warning: shards {} are missing: this is not the whole benchmark",
            shard_list(&report.missing)
        );
    }
    for note in &report.left_out {
        eprintln!("note: not merged: {note}");
    }
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
}

/// `merged` beside the first shard directory.
fn default_output(dirs: &[PathBuf]) -> PathBuf {
    let parent = dirs
        .first()
        .and_then(|d| d.parent())
        .map(PathBuf::from)
        .unwrap_or_default();
    parent.join("merged")
}
