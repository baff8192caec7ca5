//! The HTTP/1 framing, decoding and request bytes, without sockets.

use std::time::{Duration, Instant};

use aiperf_core::{HttpMethod, HttpRequest, TransportError};
use bytes::Bytes;

use super::super::parse_target;
use super::super::wire::Arrivals;
use super::*;

/// Decodes `body` fed in pieces cut at `cuts`: the data handed on, and the bytes the
/// decoder used of the piece that ended the body.
fn decode(body: &[u8], cuts: &[usize]) -> Result<(Vec<Vec<u8>>, Option<usize>), String> {
    let mut chunked = Chunked::default();
    let mut data = Vec::new();
    let mut from = 0;
    for end in cuts.iter().copied().chain([body.len()]) {
        let ended = chunked.feed(&body[from..end], |piece| data.push(piece.to_vec()))?;
        if ended.is_some() {
            return Ok((data, ended));
        }
        from = end;
    }
    Ok((data, None))
}

const TWO_EVENTS: &[u8] = b"9\r\ndata: a\n\n\r\n9;ext=1\r\ndata: b\n\n\r\n0\r\n\r\n";

#[test]
fn a_chunked_body_hands_on_each_chunk_in_one_piece() {
    let (data, used) = decode(TWO_EVENTS, &[]).unwrap();
    assert_eq!(data, [b"data: a\n\n".to_vec(), b"data: b\n\n".to_vec()]);
    assert_eq!(used, Some(TWO_EVENTS.len()));
}

#[test]
fn a_chunked_body_cut_anywhere_decodes_to_the_same_bytes() {
    for first in 0..TWO_EVENTS.len() {
        for second in first..TWO_EVENTS.len() {
            let (data, used) = decode(TWO_EVENTS, &[first, second]).unwrap();
            assert_eq!(
                data.concat(),
                b"data: a\n\ndata: b\n\n",
                "cut at {first}, {second}"
            );
            assert!(used.is_some(), "cut at {first}, {second}: not ended");
        }
    }
}

#[test]
fn trailers_end_at_the_empty_line_and_what_follows_is_not_used() {
    let body = b"3\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\nHTTP/1.1";
    let (data, used) = decode(body, &[]).unwrap();
    assert_eq!(data, [b"abc".to_vec()]);
    assert_eq!(used, Some(body.len() - b"HTTP/1.1".len()));
}

#[test]
fn bad_chunk_framing_is_named() {
    assert_eq!(
        decode(b"zz\r\n", &[]).unwrap_err(),
        "a chunk size starting with 'z'"
    );
    assert_eq!(
        decode(b"3\r\nabcd\r\n", &[]).unwrap_err(),
        "a chunk longer than its size"
    );
    assert_eq!(
        decode(b"3\rx", &[]).unwrap_err(),
        "no line feed after a chunk size"
    );
    assert_eq!(
        decode(b"11111111111111111\r\n", &[]).unwrap_err(),
        "a chunk size over 16 hex digits"
    );
}

/// Reads `response` in reads cut at `cuts`: the events as text, and how it ended.
fn read(response: &[u8], cuts: &[usize]) -> (Vec<String>, Result<Option<Reuse>, String>) {
    let start = Instant::now();
    let mut reader = ResponseReader::new(Arrivals::new(None, start));
    let mut events = Vec::new();
    let mut on = |event: Event<'_>| {
        events.push(match event {
            Event::Head(head) => format!(
                "head {} {} bytes {}",
                head.status,
                head.bytes,
                head.headers
                    .iter()
                    .map(|h| format!("{}={}", h.name, String::from_utf8_lossy(h.value)))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Event::Data(_, bytes) => format!("data {}", String::from_utf8_lossy(bytes)),
        });
        Ok(())
    };
    let mut from = 0;
    let mut ended = Ok(None);
    for end in cuts.iter().copied().chain([response.len()]) {
        ended = reader.take(start, &response[from..end], &mut on);
        if !matches!(ended, Ok(None)) {
            break;
        }
        from = end;
    }
    let ended = ended.map_err(|failure| failure.into_error().to_string());
    (events, ended)
}

#[test]
fn a_content_length_response_is_read_across_reads_and_keeps_the_connection() {
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    for cut in 1..response.len() {
        let (events, ended) = read(response, &[cut]);
        assert_eq!(ended, Ok(Some(Reuse::Yes)), "cut at {cut}");
        assert_eq!(
            events[0], "head 200 38 bytes Content-Length=5",
            "cut at {cut}"
        );
        let body: String = events[1..]
            .iter()
            .map(|e| e.trim_start_matches("data "))
            .collect();
        assert_eq!(body, "hello", "cut at {cut}");
    }
}

#[test]
fn interim_responses_are_skipped() {
    let response = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let (events, ended) = read(response, &[]);
    assert_eq!(events, ["head 200 38 bytes Content-Length=2", "data ok"]);
    assert_eq!(ended, Ok(Some(Reuse::Yes)));
    let (events, _) = read(response, &[30]);
    assert_eq!(events, ["head 200 38 bytes Content-Length=2", "data ok"]);
}

