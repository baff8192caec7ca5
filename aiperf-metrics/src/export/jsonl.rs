//! `profile_export.jsonl`: one JSON object per profiling record, appended as records
//! complete (docs/artifacts.md#profile_exportjsonl, AIPerf 0.13 metadata keys).
//!
//! `{"metadata": {...}, "metrics": {"<tag>": {"value": …, "unit": "…"}}, "error": {...}}`
//! Values are in display units; token counts are integers; inter-chunk latency is a list.
//! Metrics flagged `NO_INDIVIDUAL_RECORDS` are left out; failed records carry `error_isl`
//! (when known) and `error`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use aiperf_core::{ErrorDetails, RequestRecord, REQUEST_CANCELLATION_ERROR};

use super::line_file::LineFile;
use super::RecordWriter;
use crate::catalogue::MetricFlags;
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
}

struct Metrics<'a>(&'a RecordMetrics);

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
            (MetricValue::List(vs), _) => {
                let vs: Vec<Option<f64>> = vs.iter().map(finite).collect();
                vs.serialize(s)
            }
        }
    }
}

#[derive(Serialize)]
struct Entry<'a> {
    value: Value<'a>,
    unit: &'a str,
}

impl Serialize for Metrics<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (def, value) in &self.0.values {
            if def.flags.contains(MetricFlags::NO_INDIVIDUAL_RECORDS) {
                continue;
            }
            let integer = def.flags.contains(MetricFlags::INTEGER);
            map.serialize_entry(
                def.tag,
                &Entry {
                    value: Value(value, integer),
                    unit: def.unit,
                },
            )?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Line<'a> {
    metadata: Metadata<'a>,
    metrics: Metrics<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_data: Option<TraceData>,
    /// Accuracy mode: how the reply was graded.
    #[serde(skip_serializing_if = "Option::is_none")]
    accuracy: Option<&'a crate::accuracy::TaskGrade>,
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
    with_line(record, metrics, phase_index, http_trace, |line| {
        Ok(serde_json::to_string(line)?)
    })
}

/// Calls `use_line` with the line of `record` (see [`record_line`]), so a writer can
/// serialise it straight into its buffer.
fn with_line<T>(
    record: &RequestRecord,
    metrics: &RecordMetrics,
    phase_index: u32,
    http_trace: bool,
    use_line: impl FnOnce(&Line<'_>) -> T,
) -> T {
    let invalid;
    let error = if metrics.valid {
        None
    } else {
        let e: &ErrorDetails = if let Some(e) = &record.error {
            e
        } else {
            invalid = ErrorDetails::invalid_result();
            &invalid
        };
        Some(ErrorJson {
            code: e.code,
            kind: e.kind.as_deref(),
            message: &e.message,
        })
    };
    use_line(&Line {
        metadata: Metadata::of(record, phase_index),
        metrics: Metrics(metrics),
        error,
        trace_data: http_trace.then(|| TraceData::of(record)).flatten(),
        accuracy: metrics.grade.as_ref(),
    })
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
        let file = &mut self.file;
        with_line(record, metrics, phase_index, http_trace, |line| {
            file.append_json(line)
        })
    }

    /// Flushes and closes the file.
    fn finish(self: Box<Self>) -> Result<(), MetricsError> {
        self.file.finish()
    }
}
