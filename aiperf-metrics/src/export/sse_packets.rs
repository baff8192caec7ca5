//! Splits a stamped Server-Sent Events body into messages of field packets, the shape
//! the raw export writes (`{"perf_ns": …, "packets": [{"name": "data", "value": "…"}]}`).
//!
//! Unlike the endpoint's SSE decoder, which merges a message into one event for parsing,
//! this keeps every field line as it came, in order, so the export shows what the server
//! sent. The rules:
//! - lines end at CR, LF or CRLF (also when the CR and LF arrive in different chunks);
//! - a blank line ends a message; the stream's last message is kept even without one;
//! - each line is trimmed; `name: value` gives a packet with both trimmed (as the Python
//!   AIPerf does, where the WHATWG rules strip one space only), a line starting with `:`
//!   is a `comment` packet, a line without a colon is a packet with a `null` value, and a
//!   whitespace-only line is skipped;
//! - a UTF-8 byte order mark opening the stream is dropped; invalid UTF-8 is replaced.
//!
//! A message is stamped with the arrival of the chunk that completed it (its blank line,
//! or the last chunk for an unterminated final message): the moment its content was
//! whole, as the parsed responses behind the metrics are stamped.

use serde::Serialize;

use aiperf_core::{Chunk, Clock};

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One SSE message: its field lines, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SseMessage {
    /// Perf ns (the run's clock) of the chunk that completed the message.
    pub perf_ns: u64,
    /// The field lines.
    pub packets: Vec<SsePacket>,
}

/// One field line of an SSE message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SsePacket {
    /// The field name (`data`, `event`, `id`, `retry`, `comment`, or whatever the line
    /// named).
    pub name: String,
    /// The value; `None` for a line without a colon.
    pub value: Option<String>,
}

/// Splits `chunks` (a whole response body, in arrival order) into messages.
pub fn split_sse(chunks: &[Chunk], clock: &Clock) -> Vec<SseMessage> {
    let mut splitter = Splitter::default();
    for chunk in chunks {
        splitter.feed(&chunk.bytes, clock.perf_ns(chunk.at));
    }
    if let Some(last) = chunks.last() {
        splitter.finish(clock.perf_ns(last.at));
    }
    splitter.messages
}

#[derive(Default)]
struct Splitter {
    /// Bytes of a line whose end has not arrived yet.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a leading LF belongs to that line end.
    skip_lf: bool,
    /// A line has been completed before (the byte order mark check is done).
    seen_line: bool,
    packets: Vec<SsePacket>,
    messages: Vec<SseMessage>,
}

impl Splitter {
    fn feed(&mut self, mut bytes: &[u8], perf_ns: u64) {
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\r' || b == b'\n') {
            self.line.extend_from_slice(&bytes[..end]);
            self.end_line(perf_ns);
            let crlf = bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n');
            if bytes[end] == b'\r' && end + 1 == bytes.len() {
                self.skip_lf = true;
            }
            bytes = &bytes[end + if crlf { 2 } else { 1 }..];
        }
        self.line.extend_from_slice(bytes);
    }

    fn finish(&mut self, perf_ns: u64) {
        if !self.line.is_empty() {
            self.end_line(perf_ns);
        }
        self.dispatch(perf_ns);
    }

    fn end_line(&mut self, perf_ns: u64) {
        let mut line = std::mem::take(&mut self.line);
        if !std::mem::replace(&mut self.seen_line, true) && line.starts_with(BOM) {
            line.drain(..BOM.len());
        }
        if line.is_empty() {
            self.dispatch(perf_ns);
        } else if let Some(packet) = packet(&line) {
            self.packets.push(packet);
        }
        line.clear();
        self.line = line; // keep the allocation for the next line
    }

    fn dispatch(&mut self, perf_ns: u64) {
        if !self.packets.is_empty() {
            self.messages.push(SseMessage {
                perf_ns,
                packets: std::mem::take(&mut self.packets),
            });
        }
    }
}

