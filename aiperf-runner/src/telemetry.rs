//! GPU telemetry and server metrics beside a run (docs/telemetry.md): which endpoints
//! the options select, and what the run gets back to show and to add to its files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aiperf_core::transport::Transport;
use aiperf_metrics::export::console::{format_number, TextTable};
use aiperf_metrics::{AddedMetric, Summary, SummaryAdditions};
use aiperf_telemetry::collector::metrics_url;
use aiperf_telemetry::export::{self, endpoint_key, ExportOptions, ServerMetricsFormat};
use aiperf_telemetry::gpu::GpuMetricValue;
use aiperf_telemetry::{
    power_efficiency, DerivedMetric, GpuSummary, RunTotals, TelemetryCollector, TelemetryConfig,
    TelemetryHandle, TelemetryReport,
};

use crate::spec::TelemetryOptions;
use crate::RunError;

/// Telemetry collecting beside a run.
#[derive(Debug)]
pub(crate) struct Running {
    handle: TelemetryHandle,
    formats: Vec<ServerMetricsFormat>,
}

/// The endpoints `options` select for a run against `target_urls`: the DCGM defaults
/// and the given GPU exporters, each target's `/metrics` and the given server-metrics
/// endpoints.
fn collector_config(options: &TelemetryOptions, target_urls: &[String]) -> TelemetryConfig {
    let mut config = TelemetryConfig::new();
    if let Some(interval) = options.gpu_interval {
        config = config.gpu_interval(interval);
    }
    if let Some(interval) = options.server_interval {
        config = config.server_interval(interval);
    }
    if options.gpu {
        config = config.default_gpu_endpoints();
        for url in &options.gpu_urls {
            config = config.gpu_endpoint(metrics_url(url));
        }
    }
    if options.server_metrics {
        for url in target_urls.iter().chain(&options.server_urls) {
            config = config.server_endpoint(metrics_url(url));
        }
    }
    config
}

/// Starts collecting what `options` select beside a run against `target_urls` (the base
/// URLs the run sends to). Returns at once (reachability is probed in the background);
/// `None` when everything is disabled.
pub(crate) fn start(
    options: &TelemetryOptions,
    target_urls: &[String],
    transport: Arc<dyn Transport>,
) -> Option<Running> {
    let config = collector_config(options, target_urls);
    if config.is_empty() {
        return None;
    }
    Some(Running {
        handle: TelemetryCollector::start(config, transport),
        formats: options.server_metrics_formats.clone(),
    })
}

/// What telemetry adds to a finished run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    /// The GPU tables as the console shows them, when GPUs answered.
    pub(crate) console: Option<String>,
    /// For the summary files: the power-efficiency metrics (`total_gpu_power`,
    /// `total_gpu_energy`, `output_tokens_per_joule`, `energy_per_user`),
    /// `telemetry_data` when GPU telemetry was on, and the CSV's GPU table.
    pub(crate) additions: SummaryAdditions,
    /// The telemetry files written into the artifact directory.
    pub(crate) files: Vec<PathBuf>,
}

impl Running {
    /// Stops collecting, summarises over the profiling phase of `summary`, writes
    /// `gpu_telemetry_export.jsonl` and the `server_metrics_export.*` files into
    /// `artifact_dir`, and returns what the summary files and the console need.
    pub(crate) async fn finish(
        self,
        summary: &Summary,
        artifact_dir: &Path,
    ) -> Result<Finished, RunError> {
        let window = (
            summary.start_time_ns.unwrap_or(0),
            summary.end_time_ns.unwrap_or(0),
        );
        let report = self.handle.finish(window).await;
        let options = ExportOptions {
            formats: self.formats,
            benchmark_id: Some(summary.benchmark_id.clone()),
            prefix: export_prefix(summary.config.output.export_prefix.as_deref()),
        };
        let files = export::write_files(&report, artifact_dir, &options)?;
        let gpus: Vec<GpuSummary> = report.gpus().cloned().collect();
        let derived = power_efficiency(
            &gpus,
            RunTotals {
                output_tokens: summary.metric("total_output_tokens").map(|m| m.avg),
                concurrency: summary.config.load.concurrency.map(|c| c as f64),
            },
        );
        let console = (!gpus.is_empty()).then(|| render_console(&report, &derived));
        let additions = SummaryAdditions {
            metrics: derived
                .iter()
                .map(|m| AddedMetric {
                    tag: m.tag.to_owned(),
                    header: m.header.clone(),
                    unit: m.unit.to_owned(),
                    value: m.value,
                })
                .collect(),
            json_sections: (!report.gpu.is_empty())
                .then(|| {
                    (
                        "telemetry_data".to_owned(),
                        export::gpu::telemetry_data(&report),
                    )
                })
                .into_iter()
                .collect(),
            csv_appendix: export::gpu::csv_section(&report).unwrap_or_default(),
        };
        Ok(Finished {
            console,
            additions,
            files,
        })
    }
}

