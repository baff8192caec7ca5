//! The metric catalogue: tag, header, display unit, console placement and applicability of
//! every metric aiperf-rs computes (docs/metrics.md: the Python AIPerf 0.11 catalogue plus
//! the 0.13 additions).
//!
//! Values are held in the **display unit** from the start (ms, sec, tokens/sec, …), so
//! exports, goodput thresholds and summaries all speak the same unit.
//!
//! Code names a metric by its [`MetricId`], so a misspelt metric does not compile; its
//! tag (`time_to_first_token`) is what artifacts and users write, and
//! [`MetricId::from_tag`] / [`metric_def`] look tags up.

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
    /// Its typed name.
    pub id: MetricId,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct MetricsContext {
    /// `--streaming` was given (and the endpoint supports it).
    pub streaming: bool,
    /// The endpoint produces tokens.
    pub produces_tokens: bool,
    /// The endpoint's input is tokenized.
    pub tokenizes_input: bool,
    /// `--use-server-token-count`: tokens come from the server's `usage`.
    pub use_server_token_count: bool,
    /// `--per-chunk-usage`: inter-token latency leaves out the tokens the server reports
    /// for the first content chunk instead of assuming one.
    pub per_chunk_usage: bool,
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
            per_chunk_usage: config.endpoint.per_chunk_usage,
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
            per_chunk_usage: false,
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
const LIST: MetricFlags = MetricFlags::LIST;

/// Every flag of `flags` (`|` is not callable in a `static`).
const fn union(flags: &[MetricFlags]) -> MetricFlags {
    let mut bits = 0;
    let mut i = 0;
    while i < flags.len() {
        bits |= flags[i].0;
        i += 1;
    }
    MetricFlags(bits)
}

/// Order given to metrics the console never shows.
pub const HIDDEN_ORDER: u32 = u32::MAX;

/// Declares [`MetricId`] and [`CATALOGUE`] from one table, so that they cannot drift
/// apart: an id's discriminant is the index of its row.
macro_rules! catalogue {
    ($(
        $id:ident => $tag:literal, $header:literal, $unit:literal, $kind:ident,
            $group:ident, $order:expr, [$($flag:ident),*];
    )+) => {
        /// One metric of the [`CATALOGUE`]. Its [`tag`](MetricId::tag) is its key in every
        /// artifact; code names metrics by id, user text by tag ([`MetricId::from_tag`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MetricId {
            $(
                #[doc = concat!($header, " (`", $tag, "`).")]
                $id,
            )+
        }

        impl MetricId {
            /// Every metric, in catalogue order.
            pub const ALL: &'static [MetricId] = &[$(MetricId::$id),+];
        }

        /// Every metric, in display order within each group; row `i` is the metric whose
        /// [`MetricId`] is the `i`-th.
        pub static CATALOGUE: &[MetricDef] = &[$(
            MetricDef {
                id: MetricId::$id,
                tag: $tag,
                header: $header,
                unit: $unit,
                kind: $kind,
                group: $group,
                order: $order,
                flags: union(&[$($flag),*]),
            },
        )+];
    };
}

