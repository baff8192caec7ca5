//! `profile_export.jsonl`: one JSON object per profiling record, appended as records
//! complete (docs/artifacts.md#profile_exportjsonl, AIPerf 0.13 metadata keys).
//!
//! `{"metadata": {...}, "metrics": {"<tag>": {"value": …, "unit": "…"}}, "error": {...}}`
//! Values are in display units; token counts are integers; inter-chunk latency is a list.
//! Metrics flagged `NO_INDIVIDUAL_RECORDS` are left out; failed records carry `error_isl`
//! (when known) and `error`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use serde::ser::{Error as _, Serializer};
use serde::Serialize;

use aiperf_core::{json, RequestRecord, REQUEST_CANCELLATION_ERROR};

use super::line_file::LineFile;
use super::RecordWriter;
use crate::catalogue::{MetricFlags, CATALOGUE};
use crate::record_metrics::{MetricValue, RecordMetrics};
use crate::MetricsError;

/// Records between two flushes of the JSONL file.
pub const FLUSH_EVERY: usize = 100;

/// The `metadata` object of a record line, shared with the raw export.
#[derive(Serialize)]
pub(crate) struct Metadata<'a> {
    session_num: u64,
    x_request_id: &'a str,
    x_correlation_id: &'a str,
    conversation_id: &'a str,
    turn_index: usize,
    credit_issued_ns: u64,
    request_start_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_ack_ns: Option<u64>,
    request_end_ns: u64,
    worker_id: &'static str,
    record_processor_id: &'static str,
    benchmark_phase: &'static str,
    phase_index: u32,
    profiling_index: u32,
    phase_name: &'static str,
    phase_kind: &'static str,
    was_cancelled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cancellation_time_ns: Option<u64>,
    context_overflow_skip: bool,
    agent_depth: u32,
    root_correlation_id: &'a str,
}

/// `worker_id` of every record: one client process sends every request (the Python
/// AIPerf names one of its worker processes here; its tools require the key).
pub const WORKER_ID: &str = "worker_0";
/// `record_processor_id` of every record: one thread computes every record's metrics.
pub const RECORD_PROCESSOR_ID: &str = "record_processor_0";

impl<'a> Metadata<'a> {
    /// The metadata of `record`, run as phase number `phase_index` (0 for the first
    /// phase run).
    pub(crate) fn of(record: &'a RequestRecord, phase_index: u32) -> Self {
        let clock = record.clock;
        let phase = record.credit.phase.as_str();
        let request_end_ns = clock.wall_of_perf(record.end_ns);
        let was_cancelled = record
            .error
            .as_ref()
            .is_some_and(|e| e.kind.as_deref() == Some(REQUEST_CANCELLATION_ERROR));
        Self {
            session_num: record.credit.id,
            x_request_id: &record.credit.request_id,
            x_correlation_id: &record.credit.correlation_id,
            conversation_id: &record.credit.conversation.session_id,
            turn_index: record.credit.turn_index,
            credit_issued_ns: clock.wall_of_perf(record.credit_issued_ns),
            request_start_ns: clock.wall_of_perf(record.start_ns),
            request_ack_ns: record.head_ns.map(|h| clock.wall_of_perf(h)),
            request_end_ns,
            worker_id: WORKER_ID,
            record_processor_id: RECORD_PROCESSOR_ID,
            benchmark_phase: phase,
            phase_index,
            profiling_index: 0,
            phase_name: phase,
            phase_kind: phase,
            was_cancelled,
            // The client cancels when the request fails, so the failure is the moment.
            cancellation_time_ns: was_cancelled.then_some(request_end_ns),
            // Only an agentic trace replay skips a context overflow, and none runs here.
            context_overflow_skip: false,
            agent_depth: 0,
            root_correlation_id: &record.credit.correlation_id,
        }
    }

