//! Reading a run's artifact directory: the one place that knows its file names and how to
//! read the summary (`profile_export_aiperf.json`), the time slices and the JSONL files.
//!
//! `aiperf compare` reads a directory whole ([`RunArtifacts::read`]); `aiperf plot` reads
//! the summary, the time slices and its own view of the records with the functions below.
//! Files of the Python AIPerf and ours have the same shape, so one reader serves both:
//! extra keys are ignored and every file but the summary is optional.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The summary file every run directory holds.
pub const SUMMARY_FILE: &str = "profile_export_aiperf.json";
/// The per-request records (absent with `--export-level summary`).
pub const RECORDS_FILE: &str = "profile_export.jsonl";
/// Per-slice metrics (`--slice-duration`).
pub const TIMESLICES_FILE: &str = "profile_export_aiperf_timeslices.json";
/// One line per GPU per DCGM scrape, when GPU telemetry ran (written by aiperf-telemetry,
/// whose `GPU_JSONL` a test keeps equal to this name).
pub const GPU_TELEMETRY_FILE: &str = "gpu_telemetry_export.jsonl";

/// What cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The run directory does not exist (or is a file).
    #[error("{0} is not a directory (expected an aiperf artifact directory)")]
    NotADirectory(PathBuf),
    /// The directory has no summary file.
    #[error("{0} not found: is this the artifact directory of an aiperf run?")]
    MissingSummary(PathBuf),
    /// A JSON document (the summary, the time slices) is invalid.
    #[error("{}:{}: invalid JSON: {source}", path.display(), source.line())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A line of a JSONL file is invalid.
    #[error("{}:{line}: invalid JSON: {source}", path.display())]
    JsonLine {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// The parser's message.
        #[source]
        source: serde_json::Error,
    },
    /// The summary (or the time slices) is JSON but not the object aiperf writes.
    #[error("{0}: not an aiperf summary (expected a JSON object)")]
    NotASummary(PathBuf),
    /// Reading failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl ArtifactError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One metric's statistics in display units, as in `profile_export_aiperf.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricStats {
    /// The display unit (`ms`, `tokens/sec`, …).
    pub unit: String,
    /// Statistic name (`avg`, `p99`, `count`, …) → value; null statistics are left out.
    pub stats: BTreeMap<String, f64>,
}

impl MetricStats {
    /// One statistic, e.g. `stat("p99")`.
    pub fn stat(&self, name: &str) -> Option<f64> {
        self.stats.get(name).copied()
    }
}

/// Metric tag → statistics, the metric blocks of a summary or of one time slice.
pub type Metrics = BTreeMap<String, MetricStats>;

/// A run's summary as read from `profile_export_aiperf.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    /// Every metric block.
    pub metrics: Metrics,
    /// How many GPUs the GPU telemetry saw, when it ran.
    pub gpu_count: Option<usize>,
}

impl RunSummary {
    /// One statistic of one metric, e.g. `stat("time_to_first_token", "p99")`.
    pub fn stat(&self, tag: &str, stat: &str) -> Option<f64> {
        self.metrics.get(tag)?.stat(stat)
    }
}

/// One time slice of `profile_export_aiperf_timeslices.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeslice {
    /// Wall-clock start of the slice, ns since the Unix epoch, when the file has it.
    pub start_ns: Option<u64>,
    /// The slice's metric blocks.
    pub metrics: Metrics,
}

/// Per-request values by metric tag, list-valued metrics flattened.
pub type RecordValues = BTreeMap<String, Vec<f64>>;

/// A run directory read whole: its summary and every per-request value.
#[derive(Debug, Clone, PartialEq)]
pub struct RunArtifacts {
    /// The directory read.
    pub dir: PathBuf,
    /// The summary.
    pub summary: RunSummary,
    /// Per-request values by metric tag, or `None` when the directory has no
    /// `profile_export.jsonl`.
    pub records: Option<RecordValues>,
}

impl RunArtifacts {
    /// Reads `dir`: the summary must be there; the records are read when present.
    pub fn read(dir: &Path) -> Result<Self, ArtifactError> {
        if !dir.is_dir() {
            return Err(ArtifactError::NotADirectory(dir.to_path_buf()));
        }
        let summary_path = dir.join(SUMMARY_FILE);
        if !summary_path.is_file() {
            return Err(ArtifactError::MissingSummary(summary_path));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            summary: read_summary(&summary_path)?,
            records: read_record_values(&dir.join(RECORDS_FILE))?,
        })
    }
}

/// Reads a summary file: every top-level object with a string `unit` is a metric block
/// (the header keys, `input_config`, `run_info`, … have none).
pub fn read_summary(path: &Path) -> Result<RunSummary, ArtifactError> {
    let document = read_json_document(path)?;
    let Value::Object(top) = &document else {
        return Err(ArtifactError::NotASummary(path.to_path_buf()));
    };
    Ok(RunSummary {
        metrics: metric_blocks(top),
        gpu_count: top.get("telemetry_data").and_then(count_gpus),
    })
}

