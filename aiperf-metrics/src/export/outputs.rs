//! `outputs.json` (`--export-outputs-json`): the text the model generated for each
//! profiling request, with its ids, times and a few of its metrics, laid out as the
//! Python AIPerf 0.13 writes it:
//!
//! `{"schema_version": "1.0", "data": [{"session_num", "conversation_id", "turn_index",
//! "x_request_id", "request_start_ns", "request_end_ns", "metrics": {tag: value},
//! "response_text"}, …]}`, ordered by session number then turn. Metric values are in
//! display units; `response_text` is `null` when nothing was generated.
//!
//! The entries are kept in memory until the run ends, as the file is one sorted document.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use aiperf_core::RequestRecord;

use super::RecordWriter;
use crate::record_metrics::{MetricValue, RecordMetrics};
use crate::MetricsError;

/// The metrics each entry carries (when the request produced them).
const METRICS: [&str; 6] = [
    "input_sequence_length",
    "output_token_count",
    "output_sequence_length",
    "request_latency",
    "time_to_first_token",
    "inter_token_latency",
];

/// One request's entry.
#[derive(Debug, Serialize)]
struct Output {
    session_num: u64,
    conversation_id: String,
    turn_index: usize,
    x_request_id: String,
    request_start_ns: u64,
    request_end_ns: u64,
    metrics: serde_json::Map<String, serde_json::Value>,
    response_text: Option<String>,
}

impl Output {
    fn of(record: &RequestRecord, metrics: &RecordMetrics) -> Self {
        let text: String = record
            .content_responses()
            .map(|timed| timed.response.text.as_str())
            .collect();
        let clock = record.clock;
        Self {
            session_num: record.credit.id,
            conversation_id: record.credit.conversation.session_id.clone(),
            turn_index: record.credit.turn_index,
            x_request_id: record.credit.request_id.clone(),
            request_start_ns: clock.wall_of_perf(record.start_ns),
            request_end_ns: clock.wall_of_perf(record.end_ns),
            metrics: metrics
                .values
                .iter()
                .filter(|(def, _)| METRICS.contains(&def.tag))
                .filter_map(|(def, value)| match value {
                    MetricValue::Scalar(v) => {
                        serde_json::Number::from_f64(*v).map(|n| (def.tag.to_owned(), n.into()))
                    }
                    MetricValue::List(_) => None,
                })
                .collect(),
            response_text: (!text.is_empty()).then_some(text),
        }
    }
}

#[derive(Serialize)]
struct Document<'a> {
    schema_version: &'static str,
    data: &'a [Output],
}

/// Collects every profiling record's generated text and writes `outputs.json` when the
/// run ends.
#[derive(Debug)]
pub struct OutputsJsonWriter {
    path: PathBuf,
    outputs: Vec<Output>,
}

impl OutputsJsonWriter {
    /// A writer of `path` (created, or truncated, when the run ends).
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            outputs: Vec::new(),
        }
    }
}

impl RecordWriter for OutputsJsonWriter {
    fn write_record(
        &mut self,
        record: &RequestRecord,
        metrics: &RecordMetrics,
        _phase_index: u32,
    ) -> Result<(), MetricsError> {
        self.outputs.push(Output::of(record, metrics));
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), MetricsError> {
        self.outputs
            .sort_by_key(|output| (output.session_num, output.turn_index));
        let io = |e| MetricsError::io(&self.path, e);
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| MetricsError::io(parent, e))?;
        }
        let mut out = BufWriter::new(File::create(&self.path).map_err(io)?);
        let document = Document {
            schema_version: "1.0",
            data: &self.outputs,
        };
        serde_json::to_writer_pretty(&mut out, &document)?;
        out.flush().map_err(io)
    }
}