    /// Appends the same bytes as `serde_json::to_writer(out, self)`, with the keys written
    /// as constants: escaping the 21 keys of every line was most of what the metadata
    /// cost the record processor (`format_escaped_str`: 1.0 % self time of the client's
    /// samples in a non-streaming run). Strings go through [`json::write_str`], which
    /// copies the ones with nothing to escape (every id the client makes); numbers and
    /// flags through serde_json.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        fn field<T: Serialize + ?Sized>(
            out: &mut Vec<u8>,
            key: &[u8],
            value: &T,
        ) -> serde_json::Result<()> {
            out.extend_from_slice(key);
            serde_json::to_writer(&mut *out, value)
        }
        fn text(out: &mut Vec<u8>, key: &[u8], value: &str) {
            out.extend_from_slice(key);
            json::write_str(out, value);
        }
        field(out, b"{\"session_num\":", &self.session_num)?;
        text(out, b",\"x_request_id\":", self.x_request_id);
        text(out, b",\"x_correlation_id\":", self.x_correlation_id);
        text(out, b",\"conversation_id\":", self.conversation_id);
        field(out, b",\"turn_index\":", &self.turn_index)?;
        field(out, b",\"credit_issued_ns\":", &self.credit_issued_ns)?;
        field(out, b",\"request_start_ns\":", &self.request_start_ns)?;
        if let Some(ack) = self.request_ack_ns {
            field(out, b",\"request_ack_ns\":", &ack)?;
        }
        field(out, b",\"request_end_ns\":", &self.request_end_ns)?;
        text(out, b",\"worker_id\":", self.worker_id);
        text(out, b",\"record_processor_id\":", self.record_processor_id);
        text(out, b",\"benchmark_phase\":", self.benchmark_phase);
        field(out, b",\"phase_index\":", &self.phase_index)?;
        field(out, b",\"profiling_index\":", &self.profiling_index)?;
        text(out, b",\"phase_name\":", self.phase_name);
        text(out, b",\"phase_kind\":", self.phase_kind);
        field(out, b",\"was_cancelled\":", &self.was_cancelled)?;
        if let Some(at) = self.cancellation_time_ns {
            field(out, b",\"cancellation_time_ns\":", &at)?;
        }
        field(
            out,
            b",\"context_overflow_skip\":",
            &self.context_overflow_skip,
        )?;
        field(out, b",\"agent_depth\":", &self.agent_depth)?;
        text(out, b",\"root_correlation_id\":", self.root_correlation_id);
        out.push(b'}');
        Ok(())
    }
}

/// A metric's value as the line shows it: integers without a fraction, non-finite
/// values as `null`. The flag says the metric counts whole things.
struct Value<'a>(&'a MetricValue, bool);

impl Serialize for Value<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let finite = |v: &f64| v.is_finite().then_some(*v);
        match (self.0, self.1) {
            (MetricValue::Scalar(v), true)
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 9e15 =>
            {
                s.serialize_i64(*v as i64)
            }
            (MetricValue::Scalar(v), _) => finite(v).serialize(s),
            (MetricValue::List(vs), _) => s.collect_seq(vs.iter().map(finite)),
        }
    }
}

/// The constant text around one metric's value, `"<tag>":{"value":` and
/// `,"unit":"<unit>"}`, escaped once per process: escaping every key and unit of every
/// line was the largest cost of writing it (~8 % of the record processor's CPU).
struct MetricFrame {
    before_value: Box<[u8]>,
    after_value: Box<[u8]>,
}

/// The frames of every metric, by catalogue index.
static METRIC_FRAMES: LazyLock<Vec<MetricFrame>> = LazyLock::new(|| {
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_default();
    CATALOGUE
        .iter()
        .map(|def| MetricFrame {
            before_value: format!("{}:{{\"value\":", quoted(def.tag))
                .into_bytes()
                .into_boxed_slice(),
            after_value: format!(",\"unit\":{}}}", quoted(def.unit))
                .into_bytes()
                .into_boxed_slice(),
        })
        .collect()
});

/// Appends the `metrics` object of a line: `{"<tag>": {"value": …, "unit": "…"}, …}`
/// in computation order, without the metrics flagged `NO_INDIVIDUAL_RECORDS`.
fn write_metrics(out: &mut Vec<u8>, metrics: &RecordMetrics) -> serde_json::Result<()> {
    let frames = &*METRIC_FRAMES;
    out.push(b'{');
    let mut first = true;
    for (def, value) in &metrics.values {
        if def.flags.contains(MetricFlags::NO_INDIVIDUAL_RECORDS) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        let frame = &frames[def.id.index()];
        out.extend_from_slice(&frame.before_value);
        let integer = def.flags.contains(MetricFlags::INTEGER);
        serde_json::to_writer(&mut *out, &Value(value, integer))?;
        out.extend_from_slice(&frame.after_value);
    }
    out.push(b'}');
    Ok(())
}

/// `--export-http-trace`: the transport's stamps of one request in wall-clock ns, with
/// the Python AIPerf's field names where we have the same stamp.
#[derive(Serialize)]
struct TraceData {
    trace_type: &'static str,
    request_send_start_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_send_end_ns: Option<u64>,
    request_chunks_count: u32,
    request_bytes_total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status_code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_headers_received_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_receive_start_ns: Option<u64>,
    response_chunks_count: usize,
    response_bytes_total: u64,
    response_receive_end_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp_connect_start_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp_connect_end_ns: Option<u64>,
    connection_reused: bool,
}

