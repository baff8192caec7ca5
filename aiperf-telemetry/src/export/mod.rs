//! The telemetry files of docs/telemetry.md and the pieces the main exports embed.
//!
//! - [`gpu`]: `gpu_telemetry_export.jsonl`, the `telemetry_data` object of
//!   `profile_export_aiperf.json`, and the GPU table appended to `profile_export_aiperf.csv`;
//! - [`server`]: `server_metrics_export.json`, `.csv` and `.jsonl`;
//! - [`server_parquet`]: `server_metrics_export.parquet`, every scrape as a long table.

pub mod gpu;
pub mod server;
#[cfg(feature = "parquet")]
pub mod server_parquet;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::Value;

use crate::collector::TelemetryReport;

/// `gpu_telemetry_export.jsonl`.
pub const GPU_JSONL: &str = "gpu_telemetry_export.jsonl";
/// `server_metrics_export` + `.json`, `.csv`, `.jsonl`, `.parquet`.
pub const SERVER_METRICS_STEM: &str = "server_metrics_export";

/// The telemetry file names: the defaults, or with a `--profile-export-prefix` `p`,
/// `p_gpu_telemetry.jsonl` and `p_server_metrics.<ext>` (the names the Python AIPerf
/// gives them; `p` is the prefix with known suffixes already stripped).
fn file_names(prefix: Option<&str>) -> (String, String) {
    match prefix.filter(|p| !p.is_empty()) {
        None => (GPU_JSONL.to_string(), SERVER_METRICS_STEM.to_string()),
        Some(p) => (
            format!("{p}_gpu_telemetry.jsonl"),
            format!("{p}_server_metrics"),
        ),
    }
}

/// Why writing a telemetry file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSON value could not be serialised.
    #[error("cannot serialise {path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// A Parquet file could not be written.
    #[cfg(feature = "parquet")]
    #[error("cannot write {path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: parquet::errors::ParquetError,
    },
    /// Parquet was asked for, but this build has no Parquet writer (the crate's
    /// `parquet` feature is off).
    #[error("cannot write {path}: this build has no Parquet support (feature \"parquet\" of aiperf-telemetry)")]
    ParquetDisabled {
        /// The file.
        path: PathBuf,
    },
}

/// A server-metrics file format (`--server-metrics-formats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerMetricsFormat {
    /// `server_metrics_export.json`.
    Json,
    /// `server_metrics_export.csv`.
    Csv,
    /// `server_metrics_export.jsonl` (every scrape).
    Jsonl,
    /// `server_metrics_export.parquet` (every scrape, one row per sample).
    Parquet,
}

impl ServerMetricsFormat {
    /// The default set: `json csv`, as the Python AIPerf's flag table and schema doc have
    /// it (its tutorial adds `parquet`; docs/telemetry.md#server-metrics-exports).
    pub const DEFAULT: [ServerMetricsFormat; 2] =
        [ServerMetricsFormat::Json, ServerMetricsFormat::Csv];
}

/// The error of [`ServerMetricsFormat::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown server metrics format \"{0}\" (choose from json, csv, jsonl, parquet)")]
pub struct UnknownFormat(pub String);

impl FromStr for ServerMetricsFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "json" => Ok(ServerMetricsFormat::Json),
            "csv" => Ok(ServerMetricsFormat::Csv),
            "jsonl" => Ok(ServerMetricsFormat::Jsonl),
            "parquet" => Ok(ServerMetricsFormat::Parquet),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

/// What the files need beyond the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// Server-metrics formats to write.
    pub formats: Vec<ServerMetricsFormat>,
    /// The run's `benchmark_id`, echoed in `server_metrics_export.json`.
    pub benchmark_id: Option<String>,
    /// `--profile-export-prefix` without its known suffixes: files are then named
    /// `<prefix>_gpu_telemetry.jsonl` and `<prefix>_server_metrics.<ext>`.
    pub prefix: Option<String>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            formats: ServerMetricsFormat::DEFAULT.to_vec(),
            benchmark_id: None,
            prefix: None,
        }
    }
}

/// Write every telemetry file of `report` into `dir`: the GPU JSONL when a DCGM endpoint
/// answered, the server-metrics files in `options.formats` when a server endpoint answered.
/// Returns the paths written.
pub fn write_files(
    report: &TelemetryReport,
    dir: &Path,
    options: &ExportOptions,
) -> Result<Vec<PathBuf>, ExportError> {
    let mut written = Vec::new();
    let (gpu_name, server_stem) = file_names(options.prefix.as_deref());
    if report.gpu.iter().any(|e| !e.scrapes.scrapes.is_empty()) {
        let path = dir.join(gpu_name);
        write_with(&path, |out| gpu::write_jsonl(report, out))?;
        written.push(path);
    }
    if !report.server.iter().any(|e| !e.scrapes.scrapes.is_empty()) {
        return Ok(written);
    }
    for format in dedup(&options.formats) {
        let path = dir.join(format!("{server_stem}.{}", extension(format)));
        match format {
            ServerMetricsFormat::Json => {
                let value = server::json(report, options.benchmark_id.as_deref());
                write_json(&path, &value)?;
            }
            ServerMetricsFormat::Csv => write_with(&path, |out| {
                server::write_csv(report, options.benchmark_id.as_deref(), out)
            })?,
            ServerMetricsFormat::Jsonl => {
                write_with(&path, |out| server::write_jsonl(report, out))?;
            }
            #[cfg(feature = "parquet")]
            ServerMetricsFormat::Parquet => server_parquet::write_parquet(report, &path)?,
            #[cfg(not(feature = "parquet"))]
            ServerMetricsFormat::Parquet => {
                return Err(ExportError::ParquetDisabled { path });
            }
        }
        written.push(path);
    }
    Ok(written)
}

