//! Splits a stamped Server-Sent Events body into messages of field packets, the shape
//! the raw export writes (`{"perf_ns": …, "packets": [{"name": "data", "value": "…"}]}`).
//!
//! Unlike the endpoint's SSE decoder, which merges a message into one event for parsing,
//! this keeps every field line as it came, in order, so the export shows what the server
//! sent. The rules:
//! - lines end at CR, LF or CRLF;
//! - a blank line ends a message; the stream's last message is kept even without one;
//! - each line is trimmed; `name: value` gives a packet with both trimmed (as the Python
//!   AIPerf does, where the WHATWG rules strip one space only), a line starting with `:`
//!   is a `comment` packet, a line without a colon is a packet with a `null` value, and a
//!   whitespace-only line is skipped;
//! - a UTF-8 byte order mark opening the stream is dropped; invalid UTF-8 is replaced.
//!
//! The splitter works on the whole body, so a message split across chunks (even a CRLF
//! split between two) is whole. A message is stamped with the arrival of the chunk that
//! completed it (the one holding its blank line, or the last chunk for an unterminated
//! final message): the moment its content was whole, as the parsed responses behind the
//! metrics are stamped. Packets borrow from the body: nothing is copied.

use std::borrow::Cow;

use serde::Serialize;

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One SSE message: its field lines, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SseMessage<'a> {
    /// Perf ns (the run's clock) of the chunk that completed the message.
    pub perf_ns: u64,
    /// The field lines.
    pub packets: Vec<SsePacket<'a>>,
}

/// One field line of an SSE message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SsePacket<'a> {
    /// The field name (`data`, `event`, `id`, `retry`, `comment`, or whatever the line
    /// named).
    pub name: Cow<'a, str>,
    /// The value; `None` for a line without a colon.
    pub value: Option<Cow<'a, str>>,
}

/// Splits `body` into messages. `chunk_ends` are the body offsets where each chunk
/// ended, in order, with the perf ns of its arrival; the last must end at `body.len()`.
pub fn split_sse<'a>(body: &'a [u8], chunk_ends: &[(usize, u64)]) -> Vec<SseMessage<'a>> {
    let stamp_at = |offset: usize| {
        let index = chunk_ends.partition_point(|(end, _)| *end <= offset);
        chunk_ends
            .get(index)
            .or(chunk_ends.last())
            .map_or(0, |(_, perf_ns)| *perf_ns)
    };
    let text = Text::of(body);
    let mut start = if body.starts_with(BOM) { BOM.len() } else { 0 };
    let mut messages = Vec::new();
    let mut packets = Vec::new();
    while start < body.len() {
        let end = body[start..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .map_or(body.len(), |at| start + at);
        if end == start {
            if !packets.is_empty() {
                messages.push(SseMessage {
                    perf_ns: stamp_at(end),
                    packets: std::mem::take(&mut packets),
                });
            }
        } else if let Some(packet) = packet(&text, start, end) {
            packets.push(packet);
        }
        start = match body.get(end..end + 2) {
            Some(b"\r\n") => end + 2,
            _ => end + 1,
        };
    }
    if !packets.is_empty() {
        messages.push(SseMessage {
            perf_ns: stamp_at(body.len().saturating_sub(1)),
            packets,
        });
    }
    messages
}

/// The body as text: validated once when it is UTF-8 (nearly always), so pieces borrow
/// from it; otherwise each piece is converted with replacement characters.
enum Text<'a> {
    Valid(&'a str),
    Invalid(&'a [u8]),
}

impl<'a> Text<'a> {
    fn of(body: &'a [u8]) -> Self {
        std::str::from_utf8(body).map_or(Text::Invalid(body), Text::Valid)
    }

    fn bytes(&self) -> &'a [u8] {
        match self {
            Text::Valid(text) => text.as_bytes(),
            Text::Invalid(bytes) => bytes,
        }
    }

    /// Bytes `start..end` with ASCII whitespace trimmed. The bounds always sit next to
    /// ASCII bytes (line ends, colons, whitespace), so they are character boundaries.
    fn piece(&self, start: usize, end: usize) -> Cow<'a, str> {
        let (start, end) = trimmed(self.bytes(), start, end);
        match self {
            Text::Valid(text) => Cow::Borrowed(text.get(start..end).unwrap_or_default()),
            Text::Invalid(bytes) => String::from_utf8_lossy(&bytes[start..end]),
        }
    }
}

/// `start..end` without leading and trailing ASCII whitespace.
fn trimmed(bytes: &[u8], mut start: usize, mut end: usize) -> (usize, usize) {
    while start < end && bytes[start].is_ascii_whitespace() {
        start += 1;
    }
    while end > start && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    (start, end)
}

/// The packet of the line at `start..end`; `None` for a whitespace-only line.
fn packet<'a>(text: &Text<'a>, start: usize, end: usize) -> Option<SsePacket<'a>> {
    let bytes = text.bytes();
    let (start, end) = trimmed(bytes, start, end);
    if start == end {
        return None;
    }
    Some(match bytes[start..end].iter().position(|&b| b == b':') {
        None => SsePacket {
            name: text.piece(start, end),
            value: None,
        },
        Some(0) => SsePacket {
            name: Cow::Borrowed("comment"),
            value: Some(text.piece(start + 1, end)),
        },
        Some(colon) => SsePacket {
            name: text.piece(start, start + colon),
            value: Some(text.piece(start + colon + 1, end)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn p(name: &str, value: Option<&str>) -> SsePacket<'static> {
        SsePacket {
            name: name.to_owned().into(),
            value: value.map(|v| v.to_owned().into()),
        }
    }

    /// Owned messages of `pieces`, chunk `i` arriving at `i + 1` ms.
    fn split(pieces: &[&[u8]]) -> Vec<SseMessage<'static>> {
        let body = pieces.concat();
        let mut chunk_ends = Vec::new();
        let mut end = 0;
        for (i, piece) in pieces.iter().enumerate() {
            end += piece.len();
            chunk_ends.push((end, (i as u64 + 1) * MS));
        }
        split_sse(&body, &chunk_ends)
            .into_iter()
            .map(|m| SseMessage {
                perf_ns: m.perf_ns,
                packets: m
                    .packets
                    .iter()
                    .map(|q| p(&q.name, q.value.as_deref()))
                    .collect(),
            })
            .collect()
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
    fn invalid_utf8_is_replaced_without_moving_the_stamps() {
        let messages = split(&[b"data: \xFF ok\n", b"\n: \xC3\n\n"]);
        assert_eq!(
            messages,
            vec![
                SseMessage {
                    perf_ns: 2 * MS,
                    packets: vec![p("data", Some("\u{FFFD} ok"))],
                },
                SseMessage {
                    perf_ns: 2 * MS,
                    packets: vec![p("comment", Some("\u{FFFD}"))],
                },
            ]
        );
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