impl TraceData {
    fn of(record: &RequestRecord) -> Option<Self> {
        let http = record.http?;
        let wall = |ns: u64| record.clock.wall_of_perf(ns);
        Some(Self {
            trace_type: "hyper",
            request_send_start_ns: wall(record.start_ns),
            request_send_end_ns: http.request_sent_ns.map(wall),
            request_chunks_count: 1,
            request_bytes_total: http.request_bytes,
            response_status_code: record.status,
            response_headers_received_ns: record.head_ns.map(wall),
            response_receive_start_ns: http.first_chunk_ns.map(wall),
            response_chunks_count: record.chunk_count,
            response_bytes_total: http.response_head_bytes + record.body_bytes as u64,
            response_receive_end_ns: wall(record.end_ns),
            tcp_connect_start_ns: http.connect_ns.map(|(start, _)| wall(start)),
            tcp_connect_end_ns: http.connect_ns.map(|(_, end)| wall(end)),
            connection_reused: http.connection_reused,
        })
    }
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    code: Option<u16>,
    #[serde(rename = "type")]
    kind: Option<&'a str>,
    message: &'a str,
}

/// Serialises one record's line (no trailing newline). `phase_index` is the index of the
/// profiling phase among the phases run (1 after a warmup, else 0); `http_trace` adds the
/// transport's stamps as `trace_data`.
pub fn record_line(
    record: &RequestRecord,
    metrics: &RecordMetrics,
    phase_index: u32,
    http_trace: bool,
) -> Result<String, MetricsError> {
    let mut line = Vec::new();
    write_line(&mut line, record, metrics, phase_index, http_trace)?;
    String::from_utf8(line).map_err(|e| MetricsError::from(serde_json::Error::custom(e)))
}

/// Appends the line of `record` (see [`record_line`]) to `out`: `metadata`, `metrics`,
/// then `error`, `trace_data` and `accuracy` when there are any.
fn write_line(
    out: &mut Vec<u8>,
    record: &RequestRecord,
    metrics: &RecordMetrics,
    phase_index: u32,
    http_trace: bool,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"metadata\":");
    Metadata::of(record, phase_index).write_json(out)?;
    out.extend_from_slice(b",\"metrics\":");
    write_metrics(out, metrics)?;
    if let Some(error) = metrics.shown_error(record) {
        out.extend_from_slice(b",\"error\":");
        serde_json::to_writer(
            &mut *out,
            &ErrorJson {
                code: error.code,
                kind: error.kind.as_deref(),
                message: &error.message,
            },
        )?;
    }
    if let Some(trace) = http_trace.then(|| TraceData::of(record)).flatten() {
        out.extend_from_slice(b",\"trace_data\":");
        serde_json::to_writer(&mut *out, &trace)?;
    }
    if let Some(grade) = &metrics.grade {
        out.extend_from_slice(b",\"accuracy\":");
        serde_json::to_writer(&mut *out, grade)?;
    }
    out.push(b'}');
    Ok(())
}

/// Appends record lines to a file, flushing every [`FLUSH_EVERY`] records.
#[derive(Debug)]
pub struct JsonlWriter {
    file: LineFile,
    /// `--export-http-trace`. Shared because the option may be switched after the writer
    /// went into a sink ([`MetricsSink::export_http_trace`](crate::MetricsSink::export_http_trace)).
    http_trace: Arc<AtomicBool>,
}

