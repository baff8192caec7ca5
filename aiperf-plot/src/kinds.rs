//! The charts `aiperf plot` can draw, for listings (`aiperf plugins plot`). Which of them
//! a run gets depends on its files: see [`crate::single::charts`] and
//! [`crate::multi::charts`].

use aiperf_core::capability::Capability;

/// Every chart, under its file stem, single-run charts first.
pub fn chart_kinds() -> Vec<Capability> {
    [
        (
            "ttft_distribution",
            "histogram of time to first token (one run)",
        ),
        (
            "itl_distribution",
            "histogram of each request's mean inter-token latency (one run)",
        ),
        (
            "latency_distribution",
            "histogram of request latency (one run)",
        ),
        (
            "ttft_vs_isl",
            "time to first token against input length, one dot per request",
        ),
        (
            "ttft_over_time",
            "time to first token of each request over the run",
        ),
        (
            "latency_over_time",
            "request latency of each request over the run",
        ),
        (
            "itl_by_position",
            "inter-chunk latency by output position: median and p90",
        ),
        (
            "isl_vs_osl",
            "input against output length, one dot per request",
        ),
        (
            "throughput_over_time",
            "requests and output tokens per second over the run",
        ),
        (
            "gpu_utilization_over_time",
            "GPU utilization per GPU (with GPU telemetry)",
        ),
        (
            "gpu_power_over_time",
            "GPU power per GPU (with GPU telemetry)",
        ),
        (
            "timeslices_ttft",
            "time to first token per --slice-duration slice",
        ),
        (
            "timeslices_itl",
            "inter-token latency per --slice-duration slice",
        ),
        (
            "pareto_throughput_vs_latency",
            "runs compared: throughput against latency, Pareto front marked",
        ),
        (
            "pareto_throughput_per_gpu_vs_interactivity",
            "runs compared: throughput per GPU against tokens/s per user, Pareto front marked",
        ),
        (
            "ttft_by_run",
            "runs compared: time to first token avg and p99",
        ),
        (
            "itl_by_run",
            "runs compared: inter-token latency avg and p99",
        ),
        (
            "latency_by_run",
            "runs compared: request latency avg and p99",
        ),
        ("throughput_by_run", "runs compared: request throughput"),
    ]
    .into_iter()
    .map(|(name, summary)| Capability::always(name, summary))
    .collect()
}

/// Panics unless every chart is listed in [`chart_kinds`]: the tests that draw charts
/// call it, so a new chart cannot be left out of the listing.
#[cfg(test)]
pub(crate) fn assert_listed(charts: &[crate::chart::Chart]) {
    let kinds = chart_kinds();
    for chart in charts {
        assert!(
            kinds.iter().any(|k| k.name == chart.name),
            "chart {} is not in chart_kinds()",
            chart.name
        );
    }
}
