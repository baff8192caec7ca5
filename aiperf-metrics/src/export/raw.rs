//! `profile_export_raw.jsonl` (`--export-level raw`,
//! docs/artifacts.md#profile_export_rawjsonl): one JSON object per request of every phase,
//! warmup included, appended as records complete.
//!
//! ```text
//! {"metadata": {…as in profile_export.jsonl…}, "start_perf_ns": …,
//!  "request_headers": {"Content-Type": "application/json", "Authorization": "<redacted>", …},
//!  "status": 200,
//!  "responses": [{"perf_ns": …, "packets": [{"name": "data", "value": "{…}"}]}, …],
//!  "error": {"code": 500, "type": "…", "message": "…"},
//!  "payload": {…the exact body sent…}}
//! ```
//! Keys follow the Python AIPerf 0.13 file (the payload comes last) and, as there, keys
//! without a value are left out: `status` when no response head arrived, `error` on
//! success, `request_headers` and `payload` when the request was never sent, and
//! `response_headers` always (the Python AIPerf writes none either).
//!
//! `responses` holds what the server sent: for a `text/event-stream` response one entry
//! per SSE message (see [`split_sse`](super::sse_packets::split_sse)), otherwise one
//! entry for the whole body, `{"perf_ns": …, "text": "…", "content_type": "…"}`, stamped
//! when its last chunk arrived. Bodies are written as text: bytes that are not UTF-8 are
//! replaced with U+FFFD. Error bodies are kept too, so a failed request shows what the
//! server said. Perf ns count from the run's clock anchor, like `start_perf_ns`.
//!
//! Header values whose names suggest a secret ([`is_sensitive_header`]) are written as
//! `<redacted>`: API keys never reach the file.

use std::borrow::Cow;
use std::path::Path;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;

use aiperf_core::{ErrorDetails, RawCapture, RequestRecord};

use super::jsonl::Metadata;
use super::line_file::LineFile;
use super::sse_packets::{split_sse, SseMessage};
use super::RecordWriter;
use crate::record_metrics::RecordMetrics;
use crate::MetricsError;

/// Records between two flushes of the raw file (the Python AIPerf's raw export batch).
pub const RAW_FLUSH_EVERY: usize = 10;

/// What replaces a sensitive header value.
pub const REDACTED: &str = "<redacted>";

/// Fragments of header names whose values are secrets or identify a user's session
/// (compared case-insensitively): `Authorization`, `X-Api-Key`, `api-key`, `Cookie`,
/// `X-Session-Affinity`, `X-Auth-Token`, …
const SENSITIVE_NAME_PARTS: [&str; 8] = [
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "cookie",
    "session",
    "credential",
];

/// True when the value of header `name` must not be written to an artifact.
pub fn is_sensitive_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SENSITIVE_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// Request headers in send order, sensitive values redacted.
struct Headers<'a>(&'a [(String, String)]);

