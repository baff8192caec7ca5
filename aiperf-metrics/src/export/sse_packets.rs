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
    let mut rest = body.strip_prefix(BOM).unwrap_or(body);
    let mut messages = Vec::new();
    let mut packets = Vec::new();
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rest.len());
        let line = &rest[..end];
        if line.is_empty() {
            if !packets.is_empty() {
                let offset = body.len() - rest.len();
                messages.push(SseMessage {
                    perf_ns: stamp_at(offset),
                    packets: std::mem::take(&mut packets),
                });
            }
        } else if let Some(packet) = packet(line) {
            packets.push(packet);
        }
        let terminator = match rest.get(end..end + 2) {
            Some(b"\r\n") => 2,
            _ => usize::from(end < rest.len()),
        };
        rest = &rest[end + terminator..];
    }
    if !packets.is_empty() {
        messages.push(SseMessage {
            perf_ns: stamp_at(body.len().saturating_sub(1)),
            packets,
        });
    }
    messages
}

/// A trimmed piece of a line as text.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes.trim_ascii())
}

/// The packet of one line; `None` for a whitespace-only line.
fn packet(line: &[u8]) -> Option<SsePacket<'_>> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    Some(match line.iter().position(|&b| b == b':') {
        None => SsePacket {
            name: text(line),
            value: None,
        },
        Some(colon) => SsePacket {
            name: match colon {
                0 => Cow::Borrowed("comment"),
                _ => text(&line[..colon]),
            },
            value: Some(text(&line[colon + 1..])),
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
