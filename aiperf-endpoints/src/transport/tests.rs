//! Transport tests against tiny in-process servers on 127.0.0.1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aiperf_core::{Chunk, HttpMethod, SessionKey};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::h1::READ_BUFFER_BYTES;
use super::*;

/// What the test server does with each request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// A chunked SSE body: two events 50 ms apart.
    SlowStream,
    /// `200 ok` with Content-Length, keeping the connection open.
    Ok,
    /// `500` with a JSON error body.
    ServerError,
    /// `302` with a `Location`, a custom header and a non-UTF-8 header value.
    Redirect,
    /// Reads the request and never answers.
    Silent,
    /// A chunked body that never ends: 1 KiB chunks until the client goes away.
    Endless,
    /// `200` with a Content-Length body of [`LARGE_BODY_BYTES`], written at once.
    Large,
    /// Promises 100 body bytes, sends 5 and closes.
    Truncated,
    /// Answers anything (even a TLS ClientHello) with plain HTTP and closes.
    PlainHttpImmediately,
    /// Reads the request and closes without a byte of answer.
    CloseUnanswered,
    /// Answers the first request of each connection like `Ok`, with a keep-alive header,
    /// then behaves as the inner behaviour for the next one (the idle-close race).
    FirstOkThen(Later),
    /// Answers like `Ok`, keep-alive header and all, then closes the connection at once
    /// (llama.cpp's `llama-server` after a streamed response).
    OkThenClose,
}

/// What a `FirstOkThen` connection does with its second request.
#[derive(Clone, Copy)]
enum Later {
    CloseUnanswered,
    Truncated,
}

struct TestServer {
    url: String,
    accepted: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

async fn server(behaviour: Behaviour) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (accepted.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(connection(stream, behaviour, seen.clone()));
        }
    });
    TestServer {
        url,
        accepted,
        requests,
    }
}

async fn connection(mut stream: TcpStream, behaviour: Behaviour, seen: Arc<Mutex<Vec<String>>>) {
    if let Behaviour::PlainHttpImmediately = behaviour {
        let _ = stream
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await;
        return;
    }
    let mut buffer = Vec::new();
    let mut answered = 0;
    while let Some(request) = read_request(&mut stream, &mut buffer).await {
        seen.lock().unwrap().push(request);
        answered += 1;
        let behaviour = match behaviour {
            Behaviour::FirstOkThen(_) if answered == 1 => Behaviour::Ok,
            Behaviour::FirstOkThen(Later::CloseUnanswered) => Behaviour::CloseUnanswered,
            Behaviour::FirstOkThen(Later::Truncated) => Behaviour::Truncated,
            other => other,
        };
        let written = match behaviour {
            Behaviour::SlowStream => slow_stream(&mut stream).await,
            Behaviour::Endless => {
                endless(&mut stream).await;
                return;
            }
            Behaviour::Ok => stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nKeep-Alive: timeout=5, max=100\r\n\
                      Content-Length: 2\r\n\r\nok",
                )
                .await,
            Behaviour::Large => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {LARGE_BODY_BYTES}\r\n\r\n");
                stream.write_all(&[head.as_bytes(), &large_body()].concat()).await
            }
            Behaviour::ServerError => {
                let body = br#"{"error":{"message":"boom"}}"#;
                let head = format!(
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                stream.write_all(&[head.as_bytes(), body].concat()).await
            }
            Behaviour::Redirect => {
                stream
                    .write_all(
                        b"HTTP/1.1 302 Found\r\nLocation: https://cdn.test/blob?x=1\r\n\
                          X-Repo-Commit: abc123\r\nX-Latin: caf\xe9\r\nContent-Length: 0\r\n\r\n",
                    )
                    .await
            }
            Behaviour::Silent => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                return;
            }
            Behaviour::Truncated => {
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello")
                    .await;
                return;
            }
            Behaviour::PlainHttpImmediately | Behaviour::CloseUnanswered => return,
            Behaviour::OkThenClose => {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 2\r\n\r\nok",
                    )
                    .await;
                return;
            }
            Behaviour::FirstOkThen(_) => unreachable!("resolved above"),
        };
        if written.is_err() {
            return;
        }
    }
}

