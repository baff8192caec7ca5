//! Reading one run's artifacts: the summary, the per-request records, the timeslices.
//!
//! The same reader serves our files and the Python AIPerf's: only the keys plotted are
//! read, extra keys are ignored and every file but the summary is optional.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::PlotError;

/// The summary file every run writes.
pub const SUMMARY_FILE: &str = "profile_export_aiperf.json";
/// Per-request records (export level `records`, the default).
pub const RECORDS_FILE: &str = "profile_export.jsonl";
/// Per-slice metrics (`--slice-duration`).
pub const TIMESLICES_FILE: &str = "profile_export_aiperf_timeslices.json";
/// One line per GPU per DCGM scrape, when GPU telemetry ran.
pub const GPU_TELEMETRY_FILE: &str = "gpu_telemetry_export.jsonl";

/// One metric's statistics in display units, as in `profile_export_aiperf.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricStats {
    /// The display unit (`ms`, `tokens/sec`, …).
    pub unit: String,
    /// Statistic name (`avg`, `p99`, `count`, …) → value; null statistics are left out.
    pub stats: BTreeMap<String, f64>,
}

/// Metric tag → statistics, the metric blocks of a summary or of one timeslice.
pub type Metrics = BTreeMap<String, MetricStats>;

/// The summary of a run (`profile_export_aiperf.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Every metric block.
    pub metrics: Metrics,
    /// How many GPUs the GPU telemetry saw, when it ran.
    pub gpu_count: Option<usize>,
}

impl Summary {
    /// One statistic of one metric, e.g. `stat("time_to_first_token", "p99")`.
    pub fn stat(&self, tag: &str, stat: &str) -> Option<f64> {
        self.metrics.get(tag)?.stats.get(stat).copied()
    }
}

/// What the charts need of one request of `profile_export.jsonl`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestRow {
    /// Wall-clock start, ns since the Unix epoch.
    pub start_ns: Option<u64>,
    /// Wall-clock end (last response byte or error), ns since the Unix epoch.
    pub end_ns: Option<u64>,
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Request latency, ms.
    pub latency_ms: Option<f64>,
    /// Mean inter-token latency of the request, ms.
    pub itl_ms: Option<f64>,
    /// Input sequence length, tokens.
    pub isl: Option<f64>,
    /// Output sequence length, tokens.
    pub osl: Option<f64>,
    /// Gap before each chunk after the first, ms (streaming only).
    pub inter_chunk_ms: Vec<f64>,
    /// Whether the request failed.
    pub failed: bool,
}

/// One time slice of `profile_export_aiperf_timeslices.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeslice {
    /// Wall-clock start of the slice, ns since the Unix epoch, when the file has it.
    pub start_ns: Option<u64>,
    /// The slice's metric blocks.
    pub metrics: Metrics,
}

/// One GPU's readings at one scrape of `gpu_telemetry_export.jsonl`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuSample {
    /// Wall-clock time of the scrape, ns since the Unix epoch.
    pub timestamp_ns: u64,
    /// The DCGM exporter scraped.
    pub endpoint: String,
    /// The GPU's index on its host, as written.
    pub gpu_index: String,
    /// GPU utilization, %.
    pub utilization_pct: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
}

/// Everything read from one run's artifact directory.
#[derive(Debug, Clone, PartialEq)]
pub struct RunArtifacts {
    /// The artifact directory.
    pub dir: PathBuf,
    /// The summary.
    pub summary: Summary,
    /// The per-request records; empty when the file is absent.
    pub records: Vec<RequestRow>,
    /// The time slices; empty when the run had no `--slice-duration`.
    pub timeslices: Vec<Timeslice>,
    /// GPU telemetry samples; empty without GPU telemetry.
    pub gpu_samples: Vec<GpuSample>,
}

impl RunArtifacts {
    /// Reads the summary and, when present, the records and timeslices of `dir`.
    pub fn read(dir: &Path) -> Result<Self, PlotError> {
        let summary = read_summary(&dir.join(SUMMARY_FILE))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            summary,
            records: read_records_if_present(&dir.join(RECORDS_FILE))?,
            timeslices: read_timeslices_if_present(&dir.join(TIMESLICES_FILE))?,
            gpu_samples: read_gpu_samples_if_present(&dir.join(GPU_TELEMETRY_FILE))?,
        })
    }

    /// Reads only the summary: what a multi-run comparison needs.
    pub fn read_summary_only(dir: &Path) -> Result<Self, PlotError> {
        Ok(Self {
            dir: dir.to_path_buf(),
            summary: read_summary(&dir.join(SUMMARY_FILE))?,
            records: Vec::new(),
            timeslices: Vec::new(),
            gpu_samples: Vec::new(),
        })
    }
}

