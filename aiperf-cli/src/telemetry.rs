//! GPU telemetry and server metrics beside `aiperf profile` (docs/telemetry.md): the flags,
//! which endpoints they select, and what the run gets back to print and to add to its
//! files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aiperf_core::transport::Transport;
use aiperf_metrics::export::console::{format_number, TextTable};
use aiperf_metrics::Summary;
use aiperf_telemetry::collector::metrics_url;
use aiperf_telemetry::export::{self, endpoint_key, ExportOptions, ServerMetricsFormat};
use aiperf_telemetry::gpu::GpuMetricValue;
use aiperf_telemetry::{
    power_efficiency, DerivedMetric, GpuSummary, TelemetryCollector, TelemetryConfig,
    TelemetryHandle, TelemetryReport,
};
use anyhow::Context;
use clap::{Args, ValueEnum};
use serde_json::Value;

/// GPU telemetry and server metrics flags.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Telemetry")]
pub struct TelemetryArgs {
    /// Show the GPU telemetry table at the end. DCGM exporters at localhost:9400 and
    /// :9401 are always tried; URLs given here are scraped too (`http://` and `/metrics`
    /// added as needed). `dashboard` is accepted; pynvml, amdsmi and custom metric CSV
    /// files are not supported yet.
    #[arg(long = "gpu-telemetry", num_args = 0.., value_name = "URL")]
    pub gpu_telemetry: Option<Vec<String>>,

    /// Do not collect GPU telemetry.
    #[arg(long = "no-gpu-telemetry", conflicts_with = "gpu_telemetry")]
    pub no_gpu_telemetry: bool,

    /// More Prometheus endpoints to scrape beside each --url's `/metrics` (scraped by
    /// default).
    #[arg(long = "server-metrics", num_args = 0.., value_name = "URL")]
    pub server_metrics: Option<Vec<String>>,

    /// Do not scrape server metrics.
    #[arg(long = "no-server-metrics", conflicts_with = "server_metrics")]
    pub no_server_metrics: bool,

    /// Server metrics files to write.
    #[arg(
        long = "server-metrics-formats",
        value_enum,
        num_args = 1..,
        value_delimiter = ',',
        default_values_t = [FormatArg::Json, FormatArg::Csv]
    )]
    pub server_metrics_formats: Vec<FormatArg>,
}

/// A `--server-metrics-formats` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// server_metrics_export.json
    Json,
    /// server_metrics_export.csv
    Csv,
    /// server_metrics_export.jsonl (every scrape)
    Jsonl,
    /// server_metrics_export.parquet (every scrape, one row per sample)
    Parquet,
}

impl From<FormatArg> for ServerMetricsFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Json => ServerMetricsFormat::Json,
            FormatArg::Csv => ServerMetricsFormat::Csv,
            FormatArg::Jsonl => ServerMetricsFormat::Jsonl,
            FormatArg::Parquet => ServerMetricsFormat::Parquet,
        }
    }
}

/// The values of a list flag: repeated occurrences and whitespace-separated words.
fn words(values: Option<&Vec<String>>) -> impl Iterator<Item = &str> {
    values
        .into_iter()
        .flatten()
        .flat_map(|v| v.split_whitespace())
}

/// What the flags select.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Selection {
    gpu: bool,
    gpu_urls: Vec<String>,
    show_gpu_table: bool,
    server_urls: Vec<String>,
}

fn select(args: &TelemetryArgs, target_urls: &[String]) -> anyhow::Result<Selection> {
    let mut gpu_urls = Vec::new();
    for value in words(args.gpu_telemetry.as_ref()) {
        match value.to_ascii_lowercase().as_str() {
            "dashboard" => {}
            "pynvml" | "amdsmi" => anyhow::bail!(
                "--gpu-telemetry {value}: local GPU libraries are not supported yet; \
                 run a DCGM exporter and pass its URL instead"
            ),
            v if v.ends_with(".csv") => anyhow::bail!(
                "--gpu-telemetry {value}: custom DCGM metric files are not supported yet"
            ),
            _ => gpu_urls.push(metrics_url(value)),
        }
    }
    let mut server_urls: Vec<String> = Vec::new();
    if !args.no_server_metrics {
        let targets = target_urls.iter().map(String::as_str);
        for url in targets.chain(words(args.server_metrics.as_ref())) {
            let url = metrics_url(url);
            if !server_urls.contains(&url) {
                server_urls.push(url);
            }
        }
    }
    Ok(Selection {
        gpu: !args.no_gpu_telemetry,
        gpu_urls,
        show_gpu_table: args.gpu_telemetry.is_some(),
        server_urls,
    })
}

