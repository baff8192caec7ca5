//! What the single-run charts draw of a run: the summary and time slices as
//! [`aiperf_metrics::artifacts`] reads them, and the few fields of each request and of
//! each GPU scrape that the charts plot.
//!
//! The same reader serves our files and the Python AIPerf's: only the keys plotted are
//! read, extra keys are ignored and every file but the summary is optional.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use aiperf_metrics::artifacts::{
    open_if_present, read_jsonl, read_summary, read_timeslices, RunSummary, Timeslice,
    GPU_TELEMETRY_FILE, RECORDS_FILE, SUMMARY_FILE, TIMESLICES_FILE,
};
use serde::Deserialize;
use serde_json::Value;

use crate::PlotError;

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
    /// The conversation (session) the request belongs to.
    pub conversation_id: Option<String>,
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

/// Everything the single-run charts draw of one run's artifact directory.
#[derive(Debug, Clone, PartialEq)]
pub struct SingleRun {
    /// The artifact directory.
    pub dir: PathBuf,
    /// The summary.
    pub summary: RunSummary,
    /// The per-request records; empty when the file is absent.
    pub records: Vec<RequestRow>,
    /// The time slices; empty when the run had no `--slice-duration`.
    pub timeslices: Vec<Timeslice>,
    /// GPU telemetry samples; empty without GPU telemetry.
    pub gpu_samples: Vec<GpuSample>,
}

impl SingleRun {
    /// Reads the summary and, when present, the records, time slices and GPU samples of
    /// `dir`.
    pub fn read(dir: &Path) -> Result<Self, PlotError> {
        Ok(Self {
            dir: dir.to_path_buf(),
            summary: read_summary(&dir.join(SUMMARY_FILE))?,
            records: read_records_if_present(&dir.join(RECORDS_FILE))?,
            timeslices: read_timeslices(&dir.join(TIMESLICES_FILE))?,
            gpu_samples: read_gpu_samples_if_present(&dir.join(GPU_TELEMETRY_FILE))?,
        })
    }
}

fn read_records_if_present(path: &Path) -> Result<Vec<RequestRow>, PlotError> {
    match open_if_present(path)? {
        Some(reader) => read_records(reader, path),
        None => Ok(Vec::new()),
    }
}

/// Reads the JSONL records from `reader`; `path` names the file in errors.
pub fn read_records(reader: impl BufRead, path: &Path) -> Result<Vec<RequestRow>, PlotError> {
    let mut rows = Vec::new();
    read_jsonl(reader, path, |record: RawRecord| {
        rows.push(record.into_row());
    })?;
    Ok(rows)
}

fn read_gpu_samples_if_present(path: &Path) -> Result<Vec<GpuSample>, PlotError> {
    match open_if_present(path)? {
        Some(reader) => read_gpu_samples(reader, path),
        None => Ok(Vec::new()),
    }
}

/// Reads GPU telemetry lines from `reader`; `path` names the file in errors.
pub fn read_gpu_samples(reader: impl BufRead, path: &Path) -> Result<Vec<GpuSample>, PlotError> {
    let mut samples = Vec::new();
    read_jsonl(reader, path, |line: RawGpuLine| {
        samples.push(line.into_sample());
    })?;
    Ok(samples)
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
    conversation_id: Option<String>,
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
            conversation_id: metadata.conversation_id,
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
    fn a_bad_summary_names_its_file_in_plots_words() {
        // Reading itself is tested with aiperf_metrics::artifacts; what plot adds is its
        // own wording of the error.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(SUMMARY_FILE);
        std::fs::write(&path, "[1, 2]").expect("write");
        let error: PlotError = super::read_summary(&path)
            .expect_err("not an object")
            .into();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: not the JSON aiperf writes: expected an object with the aiperf keys",
                path.display()
            )
        );
    }
}