/// Reads `profile_export_aiperf.json`.
pub fn read_summary(path: &Path) -> Result<Summary, PlotError> {
    let document = read_json_document(path)?;
    let Value::Object(top) = &document else {
        return Err(not_an_object(path));
    };
    Ok(Summary {
        metrics: metric_blocks(top),
        gpu_count: top.get("telemetry_data").and_then(count_gpus),
    })
}

fn read_records_if_present(path: &Path) -> Result<Vec<RequestRow>, PlotError> {
    match File::open(path) {
        Ok(file) => read_records(BufReader::new(file), path),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(PlotError::io(path, error)),
    }
}

/// Reads the JSONL records from `reader`; `path` names the file in errors.
pub fn read_records(reader: impl BufRead, path: &Path) -> Result<Vec<RequestRow>, PlotError> {
    read_jsonl(reader, path, RawRecord::into_row)
}

fn read_gpu_samples_if_present(path: &Path) -> Result<Vec<GpuSample>, PlotError> {
    match File::open(path) {
        Ok(file) => read_gpu_samples(BufReader::new(file), path),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(PlotError::io(path, error)),
    }
}

/// Reads GPU telemetry lines from `reader`; `path` names the file in errors.
pub fn read_gpu_samples(reader: impl BufRead, path: &Path) -> Result<Vec<GpuSample>, PlotError> {
    read_jsonl(reader, path, RawGpuLine::into_sample)
}

/// Each non-blank line of a JSONL file parsed as `T` and converted by `convert`.
fn read_jsonl<T: serde::de::DeserializeOwned, R>(
    reader: impl BufRead,
    path: &Path,
    convert: fn(T) -> R,
) -> Result<Vec<R>, PlotError> {
    let mut rows = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line.map_err(|error| PlotError::io(path, error))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: T = serde_json::from_str(&line).map_err(|reason| PlotError::Json {
            path: path.to_path_buf(),
            line: Some(index + 1),
            reason,
        })?;
        rows.push(convert(parsed));
    }
    Ok(rows)
}

fn read_timeslices_if_present(path: &Path) -> Result<Vec<Timeslice>, PlotError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let document = read_json_document(path)?;
    let slices = document
        .get("timeslices")
        .and_then(Value::as_array)
        .ok_or_else(|| not_an_object(path))?;
    Ok(slices
        .iter()
        .filter_map(Value::as_object)
        .map(|slice| Timeslice {
            start_ns: slice.get("start_ns").and_then(Value::as_u64),
            metrics: metric_blocks(slice),
        })
        .collect())
}

fn read_json_document(path: &Path) -> Result<Value, PlotError> {
    let text = std::fs::read_to_string(path).map_err(|error| PlotError::io(path, error))?;
    serde_json::from_str(&text).map_err(|reason| PlotError::Json {
        path: path.to_path_buf(),
        line: None,
        reason,
    })
}

/// A JSON document of the wrong shape, reported as the parser would.
fn not_an_object(path: &Path) -> PlotError {
    use serde::de::Error;
    PlotError::Json {
        path: path.to_path_buf(),
        line: None,
        reason: serde_json::Error::custom("expected an object with the aiperf keys"),
    }
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
        .filter_map(|endpoint| endpoint.get("gpus")?.as_object().map(|gpus| gpus.len()))
        .sum();
    (count > 0).then_some(count)
}