/// The size of the `Large` answer's body: many times the read buffer.
const LARGE_BODY_BYTES: usize = 1024 * 1024;

/// The `Large` answer's body: bytes that differ from their neighbours, so a chunk
/// misplaced or lost changes it.
fn large_body() -> Vec<u8> {
    (0..LARGE_BODY_BYTES).map(|i| (i % 251) as u8).collect()
}

async fn slow_stream(stream: &mut TcpStream) -> std::io::Result<()> {
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await?;
    for event in ["data: a\n\n", "data: b\n\n"] {
        stream
            .write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())
            .await?;
        stream.flush().await?;
        // Long enough apart that a loaded machine still reads them as two chunks.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    stream.write_all(b"0\r\n\r\n").await
}

/// Writes a chunked body until a write fails (the client closed the connection).
async fn endless(stream: &mut TcpStream) {
    let head =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head).await.is_err() {
        return;
    }
    let chunk = format!("400\r\n{}\r\n", "x".repeat(1024));
    while stream.write_all(chunk.as_bytes()).await.is_ok() {}
}

/// Reads one request (head and Content-Length body); `None` when the client closed.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                let request: Vec<u8> = buffer.drain(..end + 4 + length).collect();
                return Some(String::from_utf8_lossy(&request).to_string());
            }
        }
        let mut read = [0u8; 4096];
        match stream.read(&mut read).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&read[..n]),
        }
    }
}

fn post(url: &str, timeout: Option<Duration>) -> HttpRequest {
    HttpRequest {
        method: HttpMethod::Post,
        url: url.to_string(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Authorization".into(), "Bearer secret-key".into()),
        ],
        body: Bytes::from_static(b"{\"x\":1}"),
        timeout,
    }
}

fn transport() -> HttpTransport {
    HttpTransport::builder().build().unwrap()
}

#[tokio::test]
async fn chunks_are_stamped_on_arrival() {
    stamped_on_arrival(transport()).await;
}

/// The sending runtime reads the sockets itself.
#[tokio::test]
async fn without_the_socket_reader_chunks_are_stamped_on_arrival() {
    stamped_on_arrival(
        HttpTransport::builder()
            .socket_reader(false)
            .build()
            .unwrap(),
    )
    .await;
}

/// The socket reader counts each read of response bytes for the run's lateness figures,
/// once: taking them starts the count again.
#[tokio::test]
async fn the_socket_reader_counts_its_reads_until_taken() {
    let transport = transport();
    assert_eq!(transport.take_read_lateness(), ReadLateness::default());
    let server = server(Behaviour::SlowStream).await;
    let exchange = transport
        .send(post(&format!("{}/v1/chat/completions", server.url), None))
        .await;
    assert_eq!(exchange.chunks.len(), 2);
    // The head, then the first event written right after it (read with it or on its
    // own), the second event and the body's end, each 150 ms later.
    let reads = transport.take_read_lateness().reads;
    assert!((3..=4).contains(&reads), "{reads} reads");
    assert_eq!(transport.take_read_lateness(), ReadLateness::default());

    let without = HttpTransport::builder()
        .socket_reader(false)
        .build()
        .unwrap();
    let exchange = without
        .send(post(&format!("{}/v1/chat/completions", server.url), None))
        .await;
    assert_eq!(exchange.chunks.len(), 2);
    assert_eq!(without.take_read_lateness(), ReadLateness::default());
}

