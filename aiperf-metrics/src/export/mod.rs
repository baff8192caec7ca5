//! Exporters: the summary JSON and CSV, the per-record JSONL and Parquet and the raw JSONL
//! (each a [`RecordWriter`]), the console table, and the artifact directory and file naming
//! (docs/artifacts.md#artifact-directory, docs/artifacts.md#file-names).

pub mod console;
pub mod csv;
pub mod json;
pub mod jsonl;
pub(crate) mod line_file;
pub mod outputs;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod raw;
mod record_writer;
pub mod sse_packets;
pub mod timeslices;

pub use record_writer::RecordWriter;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use aiperf_core::BenchmarkConfig;

use crate::artifacts::{RECORDS_FILE, SUMMARY_FILE, TIMESLICES_FILE};
use crate::summary::Summary;
use crate::MetricsError;

/// Where each export file of a run goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPaths {
    /// `profile_export_aiperf.json`
    pub json: PathBuf,
    /// `profile_export_aiperf.csv`
    pub csv: PathBuf,
    /// `profile_export.jsonl`
    pub jsonl: PathBuf,
    /// `profile_export.parquet`
    pub parquet: PathBuf,
    /// `profile_export_raw.jsonl`
    pub raw_jsonl: PathBuf,
    /// `profile_export_aiperf_timeslices.json`
    pub timeslices_json: PathBuf,
    /// `profile_export_aiperf_timeslices.csv`
    pub timeslices_csv: PathBuf,
    /// `profile_export_console.txt`: the console tables as text
    pub console_txt: PathBuf,
    /// `inputs.json` (never prefixed)
    pub inputs_json: PathBuf,
    /// `outputs.json` (never prefixed)
    pub outputs_json: PathBuf,
    /// `accuracy_export.jsonl`, or `<prefix>_accuracy.jsonl` (accuracy mode)
    pub accuracy_jsonl: PathBuf,
    /// `accuracy_results.csv` (accuracy mode; never prefixed)
    pub accuracy_csv: PathBuf,
}

/// Suffixes stripped from a user-given `--profile-export-prefix` (longest first).
const KNOWN_SUFFIXES: [&str; 14] = [
    "_server_metrics.parquet",
    "_server_metrics.jsonl",
    "_server_metrics.json",
    "_server_metrics.csv",
    "_network_latency.jsonl",
    "_gpu_telemetry.jsonl",
    "_timeslices.csv",
    "_timeslices.json",
    "_raw.jsonl",
    ".parquet",
    ".jsonl",
    ".json",
    ".csv",
    "",
];

/// The file names inside `dir`; with `prefix` every name becomes `<prefix><suffix>`
/// (known suffixes such as `.json` or `_raw.jsonl` are first stripped from the prefix).
pub fn export_paths(dir: &Path, prefix: Option<&str>) -> ExportPaths {
    match prefix.map(strip_known_suffix).filter(|p| !p.is_empty()) {
        None => ExportPaths {
            json: dir.join(SUMMARY_FILE),
            csv: dir.join("profile_export_aiperf.csv"),
            jsonl: dir.join(RECORDS_FILE),
            parquet: dir.join("profile_export.parquet"),
            raw_jsonl: dir.join("profile_export_raw.jsonl"),
            timeslices_json: dir.join(TIMESLICES_FILE),
            timeslices_csv: dir.join("profile_export_aiperf_timeslices.csv"),
            console_txt: dir.join("profile_export_console.txt"),
            inputs_json: dir.join("inputs.json"),
            outputs_json: dir.join("outputs.json"),
            accuracy_jsonl: dir.join(crate::accuracy::ACCURACY_JSONL_FILE),
            accuracy_csv: dir.join(crate::accuracy::ACCURACY_CSV_FILE),
        },
        Some(p) => ExportPaths {
            json: dir.join(format!("{p}.json")),
            csv: dir.join(format!("{p}.csv")),
            jsonl: dir.join(format!("{p}.jsonl")),
            parquet: dir.join(format!("{p}.parquet")),
            raw_jsonl: dir.join(format!("{p}_raw.jsonl")),
            timeslices_json: dir.join(format!("{p}_timeslices.json")),
            timeslices_csv: dir.join(format!("{p}_timeslices.csv")),
            console_txt: dir.join(format!("{p}_console.txt")),
            inputs_json: dir.join("inputs.json"),
            outputs_json: dir.join("outputs.json"),
            accuracy_jsonl: dir.join(format!("{p}_accuracy.jsonl")),
            accuracy_csv: dir.join(crate::accuracy::ACCURACY_CSV_FILE),
        },
    }
}

