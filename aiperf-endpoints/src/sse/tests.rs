use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// Feeds `pieces` as separate reads stamped base+0ns, base+1ns, … and finishes.
fn decode(pieces: &[&[u8]]) -> (Vec<SseEvent>, Instant) {
    let base = Instant::now();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        decoder.feed(piece, base + Duration::from_nanos(i as u64), &mut events);
    }
    decoder.finish(&mut events);
    (events, base)
}

fn data_of(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.data.as_str()).collect()
}

/// The read index an event was stamped with.
fn read_index(event: &SseEvent, base: Instant) -> u128 {
    (event.at - base).as_nanos()
}

#[test]
fn lf_crlf_and_cr_line_endings_all_work() {
    for stream in [
        &b"data: a\n\ndata: b\n\n"[..],
        b"data: a\r\n\r\ndata: b\r\n\r\n",
        b"data: a\r\rdata: b\r\r",
        b"data: a\r\n\ndata: b\n\r\n",
    ] {
        let (events, _) = decode(&[stream]);
        assert_eq!(data_of(&events), ["a", "b"], "{stream:?}");
    }
}

#[test]
fn cr_at_end_of_one_read_and_lf_at_start_of_the_next_are_one_line_ending() {
    let (events, base) = decode(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(data_of(&events), ["a\nb"]);
    // The blank line's CR arrived in read 2; the event is complete there.
    assert_eq!(read_index(&events[0], base), 2);
}

#[test]
fn cr_then_cr_across_reads_is_a_blank_line() {
    let (events, base) = decode(&[b"data: a\r", b"\rdata: b\n\n"]);
    assert_eq!(data_of(&events), ["a", "b"]);
    assert_eq!(read_index(&events[0], base), 1);
}

#[test]
fn empty_read_between_cr_and_lf_keeps_the_pending_lf_skip() {
    let (events, _) = decode(&[b"data: a\r", b"", b"\n", b"\n"]);
    assert_eq!(data_of(&events), ["a"]);
}

#[test]
fn multi_line_data_is_joined_with_newline() {
    let (events, _) = decode(&[b"data: one\ndata: two\ndata:\ndata: four\n\n"]);
    assert_eq!(data_of(&events), ["one\ntwo\n\nfour"]);
}

#[test]
fn only_one_space_after_the_colon_is_stripped() {
    let (events, _) = decode(&[b"data:x\n\ndata:  y\n\ndata: \n\n"]);
    assert_eq!(data_of(&events), ["x", " y", ""]);
}

#[test]
fn a_field_without_colon_has_an_empty_value() {
    let (events, _) = decode(&[b"data\n\n"]);
    assert_eq!(data_of(&events), [""]);
}

#[test]
fn comments_are_not_events_but_are_kept_with_their_block() {
    let (events, _) = decode(&[b": keep-alive\n\n:ping\ndata: a\n: second\n\n"]);
    assert_eq!(data_of(&events), ["a"]);
    assert_eq!(events[0].comment.as_deref(), Some("ping\nsecond"));
}

#[test]
fn event_id_and_retry_fields() {
    let (events, _) = decode(&[
        b"event: delta\nid: 7\nretry: 1500\ndata: a\n\ndata: b\nretry: 12x\nid: bad\0id\n\n",
    ]);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].event.as_deref(), Some("delta"));
    assert_eq!(events[0].id.as_deref(), Some("7"));
    assert_eq!(events[0].retry, Some(1500));
    // The event type is per block; the id persists; invalid retry and NUL ids are ignored.
    assert_eq!(events[1].event, None);
    assert_eq!(events[1].id.as_deref(), Some("7"));
    assert_eq!(events[1].retry, None);
}

#[test]
fn unknown_fields_are_ignored() {
    let (events, _) = decode(&[b"foo: bar\ndata: a\nDATA: b\n\n"]);
    assert_eq!(data_of(&events), ["a"]);
}