// One row per metric: id => tag, header, unit, kind, console group, console order, flags.
// Flags: STO streaming and tokens out, PTO tokens out, TIO tokenized input, LIB larger is
// better, NIR not in the per-record exports, INT integer, UDO client-vs-server diffs,
// EO failed records only, GP needs --goodput, LIST a list per record.
#[rustfmt::skip]
catalogue! {
    // latency / streaming
    TimeToFirstToken             => "time_to_first_token",              "Time to First Token",              "ms",              Record, Main,   100,          [STO];
    TimeToSecondToken            => "time_to_second_token",             "Time to Second Token",             "ms",              Record, Main,   200,          [STO];
    TimeToFirstOutputToken       => "time_to_first_output_token",       "Time to First Output Token",       "ms",              Record, Main,   210,          [STO];
    RequestLatency               => "request_latency",                  "Request Latency",                  "ms",              Record, Main,   300,          [];
    VideoInferenceTime           => "video_inference_time",             "Video Inference Time",             "ms",              Record, Main,   310,          [];
    VideoPeakMemory              => "video_peak_memory",                "Video Peak Memory",                "MB",              Record, Main,   311,          [];
    AudioDuration                => "audio_duration",                   "Audio Duration",                   "sec",             Record, Hidden, HIDDEN_ORDER, [];
    Rtfx                         => "rtfx",                             "Inverse Real-Time Factor (RTFx)",  "ratio",           Record, Main,   850,          [LIB];
    DecodeDuration               => "decode_duration",                  "Decode Duration",                  "ms",              Record, Main,   350,          [STO];
    InterTokenLatency            => "inter_token_latency",              "Inter Token Latency",              "ms",              Record, Main,   400,          [STO];
    InterChunkLatency            => "inter_chunk_latency",              "Inter Chunk Latency",              "ms",              Record, Hidden, HIDDEN_ORDER, [STO, LIST];
    OutputTokenThroughputPerUser => "output_token_throughput_per_user", "Output Token Throughput Per User", "tokens/sec/user", Record, Main,   500,          [STO, LIB];
    E2eOutputTokenThroughput     => "e2e_output_token_throughput",      "E2E Output Token Throughput",      "tokens/sec/user", Record, Main,   510,          [PTO, LIB];
    PrefillThroughputPerUser     => "prefill_throughput_per_user",      "Prefill Throughput Per User",      "tokens/sec/user", Record, Hidden, HIDDEN_ORDER, [STO, TIO, LIB];
    CreditToStartLatency         => "credit_to_start_latency",          "Credit-to-Start Latency",          "ms",              Record, Hidden, HIDDEN_ORDER, [NIR];
    // token counts
    OutputSequenceLength => "output_sequence_length", "Output Sequence Length",      "tokens", Record, Main,   600,          [PTO, LIB, INT];
    InputSequenceLength  => "input_sequence_length",  "Input Sequence Length",       "tokens", Record, Main,   700,          [TIO, LIB, INT];
    OutputTokenCount     => "output_token_count",     "Output Token Count",          "tokens", Record, Hidden, HIDDEN_ORDER, [PTO, LIB, INT];
    ReasoningTokenCount  => "reasoning_token_count",  "Reasoning Token Count",       "tokens", Record, Hidden, HIDDEN_ORDER, [PTO, LIB, INT];
    ErrorIsl             => "error_isl",              "Error Input Sequence Length", "tokens", Record, Hidden, HIDDEN_ORDER, [TIO, EO, INT];
    // run-level counts and throughputs
    OutputTokenThroughput => "output_token_throughput", "Output Token Throughput",              "tokens/sec",   Derived,   Main,   800,          [PTO, LIB];
    InputTokenThroughput  => "input_token_throughput",  "Input Token Throughput",               "tokens/sec",   Derived,   Main,   810,          [TIO, LIB];
    RequestThroughput     => "request_throughput",      "Request Throughput",                   "requests/sec", Derived,   Main,   900,          [LIB];
    Goodput               => "goodput",                 "Goodput",                              "requests/sec", Derived,   Main,   1000,         [GP, LIB];
    CompletedRequestCount => "completed_request_count", "Completed Requests (Success + Error)", "requests",     Aggregate, Main,   1050,         [NIR];
    RequestErrorRate      => "request_error_rate",      "Request Error Rate",                   "%",            Derived,   Main,   1060,         [NIR];
    RequestCount          => "request_count",           "Request Count",                        "requests",     Aggregate, Main,   1100,         [LIB, NIR];
    ErrorRequestCount     => "error_request_count",     "Error Request Count",                  "requests",     Aggregate, Hidden, HIDDEN_ORDER, [EO, NIR];
    GoodRequestCount      => "good_request_count",      "Good Request Count",                   "requests",     Aggregate, Hidden, HIDDEN_ORDER, [GP, LIB, NIR];
    GoodRequestFraction   => "good_request_fraction",   "GoodRequestFraction",                  "ratio",        Derived,   Hidden, HIDDEN_ORDER, [GP, LIB, NIR];
    BenchmarkDuration     => "benchmark_duration",      "Benchmark Duration",                   "sec",          Derived,   Hidden, HIDDEN_ORDER, [NIR];
    TotalIsl              => "total_isl",               "Total Input Sequence Length",          "tokens",       Derived,   Hidden, HIDDEN_ORDER, [TIO, NIR];
    TotalOutputTokens     => "total_output_tokens",     "Total Output Tokens",                  "tokens",       Derived,   Hidden, HIDDEN_ORDER, [PTO, NIR];
    TotalReasoningTokens  => "total_reasoning_tokens",  "Total Reasoning Tokens",               "tokens",       Derived,   Hidden, HIDDEN_ORDER, [PTO, NIR];
    TotalOsl              => "total_osl",               "Total Output Sequence Length",         "tokens",       Derived,   Hidden, HIDDEN_ORDER, [PTO, NIR];
    TotalTokenThroughput  => "total_token_throughput",  "Total Token Throughput",               "tokens/sec",   Derived,   Hidden, HIDDEN_ORDER, [PTO, LIB];
    TotalErrorIsl         => "total_error_isl",         "Total Error Input Sequence Length",    "tokens",       Derived,   Hidden, HIDDEN_ORDER, [TIO, EO, NIR];
    // usage fields
    UsagePromptTokens                  => "usage_prompt_tokens",                    "Usage Prompt Tokens",                    "tokens", Record,  Usage, 1000, [TIO, INT];
    UsagePromptCacheReadTokens         => "usage_prompt_cache_read_tokens",         "Usage Prompt Cache Read Tokens",         "tokens", Record,  Usage, 1010, [TIO, INT];
    UsagePromptCacheWriteTokens        => "usage_prompt_cache_write_tokens",        "Usage Prompt Cache Write Tokens",        "tokens", Record,  Usage, 1015, [TIO, INT];
    UsagePromptCacheMissTokens         => "usage_prompt_cache_miss_tokens",         "Usage Prompt Cache Miss Tokens",         "tokens", Record,  Usage, 1017, [TIO, INT];
    UsageCompletionTokens              => "usage_completion_tokens",                "Usage Completion Tokens",                "tokens", Record,  Usage, 1100, [PTO, INT];
    UsageReasoningTokens               => "usage_reasoning_tokens",                 "Usage Reasoning Tokens",                 "tokens", Record,  Usage, 1110, [PTO, INT];
    UsageAcceptedPredictionTokens      => "usage_accepted_prediction_tokens",       "Usage Accepted Prediction Tokens",       "tokens", Record,  Usage, 1130, [PTO, INT];
    UsageRejectedPredictionTokens      => "usage_rejected_prediction_tokens",       "Usage Rejected Prediction Tokens",       "tokens", Record,  Usage, 1140, [PTO, INT];
    UsageTotalTokens                   => "usage_total_tokens",                     "Usage Total Tokens",                     "tokens", Record,  Usage, 1200, [PTO, INT];
    TotalUsagePromptTokens             => "total_usage_prompt_tokens",              "Total Usage Prompt Tokens",              "tokens", Derived, Usage, 2000, [TIO, NIR];
    TotalUsagePromptCacheReadTokens    => "total_usage_prompt_cache_read_tokens",   "Total Usage Prompt Cache Read Tokens",   "tokens", Derived, Usage, 2010, [TIO, NIR];
    OverallUsagePromptCacheReadPct     => "overall_usage_prompt_cache_read_pct",    "Overall Usage Prompt Cache Read %",      "%",      Derived, Usage, 2012, [TIO, NIR];
    TotalUsagePromptCacheWriteTokens   => "total_usage_prompt_cache_write_tokens",  "Total Usage Prompt Cache Write Tokens",  "tokens", Derived, Usage, 2015, [TIO, NIR];
    TotalUsagePromptCacheMissTokens    => "total_usage_prompt_cache_miss_tokens",   "Total Usage Prompt Cache Miss Tokens",   "tokens", Derived, Usage, 2017, [TIO, NIR];
    TotalUsageCompletionTokens         => "total_usage_completion_tokens",          "Total Usage Completion Tokens",          "tokens", Derived, Usage, 2100, [PTO, NIR];
    TotalUsageReasoningTokens          => "total_usage_reasoning_tokens",           "Total Usage Reasoning Tokens",           "tokens", Derived, Usage, 2110, [PTO, NIR];
    TotalUsageAcceptedPredictionTokens => "total_usage_accepted_prediction_tokens", "Total Usage Accepted Prediction Tokens", "tokens", Derived, Usage, 2130, [PTO, NIR];
    TotalUsageRejectedPredictionTokens => "total_usage_rejected_prediction_tokens", "Total Usage Rejected Prediction Tokens", "tokens", Derived, Usage, 2140, [PTO, NIR];
    TotalUsageTotalTokens              => "total_usage_total_tokens",               "Total Usage Total Tokens",               "tokens", Derived, Usage, 2200, [PTO, NIR];
    // client vs server token counts
    UsagePromptTokensDiffPct     => "usage_prompt_tokens_diff_pct",     "Usage Prompt Diff %",     "%",        Record,    Hidden, HIDDEN_ORDER, [TIO, UDO];
    UsageCompletionTokensDiffPct => "usage_completion_tokens_diff_pct", "Usage Completion Diff %", "%",        Record,    Hidden, HIDDEN_ORDER, [PTO, UDO];
    UsageReasoningTokensDiffPct  => "usage_reasoning_tokens_diff_pct",  "Usage Reasoning Diff %",  "%",        Record,    Hidden, HIDDEN_ORDER, [PTO, UDO];
    UsageDiscrepancyCount        => "usage_discrepancy_count",          "Usage Discrepancy Count", "requests", Aggregate, Hidden, HIDDEN_ORDER, [UDO, NIR];
    // requested vs produced output length
    OslMismatchDiffPct => "osl_mismatch_diff_pct", "OSL Mismatch Diff %", "%",        Record,    Hidden, HIDDEN_ORDER, [PTO];
    OslMismatchCount   => "osl_mismatch_count",    "OSL Mismatch Count",  "requests", Aggregate, Hidden, HIDDEN_ORDER, [PTO, NIR];
    // HTTP trace (k6 names; stamped by the transport)
    HttpReqBlocked            => "http_req_blocked",             "HTTP Blocked",               "ms",    Record, HttpTrace, 2000, [];
    HttpReqDnsLookup          => "http_req_dns_lookup",          "HTTP DNS Lookup",            "ms",    Record, HttpTrace, 2010, [];
    HttpReqConnecting         => "http_req_connecting",          "HTTP Connecting",            "ms",    Record, HttpTrace, 2020, [];
    HttpReqSending            => "http_req_sending",             "HTTP Sending",               "ms",    Record, HttpTrace, 2030, [];
    HttpReqWaiting            => "http_req_waiting",             "HTTP Waiting (TTFB)",        "ms",    Record, HttpTrace, 2040, [];
    HttpReqReceiving          => "http_req_receiving",           "HTTP Receiving",             "ms",    Record, HttpTrace, 2050, [];
    HttpReqConnectionReused   => "http_req_connection_reused",   "HTTP Connection Reused",     "ratio", Record, HttpTrace, 2060, [INT];
    HttpReqDataSent           => "http_req_data_sent",           "HTTP Data Sent",             "KB",    Record, HttpTrace, 2070, [];
    HttpReqChunksSent         => "http_req_chunks_sent",         "HTTP Chunks Sent",           "count", Record, HttpTrace, 2080, [INT];
    HttpReqDataReceived       => "http_req_data_received",       "HTTP Data Received",         "KB",    Record, HttpTrace, 2090, [];
    HttpReqChunksReceived     => "http_req_chunks_received",     "HTTP Chunks Received",       "count", Record, HttpTrace, 2100, [INT];
    HttpReqConnectionOverhead => "http_req_connection_overhead", "HTTP Connection Overhead",   "ms",    Record, HttpTrace, 2110, [];
    HttpReqDuration           => "http_req_duration",            "HTTP Duration (excl. conn)", "ms",    Record, HttpTrace, 2120, [];
    HttpReqTotal              => "http_req_total",               "HTTP Total Time",            "ms",    Record, HttpTrace, 2130, [];
    // concurrency-aware, time-weighted (AIPerf 0.13)
    EffectiveConcurrency              => "effective_concurrency",                 "Effective Concurrency",                 "requests",        TimeWeighted, Effective, 1500, [NIR];
    EffectiveDecodeThroughput         => "effective_decode_throughput",           "Effective Decode Throughput",           "tokens/sec",      TimeWeighted, Effective, 1501, [PTO, NIR];
    EffectivePrefillThroughput        => "effective_prefill_throughput",          "Effective Prefill Throughput",          "tokens/sec",      TimeWeighted, Effective, 1502, [TIO, NIR];
    EffectiveDecodeConcurrency        => "effective_decode_concurrency",          "Effective Decode Concurrency",          "requests",        TimeWeighted, Effective, 1503, [PTO, NIR];
    EffectivePrefillConcurrency       => "effective_prefill_concurrency",         "Effective Prefill Concurrency",         "requests",        TimeWeighted, Effective, 1504, [PTO, NIR];
    EffectiveTotalThroughput          => "effective_total_throughput",            "Effective Total Throughput",            "tokens/sec",      TimeWeighted, Effective, 1505, [PTO, NIR];
    EffectiveDecodeThroughputPerUser  => "effective_decode_throughput_per_user",  "Effective Decode Throughput Per User",  "tokens/sec/user", TimeWeighted, Effective, 1506, [PTO, NIR];
    EffectivePrefillThroughputPerUser => "effective_prefill_throughput_per_user", "Effective Prefill Throughput Per User", "tokens/sec/user", TimeWeighted, Effective, 1507, [TIO, NIR];
    TokensInFlight                    => "tokens_in_flight",                      "Tokens In Flight",                      "tokens",          TimeWeighted, Effective, 1508, [PTO, NIR];
    EffectiveLatency                  => "effective_latency",                     "Effective Latency (CO-aware)",          "ms",              Record,       Effective, 1509, [NIR];
    ActiveDecodeThroughput            => "active_decode_throughput",              "Active Decode Throughput",              "tokens/sec",      TimeWeighted, Active,    1600, [PTO, NIR];
    ActivePrefillThroughput           => "active_prefill_throughput",             "Active Prefill Throughput",             "tokens/sec",      TimeWeighted, Active,    1601, [TIO, NIR];
    ActiveDecodeThroughputPerUser     => "active_decode_throughput_per_user",     "Active Decode Throughput Per User",     "tokens/sec/user", TimeWeighted, Active,    1602, [PTO, NIR];
    ActivePrefillThroughputPerUser    => "active_prefill_throughput_per_user",    "Active Prefill Throughput Per User",    "tokens/sec/user", TimeWeighted, Active,    1603, [TIO, NIR];
    ActiveTotalThroughput             => "active_total_throughput",               "Active Total Throughput",               "tokens/sec",      TimeWeighted, Active,    1604, [PTO, NIR];
}