/// A line of `profile_export.jsonl`. Versions before 0.11 wrote explicit nulls, hence the
/// options everywhere.
#[derive(Deserialize)]
struct RawRecord {
    #[serde(default)]
    metadata: Option<RawMetadata>,
    #[serde(default)]
    metrics: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct RawMetadata {
    request_start_ns: Option<u64>,
    request_end_ns: Option<u64>,
}

#[derive(Deserialize)]
struct RawGpuLine {
    timestamp_ns: u64,
    #[serde(default)]
    dcgm_url: String,
    #[serde(default)]
    gpu_index: Value,
    #[serde(default)]
    telemetry_data: BTreeMap<String, Value>,
}

impl RawGpuLine {
    fn into_sample(self) -> GpuSample {
        let number = |tag: &str| self.telemetry_data.get(tag).and_then(Value::as_f64);
        GpuSample {
            timestamp_ns: self.timestamp_ns,
            gpu_index: match &self.gpu_index {
                Value::String(index) => index.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            },
            utilization_pct: number("gpu_utilization"),
            power_w: number("gpu_power_usage"),
            endpoint: self.dcgm_url,
        }
    }
}

impl RawRecord {
    fn into_row(self) -> RequestRow {
        let metrics = self.metrics.unwrap_or_default();
        let value = |tag: &str| metrics.get(tag).and_then(|metric| metric.get("value"));
        let number = |tag: &str| value(tag).and_then(Value::as_f64);
        let metadata = self.metadata.unwrap_or_default();
        RequestRow {
            start_ns: metadata.request_start_ns,
            end_ns: metadata.request_end_ns,
            ttft_ms: number("time_to_first_token"),
            latency_ms: number("request_latency"),
            itl_ms: number("inter_token_latency"),
            isl: number("input_sequence_length"),
            osl: number("output_sequence_length"),
            inter_chunk_ms: value("inter_chunk_latency")
                .and_then(Value::as_array)
                .map(|gaps| gaps.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
            failed: self.error.as_ref().is_some_and(|e| !e.is_null()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_line_keeps_the_plotted_fields_and_ignores_the_rest() {
        let line = r#"{"metadata":{"request_start_ns":10,"request_end_ns":30,"worker_id":"w"},"metrics":{"time_to_first_token":{"value":1.5,"unit":"ms"},"inter_chunk_latency":{"value":[2.0,3.0],"unit":"ms"},"output_sequence_length":{"value":3,"unit":"tokens"},"extra":{"value":"x","unit":""}}}"#;
        let rows = read_records(line.as_bytes(), Path::new("r.jsonl")).expect("reads");
        assert_eq!(
            rows,
            [RequestRow {
                start_ns: Some(10),
                end_ns: Some(30),
                ttft_ms: Some(1.5),
                osl: Some(3.0),
                inter_chunk_ms: vec![2.0, 3.0],
                ..RequestRow::default()
            }]
        );
    }

    #[test]
    fn explicit_nulls_of_older_versions_are_absent_values() {
        let line = r#"{"metadata":{"request_start_ns":null},"metrics":{"time_to_first_token":null,"request_latency":{"value":null,"unit":"ms"},"output_sequence_length":{"value":7,"unit":"tokens"}},"error":null}"#;
        let rows = read_records(line.as_bytes(), Path::new("r.jsonl")).expect("reads");
        assert_eq!(
            rows,
            [RequestRow {
                osl: Some(7.0),
                ..RequestRow::default()
            }]
        );
        let rows = read_records(
            r#"{"metadata":null,"metrics":null}"#.as_bytes(),
            Path::new("r"),
        )
        .expect("reads");
        assert_eq!(rows, [RequestRow::default()]);
    }

    #[test]
    fn a_failed_record_is_marked_failed() {
        let line = r#"{"metadata":{},"metrics":{},"error":{"code":500,"type":"x","message":"y"}}"#;
        let rows = read_records(line.as_bytes(), Path::new("r.jsonl")).expect("reads");
        assert!(rows[0].failed);
    }

    #[test]
    fn a_malformed_line_is_reported_with_file_and_line_number() {
        let text = "{\"metadata\":{}}\n\n{not json\n";
        let error = read_records(text.as_bytes(), Path::new("dir/r.jsonl")).expect_err("fails");
        let message = error.to_string();
        assert!(
            message.starts_with("dir/r.jsonl line 3: not the JSON aiperf writes"),
            "{message}"
        );
    }

    #[test]
    fn gpu_lines_give_utilization_and_power_per_gpu() {
        let text = concat!(
            r#"{"timestamp_ns":5,"dcgm_url":"http://h:9400/metrics","gpu_index":0,"gpu_uuid":"u","telemetry_data":{"gpu_power_usage":71.5,"gpu_utilization":40.0}}"#,
            "\n",
            r#"{"timestamp_ns":6,"gpu_index":"1","telemetry_data":{}}"#,
        );
        let samples = read_gpu_samples(text.as_bytes(), Path::new("g.jsonl")).expect("reads");
        assert_eq!(
            samples,
            [
                GpuSample {
                    timestamp_ns: 5,
                    endpoint: "http://h:9400/metrics".into(),
                    gpu_index: "0".into(),
                    utilization_pct: Some(40.0),
                    power_w: Some(71.5),
                },
                GpuSample {
                    timestamp_ns: 6,
                    gpu_index: "1".into(),
                    ..GpuSample::default()
                },
            ]
        );
    }

    #[test]
    fn a_summary_is_read_with_its_metric_blocks_and_a_bad_one_names_its_file() {
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

        std::fs::write(&path, "[1, 2]").expect("write");
        let message = read_summary(&path).expect_err("not an object").to_string();
        assert_eq!(
            message,
            format!(
                "{}: not the JSON aiperf writes: expected an object with the aiperf keys",
                path.display()
            )
        );
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
