//! AFL++ target: the incremental SSE decoder of aiperf-endpoints.
//!
//! Input: one byte choosing the chunking (see [`aiperf_fuzz::split`]), then the body.
//! Asserts, besides "never panics":
//! - the events decoded from the body in one read equal those decoded from the same bytes
//!   in the chosen chunks (all reads share one stamp), and `decode_chunks` agrees;
//! - no field of an event holds a line terminator it should have split on (`data` may hold
//!   `\n`, the join of its lines, but never `\r`; `event` and `id` hold neither);
//! - `finish` leaves the decoder as new: decoding again with it gives the same events.

use std::time::Instant;

use aiperf_core::Chunk;
use aiperf_endpoints::sse::{decode_chunks, SseDecoder, SseEvent};

fn decode(decoder: &mut SseDecoder, pieces: &[&[u8]], at: Instant) -> Vec<SseEvent> {
    let mut events = Vec::new();
    for piece in pieces {
        decoder.feed(piece, at, &mut events);
    }
    decoder.finish(&mut events);
    events
}

fn main() {
    let at = Instant::now();
    afl::fuzz!(|data: &[u8]| {
        let mut body = data;
        let Some(seed) = aiperf_fuzz::take_byte(&mut body) else {
            return;
        };
        let pieces = aiperf_fuzz::split(body, seed);

        let mut decoder = SseDecoder::new();
        let whole = decode(&mut decoder, &[body], at);
        let chunked = decode(&mut decoder, &pieces, at);
        assert_eq!(whole, chunked, "chunking changed the events: {pieces:?}");

        let chunks: Vec<Chunk> = pieces
            .iter()
            .map(|piece| Chunk { at, bytes: piece })
            .collect();
        assert_eq!(decode_chunks(chunks), whole);

        for event in &whole {
            assert!(!event.data.contains('\r'), "CR in data: {event:?}");
            for field in [&event.event, &event.id].into_iter().flatten() {
                assert!(
                    !field.contains(['\r', '\n']),
                    "line break in a field: {event:?}"
                );
            }
            if let Some(comment) = &event.comment {
                assert!(!comment.contains('\r'), "CR in a comment: {event:?}");
            }
        }
    });
}