#[test]
fn whether_the_connection_is_kept() {
    let cases: [(&[u8], Option<Reuse>); 6] = [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            Some(Reuse::Yes),
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            Some(Reuse::No),
        ),
        (
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            Some(Reuse::No),
        ),
        (
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
            Some(Reuse::Yes),
        ),
        // Bytes nobody asked for after the response.
        (b"HTTP/1.1 204 No Content\r\n\r\nextra", Some(Reuse::No)),
        // No length: the body runs to the connection's end.
        (b"HTTP/1.1 200 OK\r\n\r\nbody", None),
    ];
    for (response, expected) in cases {
        let (_, ended) = read(response, &[]);
        assert_eq!(ended, Ok(expected), "{}", String::from_utf8_lossy(response));
    }
    let mut reader = ResponseReader::new(Arrivals::new(None, Instant::now()));
    let mut ignore = |_: Event<'_>| Ok(());
    reader
        .take(Instant::now(), b"HTTP/1.1 200 OK\r\n\r\nbody", &mut ignore)
        .unwrap();
    assert_eq!(reader.at_end().unwrap(), Some(Reuse::No));
}

#[test]
fn a_connection_closed_early_says_whether_any_response_byte_came() {
    let mut reader = ResponseReader::new(Arrivals::new(None, Instant::now()));
    match reader.at_end() {
        Err(ReadFailure::Io {
            before_response: true,
            error,
        }) => assert_eq!(
            error.to_string(),
            "connection closed before any response byte"
        ),
        other => panic!("{other:?}"),
    }
    let mut ignore = |_: Event<'_>| Ok(());
    reader
        .take(
            Instant::now(),
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhal",
            &mut ignore,
        )
        .unwrap();
    match reader.at_end() {
        Err(ReadFailure::Io {
            before_response: false,
            error,
        }) => assert_eq!(
            error.to_string(),
            "connection closed before message completed"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_responses_are_named() {
    let (_, ended) = read(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", &[]);
    assert_eq!(
        ended,
        Err(
            "server disconnected: invalid HTTP response: a Content-Length that is not a number"
                .into()
        )
    );
    let (_, ended) = read(b"SSH-2.0-OpenSSH\r\n\r\n", &[]);
    assert_eq!(
        ended,
        Err("server disconnected: invalid HTTP response: invalid HTTP version".into())
    );
    let huge = format!(
        "HTTP/1.1 200 OK\r\nx-big: {}\r\n",
        "a".repeat(MAX_HEAD_BYTES)
    );
    let (_, ended) = read(huge.as_bytes(), &[100]);
    assert_eq!(
        ended,
        Err(format!(
            "server disconnected: invalid HTTP response: the response head exceeds {MAX_HEAD_BYTES} bytes"
        ))
    );
}

#[test]
fn what_the_caller_refuses_ends_the_response() {
    let mut reader = ResponseReader::new(Arrivals::new(None, Instant::now()));
    let mut refuse = |event: Event<'_>| match event {
        Event::Head(_) => Ok(()),
        Event::Data(..) => Err(TransportError::ResponseTooLarge { limit: 1 }),
    };
    let ended = reader.take(
        Instant::now(),
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        &mut refuse,
    );
    assert!(
        matches!(
            ended,
            Err(ReadFailure::Invalid(TransportError::ResponseTooLarge {
                limit: 1
            }))
        ),
        "{ended:?}"
    );
}

fn request(method: HttpMethod, headers: &[(&str, &str)], body: &'static [u8]) -> HttpRequest {
    HttpRequest {
        method,
        url: "http://127.0.0.1:8000/v1/chat/completions?x=1".into(),
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        body: Bytes::from_static(body),
        timeout: Some(Duration::from_secs(1)),
    }
}

fn head_of(request: &HttpRequest) -> Result<String, TransportError> {
    let target = parse_target(&request.url)?;
    request_head(request, &target).map(|head| String::from_utf8(head).unwrap())
}

#[test]
fn the_request_head_is_written_as_hyper_wrote_it() {
    let post = request(
        HttpMethod::Post,
        &[("Content-Type", "application/json"), ("X-Request-ID", "7")],
        b"{}",
    );
    assert_eq!(
        head_of(&post).unwrap(),
        "POST /v1/chat/completions?x=1 HTTP/1.1\r\ncontent-type: application/json\r\n\
         x-request-id: 7\r\nhost: 127.0.0.1:8000\r\ncontent-length: 2\r\n\r\n"
    );
    let get = request(HttpMethod::Get, &[("Host", "example.test")], b"");
    assert_eq!(
        head_of(&get).unwrap(),
        "GET /v1/chat/completions?x=1 HTTP/1.1\r\nhost: example.test\r\n\r\n"
    );
    // The transport frames the body: a length given as a header is not sent twice.
    let framed = request(HttpMethod::Post, &[("Content-Length", "99")], b"{}");
    assert_eq!(
        head_of(&framed).unwrap(),
        "POST /v1/chat/completions?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8000\r\ncontent-length: 2\r\n\r\n"
    );
}

#[test]
fn bad_header_names_and_values_are_refused_by_name_only() {
    let bad_value = request(HttpMethod::Post, &[("Authorization", "Bearer a\r\nb")], b"");
    assert_eq!(
        head_of(&bad_value).unwrap_err().to_string(),
        "the request could not be formed: invalid value for header `Authorization`"
    );
    let bad_name = request(HttpMethod::Post, &[("Bad Name", "v")], b"");
    assert_eq!(
        head_of(&bad_name).unwrap_err().to_string(),
        "the request could not be formed: invalid header name `Bad Name`"
    );
    let utf8_value = request(HttpMethod::Post, &[("X-Name", "café\tau lait")], b"");
    assert!(head_of(&utf8_value)
        .unwrap()
        .contains("x-name: café\tau lait\r\n"));
}