impl JsonlWriter {
    /// Creates (or truncates) `path`, creating its directory if needed.
    pub fn create(path: &Path) -> Result<Self, MetricsError> {
        Ok(Self {
            file: LineFile::create(path, FLUSH_EVERY)?,
            http_trace: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Adds each record's transport stamps as `trace_data` (`--export-http-trace`).
    #[must_use]
    pub fn with_http_trace(self, enabled: bool) -> Self {
        self.http_trace.store(enabled, Ordering::Relaxed);
        self
    }

    /// The switch of [`JsonlWriter::with_http_trace`], kept by the sink that owns the
    /// writer.
    pub(crate) fn http_trace_switch(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.http_trace)
    }
}

impl RecordWriter for JsonlWriter {
    /// Appends one record; records with neither metrics nor error are skipped.
    fn write_record(
        &mut self,
        record: &RequestRecord,
        metrics: &RecordMetrics,
        phase_index: u32,
    ) -> Result<(), MetricsError> {
        if metrics.valid && metrics.values.is_empty() {
            return Ok(());
        }
        let http_trace = self.http_trace.load(Ordering::Relaxed);
        self.file
            .append_with(|out| write_line(out, record, metrics, phase_index, http_trace))
    }

    /// Flushes and closes the file.
    fn finish(self: Box<Self>) -> Result<(), MetricsError> {
        self.file.finish()
    }
}

#[cfg(test)]
mod tests {
    use aiperf_core::{Clock, ErrorDetails, HttpTiming};

    use super::*;
    use crate::catalogue::MetricsContext;
    use crate::record_metrics::testkit::{failed, record, resp, Words};
    use crate::record_metrics::{compute_record_metrics, count_tokens};

    const MS: u64 = 1_000_000;

    fn line(record: &RequestRecord, http_trace: bool) -> String {
        let ctx = MetricsContext::streaming_chat();
        let tokens = count_tokens(record, Some(&Words), &ctx);
        let metrics = compute_record_metrics(record, &tokens, &ctx);
        record_line(record, &metrics, 1, http_trace).unwrap()
    }

    /// The exact lines the serde-derived writer produced before the metric frames were
    /// escaped once per process: the artifact must not change by a byte.
    #[test]
    fn record_lines_are_byte_for_byte_those_of_the_derived_serialisation() {
        let usage = r#"{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,
            "prompt_tokens_details":{"cached_tokens":1}}"#;
        let mut streamed = record(
            1_000 * MS,
            "one two three",
            vec![
                resp(1_020 * MS, "a ", "", None),
                resp(1_025 * MS + 333_333, "b ", "", None),
                resp(1_031 * MS, "c d", "", Some(usage)),
            ],
        );
        streamed.clock = Clock::unix();
        streamed.requested_max_tokens = Some(5);
        streamed.chunk_count = 3;
        streamed.body_bytes = 120;
        streamed.http = Some(HttpTiming {
            connection_reused: false,
            connect_ns: Some((1_000 * MS, 1_001 * MS)),
            request_sent_ns: Some(1_002 * MS),
            first_chunk_ns: Some(1_020 * MS),
            request_bytes: 300,
            response_head_bytes: 90,
        });
        let mut failure = failed(2_000 * MS, "x \"quoted\" y", 500, "boom \"inner\"\n");
        failure.clock = Clock::unix();
        let lines = [
            line(&streamed, true),
            line(&streamed, false),
            line(&failure, false),
        ];
        let golden: Vec<&str> = include_str!("jsonl_golden.jsonl").lines().collect();
        assert_eq!(golden.len(), lines.len());
        for (written, expected) in lines.iter().zip(golden) {
            assert_eq!(written, expected);
        }
    }

    /// The raw export serialises the same metadata with serde's derive: both must write
    /// the same bytes, with and without the optional keys, and strings that need escaping.
    #[test]
    fn metadata_is_written_byte_for_byte_as_serde_derives_it() {
        let mut plain = record(1_000 * MS, "one", vec![resp(1_020 * MS, "a", "", None)]);
        plain.clock = Clock::unix();
        let mut escaped = failed(2_000 * MS, "x", 500, "boom");
        escaped.clock = Clock::unix();
        escaped.head_ns = None;
        escaped.error = Some(ErrorDetails {
            code: None,
            kind: Some(REQUEST_CANCELLATION_ERROR.into()),
            message: "cancelled".into(),
        });
        escaped.credit.request_id = "id \"with\" quotes\\ and \u{1}".into();
        escaped.credit.correlation_id = "caf\u{e9} \n".into();
        for (record, phase_index) in [(&plain, 0), (&escaped, 3)] {
            let metadata = Metadata::of(record, phase_index);
            let mut written = Vec::new();
            metadata.write_json(&mut written).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_string(&metadata).unwrap()
            );
        }
        let mut written = Vec::new();
        Metadata::of(&escaped, 3).write_json(&mut written).unwrap();
        let parsed: serde_json::Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(parsed["x_request_id"], "id \"with\" quotes\\ and \u{1}");
        assert_eq!(parsed["was_cancelled"], true);
        assert_eq!(parsed["cancellation_time_ns"], parsed["request_end_ns"]);
        assert!(parsed.get("request_ack_ns").is_none());
    }

    #[test]
    fn every_metric_frame_is_its_tag_and_unit_escaped_as_json() {
        for def in CATALOGUE {
            let frame = &METRIC_FRAMES[def.id.index()];
            let expected = serde_json::json!({ def.tag: { "value": 1, "unit": def.unit } });
            let written = [
                b"{".as_slice(),
                &frame.before_value,
                b"1",
                &frame.after_value,
                b"}",
            ]
            .concat();
            let parsed: serde_json::Value = serde_json::from_slice(&written).unwrap();
            assert_eq!(parsed, expected, "{}", def.tag);
        }
    }
}
