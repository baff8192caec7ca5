//! The metric catalogue: tag, header, display unit, console placement and applicability of
//! every metric aiperf-rs computes (docs/metrics.md: the Python AIPerf 0.11 catalogue plus
//! the 0.13 additions).
//!
//! Values are held in the **display unit** from the start (ms, sec, tokens/sec, …), so
//! exports, goodput thresholds and summaries all speak the same unit.

use std::ops::BitOr;

/// How a metric is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// One value per request; the run reports a distribution.
    Record,
    /// A single value accumulated over records (a counter, a sum).
    Aggregate,
    /// A single value computed at the end from other metrics.
    Derived,
    /// A quantity over time (e.g. requests in flight), reported with time-weighted
    /// avg, min, max, std, p50, p90, p95, p99.
    TimeWeighted,
}

/// Which console table shows a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsoleGroup {
    /// The main table ("NVIDIA AIPerf | LLM Metrics").
    Default,
    /// "…: Effective" (concurrency-aware time-weighted metrics).
    Effective,
    /// "…: Active" (the same, over the time the quantity was active only).
    Active,
    /// "…: Usage" (server-reported usage fields).
    Usage,
    /// "…: HTTP Trace" (`http_req_*`): on the console with `--show-trace-timing` only, in
    /// the JSON summary and records, not in the CSV (as the Python AIPerf).
    HttpTrace,
    /// Not shown on the console (still exported).
    Hidden,
}

/// Applicability and presentation flags (a tiny bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MetricFlags(u32);

impl MetricFlags {
    /// No flags.
    pub const NONE: Self = Self(0);
    /// Needs `--streaming`.
    pub const STREAMING_ONLY: Self = Self(1);
    /// Needs an endpoint that produces tokens.
    pub const PRODUCES_TOKENS_ONLY: Self = Self(1 << 1);
    /// Needs an endpoint whose input is tokenized.
    pub const TOKENIZES_INPUT_ONLY: Self = Self(1 << 2);
    /// Excluded with `--use-server-token-count`.
    pub const USAGE_DIFF_ONLY: Self = Self(1 << 3);
    /// Needs `--goodput`.
    pub const GOODPUT: Self = Self(1 << 4);
    /// Computed from failed records only.
    pub const ERROR_ONLY: Self = Self(1 << 5);
    /// Never written to the per-record JSONL.
    pub const NO_INDIVIDUAL_RECORDS: Self = Self(1 << 6);
    /// Larger values are better (goodput direction).
    pub const LARGER_IS_BETTER: Self = Self(1 << 7);
    /// Values are whole numbers (written as JSON integers per record).
    pub const INTEGER: Self = Self(1 << 8);
    /// A record contributes a list of values (inter-chunk latency).
    pub const LIST: Self = Self(1 << 9);
    /// `STREAMING_ONLY | PRODUCES_TOKENS_ONLY`.
    pub const STREAMING_TOKENS_ONLY: Self = Self(1 | (1 << 1));

    /// True when every bit of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for MetricFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// Everything known about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// Machine name, the JSON key (e.g. `time_to_first_token`).
    pub tag: &'static str,
    /// Display name (e.g. `Time to First Token`).
    pub header: &'static str,
    /// Display unit (e.g. `ms`).
    pub unit: &'static str,
    /// How it is produced.
    pub kind: MetricKind,
    /// Console table.
    pub group: ConsoleGroup,
    /// Console sort key (smaller first).
    pub order: u32,
    /// Applicability and presentation flags.
    pub flags: MetricFlags,
}

/// Which metrics apply to a run; decided once from the endpoint and the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MetricsContext {
    /// `--streaming` was given (and the endpoint supports it).
    pub streaming: bool,
    /// The endpoint produces tokens.
    pub produces_tokens: bool,
    /// The endpoint's input is tokenized.
    pub tokenizes_input: bool,
    /// `--use-server-token-count`: tokens come from the server's `usage`.
    pub use_server_token_count: bool,
    /// `--goodput` was given.
    pub goodput: bool,
}

