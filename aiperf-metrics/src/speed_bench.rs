//! `aiperf speed-bench-report`: one figure per model and SPEED-Bench category, read from
//! run directories (one `aiperf profile` run per `speed_bench_*` variant or `spec_al_*`
//! dataset), laid out as the SPEED-Bench paper's matrix.
//!
//! A run's category is its dataset's name without the `speed_bench_` or `spec_al_`
//! prefix (from `input_config.datasets` in `profile_export_aiperf.json`), its model the
//! first of `input_config.models`. The figure is, by [`SpeedBenchMetric`]:
//! * acceptance length: the server's own gauge (`sglang:spec_accept_length`,
//!   `vllm:spec_decode_mean_accepted_length`, `trtllm:spec_accept_length`), else vLLM's
//!   counters, accepted tokens / drafts + 1 (each draft step also yields the token the
//!   target model verifies);
//! * acceptance rate: the server's gauge (`…spec_accept_rate`,
//!   `vllm:spec_decode_draft_acceptance_rate`), else accepted / drafted tokens;
//! * throughput: the run's average output token throughput.
//!
//! The acceptance figures come from `server_metrics_export.json`, the server-metrics
//! scrape over the profiling window: a server that reports no speculative-decoding
//! metrics leaves its cell empty. `Overall` is the mean of a row's figures.
//!
//! ```
//! use aiperf_metrics::speed_bench::{build_report, SpeedBenchMetric};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let error = build_report(&[dir.path().to_path_buf()], SpeedBenchMetric::AcceptLength);
//! assert_eq!(error.unwrap_err().to_string(), "no aiperf run directories found");
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aiperf_core::config::{SpeedBenchVariant, SPEED_BENCH_VARIANTS};
use serde_json::Value;

use crate::artifacts::{read_json_document, ArtifactError, SUMMARY_FILE};

/// The server-metrics export a run directory holds when the scrape ran.
pub const SERVER_METRICS_FILE: &str = "server_metrics_export.json";

/// Where the CSV goes unless told: the Python AIPerf's default.
pub const DEFAULT_REPORT_FILE: &str = "speed_bench_report.csv";

/// The prefixes of the dataset names whose runs the report reads; what follows is the
/// category.
const CATEGORY_PREFIXES: [&str; 2] = ["speed_bench_", "spec_al_"];

/// The `spec_al_*` datasets, in the order their columns read (maths, chat, code).
const SPEC_AL_ORDER: [&str; 5] = ["gsm8k", "math500", "mtbench", "humaneval", "mbpp"];

const ACCEPT_LENGTH_GAUGES: [&str; 3] = [
    "sglang:spec_accept_length",
    "vllm:spec_decode_mean_accepted_length",
    "trtllm:spec_accept_length",
];

const ACCEPT_RATE_GAUGES: [&str; 3] = [
    "sglang:spec_accept_rate",
    "vllm:spec_decode_draft_acceptance_rate",
    "trtllm:spec_accept_rate",
];

const VLLM_ACCEPTED: &str = "vllm:spec_decode_num_accepted_tokens";
const VLLM_DRAFTS: &str = "vllm:spec_decode_num_drafts";
const VLLM_DRAFT_TOKENS: &str = "vllm:spec_decode_num_draft_tokens";

/// What the report's cells hold (`--metric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeedBenchMetric {
    /// Tokens produced per target-model step (the server's speculative-decoding metrics).
    AcceptLength,
    /// Accepted draft tokens over drafted tokens (the server's metrics).
    AcceptRate,
    /// Output token throughput, tokens/sec (the run's own summary).
    Throughput,
}

impl SpeedBenchMetric {
    /// The table's title.
    pub fn title(self) -> &'static str {
        match self {
            SpeedBenchMetric::AcceptLength => "Acceptance Length Report",
            SpeedBenchMetric::AcceptRate => "Acceptance Rate Report",
            SpeedBenchMetric::Throughput => "Throughput Report (tokens/sec)",
        }
    }
}

