//! An incremental Server-Sent Events decoder that works on bytes as they came off the wire.
//!
//! The decoder follows the WHATWG EventSource parsing rules: lines end at CR, LF or CRLF
//! (a CRLF split between two reads is one line ending), `data` lines are joined with `\n`,
//! one space after the colon is stripped, lines starting with `:` are comments, and a
//! blank line dispatches the event. It is only a decoder: it never reconnects, so a `retry`
//! field is reported but has no effect.
//!
//! Two deliberate additions to the WHATWG rules, both for benchmarking real servers:
//! - the last event of a stream is dispatched even without a closing blank line (several
//!   servers end their stream that way), see [`SseDecoder::finish`];
//! - a block that has an `event` field but no `data` is still dispatched (WHATWG drops it),
//!   so that `event: error` followed only by a comment reaches the endpoint.
//!
//! Every event carries the [`Instant`] of the read that completed it: several events
//! delivered in one read share a stamp.
//!
//! ```
//! use std::time::Instant;
//! use aiperf_endpoints::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! let now = Instant::now();
//! decoder.feed(b"data: hel", now, &mut events);
//! decoder.feed(b"lo\r", now, &mut events);
//! decoder.feed(b"\n\r\ndata: [DONE]", now, &mut events);
//! decoder.finish(&mut events);
//! assert_eq!(events.len(), 2);
//! assert_eq!(events[0].data, "hello");
//! assert_eq!(events[1].data, "[DONE]");
//! ```

use std::time::Instant;

use aiperf_core::Chunk;

/// The UTF-8 byte order mark, stripped once at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, if the block had one (`None` means the default, `message`).
    pub event: Option<String>,
    /// All `data` lines of the block joined with `\n` (invalid UTF-8 replaced).
    pub data: String,
    /// The last event ID in force when the event was dispatched (it persists across events).
    pub id: Option<String>,
    /// A valid `retry` value seen in this block (reported only: the decoder never reconnects).
    pub retry: Option<u64>,
    /// The comment lines of this block joined with `\n`, one leading space stripped from each.
    pub comment: Option<String>,
    /// When the read that completed this event arrived.
    pub at: Instant,
}

/// Decodes an SSE byte stream fed in arbitrary pieces. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct SseDecoder {
    /// Bytes of a line whose terminator has not arrived yet.
    line: Vec<u8>,
    /// The previous read ended with CR: a leading LF in the next read belongs to it.
    skip_lf: bool,
    /// No line has been processed yet (the BOM check is still pending).
    at_start: bool,
    /// The data buffer: each `data` value followed by `\n`.
    data: Vec<u8>,
    /// The event type buffer of the current block.
    event: Option<Vec<u8>>,
    /// Comments of the current block.
    comment: Option<Vec<u8>>,
    /// A `retry` value of the current block.
    retry: Option<u64>,
    /// The last event ID buffer (persists across events).
    last_id: Option<String>,
    /// The stamp of the latest read, used when the stream ends.
    last_at: Option<Instant>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self {
            line: Vec::new(),
            skip_lf: false,
            at_start: true,
            data: Vec::new(),
            event: None,
            comment: None,
            retry: None,
            last_id: None,
            last_at: None,
        }
    }

    /// Decodes one read, stamped `at`, appending completed events to `out`.
    pub fn feed(&mut self, bytes: &[u8], at: Instant, out: &mut Vec<SseEvent>) {
        self.last_at = Some(at);
        let mut rest = bytes;
        if self.skip_lf {
            match rest.first() {
                None => return,
                Some(b'\n') => rest = &rest[1..],
                Some(_) => {}
            }
            self.skip_lf = false;
        }
        while let Some(pos) = memchr::memchr2(b'\r', b'\n', rest) {
            if self.line.is_empty() {
                self.process_line(&rest[..pos], at, out);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..pos]);
                self.process_line(&line, at, out);
                line.clear();
                self.line = line;
            }
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
    }

    /// Ends the stream: an unterminated last line is processed and a pending event is
    /// dispatched, stamped with the last read. The decoder is then ready for a new stream.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if let Some(at) = self.last_at {
            if !self.line.is_empty() {
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, at, out);
            }
            self.dispatch(at, out);
        }
        *self = Self::new();
    }

    /// Handles one complete line (without its terminator).
    fn process_line(&mut self, line: &[u8], at: Instant, out: &mut Vec<SseEvent>) {
        let line = if self.at_start {
            self.at_start = false;
            line.strip_prefix(BOM).unwrap_or(line)
        } else {
            line
        };
        let Some(&first) = line.first() else {
            self.dispatch(at, out);
            return;
        };
        if first == b':' {
            let comment = self.comment.get_or_insert_with(Vec::new);
            if !comment.is_empty() {
                comment.push(b'\n');
            }
            comment.extend_from_slice(strip_one_space(&line[1..]));
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => (&line[..colon], strip_one_space(&line[colon + 1..])),
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => self.event = Some(value.to_vec()),
            b"id" if memchr::memchr(0, value).is_none() => {
                self.last_id = Some(lossy(value.to_vec()));
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = Some(value.iter().fold(0u64, |acc, digit| {
                    acc.saturating_mul(10)
                        .saturating_add(u64::from(digit - b'0'))
                }));
            }
            _ => {}
        }
    }

    /// Ends the current block: emits an event when it had data (or an event type).
    fn dispatch(&mut self, at: Instant, out: &mut Vec<SseEvent>) {
        let comment = self.comment.take();
        let retry = self.retry.take();
        let event = self.event.take();
        if self.data.is_empty() && event.is_none() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.last() == Some(&b'\n') {
            data.pop();
        }
        out.push(SseEvent {
            event: event.map(lossy),
            data: lossy(data),
            id: self.last_id.clone(),
            retry,
            comment: comment.map(lossy),
            at,
        });
    }
}

/// Decodes the body chunks of one exchange, flushing a final unterminated event.
pub fn decode_chunks<'a>(chunks: impl IntoIterator<Item = Chunk<'a>>) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk.bytes, chunk.at, &mut events);
    }
    decoder.finish(&mut events);
    events
}

/// Removes one leading space, as the EventSource rules say.
fn strip_one_space(value: &[u8]) -> &[u8] {
    value.strip_prefix(b" ").unwrap_or(value)
}

/// Bytes to text, invalid UTF-8 replaced (no copy when the bytes are valid).
fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests;
