//! `aiperf plot [PATHS…]`: charts and report.html from run artifacts (see aiperf-plot).

use aiperf_plot::{plot, Mode, PlotOptions, Theme};

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
    let outcome = plot(&args.paths, &options)?;
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
    Ok(())
}