impl MetricsContext {
    /// The context of a run of `config` against an endpoint described by `info`.
    pub fn new(config: &aiperf_core::BenchmarkConfig, info: &aiperf_core::EndpointInfo) -> Self {
        Self {
            streaming: config.endpoint.streaming && info.supports_streaming,
            produces_tokens: info.produces_tokens,
            tokenizes_input: info.tokenizes_input,
            use_server_token_count: config.endpoint.use_server_token_count,
            goodput: !config.goodput.is_empty(),
        }
    }

    /// A streaming chat-like context (tokens in and out), handy for tests and examples.
    pub fn streaming_chat() -> Self {
        Self {
            streaming: true,
            produces_tokens: true,
            tokenizes_input: true,
            use_server_token_count: false,
            goodput: false,
        }
    }

    /// Whether `def` applies under this context.
    pub fn applies(&self, def: &MetricDef) -> bool {
        let f = def.flags;
        !(f.contains(MetricFlags::STREAMING_ONLY) && !self.streaming
            || f.contains(MetricFlags::PRODUCES_TOKENS_ONLY) && !self.produces_tokens
            || f.contains(MetricFlags::TOKENIZES_INPUT_ONLY) && !self.tokenizes_input
            || f.contains(MetricFlags::USAGE_DIFF_ONLY) && self.use_server_token_count
            || f.contains(MetricFlags::GOODPUT) && !self.goodput)
    }

    /// Why `def` does not apply, if it does not (for error messages).
    pub fn why_not(&self, def: &MetricDef) -> Option<&'static str> {
        let f = def.flags;
        if f.contains(MetricFlags::STREAMING_ONLY) && !self.streaming {
            Some("needs --streaming")
        } else if f.contains(MetricFlags::PRODUCES_TOKENS_ONLY) && !self.produces_tokens {
            Some("the endpoint produces no tokens")
        } else if f.contains(MetricFlags::TOKENIZES_INPUT_ONLY) && !self.tokenizes_input {
            Some("the endpoint does not tokenize its input")
        } else if f.contains(MetricFlags::USAGE_DIFF_ONLY) && self.use_server_token_count {
            Some("not computed with --use-server-token-count")
        } else if f.contains(MetricFlags::GOODPUT) && !self.goodput {
            Some("needs --goodput")
        } else {
            None
        }
    }
}

use ConsoleGroup::{Active, Default as Main, Effective, Hidden, HttpTrace, Usage};
use MetricKind::{Aggregate, Derived, Record, TimeWeighted};

const STO: MetricFlags = MetricFlags::STREAMING_TOKENS_ONLY;
const PTO: MetricFlags = MetricFlags::PRODUCES_TOKENS_ONLY;
const TIO: MetricFlags = MetricFlags::TOKENIZES_INPUT_ONLY;
const LIB: MetricFlags = MetricFlags::LARGER_IS_BETTER;
const NIR: MetricFlags = MetricFlags::NO_INDIVIDUAL_RECORDS;
const INT: MetricFlags = MetricFlags::INTEGER;
const UDO: MetricFlags = MetricFlags::USAGE_DIFF_ONLY;
const EO: MetricFlags = MetricFlags::ERROR_ONLY;
const GP: MetricFlags = MetricFlags::GOODPUT;
const NONE: MetricFlags = MetricFlags::NONE;

const fn m(
    tag: &'static str,
    header: &'static str,
    unit: &'static str,
    kind: MetricKind,
    group: ConsoleGroup,
    order: u32,
    flags: MetricFlags,
) -> MetricDef {
    MetricDef {
        tag,
        header,
        unit,
        kind,
        group,
        order,
        flags,
    }
}

const fn or(a: MetricFlags, b: MetricFlags) -> MetricFlags {
    MetricFlags(a.0 | b.0)
}

/// Order given to metrics the console never shows.
pub const HIDDEN_ORDER: u32 = u32::MAX;

