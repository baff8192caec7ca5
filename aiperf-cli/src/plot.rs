//! `aiperf plot [PATHS…]`: charts and report.html from run artifacts (see aiperf-plot);
//! also `aiperf profile --auto-plot` on the runs it just made.

use std::path::PathBuf;

use aiperf_plot::{plot, Mode, PlotOptions, PlotOutcome, Theme};
use aiperf_runner::Report;

use crate::args::{PlotArgs, PlotTheme};

/// Runs the subcommand and says what it wrote.
pub(crate) fn run(args: &PlotArgs) -> anyhow::Result<()> {
    let options = PlotOptions {
        output: args.output.clone(),
        theme: match args.theme {
            PlotTheme::Light => Theme::Light,
            PlotTheme::Dark => Theme::Dark,
        },
    };
    let outcome = plot(args.run_paths(), &options)?;
    print_outcome(&outcome);
    Ok(())
}

/// `--auto-plot`: plots the run that `report` describes, or compares its runs (a
/// multi-run or a sweep) into `plots/` beside them; nothing when no run finished.
pub(crate) fn plot_report(report: &Report) -> anyhow::Result<()> {
    let dirs: Vec<PathBuf> = report
        .runs
        .iter()
        .map(|run| run.files.dir.clone())
        .collect();
    let Some(first) = dirs.first() else {
        return Ok(());
    };
    let output = match (dirs.len(), first.parent()) {
        (1, _) | (_, None) => None,
        (_, Some(parent)) => Some(parent.join("plots")),
    };
    let options = PlotOptions {
        output,
        theme: Theme::Light,
    };
    print_outcome(&plot(&dirs, &options)?);
    Ok(())
}

fn print_outcome(outcome: &PlotOutcome) {
    match &outcome.mode {
        Mode::Single(dir) => println!("Plotted run {}", dir.display()),
        Mode::Multi(runs) => {
            println!("Compared {} runs:", runs.len());
            for run in runs {
                println!("  {}", run.label);
            }
        }
    }
    println!(
        "{} charts (PNG and SVG) in {}",
        outcome.charts.len(),
        outcome.output.display()
    );
    println!("Report: {}", outcome.report.display());
}