/// The packet of one non-empty line; `None` for a whitespace-only line.
fn packet(line: &[u8]) -> Option<SsePacket> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(match text.split_once(':') {
        None => SsePacket {
            name: text.to_owned(),
            value: None,
        },
        Some((name, value)) => SsePacket {
            name: if name.is_empty() {
                "comment"
            } else {
                name.trim()
            }
            .to_owned(),
            value: Some(value.trim().to_owned()),
        },
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MS: u64 = 1_000_000;

    /// Chunks arriving 1 ms, 2 ms, … after the clock's anchor.
    fn chunks(clock: &Clock, pieces: &[&[u8]]) -> Vec<Chunk> {
        pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| Chunk {
                at: clock.anchor() + Duration::from_millis(i as u64 + 1),
                bytes: piece.to_vec().into(),
            })
            .collect()
    }

    fn p(name: &str, value: Option<&str>) -> SsePacket {
        SsePacket {
            name: name.into(),
            value: value.map(Into::into),
        }
    }

    fn split(pieces: &[&[u8]]) -> Vec<SseMessage> {
        let clock = Clock::start();
        split_sse(&chunks(&clock, pieces), &clock)
    }

    #[test]
    fn fields_keep_their_order_and_comments_and_bare_names_are_packets() {
        let messages = split(&[
            b"event: error\n: rate limit hit\nid:7\ndata: {\"a\":1}\ndata:  two \nflag\n\n",
        ]);
        assert_eq!(
            messages,
            vec![SseMessage {
                perf_ns: MS,
                packets: vec![
                    p("event", Some("error")),
                    p("comment", Some("rate limit hit")),
                    p("id", Some("7")),
                    p("data", Some("{\"a\":1}")),
                    p("data", Some("two")),
                    p("flag", None),
                ],
            }]
        );
    }

    #[test]
    fn a_message_split_across_chunks_is_stamped_by_the_chunk_that_completed_it() {
        let messages = split(&[b"data: hel", b"lo\n", b"\ndata: [DO", b"NE]\n\n"]);
        assert_eq!(
            messages,
            vec![
                SseMessage {
                    perf_ns: 3 * MS,
                    packets: vec![p("data", Some("hello"))],
                },
                SseMessage {
                    perf_ns: 4 * MS,
                    packets: vec![p("data", Some("[DONE]"))],
                },
            ]
        );
    }

    #[test]
    fn several_messages_in_one_chunk_share_its_stamp() {
        let messages = split(&[b"data: a\n\ndata: b\n\n", b"data: c\n\n"]);
        let stamps: Vec<u64> = messages.iter().map(|m| m.perf_ns).collect();
        assert_eq!(stamps, vec![MS, MS, 2 * MS]);
    }

    #[test]
    fn every_line_ending_works_even_when_crlf_is_split() {
        let expected = vec![
            vec![p("data", Some("a"))],
            vec![p("data", Some("b"))],
            vec![p("data", Some("c"))],
        ];
        for pieces in [
            &[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n".as_slice()][..],
            &[
                b"data: a\r",
                b"\n\r",
                b"\ndata: b\r",
                b"\rdata: c\r\n",
                b"\r\n",
            ],
        ] {
            let packets: Vec<_> = split(pieces).into_iter().map(|m| m.packets).collect();
            assert_eq!(packets, expected, "{pieces:?}");
        }
    }

    #[test]
    fn every_split_of_a_stream_gives_the_same_messages() {
        let stream =
            b"\xEF\xBB\xBFdata: {\"x\":\"\xC3\xA9\"}\r\n\r\nevent: done\ndata: [DONE]\r\n\r\n";
        let whole = split(&[stream]);
        assert_eq!(
            whole.iter().map(|m| m.packets.clone()).collect::<Vec<_>>(),
            vec![
                vec![p("data", Some("{\"x\":\"é\"}"))],
                vec![p("event", Some("done")), p("data", Some("[DONE]"))],
            ]
        );
        for cut in 1..stream.len() {
            let (a, b) = stream.split_at(cut);
            let parts = split(&[a, b]);
            let packets: Vec<_> = parts.iter().map(|m| m.packets.clone()).collect();
            let expected: Vec<_> = whole.iter().map(|m| m.packets.clone()).collect();
            assert_eq!(packets, expected, "cut at {cut}");
        }
    }

    #[test]
    fn the_last_message_needs_no_blank_line_and_blank_runs_make_no_empty_messages() {
        let messages = split(&[b"\n\n  \ndata: a\n\n\n\n", b"data: b"]);
        assert_eq!(
            messages,
            vec![
                SseMessage {
                    perf_ns: MS,
                    packets: vec![p("data", Some("a"))],
                },
                SseMessage {
                    perf_ns: 2 * MS,
                    packets: vec![p("data", Some("b"))],
                },
            ]
        );
        assert!(split(&[]).is_empty());
    }
}