async fn stamped_on_arrival(transport: HttpTransport) {
    let server = server(Behaviour::SlowStream).await;
    let exchange = transport
        .send(post(&format!("{}/v1/chat/completions", server.url), None))
        .await;
    assert_eq!(exchange.error, None);
    assert_eq!(exchange.status, Some(200));
    assert_eq!(exchange.content_type.as_deref(), Some("text/event-stream"));
    assert_eq!(exchange.body(), b"data: a\n\ndata: b\n\n");
    let chunks: Vec<Chunk> = exchange.chunks.iter().collect();
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_eq!(chunks[0].bytes, b"data: a\n\n");
    assert_eq!(chunks[1].bytes, b"data: b\n\n");
    let head_at = exchange.head_at.unwrap();
    assert!(exchange.started_at <= head_at);
    assert!(head_at <= chunks[0].at);
    assert!(chunks[1].at <= exchange.ended_at);
    let gap = chunks[1].at - chunks[0].at;
    // 150 ms apart at the server; a late first read on a busy machine eats into it,
    // but stamping at the end of the body would make it near zero.
    assert!(gap >= Duration::from_millis(100), "gap {gap:?}");
    let request = &server.requests.lock().unwrap()[0];
    assert!(
        request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(request
        .to_ascii_lowercase()
        .contains("content-type: application/json"));
    assert!(request.ends_with("\r\n\r\n{\"x\":1}"), "{request}");
}

#[tokio::test]
async fn refused_connection_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let exchange = transport()
        .send(post(&url, Some(Duration::from_secs(5))))
        .await;
    assert!(
        matches!(&exchange.error, Some(TransportError::Connect(m)) if m.contains("refused")),
        "{:?}",
        exchange.error
    );
    assert_eq!(exchange.status, None);
    assert_eq!(exchange.head_at, None);
}