fn strip_known_suffix(prefix: &str) -> &str {
    KNOWN_SUFFIXES
        .iter()
        .filter(|s| !s.is_empty())
        .find_map(|s| prefix.strip_suffix(s))
        .unwrap_or(prefix)
}

/// The run's sub-directory name: `<model>-openai-<endpoint_type>-<stimulus>`, e.g.
/// `Qwen_Qwen3-0.6B-openai-chat-concurrency2` (docs/artifacts.md#artifact-directory).
pub fn artifact_dir_name(config: &BenchmarkConfig) -> String {
    let load = &config.load;
    let stimulus = if load.fixed_schedule.is_enabled() {
        "fixed_schedule".to_owned()
    } else if let Some(user) = load.user_centric {
        format!(
            "user_centric-users{}-qps{}",
            user.num_users,
            py_float(user.rate)
        )
    } else {
        match (load.concurrency, load.initial_request_rate()) {
            (Some(c), Some(r)) => format!("concurrency{c}-request_rate{}", py_float(r)),
            (None, Some(r)) => format!("request_rate{}", py_float(r)),
            (c, None) => format!("concurrency{}", c.unwrap_or(1)),
        }
    };
    format!("{}-{stimulus}", model_and_endpoint(config))
}

/// The default directory of a parameter sweep, `artifacts/<model>-openai-<endpoint>-sweep`:
/// named for what its points share, not for the first point's load.
pub fn resolve_sweep_artifact_dir(config: &BenchmarkConfig) -> PathBuf {
    config.output.artifact_dir.clone().unwrap_or_else(|| {
        Path::new("artifacts").join(format!("{}-sweep", model_and_endpoint(config)))
    })
}

/// `<model>-openai-<endpoint type>`, the start of every default directory name.
fn model_and_endpoint(config: &BenchmarkConfig) -> String {
    let models = &config.endpoint.models;
    let mut model = models
        .first()
        .cloned()
        .unwrap_or_default()
        .replace('/', "_");
    if models.len() > 1 {
        model.push_str("_multi");
    }
    format!("{model}-openai-{}", config.endpoint.endpoint_type)
}

/// The artifact directory: `--artifact-dir` as given, or `artifacts/<artifact_dir_name>`.
pub fn resolve_artifact_dir(config: &BenchmarkConfig) -> PathBuf {
    config
        .output
        .artifact_dir
        .clone()
        .unwrap_or_else(|| Path::new("artifacts").join(artifact_dir_name(config)))
}

/// Python's `repr` of a float for the common cases (`10.0`, `2.5`).
fn py_float(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

fn create(path: &Path) -> Result<BufWriter<File>, MetricsError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| MetricsError::io(parent, e))?;
    }
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| MetricsError::io(path, e))
}

/// Writes `profile_export_aiperf.json`, `profile_export_aiperf.csv` and
/// `profile_export_console.txt` to `paths`, and the time-slice files when the summary has
/// slices.
pub fn write_summary_files(summary: &Summary, paths: &ExportPaths) -> Result<(), MetricsError> {
    let mut out = create(&paths.json)?;
    json::write_json(summary, &mut out)?;
    out.flush().map_err(|e| MetricsError::io(&paths.json, e))?;
    let mut out = create(&paths.csv)?;
    csv::write_csv(summary, &mut out).map_err(|e| MetricsError::io(&paths.csv, e))?;
    out.flush().map_err(|e| MetricsError::io(&paths.csv, e))?;
    std::fs::write(&paths.console_txt, console::render_console(summary))
        .map_err(|e| MetricsError::io(&paths.console_txt, e))?;
    if let Some(accuracy) = &summary.accuracy {
        std::fs::write(&paths.accuracy_csv, crate::accuracy::accuracy_csv(accuracy))
            .map_err(|e| MetricsError::io(&paths.accuracy_csv, e))?;
    }
    if !summary.timeslices.is_empty() {
        let mut out = create(&paths.timeslices_json)?;
        timeslices::write_timeslices_json(summary, &mut out)?;
        out.flush()
            .map_err(|e| MetricsError::io(&paths.timeslices_json, e))?;
        let mut out = create(&paths.timeslices_csv)?;
        timeslices::write_timeslices_csv(summary, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| MetricsError::io(&paths.timeslices_csv, e))?;
    }
    Ok(())
}

/// The marker a run directory gets once every artifact of the run is written, as the
/// Python AIPerf writes it: tools that watch a results folder (its Kubernetes results
/// server, a CI job polling a volume) read nothing before it appears.
pub const RESULTS_READY_FILE: &str = ".aiperf_results_ready.json";

