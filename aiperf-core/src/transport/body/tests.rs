use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

/// Heap bytes a body holds, rebuilt view aside.
fn held(body: &BodyChunks) -> usize {
    body.middles.capacity() + body.marks.capacity() + body.previous.capacity()
}

#[test]
fn chunks_are_read_back_with_their_own_stamps() {
    let start = Instant::now();
    let later = start + Duration::from_millis(7);
    let mut body = BodyChunks::new();
    assert_eq!((body.first(), body.last(), body.get(0)), (None, None, None));
    body.push(start, b"ab");
    body.push(later, b"cde");
    let chunks: Vec<Chunk> = body.iter().rev().collect();
    assert_eq!(
        chunks,
        [
            Chunk {
                at: later,
                bytes: b"cde"
            },
            Chunk {
                at: start,
                bytes: b"ab"
            }
        ]
    );
    assert_eq!(body.get(0), body.first());
    assert_eq!(body.get(2), None);
    assert_eq!(body.bytes(), b"abcde");
    body.clear();
    assert!(body.is_empty() && body.bytes().is_empty() && held(&body) == 0);
}

#[test]
fn a_body_of_unrelated_chunks_is_stored_as_it_came_and_read_without_a_copy() {
    let start = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut body = BodyChunks::new();
    let mut sent = Vec::new();
    for _ in 0..128 {
        let chunk: Vec<u8> = (0..205).map(|_| rng.random()).collect();
        body.push(start, &chunk);
        sent.extend_from_slice(&chunk);
        let len = body.middles.len();
        assert!(body.middles.capacity() <= len + (len / 4).max(MIN_BODY_GROWTH));
    }
    assert_eq!(body.bytes(), sent);
    assert_eq!(body.bytes().as_ptr(), body.middles.as_ptr());
    assert!(body.plain.get().is_none(), "nothing was rebuilt");
    assert_eq!((body.previous.capacity(), body.marks.len()), (0, 128 * 7));
}

#[test]
fn a_whole_response_costs_a_few_bytes_of_marks() {
    let body: BodyChunks = [Chunk {
        at: Instant::now(),
        bytes: br#"{"choices":[{"message":{"content":"hello"}}]}"#,
    }]
    .into_iter()
    .collect();
    assert_eq!(
        body.bytes(),
        br#"{"choices":[{"message":{"content":"hello"}}]}"#
    );
    assert_eq!(body.bytes().as_ptr(), body.middles.as_ptr());
    assert_eq!(body.marks, [0, 45, 0, 0, 45]);
    assert_eq!(body.marks.capacity(), MIN_MARKS_GROWTH);
    assert_eq!(body.previous.capacity(), 0);
}

/// A chat stream as the mock and OpenAI-compatible servers send it: a role event, one
/// event per token, a finish event, a usage event and `[DONE]`.
fn chat_stream(tokens: usize) -> Vec<Vec<u8>> {
    let head = r#"data: {"id":"chatcmpl-3f1b0c1e-7d4a-4a55-9a57-1f0e2d3c4b5a","object":"chat.completion.chunk","created":1764190000,"model":"mock-model","choices":"#;
    let mut events = vec![format!(
        r#"{head}[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#
    )];
    let words = [
        "the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog.",
    ];
    for token in 0..tokens {
        let word = words[token % words.len()];
        events.push(format!(
            r#"{head}[{{"index":0,"delta":{{"content":"{word}"}},"logprobs":null,"finish_reason":null}}]}}"#
        ));
    }
    events.push(format!(
        r#"{head}[{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"length"}}]}}"#
    ));
    events.push(format!(
        r#"{head}[],"usage":{{"prompt_tokens":128,"completion_tokens":{tokens},"total_tokens":{}}}}}"#,
        128 + tokens
    ));
    events.push("data: [DONE]".to_owned());
    events
        .into_iter()
        .map(|event| format!("{event}\n\n").into_bytes())
        .collect()
}

#[test]
fn a_128_token_chat_stream_holds_under_4_kib_one_or_four_events_a_chunk() {
    let start = Instant::now();
    let events = chat_stream(128);
    let wire: Vec<u8> = events.concat();
    assert_eq!(wire.len(), 29_575);
    for per_chunk in [1, 4] {
        let mut body = BodyChunks::new();
        for (index, chunk) in events.chunks(per_chunk).enumerate() {
            body.push(
                start + Duration::from_millis(10 * index as u64),
                &chunk.concat(),
            );
        }
        let held = held(&body);
        assert!(held < 4 * 1024, "{per_chunk} a chunk: {held} bytes");
        assert_eq!(body.bytes(), wire);
        assert_eq!(body.byte_len(), wire.len());
        let last = body.last().map(|chunk| (chunk.at, chunk.bytes.to_vec()));
        let expected_at = start + Duration::from_millis(10 * (body.len() as u64 - 1));
        assert_eq!(
            last,
            Some((
                expected_at,
                events.chunks(per_chunk).last().unwrap_or_default().concat()
            ))
        );
    }
}