#[test]
fn a_blank_line_without_data_dispatches_nothing() {
    let (events, _) = decode(&[b"\n\n\r\n: c\n\nid: 3\n\n"]);
    assert!(events.is_empty());
}

#[test]
fn an_error_event_without_data_is_still_dispatched() {
    let (events, _) = decode(&[b"event: error\n: upstream failed\n\n"]);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event.as_deref(), Some("error"));
    assert_eq!(events[0].data, "");
    assert_eq!(events[0].comment.as_deref(), Some("upstream failed"));
}

#[test]
fn events_split_across_reads_byte_by_byte() {
    let stream = b"event: x\ndata: {\"a\": 1}\n\ndata: b\r\n\r\n";
    let pieces: Vec<&[u8]> = stream.chunks(1).collect();
    let (events, base) = decode(&pieces);
    assert_eq!(data_of(&events), ["{\"a\": 1}", "b"]);
    assert_eq!(events[0].event.as_deref(), Some("x"));
    // Completed by the second newline of "\n\n" and the CR of the blank "\r\n".
    assert_eq!(read_index(&events[0], base), 24);
    assert_eq!(read_index(&events[1], base), stream.len() as u128 - 2);
}

#[test]
fn several_events_in_one_read_share_its_stamp() {
    let (events, base) = decode(&[b"data: a\n", b"\ndata: b\n\ndata: c\n\ndata: d"]);
    assert_eq!(data_of(&events), ["a", "b", "c", "d"]);
    let reads: Vec<u128> = events.iter().map(|e| read_index(e, base)).collect();
    assert_eq!(reads, [1, 1, 1, 1]);
}

#[test]
fn a_final_event_without_blank_line_is_flushed_at_the_last_read() {
    let (events, base) = decode(&[b"data: a\n\ndata: last", b"\n"]);
    assert_eq!(data_of(&events), ["a", "last"]);
    assert_eq!(read_index(&events[1], base), 1);
    let (events, _) = decode(&[b"data: a\n\ndata: last"]);
    assert_eq!(data_of(&events), ["a", "last"]);
}

#[test]
fn no_reads_no_events() {
    let (events, _) = decode(&[]);
    assert!(events.is_empty());
}

#[test]
fn a_leading_bom_is_stripped_even_when_split() {
    let (events, _) = decode(&[b"\xEF\xBB", b"\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n"]);
    // Only the first line of the stream loses its BOM; the second is an unknown field.
    assert_eq!(data_of(&events), ["a"]);
}

#[test]
fn invalid_utf8_is_replaced_not_rejected() {
    let (events, _) = decode(&[b"data: a\xFF\xFEb\n\n"]);
    assert_eq!(data_of(&events), ["a\u{FFFD}\u{FFFD}b"]);
}

#[test]
fn decode_chunks_uses_each_chunks_stamp() {
    let base = Instant::now();
    let chunks = vec![
        Chunk {
            at: base,
            bytes: b"data: a\n\nda",
        },
        Chunk {
            at: base + Duration::from_millis(5),
            bytes: b"ta: b\n\n",
        },
    ];
    let events = decode_chunks(chunks);
    assert_eq!(data_of(&events), ["a", "b"]);
    assert_eq!(events[0].at, base);
    assert_eq!(events[1].at, base + Duration::from_millis(5));
}

/// Bytes biased towards SSE syntax so random streams exercise every branch.
fn sse_byte_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"data".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event: ".to_vec()),
        Just(b"id:".to_vec()),
        Just(b"retry: 12".to_vec()),
        Just(b":".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(vec![0xFF]),
        Just(vec![0]),
        "[a-z{}\"]{1,4}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(token, 0..60).prop_map(|tokens| tokens.concat())
}