impl Serialize for Headers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in self.0 {
            let value = if is_sensitive_header(name) {
                REDACTED
            } else {
                value
            };
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// One element of `responses`.
#[derive(Serialize)]
#[serde(untagged)]
enum Response<'a> {
    Sse(SseMessage<'a>),
    Body {
        perf_ns: u64,
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        content_type: Option<&'a str>,
    },
}

/// The body sent: spliced verbatim when it is JSON, else written as a string.
#[derive(Serialize)]
#[serde(untagged)]
enum Payload<'a> {
    Json(&'a RawValue),
    Text(Cow<'a, str>),
}

#[derive(Serialize)]
struct Line<'a> {
    metadata: Metadata<'a>,
    start_perf_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_headers: Option<Headers<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    responses: Vec<Response<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorDetails>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<Payload<'a>>,
}

/// Serialises one record's raw line (no trailing newline). `phase_index` is the index of
/// the record's phase among the phases run. A record without a
/// [`RawCapture`] (the engine was not asked to keep raw exchanges) has no headers and
/// no responses.
pub fn raw_record_line(record: &RequestRecord, phase_index: u32) -> Result<String, MetricsError> {
    let mut out = Vec::new();
    write_line(record, phase_index, &mut out)?;
    // serde_json writes UTF-8 only
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Appends one record's raw line (no trailing newline) to `out`.
fn write_line(
    record: &RequestRecord,
    phase_index: u32,
    out: &mut Vec<u8>,
) -> Result<(), MetricsError> {
    let raw = record.raw.as_deref();
    // JSON cannot hold a raw line break inside a string, so any in a JSON body are
    // whitespace between tokens: blanking them keeps the body's meaning on one line.
    let one_line: Cow<'_, [u8]> = if record.payload.iter().any(|&b| b == b'\n' || b == b'\r') {
        Cow::Owned(
            record
                .payload
                .iter()
                .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                .collect(),
        )
    } else {
        Cow::Borrowed(&record.payload)
    };
    let payload = (!record.payload.is_empty()).then(|| {
        std::str::from_utf8(&one_line)
            .ok()
            .and_then(|text| serde_json::from_str::<&RawValue>(text).ok())
            .map_or_else(
                || Payload::Text(String::from_utf8_lossy(&record.payload)),
                Payload::Json,
            )
    });
    let body = raw.map(|raw| Body::of(raw, record));
    let line = Line {
        metadata: Metadata::of(record, phase_index),
        start_perf_ns: record.start_ns,
        request_headers: raw.map(|raw| Headers(&raw.request_headers)),
        status: record.status,
        responses: match (raw, &body) {
            (Some(raw), Some(body)) => responses(raw, body),
            _ => Vec::new(),
        },
        error: record.error.as_ref(),
        payload,
    };
    Ok(serde_json::to_writer(out, &line)?)
}

/// A response body in one piece, with where each chunk ended and when it arrived.
struct Body<'a> {
    bytes: &'a [u8],
    /// (end offset in `bytes`, perf ns of arrival) per chunk.
    chunk_ends: Vec<(usize, u64)>,
}

impl<'a> Body<'a> {
    fn of(raw: &'a RawCapture, record: &RequestRecord) -> Self {
        let mut chunk_ends = Vec::with_capacity(raw.chunks.len());
        let mut end = 0;
        for chunk in raw.chunks.iter() {
            end += chunk.bytes.len();
            chunk_ends.push((end, record.clock.perf_ns(chunk.at)));
        }
        Self {
            bytes: raw.chunks.bytes(),
            chunk_ends,
        }
    }
}

/// SSE messages for an event stream, else the whole body as one response.
fn responses<'a>(raw: &'a RawCapture, body: &'a Body<'_>) -> Vec<Response<'a>> {
    let Some(&(_, last_perf_ns)) = body.chunk_ends.last() else {
        return Vec::new();
    };
    let content_type = raw.content_type.as_deref();
    let event_stream = content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/event-stream"))
    });
    if event_stream {
        return split_sse(body.bytes, &body.chunk_ends)
            .into_iter()
            .map(Response::Sse)
            .collect();
    }
    vec![Response::Body {
        perf_ns: last_perf_ns,
        text: String::from_utf8_lossy(body.bytes),
        content_type,
    }]
}

/// Appends raw record lines to a file, flushing every [`RAW_FLUSH_EVERY`] records.
#[derive(Debug)]
pub struct RawJsonlWriter {
    file: LineFile,
    /// One line, reused: lines run to tens of kilobytes.
    line: Vec<u8>,
}

impl RawJsonlWriter {
    /// Creates (or truncates) `path`, creating its directory if needed.
    pub fn create(path: &Path) -> Result<Self, MetricsError> {
        Ok(Self {
            file: LineFile::create(path, RAW_FLUSH_EVERY)?,
            line: Vec::new(),
        })
    }