/// Every metric, in display order within each group.
pub static CATALOGUE: &[MetricDef] = &[
    // latency / streaming
    m(
        "time_to_first_token",
        "Time to First Token",
        "ms",
        Record,
        Main,
        100,
        STO,
    ),
    m(
        "time_to_second_token",
        "Time to Second Token",
        "ms",
        Record,
        Main,
        200,
        STO,
    ),
    m(
        "time_to_first_output_token",
        "Time to First Output Token",
        "ms",
        Record,
        Main,
        210,
        STO,
    ),
    m(
        "request_latency",
        "Request Latency",
        "ms",
        Record,
        Main,
        300,
        NONE,
    ),
    m(
        "decode_duration",
        "Decode Duration",
        "ms",
        Record,
        Main,
        350,
        STO,
    ),
    m(
        "inter_token_latency",
        "Inter Token Latency",
        "ms",
        Record,
        Main,
        400,
        STO,
    ),
    m(
        "inter_chunk_latency",
        "Inter Chunk Latency",
        "ms",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(STO, MetricFlags::LIST),
    ),
    m(
        "output_token_throughput_per_user",
        "Output Token Throughput Per User",
        "tokens/sec/user",
        Record,
        Main,
        500,
        or(STO, LIB),
    ),
    m(
        "e2e_output_token_throughput",
        "E2E Output Token Throughput",
        "tokens/sec/user",
        Record,
        Main,
        510,
        or(PTO, LIB),
    ),
    m(
        "prefill_throughput_per_user",
        "Prefill Throughput Per User",
        "tokens/sec/user",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(or(STO, TIO), LIB),
    ),
    m(
        "credit_to_start_latency",
        "Credit-to-Start Latency",
        "ms",
        Record,
        Hidden,
        HIDDEN_ORDER,
        NIR,
    ),
    // token counts
    m(
        "output_sequence_length",
        "Output Sequence Length",
        "tokens",
        Record,
        Main,
        600,
        or(or(PTO, LIB), INT),
    ),
    m(
        "input_sequence_length",
        "Input Sequence Length",
        "tokens",
        Record,
        Main,
        700,
        or(or(TIO, LIB), INT),
    ),
    m(
        "output_token_count",
        "Output Token Count",
        "tokens",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(or(PTO, LIB), INT),
    ),
    m(
        "reasoning_token_count",
        "Reasoning Token Count",
        "tokens",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(or(PTO, LIB), INT),
    ),
    m(
        "error_isl",
        "Error Input Sequence Length",
        "tokens",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(or(TIO, EO), INT),
    ),
    // run-level counts and throughputs
    m(
        "output_token_throughput",
        "Output Token Throughput",
        "tokens/sec",
        Derived,
        Main,
        800,
        or(PTO, LIB),
    ),
    m(
        "input_token_throughput",
        "Input Token Throughput",
        "tokens/sec",
        Derived,
        Main,
        810,
        or(TIO, LIB),
    ),
    m(
        "request_throughput",
        "Request Throughput",
        "requests/sec",
        Derived,
        Main,
        900,
        LIB,
    ),
    m(
        "goodput",
        "Goodput",
        "requests/sec",
        Derived,
        Main,
        1000,
        or(GP, LIB),
    ),
    m(
        "completed_request_count",
        "Completed Requests (Success + Error)",
        "requests",
        Aggregate,
        Main,
        1050,
        NIR,
    ),
    m(
        "request_error_rate",
        "Request Error Rate",
        "%",
        Derived,
        Main,
        1060,
        NIR,
    ),
    m(
        "request_count",
        "Request Count",
        "requests",
        Aggregate,
        Main,
        1100,
        or(LIB, NIR),
    ),
    m(
        "error_request_count",
        "Error Request Count",
        "requests",
        Aggregate,
        Hidden,
        HIDDEN_ORDER,
        or(EO, NIR),
    ),
    m(
        "good_request_count",
        "Good Request Count",
        "requests",
        Aggregate,
        Hidden,
        HIDDEN_ORDER,
        or(or(GP, LIB), NIR),
    ),
    m(
        "good_request_fraction",
        "GoodRequestFraction",
        "ratio",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(or(GP, LIB), NIR),
    ),
    m(
        "benchmark_duration",
        "Benchmark Duration",
        "sec",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        NIR,
    ),
    m(
        "total_isl",
        "Total Input Sequence Length",
        "tokens",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(TIO, NIR),
    ),
    m(
        "total_output_tokens",
        "Total Output Tokens",
        "tokens",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, NIR),
    ),
    m(
        "total_reasoning_tokens",
        "Total Reasoning Tokens",
        "tokens",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, NIR),
    ),
    m(
        "total_osl",
        "Total Output Sequence Length",
        "tokens",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, NIR),
    ),
    m(
        "total_token_throughput",
        "Total Token Throughput",
        "tokens/sec",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, LIB),
    ),
    m(
        "total_error_isl",
        "Total Error Input Sequence Length",
        "tokens",
        Derived,
        Hidden,
        HIDDEN_ORDER,
        or(or(TIO, EO), NIR),
    ),
    // usage fields
    m(
        "usage_prompt_tokens",
        "Usage Prompt Tokens",
        "tokens",
        Record,
        Usage,
        1000,
        or(TIO, INT),
    ),
    m(
        "usage_prompt_cache_read_tokens",
        "Usage Prompt Cache Read Tokens",
        "tokens",
        Record,
        Usage,
        1010,
        or(TIO, INT),
    ),
    m(
        "usage_prompt_cache_write_tokens",
        "Usage Prompt Cache Write Tokens",
        "tokens",
        Record,
        Usage,
        1015,
        or(TIO, INT),
    ),
    m(
        "usage_prompt_cache_miss_tokens",
        "Usage Prompt Cache Miss Tokens",
        "tokens",
        Record,
        Usage,
        1017,
        or(TIO, INT),
    ),
    m(
        "usage_completion_tokens",
        "Usage Completion Tokens",
        "tokens",
        Record,
        Usage,
        1100,
        or(PTO, INT),
    ),
    m(
        "usage_reasoning_tokens",
        "Usage Reasoning Tokens",
        "tokens",
        Record,
        Usage,
        1110,
        or(PTO, INT),
    ),
    m(
        "usage_accepted_prediction_tokens",
        "Usage Accepted Prediction Tokens",
        "tokens",
        Record,
        Usage,
        1130,
        or(PTO, INT),
    ),
    m(
        "usage_rejected_prediction_tokens",
        "Usage Rejected Prediction Tokens",
        "tokens",
        Record,
        Usage,
        1140,
        or(PTO, INT),
    ),
    m(
        "usage_total_tokens",
        "Usage Total Tokens",
        "tokens",
        Record,
        Usage,
        1200,
        or(PTO, INT),
    ),
    m(
        "total_usage_prompt_tokens",
        "Total Usage Prompt Tokens",
        "tokens",
        Derived,
        Usage,
        2000,
        or(TIO, NIR),
    ),
    m(
        "total_usage_prompt_cache_read_tokens",
        "Total Usage Prompt Cache Read Tokens",
        "tokens",
        Derived,
        Usage,
        2010,
        or(TIO, NIR),
    ),
    m(
        "overall_usage_prompt_cache_read_pct",
        "Overall Usage Prompt Cache Read %",
        "%",
        Derived,
        Usage,
        2012,
        or(TIO, NIR),
    ),
    m(
        "total_usage_prompt_cache_write_tokens",
        "Total Usage Prompt Cache Write Tokens",
        "tokens",
        Derived,
        Usage,
        2015,
        or(TIO, NIR),
    ),
    m(
        "total_usage_prompt_cache_miss_tokens",
        "Total Usage Prompt Cache Miss Tokens",
        "tokens",
        Derived,
        Usage,
        2017,
        or(TIO, NIR),
    ),
    m(
        "total_usage_completion_tokens",
        "Total Usage Completion Tokens",
        "tokens",
        Derived,
        Usage,
        2100,
        or(PTO, NIR),
    ),
    m(
        "total_usage_reasoning_tokens",
        "Total Usage Reasoning Tokens",
        "tokens",
        Derived,
        Usage,
        2110,
        or(PTO, NIR),
    ),
    m(
        "total_usage_accepted_prediction_tokens",
        "Total Usage Accepted Prediction Tokens",
        "tokens",
        Derived,
        Usage,
        2130,
        or(PTO, NIR),
    ),
    m(
        "total_usage_rejected_prediction_tokens",
        "Total Usage Rejected Prediction Tokens",
        "tokens",
        Derived,
        Usage,
        2140,
        or(PTO, NIR),
    ),
    m(
        "total_usage_total_tokens",
        "Total Usage Total Tokens",
        "tokens",
        Derived,
        Usage,
        2200,
        or(PTO, NIR),
    ),
    // client vs server token counts
    m(
        "usage_prompt_tokens_diff_pct",
        "Usage Prompt Diff %",
        "%",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(TIO, UDO),
    ),
    m(
        "usage_completion_tokens_diff_pct",
        "Usage Completion Diff %",
        "%",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, UDO),
    ),
    m(
        "usage_reasoning_tokens_diff_pct",
        "Usage Reasoning Diff %",
        "%",
        Record,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, UDO),
    ),
    m(
        "usage_discrepancy_count",
        "Usage Discrepancy Count",
        "requests",
        Aggregate,
        Hidden,
        HIDDEN_ORDER,
        or(UDO, NIR),
    ),
    // requested vs produced output length
    m(
        "osl_mismatch_diff_pct",
        "OSL Mismatch Diff %",
        "%",
        Record,
        Hidden,
        HIDDEN_ORDER,
        PTO,
    ),
    m(
        "osl_mismatch_count",
        "OSL Mismatch Count",
        "requests",
        Aggregate,
        Hidden,
        HIDDEN_ORDER,
        or(PTO, NIR),
    ),
    // HTTP trace (k6 names; stamped by the transport)
    m(
        "http_req_blocked",
        "HTTP Blocked",
        "ms",
        Record,
        HttpTrace,
        2000,
        NONE,
    ),
    m(
        "http_req_dns_lookup",
        "HTTP DNS Lookup",
        "ms",
        Record,
        HttpTrace,
        2010,
        NONE,
    ),
    m(
        "http_req_connecting",
        "HTTP Connecting",
        "ms",
        Record,
        HttpTrace,
        2020,
        NONE,
    ),
    m(
        "http_req_sending",
        "HTTP Sending",
        "ms",
        Record,
        HttpTrace,
        2030,
        NONE,
    ),
    m(
        "http_req_waiting",
        "HTTP Waiting (TTFB)",
        "ms",
        Record,
        HttpTrace,
        2040,
        NONE,
    ),
    m(
        "http_req_receiving",
        "HTTP Receiving",
        "ms",
        Record,
        HttpTrace,
        2050,
        NONE,
    ),
    m(
        "http_req_connection_reused",
        "HTTP Connection Reused",
        "ratio",
        Record,
        HttpTrace,
        2060,
        INT,
    ),
    m(
        "http_req_data_sent",
        "HTTP Data Sent",
        "KB",
        Record,
        HttpTrace,
        2070,
        NONE,
    ),
    m(
        "http_req_chunks_sent",
        "HTTP Chunks Sent",
        "count",
        Record,
        HttpTrace,
        2080,
        INT,
    ),
    m(
        "http_req_data_received",
        "HTTP Data Received",
        "KB",
        Record,
        HttpTrace,
        2090,
        NONE,
    ),
    m(
        "http_req_chunks_received",
        "HTTP Chunks Received",
        "count",
        Record,
        HttpTrace,
        2100,
        INT,
    ),
    m(
        "http_req_connection_overhead",
        "HTTP Connection Overhead",
        "ms",
        Record,
        HttpTrace,
        2110,
        NONE,
    ),
    m(
        "http_req_duration",
        "HTTP Duration (excl. conn)",
        "ms",
        Record,
        HttpTrace,
        2120,
        NONE,
    ),
    m(
        "http_req_total",
        "HTTP Total Time",
        "ms",
        Record,
        HttpTrace,
        2130,
        NONE,
    ),
    // concurrency-aware, time-weighted (AIPerf 0.13)
    m(
        "effective_concurrency",
        "Effective Concurrency",
        "requests",
        TimeWeighted,
        Effective,
        1500,
        NIR,
    ),
    m(
        "effective_decode_throughput",
        "Effective Decode Throughput",
        "tokens/sec",
        TimeWeighted,
        Effective,
        1501,
        or(PTO, NIR),
    ),
    m(
        "effective_prefill_throughput",
        "Effective Prefill Throughput",
        "tokens/sec",
        TimeWeighted,
        Effective,
        1502,
        or(TIO, NIR),
    ),
    m(
        "effective_decode_concurrency",
        "Effective Decode Concurrency",
        "requests",
        TimeWeighted,
        Effective,
        1503,
        or(PTO, NIR),
    ),
    m(
        "effective_prefill_concurrency",
        "Effective Prefill Concurrency",
        "requests",
        TimeWeighted,
        Effective,
        1504,
        or(PTO, NIR),
    ),
    m(
        "effective_total_throughput",
        "Effective Total Throughput",
        "tokens/sec",
        TimeWeighted,
        Effective,
        1505,
        or(PTO, NIR),
    ),
    m(
        "effective_decode_throughput_per_user",
        "Effective Decode Throughput Per User",
        "tokens/sec/user",
        TimeWeighted,
        Effective,
        1506,
        or(PTO, NIR),
    ),
    m(
        "effective_prefill_throughput_per_user",
        "Effective Prefill Throughput Per User",
        "tokens/sec/user",
        TimeWeighted,
        Effective,
        1507,
        or(TIO, NIR),
    ),
    m(
        "tokens_in_flight",
        "Tokens In Flight",
        "tokens",
        TimeWeighted,
        Effective,
        1508,
        or(PTO, NIR),
    ),
    m(
        "effective_latency",
        "Effective Latency (CO-aware)",
        "ms",
        Record,
        Effective,
        1509,
        NIR,
    ),
    m(
        "active_decode_throughput",
        "Active Decode Throughput",
        "tokens/sec",
        TimeWeighted,
        Active,
        1600,
        or(PTO, NIR),
    ),
    m(
        "active_prefill_throughput",
        "Active Prefill Throughput",
        "tokens/sec",
        TimeWeighted,
        Active,
        1601,
        or(TIO, NIR),
    ),
    m(
        "active_decode_throughput_per_user",
        "Active Decode Throughput Per User",
        "tokens/sec/user",
        TimeWeighted,
        Active,
        1602,
        or(PTO, NIR),
    ),
    m(
        "active_prefill_throughput_per_user",
        "Active Prefill Throughput Per User",
        "tokens/sec/user",
        TimeWeighted,
        Active,
        1603,
        or(TIO, NIR),
    ),
    m(
        "active_total_throughput",
        "Active Total Throughput",
        "tokens/sec",
        TimeWeighted,
        Active,
        1604,
        or(PTO, NIR),
    ),
];

/// The definition of `tag`, if it is one of ours.
pub fn metric_def(tag: &str) -> Option<&'static MetricDef> {
    CATALOGUE.iter().find(|d| d.tag == tag)
}

/// Index of `tag` in [`CATALOGUE`].
pub(crate) fn index_of(tag: &str) -> Option<usize> {
    CATALOGUE.iter().position(|d| d.tag == tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_unique() {
        for (i, d) in CATALOGUE.iter().enumerate() {
            assert_eq!(index_of(d.tag), Some(i), "duplicate {}", d.tag);
        }
    }

    #[test]
    fn applicability_follows_flags() {
        let mut ctx = MetricsContext::streaming_chat();
        let ttft = metric_def("time_to_first_token").unwrap();
        assert!(ctx.applies(ttft));
        ctx.streaming = false;
        assert!(!ctx.applies(ttft));
        assert_eq!(ctx.why_not(ttft), Some("needs --streaming"));
        let diff = metric_def("usage_prompt_tokens_diff_pct").unwrap();
        assert!(ctx.applies(diff));
        ctx.use_server_token_count = true;
        assert!(!ctx.applies(diff));
        assert!(!ctx.applies(metric_def("goodput").unwrap()));
    }
}