/// A scrape interval in seconds from the environment variable `name`, if set
/// (docs/cli-rules.md#environment-variables).
fn env_interval(name: &str) -> anyhow::Result<Option<Duration>> {
    match std::env::var(name) {
        Ok(value) => parse_interval(name, &value).map(Some),
        Err(_) => Ok(None),
    }
}

fn parse_interval(name: &str, value: &str) -> anyhow::Result<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .with_context(|| format!("{name}={value:?}: expected a positive number of seconds"))
}

/// Telemetry collecting beside a run.
#[derive(Debug)]
pub struct Running {
    handle: TelemetryHandle,
    show_gpu_table: bool,
    formats: Vec<ServerMetricsFormat>,
}

/// Start collecting what `args` select beside a run against `target_urls` (the `--url`
/// values, after `mock` was replaced by the embedded server's URL). Returns at once
/// (reachability is probed in the background); `None` when everything is disabled.
pub async fn start(
    args: &TelemetryArgs,
    target_urls: &[String],
    transport: Arc<dyn Transport>,
) -> anyhow::Result<Option<Running>> {
    let selection = select(args, target_urls)?;
    let mut config = TelemetryConfig::new();
    if let Some(interval) = env_interval("AIPERF_GPU_COLLECTION_INTERVAL")? {
        config = config.gpu_interval(interval);
    }
    if let Some(interval) = env_interval("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL")? {
        config = config.server_interval(interval);
    }
    if selection.gpu {
        config = config.default_gpu_endpoints();
        for url in selection.gpu_urls {
            config = config.gpu_endpoint(url);
        }
    }
    for url in selection.server_urls {
        config = config.server_endpoint(url);
    }
    if config.is_empty() {
        return Ok(None);
    }
    Ok(Some(Running {
        handle: TelemetryCollector::start(config, transport),
        show_gpu_table: selection.gpu && selection.show_gpu_table,
        formats: args
            .server_metrics_formats
            .iter()
            .map(|&f| f.into())
            .collect(),
    }))
}

/// What the run itself counted, for the derived metrics and the files.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunTotals {
    /// `total_output_tokens` of the profiling phase.
    pub output_tokens: Option<f64>,
    /// The profiling concurrency (for `energy_per_user`).
    pub concurrency: Option<f64>,
    /// The run's `benchmark_id`.
    pub benchmark_id: Option<String>,
    /// `--profile-export-prefix` as the summary files use it (known suffixes stripped).
    pub export_prefix: Option<String>,
}

impl RunTotals {
    /// The totals of a finished run.
    pub fn from_summary(summary: &Summary) -> Self {
        RunTotals {
            output_tokens: summary.metric("total_output_tokens").map(|m| m.avg),
            concurrency: summary.config.load.concurrency.map(|c| c as f64),
            benchmark_id: Some(summary.benchmark_id.clone()),
            export_prefix: export_prefix(summary.config.output.export_prefix.as_deref()),
        }
    }
}

/// The prefix exactly as the summary files got it: the JSON file's stem, unless that is
/// the default name.
fn export_prefix(prefix: Option<&str>) -> Option<String> {
    let paths = aiperf_metrics::export::export_paths(Path::new(""), prefix);
    let stem = paths.json.file_stem()?.to_str()?;
    (stem != "profile_export_aiperf").then(|| stem.to_string())
}