/// Reads a time-slices file; no slices when the file is absent (no `--slice-duration`).
pub fn read_timeslices(path: &Path) -> Result<Vec<Timeslice>, ArtifactError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let document = read_json_document(path)?;
    let slices = document
        .get("timeslices")
        .and_then(Value::as_array)
        .ok_or_else(|| ArtifactError::NotASummary(path.to_path_buf()))?;
    Ok(slices
        .iter()
        .filter_map(Value::as_object)
        .map(|slice| Timeslice {
            start_ns: slice.get("start_ns").and_then(Value::as_u64),
            metrics: metric_blocks(slice),
        })
        .collect())
}

/// Every metric value of every record in `path`, by tag, or `None` when the file is
/// absent. A record's `metrics` maps each tag to `{"value": number or list, "unit": …}`;
/// lines without metrics (errors) add nothing.
pub fn read_record_values(path: &Path) -> Result<Option<RecordValues>, ArtifactError> {
    let Some(reader) = open_if_present(path)? else {
        return Ok(None);
    };
    let mut values = RecordValues::new();
    read_jsonl(reader, path, |record: Value| {
        let Some(metrics) = record.get("metrics").and_then(Value::as_object) else {
            return;
        };
        for (tag, metric) in metrics {
            let slot = values.entry(tag.clone()).or_default();
            match metric.get("value") {
                Some(Value::Array(items)) => slot.extend(items.iter().filter_map(Value::as_f64)),
                Some(value) => slot.extend(value.as_f64()),
                None => {}
            }
        }
    })?;
    Ok(Some(values))
}

/// Opens `path` for reading, or `None` when it does not exist: for the optional files.
pub fn open_if_present(path: &Path) -> Result<Option<BufReader<File>>, ArtifactError> {
    match File::open(path) {
        Ok(file) => Ok(Some(BufReader::new(file))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(ArtifactError::io(path, error)),
    }
}

/// Parses each non-blank line of a JSONL file as `T` and hands it to `each`; `path`
/// names the file in errors.
pub fn read_jsonl<T: DeserializeOwned>(
    reader: impl BufRead,
    path: &Path,
    mut each: impl FnMut(T),
) -> Result<(), ArtifactError> {
    for (index, line) in reader.lines().enumerate() {
        let line = line.map_err(|error| ArtifactError::io(path, error))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str(&line).map_err(|source| ArtifactError::JsonLine {
            path: path.to_path_buf(),
            line: index + 1,
            source,
        })?;
        each(parsed);
    }
    Ok(())
}

pub(crate) fn read_json_document(path: &Path) -> Result<Value, ArtifactError> {
    let text = std::fs::read_to_string(path).map_err(|error| ArtifactError::io(path, error))?;
    serde_json::from_str(&text).map_err(|source| ArtifactError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// The `{unit, avg, …}` blocks among an object's values; anything else is skipped.
fn metric_blocks(object: &serde_json::Map<String, Value>) -> Metrics {
    object
        .iter()
        .filter_map(|(tag, value)| {
            let block = value.as_object()?;
            let unit = block.get("unit")?.as_str()?.to_owned();
            let stats = block
                .iter()
                .filter_map(|(stat, v)| Some((stat.clone(), v.as_f64()?)))
                .collect();
            Some((tag.clone(), MetricStats { unit, stats }))
        })
        .collect()
}

/// GPUs across endpoints in the summary's `telemetry_data.endpoints.*.gpus`.
fn count_gpus(telemetry: &Value) -> Option<usize> {
    let endpoints = telemetry.get("endpoints")?.as_object()?;
    let count: usize = endpoints
        .values()
        .filter_map(|endpoint| endpoint.get("gpus")?.as_object().map(serde_json::Map::len))
        .sum();
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_read_with_its_metric_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(SUMMARY_FILE);
        std::fs::write(
            &path,
            r#"{"schema_version":"1.3","time_to_first_token":{"unit":"ms","avg":2.5,"p99":null},"input_config":{"x":1},"was_cancelled":false}"#,
        )
        .expect("write");
        let summary = read_summary(&path).expect("reads");
        assert_eq!(summary.metrics.len(), 1);
        assert_eq!(summary.stat("time_to_first_token", "avg"), Some(2.5));
        assert_eq!(summary.stat("time_to_first_token", "p99"), None);
        assert_eq!(summary.gpu_count, None);
    }

    #[test]
    fn gpus_are_counted_across_endpoints() {
        let telemetry = serde_json::json!({"endpoints": {
            "a:9400": {"gpus": {"gpu_0": {}, "gpu_1": {}}},
            "b:9400": {"gpus": {"gpu_0": {}}}
        }});
        assert_eq!(count_gpus(&telemetry), Some(3));
        assert_eq!(count_gpus(&serde_json::json!({"endpoints": {}})), None);
    }
}
