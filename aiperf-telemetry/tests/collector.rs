//! The run-level collector against the mock server's fake DCGM exporter and vLLM metrics,
//! through the real HTTP transport: window alignment, counter deltas, the sampler hook and
//! every export file.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aiperf_core::transport::{BoxFuture, HttpMethod, HttpRequest, Transport};
use aiperf_endpoints::HttpTransport;
use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_telemetry::export::{self, gpu, server, ExportOptions, ServerMetricsFormat};
use aiperf_telemetry::prometheus::{find_family, MetricFamily, MetricType, Sample};
use aiperf_telemetry::summary::SeriesStats;
use aiperf_telemetry::{
    power_efficiency, RunTotals, SampleError, Sampled, Sampler, Scrape, TelemetryCollector,
    TelemetryConfig,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/metrics")
}

/// One chat request; returns the completion tokens.
async fn chat(transport: &Arc<dyn Transport>, url: &str) -> f64 {
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":40}"#;
    let exchange = transport
        .send(HttpRequest {
            method: HttpMethod::Post,
            url: format!("{url}/v1/chat/completions"),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec().into(),
            timeout: Some(Duration::from_secs(10)),
        })
        .await;
    assert_eq!(exchange.status, Some(200), "{:?}", exchange.error);
    let json: Value = serde_json::from_slice(exchange.body()).unwrap();
    json["usage"]["completion_tokens"].as_f64().unwrap()
}

/// An embedder's sampler: a counter of its own calls.
struct Counting {
    calls: AtomicU64,
}

impl Sampler for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn sample(&self, _timeout: Duration) -> BoxFuture<'_, Result<Sampled, SampleError>> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            let mut family = MetricFamily::new("calls", MetricType::Counter);
            family.samples.push(Sample {
                name: "calls_total".into(),
                value: n as f64,
                ..Sample::default()
            });
            Ok(Sampled {
                at: Instant::now(),
                families: vec![family],
                skipped_lines: 0,
            })
        })
    }
}