/// The lines the console prints for the files [`write_files`] wrote, as the Python AIPerf
/// 0.13 prints them after its own `CSV Export:` / `JSON Export:` lines: `(label, path)` for
/// the server-metrics CSV, then the JSON (`"Server Metrics CSV Export"`, `"Server Metrics
/// JSON Export"`). The other files get no line.
pub fn console_exports(written: &[PathBuf]) -> Vec<(&'static str, &Path)> {
    let with_ext = |ext: &'static str| -> Vec<&Path> {
        written
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .map(PathBuf::as_path)
            .collect()
    };
    let csv = with_ext("csv")
        .into_iter()
        .map(|p| ("Server Metrics CSV Export", p));
    let json = with_ext("json")
        .into_iter()
        .map(|p| ("Server Metrics JSON Export", p));
    csv.chain(json).collect()
}

fn dedup(formats: &[ServerMetricsFormat]) -> Vec<ServerMetricsFormat> {
    let mut out = Vec::new();
    for f in formats {
        if !out.contains(f) {
            out.push(*f);
        }
    }
    out
}

fn extension(format: ServerMetricsFormat) -> &'static str {
    match format {
        ServerMetricsFormat::Json => "json",
        ServerMetricsFormat::Csv => "csv",
        ServerMetricsFormat::Jsonl => "jsonl",
        ServerMetricsFormat::Parquet => "parquet",
    }
}

fn write_with(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), ExportError> {
    let io = |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    body(&mut out).map_err(io)?;
    out.flush().map_err(io)
}

fn write_json(path: &Path, value: &Value) -> Result<(), ExportError> {
    let text = serde_json::to_string_pretty(value).map_err(|source| ExportError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    write_with(path, |out| out.write_all(text.as_bytes()))
}

/// A finite number as JSON, anything else as `null` (JSON has no NaN).
pub(crate) fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A CSV number: two decimals as the main CSV has them; empty when not finite.
pub(crate) fn csv_number(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}"),
        _ => String::new(),
    }
}

/// A CSV field with minimal quoting (as Python's `csv` module writes).
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub use aiperf_core::clock::iso_time;

/// The name an endpoint goes by in exports: the URL without its scheme and without a
/// trailing `/metrics` (`http://localhost:9400/metrics` → `localhost:9400`), so two
/// exporters on one host stay apart.
pub fn endpoint_key(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.strip_suffix("/metrics").unwrap_or(rest);
    rest.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_and_keys() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000000");
        assert_eq!(
            iso_time(1_795_314_419_552_360_123),
            "2026-11-22T02:26:59.552360"
        );
        assert_eq!(
            endpoint_key("http://localhost:9400/metrics"),
            "localhost:9400"
        );
        assert_eq!(
            endpoint_key("http://127.0.0.1:5/dcgm1/metrics"),
            "127.0.0.1:5/dcgm1"
        );
        assert_eq!(endpoint_key("custom"), "custom");
    }

    #[test]
    fn console_lines_for_the_server_files() {
        let written: Vec<PathBuf> = [
            "d/gpu_telemetry_export.jsonl",
            "d/server_metrics_export.json",
            "d/server_metrics_export.csv",
            "d/server_metrics_export.jsonl",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            console_exports(&written),
            [
                (
                    "Server Metrics CSV Export",
                    Path::new("d/server_metrics_export.csv")
                ),
                (
                    "Server Metrics JSON Export",
                    Path::new("d/server_metrics_export.json")
                ),
            ]
        );
    }

    #[test]
    fn prefixed_file_names() {
        let default = file_names(None);
        assert_eq!(default, (GPU_JSONL.into(), SERVER_METRICS_STEM.into()));
        assert_eq!(
            file_names(Some("run7")),
            (
                "run7_gpu_telemetry.jsonl".into(),
                "run7_server_metrics".into()
            )
        );
    }

    #[test]
    fn formats_parse() {
        assert_eq!("JSONL".parse(), Ok(ServerMetricsFormat::Jsonl));
        assert!("xml".parse::<ServerMetricsFormat>().is_err());
    }
}
