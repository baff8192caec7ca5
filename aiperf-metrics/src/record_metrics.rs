//! Per-request metrics: pure functions from a [`RequestRecord`] and its token counts.
//!
//! Every value is produced in its display unit (see [`crate::catalogue`]): latencies in
//! ms, throughputs in tokens/sec(/user), counts in tokens, differences in %.

use std::sync::LazyLock;

use aiperf_core::{ErrorDetails, RequestRecord, TokenCounter, Usage};

use crate::catalogue::{MetricDef, MetricId, MetricKind, MetricsContext, CATALOGUE};

const NS_PER_MS: f64 = 1e6;
const NS_PER_SEC: f64 = 1e9;

/// Threshold (percent) above which a client/server token difference counts as a
/// discrepancy (`AIPERF_METRICS_USAGE_PCT_DIFF_THRESHOLD`, default 10).
pub const USAGE_PCT_DIFF_THRESHOLD: f64 = 10.0;

/// Token counts of one request (docs/metrics.md#token-counting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct TokenCounts {
    /// Input sequence length.
    pub input: Option<u64>,
    /// Output tokens, reasoning excluded.
    pub output: Option<u64>,
    /// Reasoning tokens; `None` when the response had no reasoning.
    pub reasoning: Option<u64>,
}

impl TokenCounts {
    /// Output sequence length: output + reasoning; `None` when both are missing.
    pub fn osl(&self) -> Option<u64> {
        match (self.output, self.reasoning) {
            (None, None) => None,
            (o, r) => Some(o.unwrap_or(0) + r.unwrap_or(0)),
        }
    }
}

/// Counts the tokens of `record` as docs/metrics.md#token-counting describes.
///
/// Client side (the default): input = tokens of `record.input_text` (or of the text the
/// counter renders from the payload, with a chat template), taken from the turn's
/// [`KnownTokenCount`](aiperf_core::KnownTokenCount) instead of counted when that text
/// is exactly the turn's text as the dataset made it, for this counter; output = tokens of
/// the concatenated text of the content responses; reasoning = tokens of the concatenated
/// reasoning pieces (`None` when there were none). With `use_server_token_count`, valid
/// records take them from the last non-empty `usage`: input = prompt tokens, reasoning =
/// reasoning tokens, output = completion − reasoning (clamped at 0). Failed records still
/// get a client-side input count (for `error_isl`). Nothing is counted for a side the
/// endpoint does not tokenize, or when `counter` is `None`.
pub fn count_tokens(
    record: &RequestRecord,
    counter: Option<&dyn TokenCounter>,
    ctx: &MetricsContext,
) -> TokenCounts {
    let count = |text: &str| counter.map(|c| c.count_tokens(text) as u64);
    let client_input = || {
        if ctx.tokenizes_input {
            counter.map(|c| {
                let text = c.input_text_to_count(&record.input_text, &record.payload);
                known_tokens(record, c, &text).unwrap_or_else(|| c.count_tokens(&text)) as u64
            })
        } else {
            None
        }
    };
    if !record.is_valid() {
        return TokenCounts {
            input: client_input(),
            output: None,
            reasoning: None,
        };
    }
    if ctx.use_server_token_count {
        let Some(usage) = record.last_usage() else {
            return TokenCounts::default();
        };
        let reasoning = usage.reasoning_tokens();
        return TokenCounts {
            input: usage.prompt_tokens().filter(|_| ctx.tokenizes_input),
            output: usage
                .completion_tokens()
                .map(|c| c.saturating_sub(reasoning.unwrap_or(0)))
                .filter(|_| ctx.produces_tokens),
            reasoning: reasoning.filter(|_| ctx.produces_tokens),
        };
    }
    let (mut text, mut reasoning, mut any_reasoning) = (String::new(), String::new(), false);
    if ctx.produces_tokens {
        for r in record.content_responses() {
            text.push_str(&r.response.text);
            if !r.response.reasoning.is_empty() {
                any_reasoning = true;
                reasoning.push_str(&r.response.reasoning);
            }
        }
    }
    TokenCounts {
        input: client_input(),
        output: if ctx.produces_tokens {
            count(&text)
        } else {
            None
        },
        reasoning: if any_reasoning {
            count(&reasoning)
        } else {
            None
        },
    }
}

/// The count the record's turn carries for `text`, the text `counter` would count as its
/// input ([`KnownTokenCount::tokens_of`](aiperf_core::KnownTokenCount::tokens_of)): a
/// synthetic prompt sent alone, made with the counter's tokenizer. Hashing the text is
/// what this costs, a fraction of encoding it.
fn known_tokens(record: &RequestRecord, counter: &dyn TokenCounter, text: &str) -> Option<usize> {
    let turn = record
        .credit
        .conversation
        .turns
        .get(record.credit.turn_index)?;
    turn.known_tokens?.tokens_of(text, counter.id()?)
}

/// One metric value of one record.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricValue {
    /// A single number.
    Scalar(f64),
    /// A list (inter-chunk latency).
    List(Vec<f64>),
}

/// A [`MetricValue`] read back from the JSON the exports write: a number, `null` for a
/// non-finite one, or a list of them; `null` reads back as NaN.
pub(crate) struct JsonMetricValue(pub(crate) MetricValue);