fn energy_mj(scrape: &Scrape, gpu: &str) -> f64 {
    let f = find_family(&scrape.families, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").unwrap();
    f.samples
        .iter()
        .find(|s| s.label("gpu") == Some(gpu))
        .unwrap()
        .value
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collects_the_profiling_window_and_writes_every_export() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let base = server.url();
    let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
    let dcgm = format!("{base}/dcgm1/metrics");
    let vllm = format!("{base}/vllm/metrics");
    let dead = closed_port_url();
    let counting = Arc::new(Counting {
        calls: AtomicU64::new(0),
    });
    let config = TelemetryConfig::new()
        .gpu_endpoint(dcgm.clone())
        .server_endpoint(vllm.clone())
        .server_endpoint(dead.clone())
        .server_sampler(counting.clone())
        .interval(Duration::from_millis(100))
        .reachability_timeout(Duration::from_secs(2));

    let started = Instant::now();
    let handle = TelemetryCollector::start(config, Arc::clone(&transport));
    tokio::time::sleep(Duration::from_millis(350)).await; // warmup: baseline scrapes

    let start_ns = wall_ns();
    let mut generated = 0.0;
    for _ in 0..6 {
        generated += chat(&transport, &base).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let end_ns = wall_ns();
    let report = handle.finish((start_ns, end_ns)).await;
    assert!(started.elapsed() < Duration::from_secs(4));

    // --- GPUs: samples inside the window; energy = the mock's counter difference.
    let window = report.window;
    let d = &report.gpu[0];
    assert_eq!(d.scrapes.name, dcgm);
    assert_eq!(d.gpus.len(), 2);
    let in_window = d
        .scrapes
        .scrapes
        .iter()
        .filter(|s| window.contains(s.at))
        .count();
    assert!(in_window >= 4 && in_window < d.scrapes.scrapes.len());
    let baseline = d
        .scrapes
        .scrapes
        .iter()
        .rev()
        .find(|s| s.at < window.start)
        .unwrap();
    let grace_end = window.end + aiperf_telemetry::DEFAULT_COUNTER_GRACE;
    let last = d
        .scrapes
        .scrapes
        .iter()
        .rev()
        .find(|s| s.at <= grace_end)
        .unwrap();
    assert!(last.at > window.end, "the final scrape follows the window");
    let mut total_joules = 0.0;
    for g in &d.gpus {
        let idx = g.identity.index.as_str();
        let expected_mj = energy_mj(last, idx) - energy_mj(baseline, idx);
        let joules = g.energy_joules().unwrap();
        assert!((joules - expected_mj * 1e-3).abs() < 1e-9 * joules.max(1.0));
        total_joules += joules;
        assert_eq!(g.gauge("gpu_power_usage").unwrap().count, in_window);
    }

    // --- Server: vLLM token counter delta equals the tokens generated; gauges in-window.
    let v = &report.server[0];
    let in_window_v = v
        .scrapes
        .scrapes
        .iter()
        .filter(|s| window.contains(s.at))
        .count();
    let gen_name = &v.scrapes.scrapes[0]
        .families
        .iter()
        .find(|f| f.name.starts_with("vllm:generation_tokens") && f.kind == MetricType::Counter)
        .unwrap()
        .name
        .clone();
    let SeriesStats::Counter(c) = &v.summary.find(gen_name, &[]).unwrap().stats else {
        panic!("not a counter");
    };
    assert_eq!(c.delta, generated);
    let SeriesStats::Gauge(g) = &v
        .summary
        .find("vllm:num_requests_running", &[])
        .unwrap()
        .stats
    else {
        panic!("not a gauge");
    };
    assert_eq!(g.count, in_window_v);

    // The dead endpoint is reported, not waited for; the custom sampler went through.
    assert!(report.server[1].scrapes.unreachable.is_some());
    let custom = &report.server[2];
    assert_eq!(custom.scrapes.name, "counting");
    let SeriesStats::Counter(calls) = &custom.summary.find("calls", &[]).unwrap().stats else {
        panic!("not a counter");
    };
    assert!(calls.delta >= 4.0, "{calls:?}");

    // --- Derived metrics from the same numbers.
    let derived = power_efficiency(
        &report.gpus().cloned().collect::<Vec<_>>(),
        RunTotals {
            output_tokens: Some(generated),
            concurrency: Some(1.0),
        },
    );
    let per_joule = derived
        .iter()
        .find(|m| m.tag == "output_tokens_per_joule")
        .unwrap();
    assert!((per_joule.value - generated / total_joules).abs() < 1e-9);
    assert_eq!(per_joule.header, "Output Tokens Per Joule (2 GPUs)");

    // --- telemetry_data
    let data = gpu::telemetry_data(&report);
    assert_eq!(data["summary"]["endpoints_configured"][0], dcgm.as_str());
    assert_eq!(data["summary"]["endpoints_successful"][0], dcgm.as_str());
    let key = format!("{}/dcgm1", base.trim_start_matches("http://"));
    let gpu0 = &data["endpoints"][key.as_str()]["gpus"]["gpu_0"];
    assert_eq!(gpu0["gpu_index"], 0);
    assert!(gpu0["gpu_uuid"].as_str().unwrap().starts_with("GPU-"));
    let power = &gpu0["metrics"]["gpu_power_usage"];
    assert_eq!(
        keys(power),
        [
            "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
            "std", "count", "unit"
        ]
    );
    assert_eq!(power["unit"], "W");
    assert_eq!(power["count"], in_window);
    assert_eq!(gpu0["metrics"]["energy_consumption"]["unit"], "MJ");

    // --- GPU CSV table
    let rows = gpu::csv_rows(&report);
    assert_eq!(
        rows[0].join(","),
        "Endpoint,GPU_Index,GPU_Name,GPU_UUID,Hostname,Metric,avg,min,max,sum,p1,p5,p10,p25,\
         p50,p75,p90,p95,p99,std"
    );
    let metric_rows: usize = d.gpus.iter().map(|g| g.metrics.len()).sum();
    assert_eq!(rows.len(), 1 + metric_rows);
    assert_eq!(rows[1][5], "GPU Power Usage (W)");
    assert!(gpu::csv_section(&report)
        .unwrap()
        .starts_with("\r\n\r\nEndpoint,"));

    // --- Files
    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        formats: vec![
            ServerMetricsFormat::Json,
            ServerMetricsFormat::Csv,
            ServerMetricsFormat::Jsonl,
            ServerMetricsFormat::Parquet,
        ],
        benchmark_id: Some("b-1".into()),
        prefix: None,
    };
    let written = export::write_files(&report, dir.path(), &options).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "gpu_telemetry_export.jsonl",
            "server_metrics_export.json",
            "server_metrics_export.csv",
            "server_metrics_export.jsonl",
            "server_metrics_export.parquet"
        ]
    );

    let text = std::fs::read_to_string(dir.path().join("gpu_telemetry_export.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        2 * d.scrapes.scrapes.len(),
        "one line per GPU per scrape"
    );
    assert_eq!(
        keys(&lines[0]),
        [
            "timestamp_ns",
            "dcgm_url",
            "gpu_index",
            "gpu_uuid",
            "gpu_model_name",
            "pci_bus_id",
            "device",
            "hostname",
            "telemetry_data"
        ],
        "namespace and pod_name are absent, not null"
    );
    assert_eq!(
        lines[0]["timestamp_ns"],
        report.clock.wall_ns(d.scrapes.scrapes[0].at)
    );
    let td = &lines[0]["telemetry_data"];
    assert!(td["gpu_power_usage"].as_f64().unwrap() > 0.0);
    assert!(
        (td["energy_consumption"].as_f64().unwrap() - energy_mj(&d.scrapes.scrapes[0], "0") * 1e-9)
            .abs()
            < 1e-12
    );

    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("server_metrics_export.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["schema_version"], server::SCHEMA_VERSION);
    assert_eq!(json["benchmark_id"], "b-1");
    assert_eq!(
        keys(&json["summary"]),
        [
            "endpoints_configured",
            "endpoints_successful",
            "start_time",
            "end_time",
            "endpoint_info",
            "phase_time_ranges"
        ]
    );
    assert_eq!(
        json["summary"]["endpoints_configured"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        json["summary"]["endpoints_successful"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let info = &json["summary"]["endpoint_info"][vllm.as_str()];
    assert_eq!(info["total_fetches"], v.scrapes.scrapes.len());
    assert!(info["avg_fetch_latency_ms"].as_f64().unwrap() > 0.0);
    let gen = &json["metrics"][server::display_name(gen_name, MetricType::Counter)];
    assert_eq!(gen["type"], "counter");
    assert_eq!(gen["unit"], "tokens");
    assert_eq!(gen["series"][0]["stats"]["total"], generated);
    let running = &json["metrics"]["vllm:num_requests_running"];
    assert_eq!(running["type"], "gauge");
    assert_eq!(
        keys(&running["series"][0]["stats"]),
        ["avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"]
    );
    let ttft = &json["metrics"]["vllm:time_to_first_token_seconds"]["series"][0];
    assert_eq!(ttft["stats"]["count"], 6);
    // Cumulative bucket deltas, as the Python AIPerf 0.13 writes them: `+Inf` holds the count.
    assert_eq!(ttft["buckets"]["+Inf"], 6, "{}", ttft["buckets"]);

    let csv = std::fs::read_to_string(dir.path().join("server_metrics_export.csv")).unwrap();
    assert!(csv.starts_with("# AIPerf Server Metrics Export (CSV)\n# aiperf_version: 0.13.0\n"));
    let body = &csv[csv.find("\nEndpoint,").unwrap() + 1..];
    let sections: Vec<&str> = body.split("\r\n\r\n").collect();
    assert_eq!(sections.len(), 3, "gauge, counter, histogram: {csv}");
    assert!(sections[0].starts_with(
        "Endpoint,Type,Metric,Unit,avg,min,max,std,p1,p5,p10,p25,p50,p75,p90,p95,p99,"
    ));
    assert!(sections[0]
        .lines()
        .next()
        .unwrap()
        .ends_with(",Description"));
    assert!(sections[1]
        .starts_with("Endpoint,Type,Metric,Unit,total,rate,rate_avg,rate_min,rate_max,rate_std,"));
    assert!(sections[2]
        .starts_with("Endpoint,Type,Metric,Unit,count,count_rate,sum,sum_rate,avg,p1_estimate,"));
    assert!(sections[2]
        .lines()
        .next()
        .unwrap()
        .ends_with(",Description,buckets"));

    let text = std::fs::read_to_string(dir.path().join("server_metrics_export.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        v.scrapes.scrapes.len() + custom.scrapes.scrapes.len()
    );
    assert_eq!(
        keys(&lines[0]),
        [
            "endpoint_url",
            "timestamp_ns",
            "endpoint_latency_ns",
            "metrics",
            "request_sent_ns"
        ]
    );
    assert!(lines[0]["metrics"]["vllm:time_to_first_token_seconds"][0]["buckets"].is_object());
    check_server_parquet(
        &dir.path().join("server_metrics_export.parquet"),
        &lines,
        &vllm,
        server::display_name(gen_name, MetricType::Counter),
    );
    server.shutdown().await;
}

/// `server_metrics_export.parquet` holds what the JSONL holds, one row per sample (a row
/// per bucket for histograms), with counters as deltas between scrapes.
fn check_server_parquet(path: &std::path::Path, jsonl: &[Value], vllm: &str, counter: &str) {
    let batches: Vec<RecordBatch> =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names[..9],
        [
            "endpoint_url",
            "metric_name",
            "metric_type",
            "timestamp_ns",
            "value",
            "sum",
            "count",
            "bucket_le",
            "bucket_count"
        ]
    );
    assert!(names.contains(&"model_name"), "label columns: {names:?}");
    assert_eq!(schema.field(3).data_type(), &DataType::UInt64);
    assert_eq!(schema.field(4).data_type(), &DataType::Float64);

    let expected_rows: usize = jsonl
        .iter()
        .flat_map(|line| line["metrics"].as_object().unwrap().values())
        .flat_map(|series| series.as_array().unwrap())
        .map(|s| s.get("buckets").map_or(1, |b| b.as_object().unwrap().len()))
        .sum();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, expected_rows);

    // the counter's deltas add up to its increase from the first scrape to the last
    let vllm_lines: Vec<&Value> = jsonl.iter().filter(|l| l["endpoint_url"] == vllm).collect();
    let total = |line: &Value| -> f64 {
        line["metrics"][counter]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["value"].as_f64().unwrap())
            .sum()
    };
    let increase = total(vllm_lines[vllm_lines.len() - 1]) - total(vllm_lines[0]);
    let mut deltas = 0.0;
    let mut first_gauge = None;
    for batch in &batches {
        let col = |name: &str| batch.column_by_name(name).unwrap().clone();
        let url = col("endpoint_url");
        let url = url.as_string::<i32>();
        let name = col("metric_name");
        let name = name.as_string::<i32>();
        let kind = col("metric_type");
        let kind = kind.as_string::<i32>();
        let ts = col("timestamp_ns");
        let ts = ts.as_primitive::<UInt64Type>();
        let value = col("value");
        let value = value.as_primitive::<Float64Type>();
        for i in 0..batch.num_rows() {
            if url.value(i) != vllm {
                continue;
            }
            if name.value(i) == counter && !value.is_null(i) {
                assert_eq!(kind.value(i), "counter");
                deltas += value.value(i);
            }
            if name.value(i) == "vllm:num_requests_running" && first_gauge.is_none() {
                assert_eq!(kind.value(i), "gauge");
                first_gauge = Some((ts.value(i), value.value(i)));
            }
        }
    }
    assert!(increase > 0.0);
    assert_eq!(deltas, increase);
    let running = vllm_lines[0]["metrics"]["vllm:num_requests_running"][0]["value"]
        .as_f64()
        .unwrap();
    assert_eq!(
        first_gauge,
        Some((vllm_lines[0]["timestamp_ns"].as_u64().unwrap(), running))
    );
}

#[tokio::test]
async fn unreachable_endpoints_are_reported_without_delay() {
    // Nothing answers on a closed port: the run's end is not delayed by a reachability
    // timeout, and the report says the endpoint never answered.
    let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
    let dead = closed_port_url();
    let handle =
        TelemetryCollector::start(TelemetryConfig::new().gpu_endpoint(dead.clone()), transport);
    let now = wall_ns();
    let started = Instant::now();
    let report = handle.finish((now, now + 1)).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(report.gpu[0].scrapes.unreachable.is_some());
    assert_eq!(report.gpus().count(), 0);
    let data = gpu::telemetry_data(&report);
    assert_eq!(
        data["summary"]["endpoints_successful"],
        serde_json::json!([])
    );
    assert!(gpu::csv_section(&report).is_none());
    let dir = tempfile::tempdir().unwrap();
    assert!(
        export::write_files(&report, dir.path(), &ExportOptions::default())
            .unwrap()
            .is_empty()
    );
}

/// A sampler that never answers.
struct Hanging(&'static str);

impl Sampler for Hanging {
    fn name(&self) -> &str {
        self.0
    }

    fn sample(&self, _timeout: Duration) -> BoxFuture<'_, Result<Sampled, SampleError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn hanging_endpoints_cost_one_scrape_timeout_at_the_end() {
    let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
    let config = TelemetryConfig::new()
        .gpu_sampler(Arc::new(Hanging("gpu")))
        .server_sampler(Arc::new(Hanging("server")))
        .scrape_timeout(Duration::from_millis(500));
    let starting = Instant::now();
    let handle = TelemetryCollector::start(config, transport);
    // A start that waited for its endpoints would wait for these forever, or for one scrape
    // timeout at least; a loaded machine can delay it tens of ms, not that long.
    let took = starting.elapsed();
    assert!(took < Duration::from_millis(500), "start waited {took:?}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let now = wall_ns();
    let stopping = Instant::now();
    let report = handle.finish((now, now)).await;
    // GPU and server scrapers stop together: one timeout, not two.
    let took = stopping.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_millis(900),
        "{took:?}"
    );
    assert!(report.gpu[0]
        .scrapes
        .unreachable
        .as_deref()
        .unwrap()
        .contains("timed out"));
    assert!(report.server[0].scrapes.unreachable.is_some());
}