#[tokio::test]
async fn a_silent_server_times_out_after_the_request_timeout() {
    let server = server(Behaviour::Silent).await;
    let timeout = Duration::from_millis(200);
    let exchange = transport().send(post(&server.url, Some(timeout))).await;
    assert_eq!(exchange.error, Some(TransportError::Timeout(timeout)));
    let took = exchange.ended_at - exchange.started_at;
    assert!(took >= timeout && took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test]
async fn the_timeout_covers_the_body() {
    let server = server(Behaviour::SlowStream).await;
    // Between the events (150 ms apart), with room for a loaded machine to deliver the
    // first: the transport's reader thread must also get the CPU.
    let timeout = Duration::from_millis(100);
    let exchange = transport().send(post(&server.url, Some(timeout))).await;
    assert_eq!(exchange.error, Some(TransportError::Timeout(timeout)));
    assert_eq!(exchange.status, Some(200));
    assert_eq!(exchange.body(), b"data: a\n\n");
}

#[tokio::test]
async fn a_client_cancellation_cuts_the_stream_and_closes_the_connection() {
    let server = server(Behaviour::SlowStream).await;
    let transport = transport();
    // Between the events (150 ms apart), with room for a loaded machine to deliver the
    // first.
    let cancel_after = Duration::from_millis(100);
    let control = SendControl {
        cancel_after: Some(cancel_after),
        ..SendControl::default()
    };
    let exchange = transport
        .send_controlled(post(&server.url, Some(Duration::from_secs(5))), control)
        .await;
    assert_eq!(
        exchange.error,
        Some(TransportError::CancelledByClient(cancel_after))
    );
    assert_eq!(
        exchange.error.as_ref().unwrap().to_string(),
        "Request cancelled 0.100s after being sent"
    );
    assert_eq!(exchange.body(), b"data: a\n\n", "what came before is kept");
    // The aborted connection is not reused.
    let again = transport.send(post(&server.url, None)).await;
    assert_eq!(again.error, None);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_first_chunk_is_signalled_once_it_is_stamped() {
    let server = server(Behaviour::SlowStream).await;
    let first_chunk = Arc::new(tokio::sync::Notify::new());
    let control = SendControl {
        first_chunk: Some(Arc::clone(&first_chunk)),
        ..SendControl::default()
    };
    let transport = transport();
    let send = transport.send_controlled(post(&server.url, None), control);
    tokio::pin!(send);
    let signalled_at = tokio::select! {
        () = first_chunk.notified() => std::time::Instant::now(),
        _ = &mut send => panic!("the exchange ended before the first chunk was signalled"),
    };
    let exchange = send.await;
    let stamps: Vec<_> = exchange.chunks.iter().map(|chunk| chunk.at).collect();
    assert!(signalled_at >= stamps[0]);
    assert!(
        signalled_at < stamps[1],
        "signalled before the second event"
    );
}

#[tokio::test]
async fn sticky_sessions_keep_a_connection_per_conversation_until_its_last_turn() {
    let server = server(Behaviour::Ok).await;
    let transport = HttpTransport::builder()
        .sticky_sessions(true)
        .build()
        .unwrap();
    let turn = |id: &str, last: bool| SendControl {
        session: Some(SessionKey {
            id: id.into(),
            last,
        }),
        ..SendControl::default()
    };
    for control in [
        turn("a", false),
        turn("b", false),
        turn("a", false),
        turn("b", true),
        turn("a", true),
    ] {
        let exchange = transport
            .send_controlled(post(&server.url, None), control)
            .await;
        assert_eq!(exchange.error, None);
    }
    assert_eq!(
        server.accepted.load(Ordering::SeqCst),
        2,
        "one connection per conversation, reused across its turns"
    );
    // A new conversation with a finished one's id gets a fresh connection.
    transport
        .send_controlled(post(&server.url, None), turn("a", true))
        .await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_trace_tells_a_new_connection_from_a_reused_one() {
    let server = server(Behaviour::Ok).await;
    let transport = transport();
    let first = transport.send(post(&server.url, None)).await;
    let second = transport.send(post(&server.url, None)).await;
    let (first_trace, second_trace) = (first.trace.unwrap(), second.trace.unwrap());
    assert!(!first_trace.connection_reused);
    let (connect_start, connected) = first_trace.connect.unwrap();
    assert!(first.started_at <= connect_start && connect_start <= connected);
    assert!(second_trace.connection_reused);
    assert_eq!(second_trace.connect, None);
    for (exchange, trace) in [(&first, first_trace), (&second, second_trace)] {
        let sent = trace.request_sent_at.unwrap();
        assert!(exchange.started_at <= sent && sent <= exchange.head_at.unwrap());
        // The request line, host, content-length, the two headers and the 7-byte body.
        let host = server.url.trim_start_matches("http://");
        let expected = format!(
            "POST / HTTP/1.1\r\nhost: {host}\r\ncontent-length: 7\r\ncontent-type: application/json\r\nauthorization: Bearer secret-key\r\n\r\n{{\"x\":1}}"
        );
        assert_eq!(trace.request_bytes, expected.len() as u64);
        assert!(trace.response_head_bytes > "HTTP/1.1 200 OK\r\n\r\n".len() as u64);
    }
}

#[tokio::test]
async fn sequential_requests_reuse_one_connection() {
    let server = server(Behaviour::Ok).await;
    let transport = transport();
    for _ in 0..3 {
        let exchange = transport.send(post(&server.url, None)).await;
        assert_eq!(exchange.error, None);
        assert_eq!(exchange.body(), b"ok");
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests.lock().unwrap().len(), 3);
}

/// A read that took less than it asked for emptied the socket: the next response is waited
/// for, not looked for first with a read that finds nothing.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_drained_socket_is_not_read_again_before_the_next_response() {
    let server = server(Behaviour::Ok).await;
    let transport = HttpTransport::builder()
        .socket_reader(false)
        .build()
        .unwrap();
    super::wire::FOUND_EMPTY.set(0);
    for _ in 0..5 {
        let exchange = transport.send(post(&server.url, None)).await;
        assert_eq!(exchange.error, None);
        assert_eq!(exchange.body(), b"ok");
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(super::wire::FOUND_EMPTY.get(), 0);
}

#[tokio::test]
async fn a_reused_connection_closed_before_answering_is_retried_once_on_a_fresh_one() {
    let server = server(Behaviour::FirstOkThen(Later::CloseUnanswered)).await;
    let transport = transport();
    let url = format!("{}/v1/chat/completions", server.url);
    let first = transport.send(post(&url, None)).await;
    assert_eq!((first.status, first.retries), (Some(200), 0));
    let second = transport.send(post(&url, None)).await;
    assert_eq!(second.error, None);
    assert_eq!(second.status, Some(200));
    assert_eq!(second.body(), b"ok");
    assert_eq!(second.retries, 1);
    let trace = second.trace.unwrap();
    assert!(
        !trace.connection_reused,
        "the retry opened its own connection"
    );
    // The stamps are the retry's: it started just before opening its connection.
    let (connect_started, _) = trace.connect.unwrap();
    assert!(second.started_at <= connect_started);
    assert!(connect_started - second.started_at < Duration::from_secs(1));
    // The first connection served one request and dropped the second; the retry went out
    // on a second connection.
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(server.requests.lock().unwrap().len(), 3);
}

/// The close reached the client before the next request: the connection is found closed
/// when taken from the pool and dropped, so the request goes out once, on a new one.
#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_used_again() {
    let server = server(Behaviour::OkThenClose).await;
    for socket_reader in [true, false] {
        let transport = HttpTransport::builder()
            .socket_reader(socket_reader)
            .build()
            .unwrap();
        let accepted_before = server.accepted.load(Ordering::SeqCst);
        for _ in 0..3 {
            let exchange = transport.send(post(&server.url, None)).await;
            assert_eq!(exchange.error, None);
            assert_eq!(exchange.body(), b"ok");
            assert_eq!(exchange.retries, 0, "socket reader {socket_reader}");
            assert!(!exchange.trace.unwrap().connection_reused);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst) - accepted_before, 3);
    }
}

#[tokio::test]
async fn idle_connections_are_kept_up_to_the_idle_timeout() {
    let server = server(Behaviour::Ok).await;
    let transport = HttpTransport::builder()
        .pool_idle_timeout(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let reused = |exchange: RawExchange| exchange.trace.unwrap().connection_reused;
    assert!(!reused(transport.send(post(&server.url, None)).await));
    assert!(reused(transport.send(post(&server.url, None)).await));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!reused(transport.send(post(&server.url, None)).await));
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn without_idle_connections_every_request_opens_its_own() {
    let server = server(Behaviour::Ok).await;
    let transport = HttpTransport::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for _ in 0..3 {
        assert_eq!(transport.send(post(&server.url, None)).await.error, None);
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
}

/// Concurrent requests each take a connection of their own, and give it back: the next
/// round reuses them all.
#[tokio::test]
async fn concurrent_requests_share_the_pool_without_sharing_a_connection() {
    let server = server(Behaviour::SlowStream).await;
    let transport = Arc::new(transport());
    for round in 1..=2 {
        let sends: Vec<_> = (0..4)
            .map(|_| {
                let transport = Arc::clone(&transport);
                let url = server.url.clone();
                tokio::spawn(async move { transport.send(post(&url, None)).await })
            })
            .collect();
        for send in sends {
            let exchange = send.await.unwrap();
            assert_eq!(exchange.error, None);
            assert_eq!(exchange.body(), b"data: a\n\ndata: b\n\n");
            assert_eq!(exchange.trace.unwrap().connection_reused, round == 2);
        }
    }
    assert_eq!(server.accepted.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_new_connection_closed_before_answering_is_not_retried() {
    let server = server(Behaviour::CloseUnanswered).await;
    let exchange = transport()
        .send(post(&format!("{}/", server.url), None))
        .await;
    assert!(
        matches!(exchange.error, Some(TransportError::Disconnected(_))),
        "{:?}",
        exchange.error
    );
    assert_eq!(exchange.retries, 0);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_reused_connection_that_answered_in_part_is_not_retried() {
    let server = server(Behaviour::FirstOkThen(Later::Truncated)).await;
    let transport = transport();
    let url = format!("{}/", server.url);
    assert_eq!(transport.send(post(&url, None)).await.status, Some(200));
    let second = transport.send(post(&url, None)).await;
    assert_eq!(second.status, Some(200));
    assert!(
        matches!(second.error, Some(TransportError::Disconnected(_))),
        "{:?}",
        second.error
    );
    assert_eq!(second.body(), b"hello");
    assert_eq!(second.retries, 0);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_endless_body_ends_at_the_response_limit_and_closes_the_connection() {
    let server = server(Behaviour::Endless).await;
    let transport = HttpTransport::builder()
        .max_response_bytes(10_000)
        .build()
        .unwrap();
    // No request timeout: only the limit can end this exchange.
    let exchange = tokio::time::timeout(
        Duration::from_secs(20),
        transport.send(post(&server.url, None)),
    )
    .await
    .expect("the limit ends the exchange");
    assert_eq!(exchange.status, Some(200));
    assert_eq!(
        exchange.error,
        Some(TransportError::ResponseTooLarge { limit: 10_000 })
    );
    assert_eq!(
        exchange.error.as_ref().unwrap().type_name(),
        "ResponseTooLargeError"
    );
    assert!(exchange.chunks.is_empty(), "what was read is dropped");
    // The connection was dropped, not returned to the pool half-read.
    let _ = transport
        .send(post(&server.url, Some(Duration::from_secs(5))))
        .await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_large_body_is_read_through_a_bounded_buffer_and_kept_whole() {
    let server = server(Behaviour::Large).await;
    let exchange = transport()
        .send(post(&server.url, Some(Duration::from_secs(20))))
        .await;
    assert_eq!(exchange.error, None);
    assert!(exchange.body() == large_body(), "the body arrived changed");
    // hyper's default buffer grows to ~400 KB under a fast sender; the bounded one never
    // yields more than it holds.
    let largest = exchange.chunks.iter().map(|chunk| chunk.bytes.len()).max();
    assert_eq!(largest, Some(READ_BUFFER_BYTES));
    assert!(exchange.chunks.len() >= LARGE_BODY_BYTES / READ_BUFFER_BYTES);
}

#[test]
fn the_default_response_limit_is_64_mib() {
    assert_eq!(DEFAULT_MAX_RESPONSE_BYTES, 64 * 1024 * 1024);
    assert_eq!(
        HttpTransport::builder().max_response_bytes,
        DEFAULT_MAX_RESPONSE_BYTES
    );
}

#[tokio::test]
async fn error_statuses_keep_their_body() {
    let server = server(Behaviour::ServerError).await;
    let exchange = transport().send(post(&server.url, None)).await;
    assert_eq!(exchange.error, None);
    assert_eq!(exchange.status, Some(500));
    assert_eq!(exchange.content_type.as_deref(), Some("application/json"));
    assert_eq!(exchange.body(), br#"{"error":{"message":"boom"}}"#);
}

#[tokio::test]
async fn a_body_cut_short_is_a_disconnect_with_the_bytes_seen() {
    let server = server(Behaviour::Truncated).await;
    let exchange = transport().send(post(&server.url, None)).await;
    assert!(
        matches!(exchange.error, Some(TransportError::Disconnected(_))),
        "{:?}",
        exchange.error
    );
    assert_eq!(exchange.status, Some(200));
    assert_eq!(exchange.body(), b"hello");
}

#[tokio::test]
async fn a_non_tls_answer_to_https_is_a_tls_error() {
    let server = server(Behaviour::PlainHttpImmediately).await;
    let url = server.url.replace("http://", "https://");
    let exchange = transport()
        .send(post(&url, Some(Duration::from_secs(5))))
        .await;
    assert!(
        matches!(exchange.error, Some(TransportError::Tls(_))),
        "{:?}",
        exchange.error
    );
}

#[tokio::test]
async fn each_request_goes_to_its_own_url_whatever_was_sent_before() {
    let ok = server(Behaviour::Ok).await;
    let failing = server(Behaviour::ServerError).await;
    let transport = transport();
    let mut statuses = Vec::new();
    for url in [
        format!("{}/first?q=1", ok.url),
        format!("{}/v1/chat/completions", failing.url),
        "ftp://h/x".to_owned(),
        format!("{}/first?q=1", ok.url),
        format!("{}/second", ok.url),
    ] {
        let exchange = transport.send(post(&url, None)).await;
        statuses.push(exchange.status);
    }
    assert_eq!(statuses, [Some(200), Some(500), None, Some(200), Some(200)]);
    let request_lines = |server: &TestServer| -> Vec<String> {
        let requests = server.requests.lock().unwrap();
        requests
            .iter()
            .map(|r| r.lines().next().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        request_lines(&ok),
        [
            "POST /first?q=1 HTTP/1.1",
            "POST /first?q=1 HTTP/1.1",
            "POST /second HTTP/1.1"
        ]
    );
    assert_eq!(
        request_lines(&failing),
        ["POST /v1/chat/completions HTTP/1.1"]
    );
    // The whole request as the server read it: the Host header as hyper-util writes it,
    // after the request's own headers.
    let host = ok.url.trim_start_matches("http://");
    assert_eq!(
        ok.requests.lock().unwrap()[0],
        format!(
            "POST /first?q=1 HTTP/1.1\r\ncontent-type: application/json\r\n\
             authorization: Bearer secret-key\r\nhost: {host}\r\ncontent-length: 7\r\n\r\n{{\"x\":1}}"
        )
    );
}

#[tokio::test]
async fn every_request_carries_its_own_headers_whatever_was_sent_before() {
    let ok = server(Behaviour::Ok).await;
    let transport = transport();
    let with = |headers: &[(&str, &str)]| HttpRequest {
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        ..post(&ok.url, None)
    };
    let sent = [
        with(&[("Accept", "a/b"), ("X-Request-ID", "1")]),
        with(&[("Accept", "a/b"), ("X-Request-ID", "2")]),
        with(&[("X-Request-ID", "3"), ("Accept", "a/b"), ("X-Extra", "e")]),
        with(&[("Accept", "a/b"), ("X-Request-ID", "bad\nvalue")]),
        with(&[("Accept", "c/d")]),
        with(&[]),
        with(&[("accept", "c/d"), ("X-Request-ID", "4")]),
    ];
    let mut errors = Vec::new();
    for request in sent {
        errors.push(transport.send(request).await.error.map(|e| e.to_string()));
    }
    assert_eq!(
        errors[3].as_deref(),
        Some("the request could not be formed: invalid value for header `X-Request-ID`")
    );
    assert!(
        errors
            .iter()
            .enumerate()
            .all(|(i, e)| i == 3 || e.is_none()),
        "{errors:?}"
    );
    // The header lines the server read, between the request line and `host`.
    let heads: Vec<String> = ok
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|request| {
            request
                .lines()
                .skip(1)
                .take_while(|line| !line.starts_with("host:"))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    assert_eq!(
        heads,
        [
            "accept: a/b|x-request-id: 1",
            "accept: a/b|x-request-id: 2",
            "x-request-id: 3|accept: a/b|x-extra: e",
            "accept: c/d",
            "",
            "accept: c/d|x-request-id: 4",
        ]
    );
}

#[tokio::test]
async fn bad_urls_and_headers_fail_without_sending_or_leaking_values() {
    let transport = transport();
    for url in ["localhost:8000/x", "ftp://h/x", "http://", "not a url"] {
        let exchange = transport.send(post(url, None)).await;
        assert!(
            matches!(exchange.error, Some(TransportError::InvalidUrl { .. })),
            "{url}: {:?}",
            exchange.error
        );
    }
    let mut request = post("http://127.0.0.1:1/", None);
    request
        .headers
        .push(("Authorization".into(), "Bearer top\nsecret".into()));
    let exchange = transport.send(request).await;
    let error = exchange.error.unwrap();
    assert!(
        matches!(error, TransportError::InvalidRequest(_)),
        "{error:?}"
    );
    assert_eq!(error.type_name(), "InvalidRequest");
    let message = error.to_string();
    assert!(
        message.starts_with("the request could not be formed: "),
        "{message}"
    );
    assert!(message.contains("Authorization"), "{message}");
    assert!(!message.contains("secret"), "{message}");

    let mut request = post("http://127.0.0.1:1/", None);
    request.headers.push(("Bad Name".into(), "v".into()));
    let exchange = transport.send(request).await;
    assert!(
        matches!(&exchange.error, Some(TransportError::InvalidRequest(m)) if m.contains("Bad Name")),
        "{:?}",
        exchange.error
    );
    assert!(exchange.headers.is_empty());
}

#[tokio::test]
async fn response_headers_are_kept_in_order() {
    let server = server(Behaviour::Redirect).await;
    let mut request = post(&server.url, None);
    request.method = HttpMethod::Get;
    request.body = Bytes::new();
    let exchange = transport().send(request).await;
    assert_eq!(exchange.error, None);
    assert_eq!(exchange.status, Some(302));
    let names: Vec<&str> = exchange.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["location", "x-repo-commit", "x-latin", "content-length"]
    );
    assert_eq!(
        exchange.header("Location"),
        Some("https://cdn.test/blob?x=1")
    );
    assert_eq!(exchange.header("x-repo-commit"), Some("abc123"));
    assert_eq!(exchange.header("x-latin"), Some("caf\u{fffd}"));
    assert_eq!(exchange.content_type, None);

    // A refused connection has no head, so no headers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let exchange = transport().send(post(&url, None)).await;
    assert!(exchange.headers.is_empty());
}

#[tokio::test]
async fn content_type_is_among_the_headers() {
    let server = server(Behaviour::Ok).await;
    let exchange = transport().send(post(&server.url, None)).await;
    assert_eq!(exchange.content_type.as_deref(), Some("text/plain"));
    assert_eq!(exchange.header("content-type"), Some("text/plain"));
    assert_eq!(exchange.header("content-length"), Some("2"));
}

#[test]
fn debug_output_shows_settings_only() {
    let transport = HttpTransport::builder()
        .pool_max_idle_per_host(4)
        .connect_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let debug = format!("{transport:?}");
    assert!(debug.contains("pool_max_idle_per_host: 4"), "{debug}");
}

#[tokio::test]
async fn an_enormous_timeout_means_no_timeout() {
    let server = server(Behaviour::Ok).await;
    let exchange = transport()
        .send(post(&server.url, Some(Duration::MAX)))
        .await;
    assert_eq!(exchange.error, None);
    assert_eq!(exchange.body(), b"ok");
}

/// The runtime is blocked while both events arrive: their stamps are still their own
/// arrivals (the socket reader read them as they came), not when the runtime got round
/// to them.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_chunk_read_late_keeps_its_arrival_stamp() {
    // The server runs on a runtime of its own, so blocking this one does not stop it.
    let (url_tx, url_rx) = tokio::sync::oneshot::channel();
    let (seen_tx, seen_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let server = server(Behaviour::SlowStream).await;
            url_tx.send(server.url.clone()).unwrap();
            while server.requests.lock().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let _ = seen_tx.send(());
            // Keep serving until the test ends.
            std::future::pending::<()>().await;
        });
    });
    let url = url_rx.await.unwrap();
    let sending = tokio::spawn(async move {
        transport()
            .send(post(&format!("{url}/v1/chat/completions"), None))
            .await
    });
    seen_rx.await.unwrap();
    // Events go out 150 ms apart; this thread reads neither while it sleeps.
    std::thread::sleep(Duration::from_secs(1));
    let unblocked_at = Instant::now();
    let exchange = sending.await.unwrap();
    assert_eq!(exchange.chunks.len(), 2, "{:?}", exchange.chunks);
    let (first, second) = (
        exchange.chunks.get(0).unwrap().at,
        exchange.chunks.get(1).unwrap().at,
    );
    assert!(
        second + Duration::from_millis(500) < unblocked_at,
        "stamped {:?} before the runtime could read",
        unblocked_at.saturating_duration_since(second)
    );
    // 150 ms apart at the server: the socket reader read each on its own (this runtime
    // would have read both at once, and stamped both with the second's arrival).
    let gap = second - first;
    assert!(gap >= Duration::from_millis(100), "gap {gap:?}");
}
