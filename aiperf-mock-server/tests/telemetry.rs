//! `/metrics`, `/vllm/metrics` and `/dcgm{N}/metrics`: valid Prometheus text reflecting what
//! was served.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use aiperf_mock_server::{DcgmConfig, GpuModel, MockConfig, MockServer};
use common::*;
use hyper::Method;
use serde_json::json;

fn chat(max: u32, stream: bool) -> String {
    json!({"messages": [{"role": "user", "content": "one two three"}], "max_tokens": max, "stream": stream}).to_string()
}

#[tokio::test]
async fn own_metrics_count_requests_tokens_and_connections() {
    let s = MockServer::start(MockConfig::fast()).await.unwrap();
    let mut conn = Conn::open(s.addr()).await;
    for i in 0..5 {
        let r = conn
            .send(
                Method::POST,
                "/v1/chat/completions",
                &[],
                &chat(10, i % 2 == 0),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    }
    conn.send(Method::POST, "/v1/chat/completions", &[], "{bad")
        .await
        .unwrap();
    conn.send(Method::GET, "/nope", &[], "").await.unwrap();
    let text = conn.send(Method::GET, "/metrics", &[], "").await.unwrap();
    assert!(text.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let m = parse_prometheus(&text.text());
    assert_eq!(
        sample(
            &m,
            "aiperf_mock_requests_total{route=\"/v1/chat/completions\",status=\"200\"}"
        ),
        5.0
    );
    assert_eq!(
        sample(
            &m,
            "aiperf_mock_requests_total{route=\"/v1/chat/completions\",status=\"400\"}"
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            "aiperf_mock_requests_total{route=\"unknown\",status=\"404\"}"
        ),
        1.0
    );
    assert_eq!(sample(&m, "aiperf_mock_tokens_generated_total"), 50.0);
    assert_eq!(sample(&m, "aiperf_mock_prompt_tokens_total"), 15.0);
    assert_eq!(sample(&m, "aiperf_mock_connections_accepted_total"), 1.0);
    assert_eq!(sample(&m, "aiperf_mock_requests_in_flight"), 0.0);
    assert_eq!(
        sample(&m, "aiperf_mock_time_to_first_token_seconds_count"),
        5.0
    );
    assert_eq!(sample(&m, "aiperf_mock_request_latency_seconds_count"), 5.0);
    assert_eq!(
        sample(
            &m,
            "aiperf_mock_time_to_first_token_seconds_bucket{le=\"+Inf\"}"
        ),
        5.0
    );
    // a second connection is counted
    get(s.addr(), "/health").await;
    let m = parse_prometheus(&get(s.addr(), "/metrics").await.text());
    assert_eq!(sample(&m, "aiperf_mock_connections_accepted_total"), 3.0);
    let st = s.stats();
    assert_eq!(st.tokens_generated, 50);
    assert_eq!(st.connections_accepted, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_gauges_follow_open_streams() {
    let s = MockServer::start(MockConfig::with_timing(10.0, 10.0))
        .await
        .unwrap();
    let addr = s.addr();
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            tokio::spawn(async move {
                request(
                    addr,
                    Method::POST,
                    "/v1/chat/completions",
                    &[],
                    &chat(30, true),
                )
                .await
                .unwrap()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let m = parse_prometheus(&get(addr, "/metrics").await.text());
    assert_eq!(sample(&m, "aiperf_mock_requests_in_flight"), 3.0);
    let v = parse_prometheus(&get(addr, "/vllm/metrics").await.text());
    assert_eq!(sample(&v, "vllm:num_requests_running{"), 3.0);
    assert!(sample(&v, "vllm:gpu_cache_usage_perc{") > 0.0);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(s.stats().in_flight, 0);
    let v = parse_prometheus(&get(addr, "/vllm/metrics").await.text());
    assert_eq!(sample(&v, "vllm:num_requests_running{"), 0.0);
    assert_eq!(sample(&v, "vllm:gpu_cache_usage_perc{"), 0.0);
}

#[tokio::test]
async fn vllm_metrics_reflect_served_tokens() {
    let s = MockServer::start(MockConfig {
        default_model: "Qwen/Qwen3-0.6B".into(),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    for max in [5, 7, 9] {
        post(
            s.addr(),
            "/v1/completions",
            &json!({"prompt": "a b", "max_tokens": max}),
        )
        .await;
    }
    post(s.addr(), "/v1/completions", &json!({"prompt": "a b"})).await;
    let text = get(s.addr(), "/vllm/metrics").await.text();
    let v = parse_prometheus(&text);
    assert!(text.contains("model_name=\"Qwen/Qwen3-0.6B\""));
    assert_eq!(
        sample(&v, "vllm:generation_tokens_total{"),
        f64::from(5 + 7 + 9 + 16)
    );
    assert_eq!(sample(&v, "vllm:prompt_tokens_total{"), 8.0);
    assert_eq!(sample(&v, "vllm:num_requests_waiting{"), 0.0);
    assert_eq!(sample(&v, "vllm:time_to_first_token_seconds_count{"), 4.0);
    assert_eq!(sample(&v, "vllm:e2e_request_latency_seconds_count{"), 4.0);
    assert!(text.contains("vllm:request_success_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\",finished_reason=\"length\"} 3"));
    assert!(text.contains("finished_reason=\"stop\"} 1"));
    for fam in [
        "vllm:time_to_first_token_seconds",
        "vllm:e2e_request_latency_seconds",
    ] {
        assert!(text.contains(&format!("# TYPE {fam} histogram")));
    }
}

/// `(gpu index, value)` of a DCGM family.
fn per_gpu(m: &[(String, f64)], family: &str) -> Vec<f64> {
    m.iter()
        .filter(|(s, _)| s.starts_with(&format!("{family}{{")))
        .map(|(_, v)| *v)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcgm_exporters_track_the_token_rate() {
    let cfg = MockConfig {
        dcgm: DcgmConfig {
            num_gpus: 3,
            gpu: GpuModel::A100,
            window_sec: 0.05,
            ..DcgmConfig::default()
        },
        ..MockConfig::fast()
    };
    let s = MockServer::start(cfg).await.unwrap();
    assert_eq!(get(s.addr(), "/dcgm3/metrics").await.status, 404);
    assert_eq!(get(s.addr(), "/dcgm0/metrics").await.status, 404);

    tokio::time::sleep(Duration::from_millis(100)).await;
    let idle_text = get(s.addr(), "/dcgm1/metrics").await.text();
    let idle = parse_prometheus(&idle_text);
    for label in [
        "gpu=\"2\"",
        "UUID=\"GPU-",
        "device=\"nvidia0\"",
        "modelName=\"NVIDIA A100-SXM4-80GB\"",
        "Hostname=\"localhost\"",
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
    ] {
        assert!(idle_text.contains(label), "{label}");
    }
    for fam in [
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_PROF_SM_ACTIVE",
    ] {
        assert_eq!(per_gpu(&idle, fam).len(), 3, "{fam}");
    }
    let power0 = per_gpu(&idle, "DCGM_FI_DEV_POWER_USAGE");
    assert!(
        power0.iter().all(|p| (50.0..60.0).contains(p)),
        "idle power {power0:?}"
    );
    assert!(per_gpu(&idle, "DCGM_FI_DEV_GPU_UTIL")
        .iter()
        .all(|u| *u == 0.0));
    let (used, free) = (
        per_gpu(&idle, "DCGM_FI_DEV_FB_USED"),
        per_gpu(&idle, "DCGM_FI_DEV_FB_FREE"),
    );
    assert!(used.iter().zip(&free).all(|(u, f)| u + f == 81920.0));
    let e0 = per_gpu(&idle, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
    // exporter 2 is independent, same layout, different UUIDs
    let other = get(s.addr(), "/dcgm2/metrics").await.text();
    assert_eq!(parse_prometheus(&other).len(), idle.len());
    assert_ne!(other.lines().nth(2), idle_text.lines().nth(2));

    // serve ~100k tokens as fast as possible for a while
    let t0 = std::time::Instant::now();
    let mut conn = Conn::open(s.addr()).await;
    let body =
        json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5000, "stream": true})
            .to_string();
    while t0.elapsed() < Duration::from_millis(300) {
        conn.send(Method::POST, "/v1/chat/completions", &[], &body)
            .await
            .unwrap();
    }
    let busy = parse_prometheus(&get(s.addr(), "/dcgm1/metrics").await.text());
    let dt = t0.elapsed().as_secs_f64();
    let power1 = per_gpu(&busy, "DCGM_FI_DEV_POWER_USAGE");
    assert!(power1.iter().all(|p| *p > 300.0), "busy power {power1:?}");
    assert!(per_gpu(&busy, "DCGM_FI_DEV_GPU_UTIL")
        .iter()
        .all(|u| *u > 70.0));
    // energy integrates the power: the mean power over the interval lies between idle and busy
    let e1 = per_gpu(&busy, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
    for g in 0..3 {
        let mean_w = (e1[g] - e0[g]) / 1000.0 / dt;
        assert!(
            mean_w > power0[g] * 0.5 && mean_w <= power1[g] * 1.05,
            "gpu {g}: {mean_w} W"
        );
    }
    // and power falls back when idle
    tokio::time::sleep(Duration::from_millis(400)).await;
    get(s.addr(), "/dcgm1/metrics").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = parse_prometheus(&get(s.addr(), "/dcgm1/metrics").await.text());
    let power2 = per_gpu(&after, "DCGM_FI_DEV_POWER_USAGE");
    assert!(power2.iter().all(|p| *p < 70.0), "idle again {power2:?}");
    let e2 = per_gpu(&after, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
    assert!(
        e2.iter().zip(&e1).all(|(b, a)| b > a),
        "energy is a counter"
    );
}