/// What telemetry adds to a finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The GPU tables for the console, when `--gpu-telemetry` was given and GPUs answered.
    pub console: Option<String>,
    /// `telemetry_data` for `profile_export_aiperf.json`, when GPU telemetry was on.
    pub telemetry_data: Option<Value>,
    /// Text to append to `profile_export_aiperf.csv` (two empty rows, the GPU table).
    pub csv_section: Option<String>,
    /// `total_gpu_power`, `total_gpu_energy`, `output_tokens_per_joule`, `energy_per_user`.
    pub derived: Vec<DerivedMetric>,
    /// The telemetry files written into the artifact directory.
    pub files: Vec<PathBuf>,
}

impl Running {
    /// Stop collecting, summarise over the profiling phase `window_wall_ns` (Unix ns),
    /// write `gpu_telemetry_export.jsonl` and the `server_metrics_export.*` files into
    /// `artifact_dir`, and return what the summary files and the console need.
    pub async fn finish(
        self,
        window_wall_ns: (u64, u64),
        artifact_dir: &Path,
        totals: RunTotals,
    ) -> anyhow::Result<Finished> {
        let report = self.handle.finish(window_wall_ns).await;
        let options = ExportOptions {
            formats: self.formats,
            benchmark_id: totals.benchmark_id.clone(),
            prefix: totals.export_prefix.clone(),
        };
        let files = export::write_files(&report, artifact_dir, &options)?;
        let gpus: Vec<GpuSummary> = report.gpus().cloned().collect();
        let derived = power_efficiency(
            &gpus,
            aiperf_telemetry::RunTotals {
                output_tokens: totals.output_tokens,
                concurrency: totals.concurrency,
            },
        );
        let console =
            (self.show_gpu_table && !gpus.is_empty()).then(|| render_console(&report, &derived));
        Ok(Finished {
            console,
            telemetry_data: (!report.gpu.is_empty()).then(|| export::gpu::telemetry_data(&report)),
            csv_section: export::gpu::csv_section(&report),
            derived,
            files,
        })
    }
}

impl Finished {
    /// Add telemetry to the summary files already written: `telemetry_data` and the
    /// derived metrics (as single-value metrics: `{unit, avg}`) into the JSON, the derived
    /// metrics as `Metric,Value` rows at the end of the CSV's last table, then the GPU
    /// table. Nothing changes when there is nothing to add.
    pub fn patch_summary_files(&self, json_path: &Path, csv_path: &Path) -> anyhow::Result<()> {
        if self.telemetry_data.is_some() || !self.derived.is_empty() {
            let text = std::fs::read_to_string(json_path)
                .with_context(|| format!("cannot read {}", json_path.display()))?;
            let mut json: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", json_path.display()))?;
            if let Some(object) = json.as_object_mut() {
                for m in &self.derived {
                    object.insert(
                        m.tag.to_string(),
                        serde_json::json!({ "unit": m.unit, "avg": m.value }),
                    );
                }
                if let Some(data) = &self.telemetry_data {
                    object.insert("telemetry_data".into(), data.clone());
                }
            }
            let text = serde_json::to_string_pretty(&json)?;
            std::fs::write(json_path, text)
                .with_context(|| format!("cannot write {}", json_path.display()))?;
        }
        let mut tail = String::new();
        for m in &self.derived {
            tail.push_str(&format!("{} ({}),{:.2}\r\n", m.header, m.unit, m.value));
        }
        if let Some(section) = &self.csv_section {
            tail.push_str(section);
        }
        if !tail.is_empty() {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(csv_path)
                .with_context(|| format!("cannot open {}", csv_path.display()))?;
            file.write_all(tail.as_bytes())
                .with_context(|| format!("cannot write {}", csv_path.display()))?;
        }
        Ok(())
    }
}

