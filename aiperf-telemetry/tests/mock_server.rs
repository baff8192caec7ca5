//! The strict parser against Prometheus text we did not write: the mock server's own
//! metrics, its vLLM-style metrics and its fake DCGM exporter.

#![allow(clippy::unwrap_used, missing_docs)]

use aiperf_mock_server::{MockConfig, MockServer};
use aiperf_telemetry::prometheus::{find_family, parse, MetricFamily, MetricType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A minimal HTTP/1.1 GET: returns the body of a 200 response (de-chunked if needed).
async fn get(server: &MockServer, path: &str) -> String {
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        server.addr()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    if chunked {
        dechunk(body)
    } else {
        body.to_string()
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn family<'a>(fs: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
    find_family(fs, name).unwrap_or_else(|| panic!("no family {name}"))
}

#[tokio::test]
async fn strict_parser_reads_all_mock_server_endpoints() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    assert!(server.url().starts_with("http://"));

    let own = parse(&get(&server, "/metrics").await).unwrap();
    let requests = family(&own, "aiperf_mock_requests_total");
    assert_eq!(requests.kind, MetricType::Counter);
    let ttft = family(&own, "aiperf_mock_time_to_first_token_seconds");
    assert_eq!(ttft.kind, MetricType::Histogram);
    assert_eq!(ttft.histograms().len(), 1);

    let vllm = parse(&get(&server, "/vllm/metrics").await).unwrap();
    assert_eq!(
        family(&vllm, "vllm:num_requests_running").kind,
        MetricType::Gauge
    );
    let h = family(&vllm, "vllm:time_to_first_token_seconds");
    assert_eq!(h.kind, MetricType::Histogram);
    let series = h.histograms();
    assert!(!series.is_empty());
    for s in &series {
        assert_eq!(s.buckets.last().map(|b| b.0), Some(f64::INFINITY));
        assert!(s.sum.is_some() && s.count.is_some());
        assert!(s
            .labels
            .iter()
            .any(|(k, v)| k == "model_name" && v == "mock-model"));
    }

    let dcgm = parse(&get(&server, "/dcgm1/metrics").await).unwrap();
    let power = family(&dcgm, "DCGM_FI_DEV_POWER_USAGE");
    assert_eq!(power.kind, MetricType::Gauge);
    assert_eq!(power.samples.len(), 2, "two GPUs by default");
    for (i, s) in power.samples.iter().enumerate() {
        assert_eq!(s.label("gpu"), Some(i.to_string().as_str()));
        assert!(s.label("UUID").is_some_and(|u| u.starts_with("GPU-")));
        assert!(s.value.is_finite() && s.value > 0.0);
    }
    assert_eq!(
        family(&dcgm, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").kind,
        MetricType::Counter
    );
    server.shutdown().await;
}