impl MetricId {
    /// The metric's key in every artifact, e.g. `time_to_first_token`.
    pub fn tag(self) -> &'static str {
        self.def().tag
    }

    /// The metric's row of the [`CATALOGUE`].
    pub fn def(self) -> &'static MetricDef {
        &CATALOGUE[self.index()]
    }

    /// The id whose tag is `tag` (user text: `--goodput`, comparisons), if any.
    pub fn from_tag(tag: &str) -> Option<Self> {
        metric_def(tag).map(|d| d.id)
    }

    /// The index of the metric's row in [`CATALOGUE`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The definition of `tag`, if it is one of ours.
pub fn metric_def(tag: &str) -> Option<&'static MetricDef> {
    CATALOGUE.iter().find(|d| d.tag == tag)
}

/// Index of `tag` in [`CATALOGUE`].
pub(crate) fn index_of(tag: &str) -> Option<usize> {
    MetricId::from_tag(tag).map(MetricId::index)
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
    fn ids_and_tags_name_the_same_rows() {
        assert_eq!(MetricId::ALL.len(), CATALOGUE.len());
        for (i, id) in MetricId::ALL.iter().enumerate() {
            assert_eq!(id.index(), i);
            assert_eq!(CATALOGUE[i].id, *id);
            assert_eq!(MetricId::from_tag(id.tag()), Some(*id));
        }
        assert_eq!(MetricId::TimeToFirstToken.tag(), "time_to_first_token");
        assert_eq!(MetricId::from_tag("nope"), None);
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