/// "NVIDIA AIPerf | GPU Telemetry": one table per GPU (columns as the main table's), then
/// the derived power-efficiency metrics.
fn render_console(report: &TelemetryReport, derived: &[DerivedMetric]) -> String {
    let mut out = String::from("\nNVIDIA AIPerf | GPU Telemetry\n");
    for endpoint in &report.gpu {
        let key = endpoint_key(&endpoint.scrapes.name);
        for gpu in &endpoint.gpus {
            let id = &gpu.identity;
            let name = id.model_name.as_deref().unwrap_or("GPU");
            let mut table = TextTable::new(
                format!("GPU {} | {name} | {key}", id.index),
                &["Metric", "avg", "min", "max", "p99", "p90", "p50", "std"],
            );
            for metric in &gpu.metrics {
                let mut cells = vec![vec![format!(
                    "{} ({})",
                    metric.def.display, metric.def.unit
                )]];
                let values = match &metric.value {
                    GpuMetricValue::Gauge(s) => [
                        Some(s.avg),
                        Some(s.min),
                        Some(s.max),
                        s.percentile(99.0),
                        s.percentile(90.0),
                        s.percentile(50.0),
                        Some(s.std),
                    ],
                    GpuMetricValue::Counter { delta } => {
                        [Some(*delta), None, None, None, None, None, None]
                    }
                };
                cells.extend(values.into_iter().map(|v| vec![format_number(v)]));
                table.row(cells);
            }
            out.push_str(&table.render());
        }
    }
    if !derived.is_empty() {
        let mut table =
            TextTable::new("NVIDIA AIPerf | GPU Power Efficiency", &["Metric", "Value"]);
        for m in derived {
            table.row(vec![
                vec![format!("{} ({})", m.header, m.unit)],
                vec![format_number(Some(m.value))],
            ]);
        }
        out.push_str(&table.render());
    }
    out
}