/// Why no report could be made.
#[derive(Debug, thiserror::Error)]
pub enum SpeedBenchReportError {
    /// No path is, or holds, a run directory.
    #[error("no aiperf run directories found")]
    NoRunDirectories,
    /// Run directories were found but none gave a figure.
    #[error("no SPEED-Bench results extracted")]
    NoResults {
        /// Why, run by run: what was skipped or missing.
        warnings: Vec<String>,
    },
    /// The CSV could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The CSV file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

/// One model's row.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    /// The model name (`unknown` when the run does not say).
    pub model: String,
    /// One figure per column of [`SpeedBenchReport::columns`]; `None` where the run is
    /// missing or gave no figure.
    pub values: Vec<Option<f64>>,
    /// The mean of the row's figures.
    pub overall: Option<f64>,
}

/// The matrix: a row per model (sorted), a column per category.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedBenchReport {
    /// What the cells hold.
    pub metric: SpeedBenchMetric,
    /// How many run directories were found.
    pub run_dirs: usize,
    /// The categories: SPEED-Bench's in its variants' order, then the `spec_al_*` ones,
    /// then any other, sorted.
    pub columns: Vec<String>,
    /// A row per model, by model name.
    pub rows: Vec<ReportRow>,
    /// What was skipped or missing, one sentence each, for the user.
    pub warnings: Vec<String>,
}

/// The run directories among `paths`: each path is a run directory (it holds
/// `profile_export_aiperf.json`) or a folder whose subfolders are (in name order). A path
/// that is not a directory is skipped with a warning.
pub fn find_run_dirs(paths: &[PathBuf], warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for path in paths {
        if !path.is_dir() {
            warnings.push(format!("{} is not a directory, skipping", path.display()));
            continue;
        }
        if path.join(SUMMARY_FILE).is_file() {
            found.push(path.clone());
            continue;
        }
        let mut children: Vec<PathBuf> = std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|child| child.is_dir() && child.join(SUMMARY_FILE).is_file())
            .collect();
        children.sort();
        found.extend(children);
    }
    found
}

/// The report of `metric` over the runs in `paths` (see [`find_run_dirs`]).
pub fn build_report(
    paths: &[PathBuf],
    metric: SpeedBenchMetric,
) -> Result<SpeedBenchReport, SpeedBenchReportError> {
    let mut warnings = Vec::new();
    let run_dirs = find_run_dirs(paths, &mut warnings);
    if run_dirs.is_empty() {
        return Err(SpeedBenchReportError::NoRunDirectories);
    }
    let mut cells: BTreeMap<String, BTreeMap<String, Option<f64>>> = BTreeMap::new();
    for dir in &run_dirs {
        let profile = match read_json_document(&dir.join(SUMMARY_FILE)) {
            Ok(profile) => profile,
            Err(error) => {
                warnings.push(format!("{error}, skipping"));
                continue;
            }
        };
        let Some(category) = category(&profile) else {
            warnings.push(format!(
                "cannot determine the SPEED-Bench category of {}, skipping",
                dir.display()
            ));
            continue;
        };
        let value = match metric {
            SpeedBenchMetric::Throughput => profile
                .pointer("/output_token_throughput/avg")
                .and_then(Value::as_f64),
            SpeedBenchMetric::AcceptLength | SpeedBenchMetric::AcceptRate => {
                match read_server_metrics(dir) {
                    Ok(Some(metrics)) if metric == SpeedBenchMetric::AcceptLength => {
                        accept_length(&metrics)
                    }
                    Ok(Some(metrics)) => accept_rate(&metrics),
                    Ok(None) => {
                        warnings.push(format!("no {SERVER_METRICS_FILE} in {}", dir.display()));
                        None
                    }
                    Err(error) => {
                        warnings.push(error.to_string());
                        None
                    }
                }
            }
        };
        cells
            .entry(model(&profile))
            .or_default()
            .insert(category, value.filter(|v| v.is_finite()));
    }
    if !cells
        .values()
        .flat_map(BTreeMap::values)
        .any(Option::is_some)
    {
        return Err(SpeedBenchReportError::NoResults { warnings });
    }
    let columns = columns(cells.values().flat_map(BTreeMap::keys));
    let rows = cells
        .into_iter()
        .map(|(model, by_category)| {
            let values: Vec<Option<f64>> = columns
                .iter()
                .map(|c| by_category.get(c).copied().flatten())
                .collect();
            let present: Vec<f64> = values.iter().flatten().copied().collect();
            let overall =
                (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64);
            ReportRow {
                model,
                values,
                overall,
            }
        })
        .collect();
    Ok(SpeedBenchReport {
        metric,
        run_dirs: run_dirs.len(),
        columns,
        rows,
        warnings,
    })
}