/// A chunk built from the one before, so that starts and ends are shared in every way:
/// the same bytes, a changed middle, cut short (shorter than what is shared), grown,
/// empty, with event ends inside, or unrelated binary bytes.
fn next_chunk(rng: &mut ChaCha8Rng, before: &[u8]) -> Vec<u8> {
    let random = |rng: &mut ChaCha8Rng, len: usize, binary: bool| -> Vec<u8> {
        (0..len)
            .map(|_| {
                if binary {
                    rng.random()
                } else {
                    b"ab\n"[rng.random_range(0..3)]
                }
            })
            .collect()
    };
    let cut = |rng: &mut ChaCha8Rng| rng.random_range(0..=before.len());
    match rng.random_range(0..8) {
        0 => before.to_vec(),
        1 => {
            let (start, end) = (cut(rng), cut(rng));
            let (start, end) = (start.min(end), start.max(end));
            let len = rng.random_range(0..6);
            [&before[..start], &random(rng, len, false), &before[end..]].concat()
        }
        2 => before[..cut(rng)].to_vec(),
        3 => before[cut(rng)..].to_vec(),
        4 => Vec::new(),
        5 => {
            let len = rng.random_range(0..40);
            [before, b"\n\n", &random(rng, len, false), before].concat()
        }
        6 => {
            let len = rng.random_range(0..300);
            random(rng, len, true)
        }
        _ => {
            let len = rng.random_range(0..60);
            random(rng, len, false)
        }
    }
}

#[test]
fn random_chunk_sequences_come_back_exactly() {
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let origin = Instant::now();
    let mut differences = 0;
    for _ in 0..500 {
        let mut sent: Vec<(Instant, Vec<u8>)> = Vec::new();
        let mut body = BodyChunks::new();
        let mut chunk = b"data: {\"x\":\"y\"}\n\n".to_vec();
        let mut since_origin: u64 = 1 << 40;
        for _ in 0..rng.random_range(0..40) {
            chunk = next_chunk(&mut rng, &chunk);
            // Mostly later, sometimes earlier (kernel stamps need not be in read order).
            let nanos = rng.random_range(0..20_000_000_000);
            since_origin = if rng.random_range(0..5) == 0 {
                since_origin - nanos / 1000
            } else {
                since_origin + nanos
            };
            let at = origin + Duration::from_nanos(since_origin);
            body.push(at, &chunk);
            sent.push((at, chunk.clone()));
            if rng.random_range(0..10) == 0 {
                // Reading between pushes must not freeze the view.
                assert_eq!(body.iter().count(), sent.len());
            }
        }
        differences += usize::from(body.differences);
        let read: Vec<(Instant, Vec<u8>)> = body
            .iter()
            .map(|chunk| (chunk.at, chunk.bytes.to_vec()))
            .collect();
        assert_eq!(read, sent);
        let whole: Vec<u8> = sent.iter().flat_map(|(_, bytes)| bytes.clone()).collect();
        assert_eq!(
            (body.bytes(), body.byte_len(), body.len()),
            (&whole[..], whole.len(), sent.len())
        );
        let rebuilt: BodyChunks = sent
            .iter()
            .map(|(at, bytes)| Chunk { at: *at, bytes })
            .collect();
        assert_eq!(rebuilt, body, "equal whether read or not");
    }
    assert!(
        differences > 300,
        "{differences} of 500 bodies held differences"
    );
}

#[test]
fn stamps_are_exact_to_the_nanosecond_either_way() {
    let origin = Instant::now();
    let start = origin + Duration::from_secs(10);
    let stamps = [
        start,
        start + Duration::from_nanos(1),
        origin + Duration::from_nanos(9_000_000_063),
        start + Duration::from_secs(86_400 * 3) + Duration::from_nanos(5),
        start,
    ];
    let body: BodyChunks = stamps.iter().map(|&at| Chunk { at, bytes: b"x" }).collect();
    let read: Vec<Instant> = body.iter().map(|chunk| chunk.at).collect();
    assert_eq!(read, stamps);
}

#[test]
fn pieces_end_after_a_blank_line_once_they_are_16_bytes_long() {
    let split: Vec<&[u8]> =
        pieces(b"data: [DONE]\n\ndata: 0123456\n\n\n\ndata: 0123456789\n\nend").collect();
    assert_eq!(
        split,
        [
            &b"data: [DONE]\n\ndata: 0123456\n\n"[..],
            b"\n\ndata: 0123456789\n\n",
            b"end"
        ]
    );
    let split: Vec<&[u8]> = pieces(b"a\n\nb\n\n\nc\nd\n\n").collect();
    assert_eq!(split, [&b"a\n\nb\n\n\nc\nd\n\n"[..]]);
    assert_eq!(pieces(b"").count(), 0);
}

#[test]
fn a_body_of_blank_lines_holds_little_more_than_it_sent() {
    let start = Instant::now();
    let read = [b'\n'; 8192];
    let mut body = BodyChunks::new();
    for _ in 0..64 {
        body.push(start, &read);
    }
    let held = held(&body);
    assert!(
        held < 64 * 8192 * 5 / 4,
        "{held} bytes held for {} sent",
        64 * 8192
    );
    assert_eq!(body.bytes(), vec![b'\n'; 64 * 8192]);
}

#[test]
fn numbers_and_signs_round_trip() {
    let mut out = Vec::new();
    let values = [0, 1, 127, 128, 300, u64::MAX];
    for value in values {
        put_number(&mut out, value);
    }
    assert_eq!(out.len(), 1 + 1 + 1 + 2 + 2 + 10);
    let mut marks = Marks(&out);
    assert_eq!(values.map(|_| marks.next()), values);
    for value in [0, -1, 1, i64::MIN, i64::MAX] {
        assert_eq!(unzigzag(zigzag(value)), value);
    }
    assert_eq!([0, -1, 1, -2].map(zigzag), [0, 1, 2, 3]);
}