impl<'de> serde::Deserialize<'de> for JsonMetricValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl<'de> serde::de::Visitor<'de> for ValueVisitor {
            type Value = JsonMetricValue;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number, null or a list of numbers")
            }

            fn visit_f64<E>(self, v: f64) -> Result<JsonMetricValue, E> {
                Ok(JsonMetricValue(MetricValue::Scalar(v)))
            }

            fn visit_i64<E>(self, v: i64) -> Result<JsonMetricValue, E> {
                Ok(JsonMetricValue(MetricValue::Scalar(v as f64)))
            }

            fn visit_u64<E>(self, v: u64) -> Result<JsonMetricValue, E> {
                Ok(JsonMetricValue(MetricValue::Scalar(v as f64)))
            }

            fn visit_unit<E>(self) -> Result<JsonMetricValue, E> {
                Ok(JsonMetricValue(MetricValue::Scalar(f64::NAN)))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<JsonMetricValue, A::Error> {
                let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(v) = seq.next_element::<Option<f64>>()? {
                    values.push(v.unwrap_or(f64::NAN));
                }
                Ok(JsonMetricValue(MetricValue::List(values)))
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}

/// The metrics of one record, in display units.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordMetrics {
    /// Each metric that produced a value, in computation order.
    pub values: Vec<(&'static MetricDef, MetricValue)>,
    /// Whether the record was valid (success with content).
    pub valid: bool,
    /// Whether a client/server token difference exceeded the threshold.
    pub usage_discrepancy: bool,
    /// Whether the output length missed the requested length (`None`: not checked).
    pub osl_mismatch: Option<bool>,
    /// The token counts used.
    pub tokens: TokenCounts,
    /// In accuracy mode, how the reply was graded (valid records of known questions).
    pub grade: Option<crate::accuracy::TaskGrade>,
}

/// The error a failed record without error details shows in the per-record exports.
static INVALID_RESULT: LazyLock<ErrorDetails> = LazyLock::new(ErrorDetails::invalid_result);

impl RecordMetrics {
    /// The error the per-record exports show for `record`: none when it is valid, else
    /// its error, or an invalid result when it has none (a success without content).
    pub(crate) fn shown_error<'a>(&self, record: &'a RequestRecord) -> Option<&'a ErrorDetails> {
        (!self.valid).then(|| record.error.as_ref().unwrap_or(&INVALID_RESULT))
    }

    /// The value of `id`, if computed.
    pub fn get(&self, id: MetricId) -> Option<&MetricValue> {
        self.values.iter().find(|(d, _)| d.id == id).map(|(_, v)| v)
    }

    /// The scalar value of `id`, if computed.
    pub fn scalar(&self, id: MetricId) -> Option<f64> {
        match self.get(id) {
            Some(MetricValue::Scalar(v)) => Some(*v),
            _ => None,
        }
    }

    /// Keeps `value` as the value of `id` when there is one, it is finite and `id`
    /// applies under `ctx`.
    fn push(&mut self, ctx: &MetricsContext, id: MetricId, value: Option<f64>) {
        let def = id.def();
        match value {
            Some(value) if value.is_finite() && ctx.applies(def) => {
                self.values.push((def, MetricValue::Scalar(value)));
            }
            _ => {}
        }
    }
}

fn ms(ns: i128) -> f64 {
    ns as f64 / NS_PER_MS
}

fn diff_ns(later: u64, earlier: u64) -> i128 {
    i128::from(later) - i128::from(earlier)
}

fn non_negative(ns: i128) -> Option<i128> {
    (ns >= 0).then_some(ns)
}

/// Cache-read tokens under their vendor spellings.
fn usage_cache_read(u: &Usage) -> Option<u64> {
    u.field("prompt_tokens_details.cached_tokens")
        .or_else(|| u.field("input_tokens_details.cached_tokens"))
        .or_else(|| u.field("cache_read_input_tokens"))
        .or_else(|| u.field("prompt_cache_hit_tokens"))
        .or_else(|| u.field("cachedContentTokenCount"))
        .or_else(|| u.field("cacheReadInputTokens"))
}

/// Said when a server reports token usage but no prompt-cache reads: the Python AIPerf
/// 0.13's words, mid-run (once) and under the console summary.
pub const CACHE_REPORTING_HINT: &str = "Token usage is reported but no prompt-cache read \
    tokens were seen (usage.prompt_tokens_details.cached_tokens absent). If your server uses \
    prefix/KV caching, enable cache reporting so AIPerf can populate the prompt-cache \
    metrics: vLLM --enable-prompt-tokens-details, SGLang --enable-cache-report (TRT-LLM \
    reports it by default).";

/// `usage` has prompt tokens but no cache-read count under any vendor spelling: the
/// signature of a caching server that was not told to report its cache reads. A count of
/// 0 is a report.
pub fn usage_without_cache_reporting(u: &Usage) -> bool {
    UsageTokens::of(u).lacks_cache_reporting()
}

/// The token counts a server reports in `usage`, under their vendor spellings: one
/// request's (the `usage_*` record metrics) or a run's sums (`total_usage_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct UsageTokens {
    /// Prompt tokens.
    pub prompt: Option<u64>,
    /// Prompt tokens read from the server's prompt cache.
    pub prompt_cache_read: Option<u64>,
    /// Prompt tokens written to the prompt cache.
    pub prompt_cache_write: Option<u64>,
    /// Prompt tokens that missed the prompt cache.
    pub prompt_cache_miss: Option<u64>,
    /// Completion tokens.
    pub completion: Option<u64>,
    /// Reasoning tokens.
    pub reasoning: Option<u64>,
    /// Accepted predicted-output tokens.
    pub accepted_prediction: Option<u64>,
    /// Rejected predicted-output tokens.
    pub rejected_prediction: Option<u64>,
    /// Total tokens.
    pub total: Option<u64>,
}

impl UsageTokens {
    /// The counts of one usage object.
    pub fn of(u: &Usage) -> Self {
        Self {
            prompt: u.prompt_tokens(),
            prompt_cache_read: usage_cache_read(u),
            prompt_cache_write: u
                .field("cache_creation_input_tokens")
                .or_else(|| u.field("cacheWriteInputTokens")),
            prompt_cache_miss: u.field("prompt_cache_miss_tokens"),
            completion: u.completion_tokens(),
            reasoning: u.reasoning_tokens(),
            accepted_prediction: u.field("completion_tokens_details.accepted_prediction_tokens"),
            rejected_prediction: u.field("completion_tokens_details.rejected_prediction_tokens"),
            total: u.total_tokens(),
        }
    }