#[cfg(test)]
mod tests {
    use aiperf_endpoints::HttpTransport;
    use aiperf_mock_server::{MockConfig, MockServer};
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        telemetry: TelemetryArgs,
    }

    fn parse(line: &str) -> TelemetryArgs {
        Cli::try_parse_from(std::iter::once("aiperf").chain(line.split_whitespace()))
            .unwrap()
            .telemetry
    }

    #[test]
    fn flags_parse() {
        let none = parse("");
        assert_eq!(none.gpu_telemetry, None);
        assert_eq!(
            none.server_metrics_formats,
            [FormatArg::Json, FormatArg::Csv]
        );
        assert_eq!(parse("--gpu-telemetry").gpu_telemetry, Some(vec![]));
        let args =
            parse("--gpu-telemetry a:9400 b --gpu-telemetry c --server-metrics-formats json,jsonl");
        assert_eq!(args.gpu_telemetry.unwrap(), ["a:9400", "b", "c"]);
        assert_eq!(
            args.server_metrics_formats,
            [FormatArg::Json, FormatArg::Jsonl]
        );
        assert!(parse("--no-gpu-telemetry --no-server-metrics").no_server_metrics);
        let both = ["aiperf", "--gpu-telemetry", "--no-gpu-telemetry"];
        assert!(Cli::try_parse_from(both).is_err());
    }

    #[test]
    fn totals_come_from_the_summary() {
        let mut config = aiperf_core::BenchmarkConfig::default();
        config.load.concurrency = Some(8);
        let mut summary = Summary::new(config, Default::default());
        let def = aiperf_metrics::catalogue::metric_def("total_output_tokens").unwrap();
        summary
            .metrics
            .push(aiperf_metrics::MetricResult::single(def, 1234.0));
        let totals = RunTotals::from_summary(&summary);
        assert_eq!(totals.output_tokens, Some(1234.0));
        assert_eq!(totals.concurrency, Some(8.0));
        assert_eq!(
            totals.benchmark_id.as_deref(),
            Some(summary.benchmark_id.as_str())
        );
    }

    #[test]
    fn intervals_from_the_environment() {
        let name = "AIPERF_GPU_COLLECTION_INTERVAL";
        assert_eq!(
            parse_interval(name, " 0.5 ").unwrap(),
            Duration::from_millis(500)
        );
        for bad in ["0", "-1", "fast", "NaN"] {
            let error = parse_interval(name, bad).unwrap_err().to_string();
            assert!(error.contains("positive number of seconds"), "{error}");
        }
    }

    #[test]
    fn selection_follows_the_flags() {
        let targets = ["http://s:8000".to_string(), "s:8000/".to_string()];
        let s = select(&parse("--server-metrics x:1 s:8000"), &targets).unwrap();
        assert_eq!(
            s.server_urls,
            ["http://s:8000/metrics", "http://x:1/metrics"]
        );
        assert!(s.gpu && !s.show_gpu_table && s.gpu_urls.is_empty());

        let s = select(&parse("--gpu-telemetry dashboard g:9500"), &targets).unwrap();
        assert!(s.show_gpu_table);
        assert_eq!(s.gpu_urls, ["http://g:9500/metrics"]);

        let s = select(&parse("--no-server-metrics --no-gpu-telemetry"), &targets).unwrap();
        assert!(!s.gpu && s.server_urls.is_empty());
        assert!(select(&parse("--gpu-telemetry pynvml"), &targets).is_err());
        assert!(select(&parse("--gpu-telemetry metrics.csv"), &targets).is_err());
    }

    #[tokio::test]
    async fn everything_disabled_starts_nothing() {
        let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
        let args = parse("--no-server-metrics --no-gpu-telemetry");
        let running = start(&args, &["http://h:1".into()], transport)
            .await
            .unwrap();
        assert!(running.is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_against_the_mock_server_adds_tables_files_and_json() {
        let server = MockServer::start(MockConfig::fast()).await.unwrap();
        let base = server.url();
        let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
        // The mock's own /metrics is the target's server metrics; /dcgm1 is a GPU exporter.
        let dcgm = format!("{base}/dcgm1");
        let args = parse(&format!(
            "--gpu-telemetry {dcgm} --server-metrics-formats json,csv,jsonl"
        ));
        let running = start(&args, std::slice::from_ref(&base), transport)
            .await
            .unwrap()
            .unwrap();
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        };
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let start_ns = now();
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        let window = (start_ns, now());
        let dir = tempfile::tempdir().unwrap();
        let totals = RunTotals {
            output_tokens: Some(1000.0),
            concurrency: Some(4.0),
            benchmark_id: Some("id-1".into()),
            export_prefix: None,
        };
        let finished = running.finish(window, dir.path(), totals).await.unwrap();
        server.shutdown().await;

        let names: Vec<String> = finished
            .files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "gpu_telemetry_export.jsonl",
                "server_metrics_export.json",
                "server_metrics_export.csv",
                "server_metrics_export.jsonl"
            ]
        );
        let console = finished.console.as_deref().unwrap();
        assert!(console.contains("NVIDIA AIPerf | GPU Telemetry"));
        assert!(console.contains("GPU 0 | "));
        assert!(console.contains("GPU Power Usage (W)"));
        assert!(console.contains("Total GPU Energy (2 GPUs) (J)"));
        let tags: Vec<&str> = finished.derived.iter().map(|m| m.tag).collect();
        assert_eq!(
            tags,
            [
                "total_gpu_power",
                "total_gpu_energy",
                "output_tokens_per_joule",
                "energy_per_user"
            ]
        );
        let data = finished.telemetry_data.as_ref().unwrap();
        // The defaults (localhost:9400/9401) are configured too, and silently absent.
        assert_eq!(
            data["summary"]["endpoints_configured"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            data["summary"]["endpoints_successful"][0],
            format!("{dcgm}/metrics")
        );

        // The summary files gain telemetry_data, the derived metrics and the GPU table.
        let json_path = dir.path().join("profile_export_aiperf.json");
        let csv_path = dir.path().join("profile_export_aiperf.csv");
        std::fs::write(
            &json_path,
            r#"{"request_count": {"unit": "requests", "avg": 3.0}}"#,
        )
        .unwrap();
        std::fs::write(&csv_path, "Metric,Value\r\nRequest Count,3.00\r\n").unwrap();
        finished.patch_summary_files(&json_path, &csv_path).unwrap();
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        assert_eq!(json["request_count"]["avg"], 3.0);
        assert_eq!(json["total_gpu_energy"]["unit"], "J");
        assert_eq!(json["telemetry_data"], *data);
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert!(lines[2].starts_with("Total GPU Power (2 GPUs) (W),"));
        assert_eq!(&lines[6..8], ["", ""]);
        assert!(lines[8].starts_with("Endpoint,GPU_Index,GPU_Name,GPU_UUID,Hostname,Metric,avg"));
    }
}
