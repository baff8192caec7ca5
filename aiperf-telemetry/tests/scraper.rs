//! The scraper and summaries against the mock server, through the real HTTP transport.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::transport::{BoxFuture, HttpMethod, HttpRequest, Transport};
use aiperf_endpoints::HttpTransport;
use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_telemetry::prometheus::{find_family, MetricFamily, MetricType, Sample};
use aiperf_telemetry::summary::{summarize, SeriesStats, Window};
use aiperf_telemetry::{gpu_summaries, SampleError, Sampled, Sampler, Scraper};

fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/metrics")
}

async fn chat(transport: &Arc<dyn Transport>, url: &str) -> (f64, f64) {
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50}"#;
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
    let json: serde_json::Value = serde_json::from_slice(exchange.body()).unwrap();
    let usage = &json["usage"];
    (
        usage["prompt_tokens"].as_f64().unwrap(),
        usage["completion_tokens"].as_f64().unwrap(),
    )
}

fn counter_family<'a>(fs: &'a [MetricFamily], prefix: &str) -> &'a MetricFamily {
    fs.iter()
        .find(|f| f.name.starts_with(prefix) && f.kind == MetricType::Counter)
        .unwrap_or_else(|| panic!("no counter {prefix}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrape_mock_server_and_summarise_window() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let base = server.url();
    let transport: Arc<dyn Transport> = Arc::new(HttpTransport::builder().build().unwrap());
    let dead = closed_port_url();
    let vllm = format!("{base}/vllm/metrics");
    let dcgm = format!("{base}/dcgm1/metrics");
    let urls = vec![
        dead.clone(),
        vllm.clone(),
        dcgm.clone(),
        format!("{base}/metrics"),
    ];

    let run_started = Instant::now();
    let handle = Scraper::new(urls, Arc::clone(&transport))
        .interval(Duration::from_millis(100))
        .reachability_timeout(Duration::from_secs(2))
        .start();
    tokio::time::sleep(Duration::from_millis(250)).await;

    let start = Instant::now();
    let (mut prompt, mut generated) = (0.0, 0.0);
    for _ in 0..8 {
        let (p, g) = chat(&transport, &base).await;
        prompt += p;
        generated += g;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let wait = Duration::from_millis(1500).saturating_sub(run_started.elapsed());
    tokio::time::sleep(wait).await;
    let stop_started = Instant::now();
    let scrapes = handle.stop().await;
    let end = Instant::now();
    let elapsed = run_started.elapsed();
    // Stopping costs one final scrape, not a timeout.
    assert!(
        end - stop_started < Duration::from_millis(500),
        "{:?}",
        end - stop_started
    );
    // The dead endpoint delays nothing: stop returns promptly after ~1.5 s.
    assert!(elapsed < Duration::from_millis(2500), "took {elapsed:?}");
    assert!(prompt > 0.0 && generated > 0.0);

    // The closed port is reported, and only it.
    let unreachable = scrapes.unreachable();
    assert_eq!(unreachable.len(), 1, "{unreachable:?}");
    assert_eq!(unreachable[0].0, dead);
    assert!(scrapes.endpoint(&dead).unwrap().scrapes.is_empty());

    let window = Window::new(start, end);

    // vLLM token counters: deltas equal what was sent.
    let v = scrapes.endpoint(&vllm).unwrap();
    assert!(v.scrapes.len() >= 10, "{} scrapes", v.scrapes.len());
    assert!(v.scrapes.windows(2).all(|w| w[0].at <= w[1].at));
    let summary = summarize(v, window);
    for (prefix, expected) in [
        ("vllm:prompt_tokens", prompt),
        ("vllm:generation_tokens", generated),
    ] {
        let name = &counter_family(&v.scrapes[0].families, prefix).name;
        let series = summary.find(name, &[("model_name", "mock-model")]).unwrap();
        let SeriesStats::Counter(c) = &series.stats else {
            panic!("{name} is not a counter");
        };
        assert_eq!(c.delta, expected, "{name}");
        assert_eq!(c.resets, 0);
        assert!(c.rate.unwrap() > 0.0);
    }
    // Gauges: exactly the in-window samples.
    let in_window = v.scrapes.iter().filter(|s| window.contains(s.at)).count();
    let running = summary.find("vllm:num_requests_running", &[]).unwrap();
    let SeriesStats::Gauge(g) = &running.stats else {
        panic!("not a gauge");
    };
    assert_eq!(g.count, in_window);
    assert!(
        in_window < v.scrapes.len(),
        "the baseline lies before the window"
    );
    // Histograms: one observation per request.
    let ttft = summary
        .find("vllm:time_to_first_token_seconds", &[])
        .unwrap();
    let SeriesStats::Histogram(h) = &ttft.stats else {
        panic!("not a histogram");
    };
    assert_eq!(h.count, 8.0);
    assert!(h.quantile(0.5).is_some());

    // GPUs: energy delta equals the counter difference at the window edges.
    let d = scrapes.endpoint(&dcgm).unwrap();
    let gpus = gpu_summaries(d, window);
    assert_eq!(gpus.len(), 2);
    let energy_at = |scrape: &aiperf_telemetry::Scrape, gpu: &str| -> f64 {
        let f = find_family(&scrape.families, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").unwrap();
        f.samples
            .iter()
            .find(|s: &&Sample| s.label("gpu") == Some(gpu))
            .unwrap()
            .value
    };
    let baseline = d.scrapes.iter().rev().find(|s| s.at < start).unwrap();
    let last = d
        .scrapes
        .iter()
        .rev()
        .find(|s| window.contains(s.at))
        .unwrap();
    for gpu in &gpus {
        let idx = gpu.identity.index.as_str();
        assert!(gpu.identity.uuid.as_deref().unwrap().starts_with("GPU-"));
        assert!(gpu.identity.model_name.is_some());
        let expected_mj = energy_at(last, idx) - energy_at(baseline, idx);
        assert!(expected_mj > 0.0);
        let joules = gpu.energy_joules().unwrap();
        assert!(
            (joules - expected_mj * 1e-3).abs() < 1e-6 * joules.max(1.0),
            "{joules} J vs {expected_mj} mJ"
        );
        let power = gpu.gauge("gpu_power_usage").unwrap();
        assert!(power.avg > 0.0 && power.min <= power.p50() && power.p50() <= power.max);
        assert_eq!(
            power.count,
            d.scrapes.iter().filter(|s| window.contains(s.at)).count()
        );
        // Energy consistent with power: J ≈ avg W × seconds (loose: power changes).
        let secs = (last.at - baseline.at).as_secs_f64();
        let ratio = joules / (power.avg * secs);
        assert!((0.5..2.0).contains(&ratio), "ratio {ratio}");
        assert!(gpu.gauge("gpu_memory_used").is_some());
        assert!(gpu.gauge("gpu_temperature").is_some());
        assert!(gpu.gauge("memory_temperature").is_some());
        // Clocks: the memory clock is the model's constant; the SM clock is idle or max.
        let spec = server.config().dcgm.gpu.spec();
        let memory_clock = gpu.gauge("memory_clock").unwrap();
        assert_eq!(
            (memory_clock.min, memory_clock.max),
            (f64::from(spec.mem_clock_mhz), f64::from(spec.mem_clock_mhz))
        );
        let sm_clock = gpu.gauge("sm_clock").unwrap();
        assert!(sm_clock.min >= 345.0 && sm_clock.max <= f64::from(spec.max_sm_clock_mhz));
    }
    server.shutdown().await;
}

/// A custom sampler: a gauge that counts its calls.
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

/// A sampler that never answers.
struct Hanging;

impl Sampler for Hanging {
    fn name(&self) -> &'static str {
        "hanging"
    }

    fn sample(&self, _timeout: Duration) -> BoxFuture<'_, Result<Sampled, SampleError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn custom_sampler_and_slow_sampler() {
    let counting = Arc::new(Counting {
        calls: AtomicU64::new(0),
    });
    let started = Instant::now();
    let handle = Scraper::from_samplers(vec![counting.clone(), Arc::new(Hanging)])
        .interval(Duration::from_millis(20))
        .reachability_timeout(Duration::from_millis(200))
        .scrape_timeout(Duration::from_millis(200))
        .max_scrapes_per_endpoint(5)
        .start();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let scrapes = handle.stop().await;
    assert!(started.elapsed() < Duration::from_secs(1));

    let hanging = scrapes.endpoint("hanging").unwrap();
    assert!(hanging
        .unreachable
        .as_deref()
        .unwrap()
        .contains("timed out"));

    let c = scrapes.endpoint("counting").unwrap();
    assert_eq!(c.scrapes.len(), 5, "capped");
    assert!(c.overwritten > 0);
    let calls = counting.calls.load(Ordering::SeqCst) as f64;
    let summary = summarize(c, Window::new(started, Instant::now()));
    let SeriesStats::Counter(s) = &summary.find("calls", &[]).unwrap().stats else {
        panic!("not a counter");
    };
    // The cap keeps the first and the latest scrape, so the delta still spans the run.
    assert_eq!(s.first, 1.0);
    assert_eq!(s.last, calls);
    assert_eq!(s.delta, calls - 1.0);
}

/// A server whose `/metrics` answers JSON and whose `/prometheus/metrics` answers text;
/// counts the requests per path.
struct JsonFirst {
    requests: std::sync::Mutex<Vec<String>>,
}

impl Transport for JsonFirst {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, aiperf_core::transport::RawExchange> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(request.url.clone());
            let (content_type, body) = if request.url.ends_with("/prometheus/metrics") {
                ("text/plain; version=0.0.4", "# TYPE up gauge\nup 1\n")
            } else {
                ("application/json", r#"{"up": 1}"#)
            };
            let now = Instant::now();
            aiperf_core::transport::RawExchange {
                started_at: now,
                head_at: Some(now),
                status: Some(200),
                content_type: Some(content_type.into()),
                headers: Vec::new(),
                chunks: [aiperf_core::transport::Chunk {
                    at: now,
                    bytes: body.as_bytes(),
                }]
                .into_iter()
                .collect(),
                ended_at: now,
                error: None,
                trace: None,
                retries: 0,
            }
        })
    }
}

#[tokio::test]
async fn json_metrics_switch_to_prometheus_metrics_once() {
    use aiperf_telemetry::PrometheusSampler;

    let server = Arc::new(JsonFirst {
        requests: std::sync::Mutex::new(Vec::new()),
    });
    let sampler = PrometheusSampler::new("http://h:1/metrics", server.clone());
    for _ in 0..3 {
        let sampled = sampler.sample(Duration::from_secs(1)).await.unwrap();
        assert_eq!(sampled.families[0].name, "up");
    }
    assert_eq!(sampler.current_url(), "http://h:1/prometheus/metrics");
    assert_eq!(sampler.name(), "http://h:1/metrics");
    assert_eq!(
        *server.requests.lock().unwrap(),
        [
            "http://h:1/metrics",
            "http://h:1/prometheus/metrics",
            "http://h:1/prometheus/metrics",
            "http://h:1/prometheus/metrics"
        ]
    );

    // A URL not ending in /metrics has no alternative: the JSON answer is an error.
    let plain = PrometheusSampler::new("http://h:1/other", server.clone());
    let error = plain.sample(Duration::from_secs(1)).await.unwrap_err();
    assert!(error.to_string().contains("JSON"), "{error}");
}