    /// Prompt tokens but no cache-read count: see [`usage_without_cache_reporting`].
    pub(crate) fn lacks_cache_reporting(&self) -> bool {
        self.prompt.is_some() && self.prompt_cache_read.is_none()
    }

    /// Adds `other`'s counts to these; a count missing on either side adds nothing.
    pub fn add(&mut self, other: &Self) {
        let add = |sum: &mut Option<u64>, v: Option<u64>| {
            if let Some(v) = v {
                *sum = Some(sum.unwrap_or(0) + v);
            }
        };
        add(&mut self.prompt, other.prompt);
        add(&mut self.prompt_cache_read, other.prompt_cache_read);
        add(&mut self.prompt_cache_write, other.prompt_cache_write);
        add(&mut self.prompt_cache_miss, other.prompt_cache_miss);
        add(&mut self.completion, other.completion);
        add(&mut self.reasoning, other.reasoning);
        add(&mut self.accepted_prediction, other.accepted_prediction);
        add(&mut self.rejected_prediction, other.rejected_prediction);
        add(&mut self.total, other.total);
    }

    /// Each count with the metric that reports it per request (`usage_*`) and the one
    /// that sums it over the run (`total_usage_*`), in catalogue order.
    pub fn by_metric(&self) -> [(MetricId, MetricId, Option<u64>); 9] {
        use MetricId::{
            TotalUsageAcceptedPredictionTokens, TotalUsageCompletionTokens,
            TotalUsagePromptCacheMissTokens, TotalUsagePromptCacheReadTokens,
            TotalUsagePromptCacheWriteTokens, TotalUsagePromptTokens, TotalUsageReasoningTokens,
            TotalUsageRejectedPredictionTokens, TotalUsageTotalTokens,
            UsageAcceptedPredictionTokens, UsageCompletionTokens, UsagePromptCacheMissTokens,
            UsagePromptCacheReadTokens, UsagePromptCacheWriteTokens, UsagePromptTokens,
            UsageReasoningTokens, UsageRejectedPredictionTokens, UsageTotalTokens,
        };
        [
            (UsagePromptTokens, TotalUsagePromptTokens, self.prompt),
            (
                UsagePromptCacheReadTokens,
                TotalUsagePromptCacheReadTokens,
                self.prompt_cache_read,
            ),
            (
                UsagePromptCacheWriteTokens,
                TotalUsagePromptCacheWriteTokens,
                self.prompt_cache_write,
            ),
            (
                UsagePromptCacheMissTokens,
                TotalUsagePromptCacheMissTokens,
                self.prompt_cache_miss,
            ),
            (
                UsageCompletionTokens,
                TotalUsageCompletionTokens,
                self.completion,
            ),
            (
                UsageReasoningTokens,
                TotalUsageReasoningTokens,
                self.reasoning,
            ),
            (
                UsageAcceptedPredictionTokens,
                TotalUsageAcceptedPredictionTokens,
                self.accepted_prediction,
            ),
            (
                UsageRejectedPredictionTokens,
                TotalUsageRejectedPredictionTokens,
                self.rejected_prediction,
            ),
            (UsageTotalTokens, TotalUsageTotalTokens, self.total),
        ]
    }
}

/// The `http_req_*` metrics (k6's phases) from the transport's stamps. DNS resolution is
/// not stamped apart from connecting, so `http_req_dns_lookup` is 0 and the lookup time
/// counts in `http_req_connecting`.
fn push_http_trace(out: &mut RecordMetrics, ctx: &MetricsContext, record: &RequestRecord) {
    let Some(http) = record.http else {
        return;
    };
    let start = record.start_ns;
    let span = |from: u64, to: u64| ms(i128::from(to.saturating_sub(from)));
    let (blocked, connecting, send_start) = match http.connect_ns {
        Some((connect_start, connected)) => (
            span(start, connect_start),
            span(connect_start, connected),
            connected.max(start),
        ),
        None => (0.0, 0.0, start),
    };
    let sent = http.request_sent_ns.unwrap_or(send_start).max(send_start);
    let first_byte = http
        .first_chunk_ns
        .or(record.head_ns)
        .unwrap_or(record.end_ns)
        .max(sent);
    let end = record.end_ns.max(first_byte);
    let (sending, waiting, receiving) = (
        span(send_start, sent),
        span(sent, first_byte),
        span(first_byte, end),
    );
    let overhead = blocked + connecting;
    let received = http.response_head_bytes + record.body_bytes as u64;
    for (id, value) in [
        (MetricId::HttpReqBlocked, blocked),
        (MetricId::HttpReqDnsLookup, 0.0),
        (MetricId::HttpReqConnecting, connecting),
        (MetricId::HttpReqSending, sending),
        (MetricId::HttpReqWaiting, waiting),
        (MetricId::HttpReqReceiving, receiving),
        (
            MetricId::HttpReqConnectionReused,
            f64::from(u8::from(http.connection_reused)),
        ),
        (
            MetricId::HttpReqDataSent,
            http.request_bytes as f64 / 1024.0,
        ),
        (MetricId::HttpReqChunksSent, 1.0),
        (MetricId::HttpReqDataReceived, received as f64 / 1024.0),
        (MetricId::HttpReqChunksReceived, record.chunk_count as f64),
        (MetricId::HttpReqConnectionOverhead, overhead),
        (MetricId::HttpReqDuration, sending + waiting + receiving),
        (
            MetricId::HttpReqTotal,
            overhead + sending + waiting + receiving,
        ),
    ] {
        out.push(ctx, id, Some(value));
    }
}