/// Splits `bytes` at `cuts` (taken modulo the length), stamping each read with the
/// offset of its last byte, and decodes.
fn decode_split(bytes: &[u8], cuts: &[usize], base: Instant) -> Vec<SseEvent> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .filter(|_| !bytes.is_empty())
        .map(|c| c % bytes.len())
        .collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for window in cuts.windows(2) {
        let (start, end) = (window[0], window[1]);
        let at = base + Duration::from_nanos(end as u64 - 1);
        decoder.feed(&bytes[start..end], at, &mut events);
    }
    decoder.finish(&mut events);
    events
}

/// An abstract event and how to write it.
#[derive(Debug, Clone)]
struct Spec {
    event: Option<String>,
    data: Vec<String>,
    comment: Option<String>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let text = "[a-zA-Z0-9 {}\":,\\[\\]éß]{0,12}";
    (
        prop::option::of("[a-z]{1,8}"),
        prop::collection::vec(text, 1..4),
        prop::option::of("[a-z ]{0,8}"),
    )
        .prop_map(|(event, data, comment)| Spec {
            event,
            data,
            comment,
        })
}

fn write(specs: &[Spec], endings: &[usize], last_blank: bool) -> Vec<u8> {
    let eol = ["\n", "\r", "\r\n"];
    let mut n = 0;
    let mut previous = "";
    // A CR followed by an LF would merge two line endings into one: write CRLF instead.
    let mut next = || {
        n += 1;
        let mut ending = eol[endings[n % endings.len()] % 3];
        if previous == "\r" && ending == "\n" {
            ending = "\r\n";
        }
        previous = ending;
        ending
    };
    let mut out = String::new();
    for (i, spec) in specs.iter().enumerate() {
        if let Some(comment) = &spec.comment {
            out += &format!(": {comment}{}", next());
        }
        if let Some(event) = &spec.event {
            out += &format!("event: {event}{}", next());
        }
        for line in &spec.data {
            out += &format!("data: {line}{}", next());
        }
        if i + 1 < specs.len() || last_blank {
            out += next();
        }
    }
    out.into_bytes()
}

proptest! {
    #[test]
    fn any_split_of_any_bytes_decodes_the_same_with_the_completing_reads_stamp(
        bytes in sse_byte_soup(),
        cuts in prop::collection::vec(0usize..10_000, 0..12),
    ) {
        let base = Instant::now();
        let one_byte_reads: Vec<usize> = (0..bytes.len()).collect();
        // Reads of one byte each: every event is stamped with its completing offset.
        let reference = decode_split(&bytes, &one_byte_reads, base);
        let split = decode_split(&bytes, &cuts, base);
        prop_assert_eq!(reference.len(), split.len());
        let mut ends: Vec<usize> = cuts.iter().filter(|_| !bytes.is_empty()).map(|c| c % bytes.len()).collect();
        ends.push(bytes.len());
        ends.sort_unstable();
        for (want, got) in reference.iter().zip(&split) {
            let offset = (want.at - base).as_nanos() as usize;
            let read_end = ends.iter().copied().find(|&end| end > offset).unwrap_or(bytes.len());
            let expected = base + Duration::from_nanos(read_end as u64 - 1);
            prop_assert_eq!(&SseEvent { at: expected, ..want.clone() }, got);
        }
    }

    #[test]
    fn valid_streams_decode_to_what_was_written_in_any_split(
        specs in prop::collection::vec(spec(), 0..6),
        endings in prop::collection::vec(0usize..3, 1..8),
        last_blank in any::<bool>(),
        cuts in prop::collection::vec(0usize..10_000, 0..12),
    ) {
        let bytes = write(&specs, &endings, last_blank);
        let events = decode_split(&bytes, &cuts, Instant::now());
        prop_assert_eq!(events.len(), specs.len());
        for (spec, event) in specs.iter().zip(&events) {
            prop_assert_eq!(&event.data, &spec.data.join("\n"));
            prop_assert_eq!(&event.event, &spec.event);
            prop_assert_eq!(&event.comment, &spec.comment);
        }
    }
}
