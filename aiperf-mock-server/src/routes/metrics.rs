//! `GET /metrics` (the mock server's own metrics) and `GET /vllm/metrics` (vLLM-style families),
//! both in Prometheus text format 0.0.4, computed from what the server actually served.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use crate::faults::FaultKind;
use crate::state::State;
use crate::stats::{Histogram, BUCKETS};

/// Tokens of KV cache the fake vLLM pretends to have (for `vllm:gpu_cache_usage_perc`).
pub const KV_CACHE_TOKENS: f64 = 262_144.0;

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let (cum, sum) = h.snapshot();
    let sep = if labels.is_empty() { "" } else { "," };
    for (b, c) in BUCKETS.iter().zip(&cum) {
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {c}");
    }
    let total = cum.last().copied().unwrap_or(0);
    let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {total}");
    let labels = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{labels} {sum}");
    let _ = writeln!(out, "{name}_count{labels} {total}");
}

/// The mock server's own metrics.
pub(crate) fn own(state: &State) -> String {
    let s = &state.stats;
    let mut out = String::with_capacity(8 * 1024);
    family(
        &mut out,
        "aiperf_mock_requests_total",
        "counter",
        "Responses by route and HTTP status.",
    );
    for (route, status, n) in s.request_counts() {
        let _ = writeln!(
            out,
            "aiperf_mock_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
        );
    }
    let scalars: [(&str, &str, &str, u64); 5] = [
        (
            "aiperf_mock_tokens_generated_total",
            "counter",
            "Output tokens sent (reasoning included).",
            s.tokens_generated.load(Relaxed),
        ),
        (
            "aiperf_mock_reasoning_tokens_total",
            "counter",
            "Reasoning tokens sent.",
            s.reasoning_tokens.load(Relaxed),
        ),
        (
            "aiperf_mock_prompt_tokens_total",
            "counter",
            "Prompt tokens of requests served.",
            s.prompt_tokens.load(Relaxed),
        ),
        (
            "aiperf_mock_connections_accepted_total",
            "counter",
            "TCP connections accepted.",
            s.connections_accepted.load(Relaxed),
        ),
        (
            "aiperf_mock_requests_in_flight",
            "gauge",
            "Inference requests being served.",
            u64::try_from(s.in_flight.load(Relaxed)).unwrap_or(0),
        ),
    ];
    for (name, kind, help, v) in scalars {
        family(&mut out, name, kind, help);
        let _ = writeln!(out, "{name} {v}");
    }
    family(
        &mut out,
        "aiperf_mock_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
    );
    let _ = writeln!(
        out,
        "aiperf_mock_uptime_seconds {}",
        state.started.elapsed().as_secs_f64()
    );
    family(
        &mut out,
        "aiperf_mock_connections_active",
        "gauge",
        "Open TCP connections.",
    );
    let _ = writeln!(
        out,
        "aiperf_mock_connections_active {}",
        s.connections_active.load(Relaxed).max(0)
    );
    family(
        &mut out,
        "aiperf_mock_faults_total",
        "counter",
        "Faults injected, by kind.",
    );
    for k in FaultKind::ALL {
        let _ = writeln!(
            out,
            "aiperf_mock_faults_total{{kind=\"{}\"}} {}",
            k.label(),
            s.fault_count(k)
        );
    }
    family(
        &mut out,
        "aiperf_mock_time_to_first_token_seconds",
        "histogram",
        "Arrival to first output token sent.",
    );
    histogram(
        &mut out,
        "aiperf_mock_time_to_first_token_seconds",
        "",
        &s.ttft,
    );
    family(
        &mut out,
        "aiperf_mock_request_latency_seconds",
        "histogram",
        "Arrival to last byte of completed token responses.",
    );
    histogram(&mut out, "aiperf_mock_request_latency_seconds", "", &s.e2e);
    out
}

/// vLLM-style families with a `model_name` label.
pub(crate) fn vllm(state: &State) -> String {
    let s = &state.stats;
    let labels = format!(
        "engine=\"0\",model_name=\"{}\"",
        state.cfg.default_model.replace('"', "\\\"")
    );
    let mut out = String::with_capacity(8 * 1024);
    let running = s.in_flight.load(Relaxed).max(0);
    let cache = (s.active_tokens.load(Relaxed).max(0) as f64 / KV_CACHE_TOKENS).min(1.0);
    let gauges: [(&str, &str, String); 3] = [
        (
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            running.to_string(),
        ),
        (
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            "0".to_string(),
        ),
        (
            "vllm:gpu_cache_usage_perc",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            format!("{cache}"),
        ),
    ];
    for (name, help, v) in gauges {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name}{{{labels}}} {v}");
    }
    let counters = [
        (
            "vllm:prompt_tokens_total",
            "Number of prefill tokens processed.",
            s.prompt_tokens.load(Relaxed),
        ),
        (
            "vllm:generation_tokens_total",
            "Number of generation tokens processed.",
            s.tokens_generated.load(Relaxed),
        ),
    ];
    for (name, help, v) in counters {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name}{{{labels}}} {v}");
    }
    family(
        &mut out,
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
    );
    let _ = writeln!(
        out,
        "vllm:request_success_total{{{labels},finished_reason=\"length\"}} {}",
        s.finished_length.load(Relaxed)
    );
    let _ = writeln!(
        out,
        "vllm:request_success_total{{{labels},finished_reason=\"stop\"}} {}",
        s.finished_stop.load(Relaxed)
    );
    family(
        &mut out,
        "vllm:time_to_first_token_seconds",
        "histogram",
        "Histogram of time to first token in seconds.",
    );
    histogram(
        &mut out,
        "vllm:time_to_first_token_seconds",
        &labels,
        &s.ttft,
    );
    family(
        &mut out,
        "vllm:e2e_request_latency_seconds",
        "histogram",
        "Histogram of end to end request latency in seconds.",
    );
    histogram(
        &mut out,
        "vllm:e2e_request_latency_seconds",
        &labels,
        &s.e2e,
    );
    out
}