fn diff_pct(server: Option<u64>, client: Option<u64>) -> Option<f64> {
    let (s, c) = (server? as f64, client? as f64);
    (c > 0.0).then(|| (s - c).abs() / c * 100.0)
}

/// The tokens generated after the first content chunk: `osl − 1`, or with
/// `--per-chunk-usage` `osl` less the cumulative `completion_tokens` the server reported on
/// the first content chunk that carried usage (the Python AIPerf 0.13's rule), unless
/// that count is missing or inconsistent (0, or leaving no token after it).
fn decode_tokens(record: &RequestRecord, osl: u64, ctx: &MetricsContext) -> u64 {
    let first_chunk = ctx
        .per_chunk_usage
        .then(|| {
            record
                .content_responses()
                .find_map(|timed| timed.response.usage.as_ref())
                .and_then(aiperf_core::Usage::completion_tokens)
        })
        .flatten();
    match first_chunk {
        Some(first) if first > 0 && first < osl => osl - first,
        _ => osl - 1,
    }
}

/// How many record metrics the catalogue has: a record never has more values, so their
/// vector is allocated once instead of growing five times per record.
static RECORD_METRICS: LazyLock<usize> = LazyLock::new(|| {
    CATALOGUE
        .iter()
        .filter(|def| def.kind == MetricKind::Record)
        .count()
});

/// Computes the record metrics of `record` given its token counts
/// (docs/metrics.md#per-request-metrics).
///
/// Valid records get latency, streaming, token, usage, usage-difference and
/// OSL-mismatch metrics as they apply under `ctx`; failed records get only `error_isl`.
/// A metric whose inputs are missing (e.g. TTST with one chunk) is simply absent.
pub fn compute_record_metrics(
    record: &RequestRecord,
    tokens: &TokenCounts,
    ctx: &MetricsContext,
) -> RecordMetrics {
    let usage = record.last_usage().map(UsageTokens::of);
    compute_record_metrics_with_usage(record, tokens, usage.as_ref(), ctx)
}

