//! Charts and an HTML report from benchmark artifacts: the library behind `aiperf plot`.
//!
//! Point [`plot`] at a run's artifact directory and it draws that run's latency
//! distributions, latency over time, inter-chunk latency by token position, length
//! scatters and throughput over time; point it at a sweep, a multi-run folder or several
//! directories and it compares the runs (Pareto curves of throughput against latency and
//! interactivity, per-run bars). Every chart is written as PNG and SVG, and `report.html`
//! holds them all with the summary numbers, self-contained for a browser offline.
//!
//! It reads the files aiperf-rs writes and those of the Python AIPerf alike
//! ([`aiperf_metrics::artifacts`], [`artifacts`]): only the default file names, extra keys ignored, optional files
//! optional. Text is drawn with an embedded DejaVu Sans, so no system font is needed.
//!
//! ```no_run
//! use aiperf_plot::{plot, PlotOptions, Theme};
//!
//! let options = PlotOptions { output: None, theme: Theme::Dark };
//! let outcome = plot(&["artifacts/my-run".into()], &options)?;
//! println!("{} charts in {}", outcome.charts.len(), outcome.output.display());
//! # Ok::<(), aiperf_plot::PlotError>(())
//! ```

pub mod artifacts;
pub mod chart;
pub mod discover;
mod error;
pub mod kinds;
pub mod multi;
pub mod render;
pub mod report;
pub mod series;
pub mod single;
pub mod swim_lane;
mod theme;
pub mod turn_messages;

use std::path::{Path, PathBuf};

pub use discover::Mode;
pub use error::PlotError;
pub use theme::Theme;

use aiperf_metrics::artifacts::{read_summary, RunSummary, SUMMARY_FILE};
use artifacts::SingleRun;
use multi::ComparedRun;
use report::{cell, RenderedChart, Table};

/// What to draw and where.
#[derive(Debug, Clone, Default)]
pub struct PlotOptions {
    /// Folder for the charts and `report.html`; default `<first path>/plots`.
    pub output: Option<PathBuf>,
    /// Colour scheme.
    pub theme: Theme,
}

/// What [`plot`] wrote.
#[derive(Debug, Clone)]
pub struct PlotOutcome {
    /// The mode detected.
    pub mode: Mode,
    /// The output folder.
    pub output: PathBuf,
    /// Chart names; each has a `.png` and an `.svg` in the output folder.
    pub charts: Vec<String>,
    /// The report page.
    pub report: PathBuf,
}

/// Reads the runs under `paths`, draws every chart their data allows, and writes the PNGs,
/// SVGs and `report.html`.
pub fn plot(paths: &[PathBuf], options: &PlotOptions) -> Result<PlotOutcome, PlotError> {
    let first = paths.first().cloned().unwrap_or_else(|| "artifacts".into());
    let mode = discover::detect(if paths.is_empty() {
        std::slice::from_ref(&first)
    } else {
        paths
    })?;
    let (title, tables, charts) = match &mode {
        Mode::Single(dir) => {
            let run = SingleRun::read(dir)?;
            (
                format!("aiperf run {}", dir.display()),
                vec![summary_table(&run.summary)],
                single::charts(&run),
            )
        }
        Mode::Multi(runs) => {
            let compared = runs
                .iter()
                .map(|run| {
                    Ok(ComparedRun {
                        label: run.label.clone(),
                        summary: read_summary(&run.dir.join(SUMMARY_FILE))?,
                    })
                })
                .collect::<Result<Vec<_>, PlotError>>()?;
            (
                format!("aiperf comparison of {} runs", compared.len()),
                vec![comparison_table(&compared)],
                multi::charts(&compared),
            )
        }
    };

    let output = options
        .output
        .clone()
        .unwrap_or_else(|| first.join("plots"));
    std::fs::create_dir_all(&output).map_err(|e| PlotError::io(&output, e))?;
    let mut rendered = Vec::with_capacity(charts.len());
    for chart in charts {
        let svg = render::svg(&chart, options.theme)?;
        write(&output.join(format!("{}.svg", chart.name)), svg.as_bytes())?;
        write(
            &output.join(format!("{}.png", chart.name)),
            &render::png(&chart, options.theme)?,
        )?;
        rendered.push(RenderedChart { chart, svg });
    }
    let report = output.join("report.html");
    write(
        &report,
        report::html(&title, options.theme, &tables, &rendered).as_bytes(),
    )?;
    Ok(PlotOutcome {
        mode,
        output,
        charts: rendered.into_iter().map(|r| r.chart.name).collect(),
        report,
    })
}

fn write(path: &Path, contents: &[u8]) -> Result<(), PlotError> {
    std::fs::write(path, contents).map_err(|e| PlotError::io(path, e))
}

/// The headline metrics of a run, in the order of the console table.
const HEADLINE_METRICS: [&str; 10] = [
    "time_to_first_token",
    "time_to_second_token",
    "inter_token_latency",
    "request_latency",
    "output_token_throughput_per_user",
    "output_sequence_length",
    "input_sequence_length",
    "output_token_throughput",
    "request_throughput",
    "request_count",
];

fn summary_table(summary: &RunSummary) -> Table {
    let stats = ["avg", "min", "p50", "p90", "p99", "max"];
    Table {
        caption: "Summary".into(),
        headers: ["metric", "unit"]
            .into_iter()
            .chain(stats)
            .map(String::from)
            .collect(),
        rows: HEADLINE_METRICS
            .iter()
            .filter_map(|tag| {
                let metric = summary.metrics.get(*tag)?;
                Some(
                    [tag.to_string(), metric.unit.clone()]
                        .into_iter()
                        .chain(stats.iter().map(|s| cell(metric.stats.get(*s).copied())))
                        .collect(),
                )
            })
            .collect(),
    }
}

fn comparison_table(runs: &[ComparedRun]) -> Table {
    let columns = [
        ("TTFT avg (ms)", "time_to_first_token", "avg"),
        ("TTFT p99 (ms)", "time_to_first_token", "p99"),
        ("ITL avg (ms)", "inter_token_latency", "avg"),
        ("latency avg (ms)", "request_latency", "avg"),
        ("latency p99 (ms)", "request_latency", "p99"),
        ("output tokens/s", "output_token_throughput", "avg"),
        ("tokens/s/user", "output_token_throughput_per_user", "avg"),
        ("requests/s", "request_throughput", "avg"),
    ];
    Table {
        caption: "Runs".into(),
        headers: std::iter::once("run".to_string())
            .chain(columns.iter().map(|c| c.0.to_string()))
            .collect(),
        rows: runs
            .iter()
            .map(|run| {
                std::iter::once(run.label.clone())
                    .chain(
                        columns
                            .iter()
                            .map(|(_, tag, stat)| cell(run.summary.stat(tag, stat))),
                    )
                    .collect()
            })
            .collect(),
    }
}