    /// Appends one record, of the phase run as number `phase_index`.
    fn append(&mut self, record: &RequestRecord, phase_index: u32) -> Result<(), MetricsError> {
        self.line.clear();
        write_line(record, phase_index, &mut self.line)?;
        self.file.append(&self.line)
    }
}

/// The raw export is of the exchange, not of its metrics: every record of every phase.
impl RecordWriter for RawJsonlWriter {
    fn write_record(
        &mut self,
        record: &RequestRecord,
        _metrics: &RecordMetrics,
        phase_index: u32,
    ) -> Result<(), MetricsError> {
        self.append(record, phase_index)
    }

    fn write_warmup_record(&mut self, record: &RequestRecord) -> Result<(), MetricsError> {
        self.append(record, 0)
    }

    /// Flushes and closes the file.
    fn finish(self: Box<Self>) -> Result<(), MetricsError> {
        self.file.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use aiperf_core::Chunk;
    use serde_json::{json, Value};

    use super::*;
    use crate::record_metrics::testkit::{failed, record};

    const MS: u64 = 1_000_000;

    /// A record captured with `headers`, a body of `pieces` (one chunk per ms after the
    /// clock's anchor) of type `content_type`, and `payload` sent.
    fn captured(
        headers: &[(&str, &str)],
        content_type: &str,
        pieces: &[&str],
        payload: &str,
    ) -> RequestRecord {
        let mut r = record(0, "hi", vec![]);
        let anchor = r.clock.anchor();
        r.payload = payload.as_bytes().to_vec().into();
        r.raw = Some(Box::new(RawCapture {
            request_headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            content_type: Some(content_type.into()),
            chunks: pieces
                .iter()
                .enumerate()
                .map(|(i, piece)| Chunk {
                    at: anchor + Duration::from_millis(i as u64 + 1),
                    bytes: piece.as_bytes(),
                })
                .collect(),
        }));
        r
    }

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).expect("a JSON line")
    }

    #[test]
    fn secrets_in_header_names_are_recognised() {
        for name in [
            "Authorization",
            "x-api-key",
            "api-key",
            "Cookie",
            "X-Session-Affinity",
            "X-Auth-Token",
            "Proxy-Authorization",
            "OpenAI-Secret",
        ] {
            assert!(is_sensitive_header(name), "{name}");
        }
        for name in [
            "Content-Type",
            "Accept",
            "X-Request-ID",
            "X-Correlation-ID",
            "User-Agent",
        ] {
            assert!(!is_sensitive_header(name), "{name}");
        }
    }

    #[test]
    fn a_streamed_record_has_packets_redacted_headers_and_the_payload_last() {
        let r = captured(
            &[
                ("Content-Type", "application/json"),
                ("Authorization", "Bearer sk-secret"),
                ("X-Request-ID", "req"),
            ],
            "text/event-stream; charset=utf-8",
            &["data: {\"x\":1}\n\nda", "ta: [DONE]\n\n"],
            "{\"model\": \"m\",\n \"stream\": true}",
        );
        let line = raw_record_line(&r, 1).unwrap();
        assert!(!line.contains("sk-secret"), "{line}");
        // Top-level keys in the Python AIPerf's order (nested objects come before the
        // next top-level key, so the first occurrence of each is the top-level one).
        assert!(line.starts_with(r#"{"metadata":{"#), "{line}");
        let at = |key: &str| line.find(&format!(r#","{key}":"#));
        let order: Vec<Option<usize>> = [
            "start_perf_ns",
            "request_headers",
            "status",
            "responses",
            "payload",
        ]
        .iter()
        .map(|key| at(key))
        .collect();
        assert!(order.iter().all(Option::is_some), "{line}");
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{line}");
        assert!(!line.contains(r#""error""#) && !line.contains("response_headers"));
        let v = parse(&line);
        assert_eq!(v["metadata"]["benchmark_phase"], "profiling");
        assert_eq!(v["metadata"]["phase_index"], 1);
        assert_eq!(v["start_perf_ns"], 0);
        assert_eq!(
            v["request_headers"],
            json!({"Content-Type": "application/json", "Authorization": "<redacted>",
                   "X-Request-ID": "req"})
        );
        assert_eq!(v["status"], 200);
        assert_eq!(
            v["responses"],
            json!([
                {"perf_ns": MS, "packets": [{"name": "data", "value": "{\"x\":1}"}]},
                {"perf_ns": 2 * MS, "packets": [{"name": "data", "value": "[DONE]"}]},
            ])
        );
        // The body as sent, on one line, key order kept.
        assert!(
            line.ends_with(r#","payload":{"model": "m",  "stream": true}}"#),
            "{line}"
        );
    }

    #[test]
    fn events_held_as_differences_are_exported_as_they_came() {
        // Events that share all but their token are held as differences from the one
        // before (see `BodyChunks`); the export must not see it, wherever reads split them.
        let event = |token: &str| {
            format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"delta\":{{\"content\":\"{token}\"}},\"finish_reason\":null}}]}}\n\n"
            )
        };
        let (a, b, c, d) = (event("a"), event("bb"), event(""), event("a"));
        let two_and_a_half = format!("{b}{c}{}", &d[..40]);
        let r = captured(
            &[],
            "text/event-stream",
            &[&a, &two_and_a_half, &d[40..], "data: [DONE]\n\n"],
            "{}",
        );
        let v = parse(&raw_record_line(&r, 0).unwrap());
        let packet = |perf_ns: u64, event: &str| {
            let value = event.trim_end().strip_prefix("data: ").unwrap_or_default();
            json!({"perf_ns": perf_ns, "packets": [{"name": "data", "value": value}]})
        };
        assert_eq!(
            v["responses"],
            json!([
                packet(MS, &a),
                packet(2 * MS, &b),
                packet(2 * MS, &c),
                packet(3 * MS, &d),
                packet(4 * MS, "data: [DONE]"),
            ])
        );
    }

    #[test]
    fn a_whole_body_is_one_text_response_stamped_by_its_last_chunk() {
        let r = captured(
            &[],
            "application/json",
            &["{\"choices\":", "[]}"],
            "{\"model\":\"m\"}",
        );
        let v = parse(&raw_record_line(&r, 0).unwrap());
        assert_eq!(
            v["responses"],
            json!([{"perf_ns": 2 * MS, "text": "{\"choices\":[]}",
                    "content_type": "application/json"}])
        );
        assert_eq!(v["payload"], json!({"model": "m"}));
        assert_eq!(v["request_headers"], json!({}));
    }

    #[test]
    fn a_failure_carries_its_error_and_status() {
        let mut r = failed(0, "hi", 500, "boom");
        r.status = Some(500);
        r.payload = b"not json".to_vec().into();
        let v = parse(&raw_record_line(&r, 0).unwrap());
        assert_eq!(
            v["error"],
            json!({"code": 500, "type": "Internal Server Error", "message": "boom"})
        );
        assert_eq!(v["status"], 500);
        // No capture: neither headers nor responses; a non-JSON body becomes a string.
        assert!(v.get("request_headers").is_none());
        assert_eq!(v["responses"], json!([]));
        assert_eq!(v["payload"], "not json");
    }

    #[test]
    fn the_writer_appends_one_line_per_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/profile_export_raw.jsonl");
        let mut writer = RawJsonlWriter::create(&path).unwrap();
        for _ in 0..12 {
            let r = captured(&[], "text/plain", &["ok"], "{}");
            writer
                .write_record(&r, &RecordMetrics::default(), 0)
                .unwrap();
        }
        Box::new(writer).finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 12);
        assert!(text
            .lines()
            .all(|l| parse(l)["responses"][0]["text"] == "ok"));
    }
}
