//! Telemetry against a Prometheus exporter we did not write: Debian's
//! `prometheus-node-exporter` (installed by `.ci/run`), started on a free loopback port and
//! scraped as server metrics beside the in-process mock server.
//!
//! Without the binary the tests explain why and pass, unless `CI` is set: CI installs it,
//! so there a missing binary is a failure.
#![allow(clippy::unwrap_used)] // tests fail loudly by design
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test says on the terminal which optional input it skipped

mod common;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiperf_core::transport::Transport;
use aiperf_endpoints::HttpTransport;
use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_telemetry::export::{self, ExportOptions, ServerMetricsFormat};
use aiperf_telemetry::prometheus::MetricType;
use aiperf_telemetry::summary::SeriesStats;
use aiperf_telemetry::{TelemetryCollector, TelemetryConfig};
use common::{args, assert_exit, profile, read_json};
use serde_json::Value;

/// The names the exporter goes by: Debian's package, and upstream's release binary.
const BINARIES: [&str; 2] = ["prometheus-node-exporter", "node_exporter"];

fn find_node_exporter() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| BINARIES.map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// `CI` set to anything but `false`/`0`.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The node exporter, killed when dropped.
struct NodeExporter {
    child: Child,
    url: String,
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the node exporter on a free loopback port and waits until it accepts
/// connections; `None` (after saying why) when it is not installed outside CI.
fn start_node_exporter() -> Option<NodeExporter> {
    let Some(binary) = find_node_exporter() else {
        assert!(
            !in_ci(),
            "prometheus-node-exporter is not installed; .ci/run installs it (apt-get install -y prometheus-node-exporter)"
        );
        eprintln!(
            "skipped: prometheus-node-exporter is not installed \
             (apt-get install -y prometheus-node-exporter); CI fails instead"
        );
        return None;
    };
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let child = Command::new(&binary)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let exporter = NodeExporter {
        child,
        url: format!("http://127.0.0.1:{port}/metrics"),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the node exporter did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(exporter)
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// `node_cpu_seconds_total` in the JSON export: a counter with `cpu` and `mode` labels,
/// named without `_total` as the Python AIPerf 0.13 names counters.
fn assert_node_cpu_in_json(json: &Value, url: &str) {
    assert!(json["metrics"]["node_cpu_seconds_total"].is_null());
    let cpu = &json["metrics"]["node_cpu_seconds"];
    assert_eq!(cpu["type"], "counter", "{cpu}");
    assert_eq!(cpu["unit"], "seconds");
    let series = cpu["series"].as_array().unwrap();
    assert!(series.iter().all(|s| s["endpoint_url"] == url));
    let idle = series
        .iter()
        .find(|s| s["labels"]["mode"] == "idle")
        .expect("an idle series");
    assert!(idle["labels"]["cpu"].is_string());
    assert!(idle["stats"]["total"].as_f64().unwrap() >= 0.0);
    assert!(json["summary"]["endpoints_successful"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u == url));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_exporter_families_reach_every_server_metrics_export() {
    let Some(exporter) = start_node_exporter() else {
        return;
    };
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
    let mock_metrics = format!("{}/metrics", server.url());
    let config = TelemetryConfig::new()
        .server_endpoint(exporter.url.clone())
        .server_endpoint(mock_metrics.clone())
        .interval(Duration::from_millis(200));
    let handle = TelemetryCollector::start(config, transport);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start = wall_ns();
    tokio::time::sleep(Duration::from_millis(900)).await;
    let report = handle.finish((start, wall_ns())).await;
    server.shutdown().await;

    let node = &report.server[0];
    assert!(
        node.scrapes.is_reachable(),
        "{:?}",
        node.scrapes.unreachable
    );
    assert!(node.scrapes.scrapes.len() >= 4);
    let cpu = node
        .summary
        .series
        .iter()
        .find(|s| s.name == "node_cpu_seconds_total" && s.label("mode") == Some("idle"))
        .expect("node_cpu_seconds_total{mode=\"idle\"}");
    assert_eq!(cpu.kind, MetricType::Counter);
    assert!(matches!(&cpu.stats, SeriesStats::Counter(c) if c.delta >= 0.0 && c.resets == 0));
    let memory = node
        .summary
        .series
        .iter()
        .find(|s| s.name == "node_memory_MemTotal_bytes")
        .expect("node_memory_MemTotal_bytes");
    assert!(matches!(&memory.stats, SeriesStats::Gauge(g) if g.min > 0.0));
    assert!(report.server[1].scrapes.is_reachable());

    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        formats: vec![
            ServerMetricsFormat::Json,
            ServerMetricsFormat::Csv,
            ServerMetricsFormat::Jsonl,
        ],
        benchmark_id: None,
        prefix: None,
    };
    export::write_files(&report, dir.path(), &options).unwrap();
    let json = read_json(&dir.path().join("server_metrics_export.json"));
    assert_node_cpu_in_json(&json, &exporter.url);
    assert!(json["metrics"]["aiperf_mock_requests"].is_object());
    let csv = std::fs::read_to_string(dir.path().join("server_metrics_export.csv")).unwrap();
    // The CSV names an endpoint by host:port, as the Python AIPerf does.
    let host_port = exporter
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics");
    assert!(
        csv.lines()
            .any(|l| l.starts_with(&format!("{host_port},counter,node_cpu_seconds,seconds,"))),
        "{csv}"
    );
    let jsonl = std::fs::read_to_string(dir.path().join("server_metrics_export.jsonl")).unwrap();
    let first: Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(first["endpoint_url"], exporter.url.as_str());
    assert!(first["metrics"]["node_cpu_seconds"][0]["labels"]["mode"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_scrapes_the_node_exporter_through_server_metrics() {
    let Some(exporter) = start_node_exporter() else {
        return;
    };
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let mock_metrics = format!("{}/metrics", server.url());
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --concurrency 2 --request-count 20 --isl 16 --osl 4 \
         --no-gpu-telemetry --server-metrics {node} --server-metrics-formats json,csv,jsonl",
        url = server.url(),
        node = exporter.url.trim_end_matches("/metrics"),
    ));
    argv.extend([
        "--artifact-dir".to_string(),
        dir.path().to_str().unwrap().to_string(),
    ]);
    let output = profile(argv).await;
    assert_exit(&output, 0);
    server.shutdown().await;

    let json = read_json(&dir.path().join("server_metrics_export.json"));
    assert_node_cpu_in_json(&json, &exporter.url);
    assert!(json["summary"]["endpoints_configured"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| *u == mock_metrics.as_str()));
    for name in ["server_metrics_export.csv", "server_metrics_export.jsonl"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(text.contains("node_cpu_seconds"), "{name}");
        assert!(!text.contains("node_cpu_seconds_total"), "{name}");
    }
    assert!(!dir.path().join("gpu_telemetry_export.jsonl").exists());
}