/// Writes [`RESULTS_READY_FILE`] into `dir`: `{"ready": true, "was_cancelled": …,
/// "partial": …}`, plus `failed_exporters` (what could not be written) when the export is
/// partial. The file appears whole or not at all (written aside, then renamed).
pub fn write_results_ready(
    dir: &Path,
    was_cancelled: bool,
    failed_exports: &[String],
) -> Result<(), MetricsError> {
    let mut marker = serde_json::json!({
        "ready": true,
        "was_cancelled": was_cancelled,
        "partial": !failed_exports.is_empty(),
    });
    if !failed_exports.is_empty() {
        marker["failed_exporters"] = serde_json::json!(failed_exports);
    }
    let path = dir.join(RESULTS_READY_FILE);
    let aside = dir.join(format!("{RESULTS_READY_FILE}.tmp"));
    std::fs::write(&aside, marker.to_string())
        .and_then(|()| std::fs::rename(&aside, &path))
        .map_err(|e| MetricsError::io(&path, e))
}

pub use aiperf_core::clock::iso_time;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_marker_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let read = || -> serde_json::Value {
            let text = std::fs::read_to_string(dir.path().join(RESULTS_READY_FILE)).unwrap();
            serde_json::from_str(&text).unwrap()
        };
        write_results_ready(dir.path(), false, &[]).unwrap();
        assert_eq!(
            read(),
            serde_json::json!({"ready": true, "was_cancelled": false, "partial": false})
        );
        write_results_ready(
            dir.path(),
            true,
            &["cannot write x.jsonl: disk full".into()],
        )
        .unwrap();
        assert_eq!(
            read(),
            serde_json::json!({
                "ready": true, "was_cancelled": true, "partial": true,
                "failed_exporters": ["cannot write x.jsonl: disk full"]
            })
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no file left aside"
        );
    }

    #[test]
    fn default_and_prefixed_names() {
        let p = export_paths(Path::new("out"), None);
        assert_eq!(p.json, Path::new("out/profile_export_aiperf.json"));
        assert_eq!(p.csv, Path::new("out/profile_export_aiperf.csv"));
        assert_eq!(p.jsonl, Path::new("out/profile_export.jsonl"));
        assert_eq!(p.raw_jsonl, Path::new("out/profile_export_raw.jsonl"));
        assert_eq!(p.parquet, Path::new("out/profile_export.parquet"));
        for given in [
            "foo",
            "foo.json",
            "foo_raw.jsonl",
            "foo_timeslices.csv",
            "foo.jsonl",
        ] {
            let p = export_paths(Path::new("d"), Some(given));
            assert_eq!(p.json, Path::new("d/foo.json"), "{given}");
            assert_eq!(p.jsonl, Path::new("d/foo.jsonl"));
            assert_eq!(p.raw_jsonl, Path::new("d/foo_raw.jsonl"));
            assert_eq!(p.parquet, Path::new("d/foo.parquet"));
            assert_eq!(p.timeslices_csv, Path::new("d/foo_timeslices.csv"));
            assert_eq!(p.console_txt, Path::new("d/foo_console.txt"));
            assert_eq!(p.inputs_json, Path::new("d/inputs.json"));
        }
    }

    #[test]
    fn directory_names_follow_the_stimulus() {
        let mut c = BenchmarkConfig::default();
        c.endpoint.models = vec!["Qwen/Qwen3-0.6B".into()];
        c.load.concurrency = Some(2);
        assert_eq!(
            artifact_dir_name(&c),
            "Qwen_Qwen3-0.6B-openai-chat-concurrency2"
        );
        c.load.request_rate = Some(10.0);
        assert_eq!(
            artifact_dir_name(&c),
            "Qwen_Qwen3-0.6B-openai-chat-concurrency2-request_rate10.0"
        );
        c.load.concurrency = None;
        c.load.request_rate = Some(2.5);
        c.endpoint.models.push("other".into());
        assert_eq!(
            artifact_dir_name(&c),
            "Qwen_Qwen3-0.6B_multi-openai-chat-request_rate2.5"
        );
        assert_eq!(
            resolve_artifact_dir(&c),
            Path::new("artifacts/Qwen_Qwen3-0.6B_multi-openai-chat-request_rate2.5")
        );
        // A sweep's directory is not named for any one point's load.
        assert_eq!(
            resolve_sweep_artifact_dir(&c),
            Path::new("artifacts/Qwen_Qwen3-0.6B_multi-openai-chat-sweep")
        );
        c.output.artifact_dir = Some("mine".into());
        assert_eq!(resolve_sweep_artifact_dir(&c), Path::new("mine"));
    }

    #[test]
    fn iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000000");
        // 2026-11-22T02:06:59.552360 UTC
        assert_eq!(
            iso_time(1_795_313_219_552_360_000),
            "2026-11-22T02:06:59.552360"
        );
        assert_eq!(
            iso_time(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000"
        );
    }
}

#[cfg(test)]
mod example_tests;
