//! Reading a run's artifacts: the summary (`profile_export_aiperf.json`) and, when the run
//! wrote them, the per-request records (`profile_export.jsonl`). Files of the Python
//! AIPerf and ours have the same shape, so one reader serves both.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::CompareError;

/// The summary file every run directory holds.
pub const SUMMARY_FILE: &str = "profile_export_aiperf.json";
/// The per-request records (absent with `--export-level summary`).
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// One metric of the summary, as far as a comparison needs it (display unit).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSummary {
    /// Display unit, e.g. `ms`.
    pub unit: String,
    /// Mean, or the value of a single-value metric.
    pub avg: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// What a run directory holds.
#[derive(Debug, Clone, PartialEq)]
pub struct RunArtifacts {
    /// The directory read.
    pub dir: PathBuf,
    /// Every metric of the summary, by tag.
    pub summary: BTreeMap<String, MetricSummary>,
    /// Per-request values by metric tag (list-valued metrics flattened), or `None` when
    /// the directory has no `profile_export.jsonl`.
    pub records: Option<BTreeMap<String, Vec<f64>>>,
}

impl RunArtifacts {
    /// Reads `dir`: the summary must be there; the records are read when present.
    pub fn read(dir: &Path) -> Result<Self, CompareError> {
        if !dir.is_dir() {
            return Err(CompareError::NotADirectory(dir.to_path_buf()));
        }
        let summary_path = dir.join(SUMMARY_FILE);
        if !summary_path.is_file() {
            return Err(CompareError::MissingSummary(summary_path));
        }
        let summary = read_summary(&summary_path)?;
        let records_path = dir.join(RECORDS_FILE);
        let records = if records_path.is_file() {
            Some(read_records(&records_path)?)
        } else {
            None
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            summary,
            records,
        })
    }
}

/// The metric blocks of a summary: every top-level object with a string `unit` (the
/// header keys, `input_config`, `run_info`, … have none).
fn read_summary(path: &Path) -> Result<BTreeMap<String, MetricSummary>, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let root: Value = serde_json::from_str(&text).map_err(|source| CompareError::Json {
        path: path.to_path_buf(),
        line: source.line(),
        source,
    })?;
    let Value::Object(root) = root else {
        return Err(CompareError::NotASummary(path.to_path_buf()));
    };
    let number =
        |block: &serde_json::Map<String, Value>, key: &str| block.get(key).and_then(Value::as_f64);
    Ok(root
        .iter()
        .filter_map(|(tag, block)| {
            let block = block.as_object()?;
            let unit = block.get("unit")?.as_str()?.to_owned();
            let metric = MetricSummary {
                unit,
                avg: number(block, "avg"),
                p50: number(block, "p50"),
                p90: number(block, "p90"),
                p99: number(block, "p99"),
            };
            Some((tag.clone(), metric))
        })
        .collect())
}

/// Every metric value of every record, by tag. A record's `metrics` maps each tag to
/// `{"value": number or list, "unit": …}`; lines without metrics (errors) add nothing.
fn read_records(path: &Path) -> Result<BTreeMap<String, Vec<f64>>, CompareError> {
    let io_error = |source| CompareError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io_error)?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(&line).map_err(|source| CompareError::Json {
            path: path.to_path_buf(),
            line: index + 1,
            source,
        })?;
        let Some(metrics) = record.get("metrics").and_then(Value::as_object) else {
            continue;
        };
        for (tag, metric) in metrics {
            let slot = values.entry(tag.clone()).or_default();
            match metric.get("value") {
                Some(Value::Array(items)) => slot.extend(items.iter().filter_map(Value::as_f64)),
                Some(value) => slot.extend(value.as_f64()),
                None => {}
            }
        }
    }
    Ok(values)
}