impl SpeedBenchReport {
    /// The matrix as CSV (`Model,<columns>…,Overall`, figures to two decimals, a missing
    /// one empty), with the Python AIPerf's CRLF line ends.
    pub fn csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<&str> = std::iter::once("Model")
            .chain(self.columns.iter().map(String::as_str))
            .chain(std::iter::once("Overall"))
            .collect();
        push_csv_line(&mut out, &header);
        for row in &self.rows {
            let cells = row_cells(row, "");
            push_csv_line(
                &mut out,
                &cells.iter().map(String::as_str).collect::<Vec<_>>(),
            );
        }
        out
    }

    /// The matrix as a plain-text table under its title, columns right-aligned, a
    /// missing figure `-`.
    pub fn table(&self) -> String {
        let header: Vec<String> = std::iter::once("Model".to_owned())
            .chain(self.columns.iter().cloned())
            .chain(std::iter::once("Overall".to_owned()))
            .collect();
        let body: Vec<Vec<String>> = self.rows.iter().map(|row| row_cells(row, "-")).collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                std::iter::once(&header)
                    .chain(&body)
                    .map(|line| line[i].chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(8)
            })
            .collect();
        let render = |cells: &[String]| -> String {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:>width$}"))
                .collect();
            padded.join("  ")
        };
        let mut out = format!("{}\n{}\n", self.metric.title(), render(&header));
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for cells in &body {
            out.push_str(&render(cells));
            out.push('\n');
        }
        out
    }

    /// Writes [`Self::csv`] to `path`.
    pub fn write_csv(&self, path: &Path) -> Result<(), SpeedBenchReportError> {
        std::fs::write(path, self.csv()).map_err(|source| SpeedBenchReportError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// A row's cells: the model, each figure to two decimals (`missing` where none), the
/// overall mean.
fn row_cells(row: &ReportRow, missing: &str) -> Vec<String> {
    let figure = |v: &Option<f64>| v.map_or_else(|| missing.to_owned(), |v| format!("{v:.2}"));
    std::iter::once(row.model.clone())
        .chain(row.values.iter().map(figure))
        .chain(std::iter::once(figure(&row.overall)))
        .collect()
}

fn push_csv_line(out: &mut String, cells: &[&str]) {
    let quoted: Vec<String> = cells
        .iter()
        .map(|cell| {
            if cell.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", cell.replace('"', "\"\""))
            } else {
                (*cell).to_owned()
            }
        })
        .collect();
    out.push_str(&quoted.join(","));
    out.push_str("\r\n");
}

/// The category of a run: the first dataset (`format` of a file dataset, `dataset` of a
/// public one) named with a known prefix, without it.
fn category(profile: &Value) -> Option<String> {
    let datasets = profile.pointer("/input_config/datasets")?.as_array()?;
    datasets.iter().find_map(|entry| {
        let name = entry
            .get("format")
            .and_then(Value::as_str)
            .or_else(|| entry.get("dataset").and_then(Value::as_str))?;
        CATEGORY_PREFIXES
            .iter()
            .find_map(|prefix| name.strip_prefix(prefix))
            .map(str::to_owned)
    })
}

/// The run's first named model, else `unknown`.
fn model(profile: &Value) -> String {
    profile
        .pointer("/input_config/models/items")
        .and_then(Value::as_array)
        .and_then(|items| {
            items
                .iter()
                .find_map(|item| item.get("name")?.as_str().filter(|n| !n.is_empty()))
        })
        .unwrap_or("unknown")
        .to_owned()
}

/// The columns for `categories`: SPEED-Bench's in the order of its variants, then the
/// `spec_al_*` ones in [`SPEC_AL_ORDER`], then the rest sorted.
fn columns<'a>(categories: impl Iterator<Item = &'a String>) -> Vec<String> {
    let present: std::collections::BTreeSet<&str> = categories.map(String::as_str).collect();
    let known: Vec<&str> = SPEED_BENCH_VARIANTS
        .iter()
        .map(SpeedBenchVariant::suffix)
        .chain(SPEC_AL_ORDER)
        .collect();
    let mut columns: Vec<String> = known
        .iter()
        .filter(|c| present.contains(*c))
        .map(|c| (*c).to_owned())
        .collect();
    columns.extend(
        present
            .iter()
            .filter(|c| !known.contains(c))
            .map(|c| (*c).to_owned()),
    );
    columns
}