/// The prefix exactly as the summary files got it: the JSON file's stem, unless that is
/// the default name.
fn export_prefix(prefix: Option<&str>) -> Option<String> {
    let paths = aiperf_metrics::export::export_paths(Path::new(""), prefix);
    let stem = paths.json.file_stem()?.to_str()?;
    (stem != "profile_export_aiperf").then(|| stem.to_string())
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
    use aiperf_core::BenchmarkConfig;
    use aiperf_endpoints::HttpTransport;
    use aiperf_mock_server::{MockConfig, MockServer};
    use serde_json::Value;

    use super::*;

    fn wall_ns() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }

    #[test]
    fn everything_disabled_starts_nothing() {
        let options = TelemetryOptions {
            gpu: false,
            server_metrics: false,
            ..TelemetryOptions::default()
        };
        assert!(collector_config(&options, &["http://h:1".into()]).is_empty());
        let options = TelemetryOptions {
            gpu: false,
            ..TelemetryOptions::default()
        };
        assert!(!collector_config(&options, &["http://h:1".into()]).is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_against_the_mock_server_adds_tables_files_and_json() {
        let server = MockServer::start(MockConfig::fast()).await.unwrap();
        let base = server.url();
        let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
        // The mock's own /metrics is the target's server metrics; /dcgm1 is a GPU exporter.
        let dcgm = format!("{base}/dcgm1");
        let options = TelemetryOptions {
            gpu_urls: vec![dcgm.clone()],
            server_metrics_formats: vec![
                ServerMetricsFormat::Json,
                ServerMetricsFormat::Csv,
                ServerMetricsFormat::Jsonl,
            ],
            ..TelemetryOptions::default()
        };
        let running = start(&options, std::slice::from_ref(&base), transport).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let mut config = BenchmarkConfig::default();
        config.load.concurrency = Some(4);
        let mut summary = Summary::new(config, aiperf_metrics::MetricsContext::default());
        let def = aiperf_metrics::catalogue::metric_def("total_output_tokens").unwrap();
        summary
            .metrics
            .push(aiperf_metrics::MetricResult::single(def, 1000.0));
        summary.start_time_ns = Some(wall_ns());
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        summary.end_time_ns = Some(wall_ns());
        let dir = tempfile::tempdir().unwrap();
        let finished = running.finish(&summary, dir.path()).await.unwrap();
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
        let additions = &finished.additions;
        let tags: Vec<&str> = additions.metrics.iter().map(|m| m.tag.as_str()).collect();
        assert_eq!(
            tags,
            [
                "total_gpu_power",
                "total_gpu_energy",
                "output_tokens_per_joule",
                "energy_per_user"
            ]
        );
        let (key, data) = &additions.json_sections[0];
        assert_eq!(key, "telemetry_data");
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

        // The summary files carry telemetry_data, the derived metrics and the GPU table
        // after the run's own entries.
        summary.additions = finished.additions.clone();
        let paths = aiperf_metrics::export::export_paths(dir.path(), None);
        aiperf_metrics::export::write_summary_files(&summary, &paths).unwrap();
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(&paths.json).unwrap()).unwrap();
        assert_eq!(json["total_output_tokens"]["avg"], 1000.0);
        assert_eq!(json["total_gpu_energy"]["unit"], "J");
        assert_eq!(json["telemetry_data"], *data);
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.last().map(|k| k.as_str()), Some("telemetry_data"));
        let csv = std::fs::read_to_string(&paths.csv).unwrap();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(lines[0], "Metric,Value");
        assert_eq!(lines[1], "Total Output Tokens (tokens),1000.00");
        assert!(lines[2].starts_with("Total GPU Power (2 GPUs) (W),"));
        assert_eq!(&lines[6..8], ["", ""]);
        assert!(lines[8].starts_with("Endpoint,GPU_Index,GPU_Name,GPU_UUID,Hostname,Metric,avg"));
    }
}