/// [`compute_record_metrics`] given the counts of the record's last usage object, for a
/// caller that needs them too: reading them walks some twenty dotted paths through the
/// object, so the record processor reads them once per record.
pub(crate) fn compute_record_metrics_with_usage(
    record: &RequestRecord,
    tokens: &TokenCounts,
    usage: Option<&UsageTokens>,
    ctx: &MetricsContext,
) -> RecordMetrics {
    let mut out = RecordMetrics {
        tokens: *tokens,
        valid: record.is_valid(),
        ..RecordMetrics::default()
    };
    if !out.valid {
        out.push(ctx, MetricId::ErrorIsl, tokens.input.map(|v| v as f64));
        return out;
    }
    out.values.reserve_exact(*RECORD_METRICS);
    let start = record.start_ns;
    let content: Vec<u64> = record.content_responses().map(|r| r.perf_ns).collect();
    let (Some(&first), Some(&last)) = (content.first(), content.last()) else {
        return out;
    };
    let latency_ns = non_negative(diff_ns(last, start));
    let ttft_ns = non_negative(diff_ns(first, start));
    let osl = tokens.osl();

    // latency / streaming
    out.push(ctx, MetricId::TimeToFirstToken, ttft_ns.map(ms));
    if content.len() >= 2 {
        out.push(
            ctx,
            MetricId::TimeToSecondToken,
            non_negative(diff_ns(content[1], content[0])).map(ms),
        );
    }
    let first_output = record
        .content_responses()
        .find(|r| !r.response.text.is_empty())
        .map(|r| r.perf_ns);
    out.push(
        ctx,
        MetricId::TimeToFirstOutputToken,
        first_output
            .and_then(|t| non_negative(diff_ns(t, start)))
            .map(ms),
    );
    out.push(ctx, MetricId::RequestLatency, latency_ns.map(ms));
    // What a video generation server reports about the job (0.13's video metrics).
    let video = record.responses.iter().find_map(|r| r.response.video);
    out.push(
        ctx,
        MetricId::VideoInferenceTime,
        video.and_then(|v| v.inference_time_s).map(|s| s * 1e3),
    );
    out.push(
        ctx,
        MetricId::VideoPeakMemory,
        video.and_then(|v| v.peak_memory_mb),
    );
    // How fast a clip of known length was transcribed (0.13's audio metrics): the
    // length comes with the turn the credit sent, set when the dataset was built.
    let audio_s = record
        .credit
        .conversation
        .turns
        .get(record.credit.turn_index)
        .and_then(|turn| turn.audio_duration_s)
        .filter(|seconds| *seconds > 0.0);
    out.push(ctx, MetricId::AudioDuration, audio_s);
    out.push(
        ctx,
        MetricId::Rtfx,
        match (audio_s, latency_ns) {
            (Some(seconds), Some(lat)) if lat > 0 => Some(seconds / (lat as f64 / NS_PER_SEC)),
            _ => None,
        },
    );
    if content.len() >= 2 {
        out.push(
            ctx,
            MetricId::DecodeDuration,
            non_negative(diff_ns(last, first)).map(ms),
        );
    }
    let itl_ms = match (latency_ns, ttft_ns, osl) {
        (Some(lat), Some(ttft), Some(osl)) if osl >= 2 && lat >= ttft => {
            Some(ms(lat - ttft) / decode_tokens(record, osl, ctx) as f64)
        }
        _ => None,
    };
    out.push(ctx, MetricId::InterTokenLatency, itl_ms);
    if content.len() >= 2 {
        let def = MetricId::InterChunkLatency.def();
        if ctx.applies(def) {
            let gaps = content
                .windows(2)
                .map(|w| ms(diff_ns(w[1], w[0]).max(0)))
                .collect();
            out.values.push((def, MetricValue::List(gaps)));
        }
    }
    out.push(
        ctx,
        MetricId::OutputTokenThroughputPerUser,
        itl_ms.filter(|v| *v > 0.0).map(|v| 1e3 / v),
    );
    out.push(
        ctx,
        MetricId::E2eOutputTokenThroughput,
        match (osl, latency_ns) {
            (Some(osl), Some(lat)) if lat > 0 => Some(osl as f64 / (lat as f64 / NS_PER_SEC)),
            _ => None,
        },
    );
    out.push(
        ctx,
        MetricId::PrefillThroughputPerUser,
        match (tokens.input, ttft_ns) {
            (Some(isl), Some(ttft)) if ttft > 0 => Some(isl as f64 / (ttft as f64 / NS_PER_SEC)),
            _ => None,
        },
    );
    out.push(
        ctx,
        MetricId::CreditToStartLatency,
        Some(ms(diff_ns(start, record.credit_issued_ns).max(0))),
    );
    out.push(
        ctx,
        MetricId::EffectiveLatency,
        non_negative(diff_ns(last, record.scheduled_ns.min(start))).map(ms),
    );

    push_http_trace(&mut out, ctx, record);

    // token counts
    out.push(ctx, MetricId::OutputSequenceLength, osl.map(|v| v as f64));
    out.push(
        ctx,
        MetricId::InputSequenceLength,
        tokens.input.map(|v| v as f64),
    );
    out.push(
        ctx,
        MetricId::OutputTokenCount,
        tokens.output.filter(|v| *v > 0).map(|v| v as f64),
    );
    out.push(
        ctx,
        MetricId::ReasoningTokenCount,
        tokens.reasoning.map(|v| v as f64),
    );

    // usage fields, and client-vs-server differences
    if let Some(usage) = usage {
        for (id, _, value) in usage.by_metric() {
            out.push(ctx, id, value.map(|v| v as f64));
        }
        if !ctx.use_server_token_count {
            let diffs = [
                (
                    MetricId::UsagePromptTokensDiffPct,
                    diff_pct(usage.prompt, tokens.input),
                ),
                (
                    MetricId::UsageCompletionTokensDiffPct,
                    diff_pct(usage.completion, osl),
                ),
                (
                    MetricId::UsageReasoningTokensDiffPct,
                    diff_pct(usage.reasoning, tokens.reasoning),
                ),
            ];
            for (id, value) in diffs {
                let before = out.values.len();
                out.push(ctx, id, value);
                if out.values.len() > before && value.is_some_and(|v| v > USAGE_PCT_DIFF_THRESHOLD)
                {
                    out.usage_discrepancy = true;
                }
            }
        }
    }

    // requested vs produced output length
    if let (Some(requested), Some(osl)) = (record.requested_max_tokens.filter(|r| *r > 0), osl) {
        if ctx.produces_tokens {
            let requested = f64::from(requested);
            let osl = osl as f64;
            out.push(
                ctx,
                MetricId::OslMismatchDiffPct,
                Some((osl - requested) / requested * 100.0),
            );
            out.osl_mismatch = Some((osl - requested).abs() > (requested * 0.05).min(50.0));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Hand-built records for tests.
    use std::sync::Arc;
    use std::time::Instant;

    use aiperf_core::{
        Clock, Conversation, Credit, ErrorDetails, ParsedResponse, Phase, RequestRecord,
        TimedResponse, TokenCounter, Usage,
    };

    /// One clock shared by every test record, as in a real run.
    pub(crate) fn clock() -> Clock {
        static CLOCK: std::sync::OnceLock<Clock> = std::sync::OnceLock::new();
        *CLOCK.get_or_init(Clock::start)
    }

    /// Counts whitespace-separated words.
    #[derive(Debug)]
    pub(crate) struct Words;
    impl TokenCounter for Words {
        fn count_tokens(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    /// One response: at `ns`, with text, reasoning and optional usage JSON.
    pub(crate) fn resp(ns: u64, text: &str, reasoning: &str, usage: Option<&str>) -> TimedResponse {
        TimedResponse {
            perf_ns: ns,
            response: ParsedResponse {
                at: Instant::now(),
                text: text.into(),
                reasoning: reasoning.into(),
                has_other_data: false,
                usage: usage.map(|u| serde_json::from_str::<Usage>(u).unwrap()),
                video: None,
            },
        }
    }

    /// A profiling record started at `start` with the given responses.
    pub(crate) fn record(start: u64, input: &str, responses: Vec<TimedResponse>) -> RequestRecord {
        let end = responses.iter().map(|r| r.perf_ns).max().unwrap_or(start) + 1;
        let now = Instant::now();
        RequestRecord {
            credit: Credit {
                id: 0,
                phase: Phase::Profiling,
                conversation: Arc::new(Conversation {
                    session_id: "session_000000".into(),
                    ..Conversation::default()
                }),
                turn_index: 0,
                correlation_id: "corr".into(),
                request_id: "req".into(),
                scheduled_at: now,
                issued_at: now,
            },
            model: "m".into(),
            clock: clock(),
            credit_issued_ns: start,
            scheduled_ns: start,
            start_ns: start,
            head_ns: Some(start + 1),
            end_ns: end,
            status: Some(200),
            responses,
            error: None,
            input_text: input.into(),
            requested_max_tokens: None,
            payload: Vec::new().into(),
            chunk_count: 0,
            body_bytes: 0,
            http: None,
            retries: 0,
            raw: None,
        }
    }

    /// A failed record.
    pub(crate) fn failed(start: u64, input: &str, code: u16, message: &str) -> RequestRecord {
        let mut r = record(start, input, vec![]);
        r.error = Some(ErrorDetails {
            code: Some(code),
            kind: Some("Internal Server Error".into()),
            message: message.into(),
        });
        r
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::testkit::*;
    use super::*;
    use aiperf_core::{Conversation, HttpTiming, Turn};

    const MS: u64 = 1_000_000;

    fn metrics(record: &RequestRecord, ctx: &MetricsContext) -> RecordMetrics {
        let tokens = count_tokens(record, Some(&Words), ctx);
        compute_record_metrics(record, &tokens, ctx)
    }

    /// start 10 ms; chunks at 110 ms ("a b "), 160 ms ("c "), 260 ms ("d e f"), usage at 270 ms.
    fn streamed() -> RequestRecord {
        let mut r = record(
            10 * MS,
            "one two three four",
            vec![
                resp(110 * MS, "a b ", "", None),
                resp(160 * MS, "c ", "", None),
                resp(260 * MS, "d e f", "", None),
                resp(
                    270 * MS,
                    "",
                    "",
                    Some(r#"{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}"#),
                ),
            ],
        );
        r.credit_issued_ns = 8 * MS;
        r.scheduled_ns = 5 * MS;
        r.requested_max_tokens = Some(8);
        r
    }

    #[test]
    fn http_trace_phases_follow_the_transport_stamps() {
        let mut r = streamed();
        // start 10 ms; connect 10.1 → 12.1 ms; body handed over at 12.6 ms; first byte at
        // 19.6 ms; end (the usage chunk) at 270 ms + 1 ns.
        r.end_ns = 29 * MS + 600_000;
        r.chunk_count = 5;
        r.body_bytes = 924;
        r.http = Some(HttpTiming {
            connection_reused: false,
            connect_ns: Some((10 * MS + 100_000, 12 * MS + 100_000)),
            request_sent_ns: Some(12 * MS + 600_000),
            first_chunk_ns: Some(19 * MS + 600_000),
            request_bytes: 1024,
            response_head_bytes: 100,
        });
        let m = metrics(&r, &MetricsContext::streaming_chat());
        let got = |tag| (m.scalar(tag).unwrap() * 1e6).round() / 1e6;
        assert_eq!(got(MetricId::HttpReqBlocked), 0.1);
        assert_eq!(got(MetricId::HttpReqDnsLookup), 0.0);
        assert_eq!(got(MetricId::HttpReqConnecting), 2.0);
        assert_eq!(got(MetricId::HttpReqSending), 0.5);
        assert_eq!(got(MetricId::HttpReqWaiting), 7.0);
        assert_eq!(got(MetricId::HttpReqReceiving), 10.0);
        assert_eq!(got(MetricId::HttpReqConnectionReused), 0.0);
        assert_eq!(got(MetricId::HttpReqDataSent), 1.0);
        assert_eq!(got(MetricId::HttpReqChunksSent), 1.0);
        assert_eq!(got(MetricId::HttpReqDataReceived), 1.0);
        assert_eq!(got(MetricId::HttpReqChunksReceived), 5.0);
        assert_eq!(got(MetricId::HttpReqConnectionOverhead), 2.1);
        assert_eq!(got(MetricId::HttpReqDuration), 17.5);
        assert_eq!(got(MetricId::HttpReqTotal), 19.6);

        // A reused connection: no blocking or connecting; sending starts at the start.
        r.http = Some(HttpTiming {
            connection_reused: true,
            connect_ns: None,
            ..r.http.unwrap()
        });
        let m = metrics(&r, &MetricsContext::streaming_chat());
        assert_eq!(m.scalar(MetricId::HttpReqConnectionReused), Some(1.0));
        assert_eq!(m.scalar(MetricId::HttpReqConnecting), Some(0.0));
        assert_eq!(m.scalar(MetricId::HttpReqSending), Some(2.6));
    }

    #[test]
    fn streaming_latency_formulas() {
        let m = metrics(&streamed(), &MetricsContext::streaming_chat());
        assert_eq!(m.scalar(MetricId::TimeToFirstToken), Some(100.0));
        assert_eq!(m.scalar(MetricId::TimeToSecondToken), Some(50.0));
        assert_eq!(m.scalar(MetricId::TimeToFirstOutputToken), Some(100.0));
        assert_eq!(m.scalar(MetricId::RequestLatency), Some(250.0));
        assert_eq!(m.scalar(MetricId::DecodeDuration), Some(150.0));
        // OSL 6 → ITL = 150 / 5
        assert_eq!(m.scalar(MetricId::InterTokenLatency), Some(30.0));
        assert_eq!(
            m.get(MetricId::InterChunkLatency),
            Some(&MetricValue::List(vec![50.0, 100.0]))
        );
        assert_eq!(
            m.scalar(MetricId::OutputTokenThroughputPerUser),
            Some(1000.0 / 30.0)
        );
        assert_eq!(m.scalar(MetricId::E2eOutputTokenThroughput), Some(24.0));
        assert_eq!(m.scalar(MetricId::PrefillThroughputPerUser), Some(40.0));
        assert_eq!(m.scalar(MetricId::CreditToStartLatency), Some(2.0));
        assert_eq!(m.scalar(MetricId::EffectiveLatency), Some(255.0));
    }

    #[test]
    fn token_counts_and_usage_metrics() {
        let m = metrics(&streamed(), &MetricsContext::streaming_chat());
        assert_eq!(m.scalar(MetricId::InputSequenceLength), Some(4.0));
        assert_eq!(m.scalar(MetricId::OutputSequenceLength), Some(6.0));
        assert_eq!(m.scalar(MetricId::OutputTokenCount), Some(6.0));
        assert_eq!(m.scalar(MetricId::ReasoningTokenCount), None);
        assert_eq!(m.scalar(MetricId::UsagePromptTokens), Some(5.0));
        assert_eq!(m.scalar(MetricId::UsageCompletionTokens), Some(6.0));
        assert_eq!(m.scalar(MetricId::UsageTotalTokens), Some(11.0));
        assert_eq!(m.scalar(MetricId::UsagePromptCacheReadTokens), None);
        assert_eq!(m.scalar(MetricId::UsagePromptTokensDiffPct), Some(25.0));
        assert_eq!(m.scalar(MetricId::UsageCompletionTokensDiffPct), Some(0.0));
        assert!(m.usage_discrepancy);
        // requested 8, produced 6: −25 %, |2| > min(0.4, 50)
        assert_eq!(m.scalar(MetricId::OslMismatchDiffPct), Some(-25.0));
        assert_eq!(m.osl_mismatch, Some(true));
    }

    #[test]
    fn non_streaming_has_no_streaming_metrics() {
        let ctx = MetricsContext {
            streaming: false,
            ..MetricsContext::streaming_chat()
        };
        let m = metrics(&streamed(), &ctx);
        for id in [
            MetricId::TimeToFirstToken,
            MetricId::TimeToSecondToken,
            MetricId::InterTokenLatency,
            MetricId::InterChunkLatency,
            MetricId::DecodeDuration,
            MetricId::PrefillThroughputPerUser,
        ] {
            assert!(m.get(id).is_none(), "{id:?}");
        }
        assert_eq!(m.scalar(MetricId::RequestLatency), Some(250.0));
        assert_eq!(m.scalar(MetricId::E2eOutputTokenThroughput), Some(24.0));
    }

    #[test]
    fn a_video_job_reports_the_servers_inference_time_and_memory() {
        let mut job = resp(900 * MS, "", "", None);
        job.response.has_other_data = true;
        job.response.video = Some(aiperf_core::VideoReport {
            inference_time_s: Some(0.75),
            peak_memory_mb: Some(20480.0),
        });
        let ctx = MetricsContext {
            streaming: false,
            produces_tokens: false,
            ..MetricsContext::streaming_chat()
        };
        let m = metrics(&record(100 * MS, "a fox", vec![job]), &ctx);
        assert_eq!(m.scalar(MetricId::RequestLatency), Some(800.0));
        assert_eq!(m.scalar(MetricId::VideoInferenceTime), Some(750.0));
        assert_eq!(m.scalar(MetricId::VideoPeakMemory), Some(20480.0));
        assert!(m.get(MetricId::TimeToFirstToken).is_none());
        let chat = metrics(&streamed(), &MetricsContext::streaming_chat());
        assert!(chat.get(MetricId::VideoInferenceTime).is_none());
        assert!(chat.get(MetricId::VideoPeakMemory).is_none());
    }

    #[test]
    fn a_clip_of_known_length_reports_its_duration_and_rtfx() {
        let transcription = |audio_duration_s: Option<f64>, start: u64, end: u64| {
            let mut r = record(start, "", vec![resp(end, "some words", "", None)]);
            r.credit.conversation = Arc::new(Conversation {
                turns: vec![
                    Turn::default(),
                    Turn {
                        audio_duration_s,
                        ..Turn::default()
                    },
                ],
                ..Conversation::default()
            });
            r.credit.turn_index = 1;
            r
        };
        let ctx = MetricsContext {
            streaming: false,
            ..MetricsContext::streaming_chat()
        };
        // 12.5 s of audio transcribed in 500 ms: 25 times real time.
        let m = metrics(&transcription(Some(12.5), 100 * MS, 600 * MS), &ctx);
        assert_eq!(m.scalar(MetricId::AudioDuration), Some(12.5));
        assert_eq!(m.scalar(MetricId::Rtfx), Some(25.0));
        // A reply stamped at the start has no latency to divide by.
        let instant = metrics(&transcription(Some(12.5), 100 * MS, 100 * MS), &ctx);
        assert_eq!(instant.scalar(MetricId::AudioDuration), Some(12.5));
        assert!(instant.get(MetricId::Rtfx).is_none());
        // Turns of unknown length (text, URLs, MP3) get neither.
        let unknown = metrics(&transcription(None, 100 * MS, 600 * MS), &ctx);
        assert!(unknown.get(MetricId::AudioDuration).is_none());
        assert!(unknown.get(MetricId::Rtfx).is_none());
    }

    #[test]
    fn reasoning_counts_and_ttfo() {
        let r = record(
            0,
            "q",
            vec![
                resp(10 * MS, "", "think think ", None),
                resp(20 * MS, "", "more", None),
                resp(40 * MS, "answer is here", "", None),
                resp(50 * MS, "!", "", None),
            ],
        );
        let m = metrics(&r, &MetricsContext::streaming_chat());
        assert_eq!(m.scalar(MetricId::TimeToFirstToken), Some(10.0));
        assert_eq!(m.scalar(MetricId::TimeToFirstOutputToken), Some(40.0));
        assert_eq!(m.scalar(MetricId::ReasoningTokenCount), Some(3.0));
        assert_eq!(m.scalar(MetricId::OutputTokenCount), Some(3.0)); // "answer is here!" → 3 words
        assert_eq!(m.scalar(MetricId::OutputSequenceLength), Some(6.0));
        assert_eq!(m.scalar(MetricId::InterTokenLatency), Some(8.0)); // (50 − 10) / 5
    }

    #[test]
    fn only_reasoning_has_no_ttfo_and_no_output_count() {
        let r = record(0, "q", vec![resp(10 * MS, "", "hmm", None)]);
        let m = metrics(&r, &MetricsContext::streaming_chat());
        assert_eq!(m.scalar(MetricId::TimeToFirstOutputToken), None);
        assert_eq!(m.scalar(MetricId::OutputTokenCount), None);
        assert_eq!(m.scalar(MetricId::OutputSequenceLength), Some(1.0));
        assert_eq!(m.scalar(MetricId::InterTokenLatency), None);
        assert_eq!(m.scalar(MetricId::TimeToSecondToken), None);
    }

    #[test]
    fn server_token_count_uses_last_usage() {
        let r = record(
            0,
            "one two",
            vec![
                resp(10 * MS, "x", "", Some(r#"{"prompt_tokens":1}"#)),
                resp(
                    20 * MS,
                    "y",
                    "",
                    Some(
                        r#"{"prompt_tokens":9,"completion_tokens":7,
                        "completion_tokens_details":{"reasoning_tokens":10}}"#,
                    ),
                ),
            ],
        );
        let ctx = MetricsContext {
            use_server_token_count: true,
            ..MetricsContext::streaming_chat()
        };
        let t = count_tokens(&r, Some(&Words), &ctx);
        assert_eq!(
            t,
            TokenCounts {
                input: Some(9),
                output: Some(0),
                reasoning: Some(10)
            }
        );
        let m = compute_record_metrics(&r, &t, &ctx);
        assert_eq!(m.scalar(MetricId::OutputSequenceLength), Some(10.0));
        assert!(m.get(MetricId::UsagePromptTokensDiffPct).is_none());
    }

    #[test]
    fn per_chunk_usage_leaves_the_first_chunks_tokens_out_of_inter_token_latency() {
        // The server bundled 3 tokens into the first chunk; usage is cumulative.
        let r = record(
            0,
            "q",
            vec![
                resp(10 * MS, "a", "", Some(r#"{"completion_tokens":3}"#)),
                resp(20 * MS, "b", "", Some(r#"{"completion_tokens":4}"#)),
                resp(50 * MS, "c", "", Some(r#"{"completion_tokens":6}"#)),
            ],
        );
        let itl = |per_chunk_usage: bool| {
            let ctx = MetricsContext {
                use_server_token_count: true,
                per_chunk_usage,
                ..MetricsContext::streaming_chat()
            };
            let tokens = count_tokens(&r, Some(&Words), &ctx);
            compute_record_metrics(&r, &tokens, &ctx).scalar(MetricId::InterTokenLatency)
        };
        assert_eq!(itl(false), Some(40.0 / 5.0));
        assert_eq!(itl(true), Some(40.0 / 3.0));

        // A first-chunk count that leaves no token after it falls back to OSL − 1.
        let whole = record(
            0,
            "q",
            vec![
                resp(10 * MS, "a", "", Some(r#"{"completion_tokens":6}"#)),
                resp(50 * MS, "c", "", Some(r#"{"completion_tokens":6}"#)),
            ],
        );
        let ctx = MetricsContext {
            use_server_token_count: true,
            per_chunk_usage: true,
            ..MetricsContext::streaming_chat()
        };
        let tokens = count_tokens(&whole, Some(&Words), &ctx);
        assert_eq!(
            compute_record_metrics(&whole, &tokens, &ctx).scalar(MetricId::InterTokenLatency),
            Some(40.0 / 5.0)
        );
    }

    #[test]
    fn failed_records_only_get_error_isl() {
        let r = failed(0, "a b c", 500, "boom");
        let m = metrics(&r, &MetricsContext::streaming_chat());
        assert!(!m.valid);
        assert_eq!(m.values.len(), 1);
        assert_eq!(m.scalar(MetricId::ErrorIsl), Some(3.0));
    }

    /// Counts words, and every call, and names itself `CounterId(1)`.
    #[derive(Default)]
    struct CountedWords(std::sync::atomic::AtomicUsize);
    impl TokenCounter for CountedWords {
        fn count_tokens(&self, text: &str) -> usize {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            text.split_whitespace().count()
        }
        fn id(&self) -> Option<aiperf_core::CounterId> {
            Some(aiperf_core::CounterId(1))
        }
    }

    /// A record of `input` sent as the only turn of a conversation whose turn carries
    /// `known`.
    fn with_known_count(input: &str, known: aiperf_core::KnownTokenCount) -> RequestRecord {
        let mut r = record(0, input, vec![resp(10 * MS, "a b", "", None)]);
        r.credit.conversation = Arc::new(Conversation {
            turns: vec![Turn {
                known_tokens: Some(known),
                ..Turn::text("one two three")
            }],
            ..Conversation::default()
        });
        r
    }

    #[test]
    fn a_turns_known_count_is_taken_for_its_own_text_only() {
        use aiperf_core::{CounterId, KnownTokenCount};
        let ctx = MetricsContext::streaming_chat();
        // 7, not the 3 words the counter would give: the count is taken, not recounted.
        let known = KnownTokenCount::new("one two three", 7, CounterId(1));
        let counter = CountedWords::default();
        let made = with_known_count("one two three", known);
        let tokens = count_tokens(&made, Some(&counter), &ctx);
        assert_eq!((tokens.input, tokens.output), (Some(7), Some(2)));
        assert_eq!(counter.0.load(std::sync::atomic::Ordering::Relaxed), 1); // the output
        assert_eq!(
            metrics_with(&made, &counter).scalar(MetricId::InputSequenceLength),
            Some(7.0)
        );

        // Another text (a system prompt before it), another counter: counted.
        let joined = with_known_count("sys one two three", known);
        assert_eq!(count_tokens(&joined, Some(&counter), &ctx).input, Some(4));
        assert_eq!(count_tokens(&made, Some(&Words), &ctx).input, Some(3));
        let other = KnownTokenCount::new("one two three", 7, CounterId(2));
        let made_for_another = with_known_count("one two three", other);
        assert_eq!(
            count_tokens(&made_for_another, Some(&counter), &ctx).input,
            Some(3)
        );
    }

    fn metrics_with(record: &RequestRecord, counter: &dyn TokenCounter) -> RecordMetrics {
        let ctx = MetricsContext::streaming_chat();
        compute_record_metrics(record, &count_tokens(record, Some(counter), &ctx), &ctx)
    }

    #[test]
    fn usage_only_stream_is_not_valid() {
        let r = record(
            0,
            "a",
            vec![resp(5, "", "", Some(r#"{"prompt_tokens":1}"#))],
        );
        assert!(!metrics(&r, &MetricsContext::streaming_chat()).valid);
    }
}