/// The `metrics` object of the run's server-metrics export; `Ok(None)` when the run
/// has none.
fn read_server_metrics(dir: &Path) -> Result<Option<Value>, ArtifactError> {
    let path = dir.join(SERVER_METRICS_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let document = read_json_document(&path)?;
    Ok(document.get("metrics").cloned())
}

/// A statistic of a metric's first series (a gauge's `avg`).
fn first_series_stat(metrics: &Value, name: &str, stat: &str) -> Option<f64> {
    metrics
        .get(name)?
        .get("series")?
        .as_array()?
        .first()?
        .pointer(&format!("/stats/{stat}"))?
        .as_f64()
}

/// A counter's increase over the profiling window, summed over its series (one per
/// engine or model when the server runs several).
fn counter_total(metrics: &Value, name: &str) -> Option<f64> {
    let series = metrics.get(name)?.get("series")?.as_array()?;
    let totals: Vec<f64> = series
        .iter()
        .filter_map(|s| s.pointer("/stats/total")?.as_f64())
        .collect();
    (!totals.is_empty()).then(|| totals.iter().sum())
}

fn accept_length(metrics: &Value) -> Option<f64> {
    if let Some(gauge) = ACCEPT_LENGTH_GAUGES
        .iter()
        .find_map(|name| first_series_stat(metrics, name, "avg"))
    {
        return Some(gauge);
    }
    let accepted = counter_total(metrics, VLLM_ACCEPTED);
    let drafts = counter_total(metrics, VLLM_DRAFTS).filter(|d| *d > 0.0);
    if let (Some(accepted), Some(drafts)) = (accepted, drafts) {
        return Some(accepted / drafts + 1.0);
    }
    // An engine not known by name: a metric naming all of spec, accept and length.
    metrics.as_object()?.iter().find_map(|(name, _)| {
        let lower = name.to_lowercase();
        (lower.contains("spec") && lower.contains("accept") && lower.contains("length"))
            .then(|| first_series_stat(metrics, name, "avg"))
            .flatten()
    })
}

fn accept_rate(metrics: &Value) -> Option<f64> {
    if let Some(gauge) = ACCEPT_RATE_GAUGES
        .iter()
        .find_map(|name| first_series_stat(metrics, name, "avg"))
    {
        return Some(gauge);
    }
    let accepted = counter_total(metrics, VLLM_ACCEPTED)?;
    let drafted = counter_total(metrics, VLLM_DRAFT_TOKENS).filter(|d| *d > 0.0)?;
    Some(accepted / drafted)
}
