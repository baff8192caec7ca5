//! `close_after_response`: one answer per connection, advertised as keep-alive, and no
//! answer to a request that reaches the closing connection (llama.cpp's llama-server).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use aiperf_mock_server::{MockConfig, MockServer, Quirks};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BODY: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}"#;

fn request() -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{BODY}",
        BODY.len()
    )
}

/// Everything the server writes until it closes the connection.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received))
        .await
        .expect("the server closes the connection")
        .ok();
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn two_requests_on_one_connection_get_one_answer_then_the_close() {
    let server = MockServer::start(MockConfig {
        quirks: Quirks::llama_server(),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    // Both requests go out before the first answer: the second is the one that races
    // the close.
    stream
        .write_all(format!("{}{}", request(), request()).as_bytes())
        .await
        .unwrap();
    let received = read_to_close(&mut stream).await;
    assert_eq!(received.matches("HTTP/1.1 200 OK").count(), 1, "{received}");
    let head = received
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .to_ascii_lowercase();
    assert!(head.contains("keep-alive: timeout=5, max=100"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    assert!(received.ends_with('}'), "one whole JSON body: {received}");
    let stats = server.stats();
    assert_eq!((stats.requests_total, stats.connections_accepted), (1, 1));
    server.shutdown().await;
}

#[tokio::test]
async fn a_lone_request_is_answered_and_the_connection_closed() {
    let server = MockServer::start(MockConfig {
        quirks: Quirks::llama_server(),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream.write_all(request().as_bytes()).await.unwrap();
    let received = read_to_close(&mut stream).await;
    assert!(received.starts_with("HTTP/1.1 200 OK\r\n"), "{received}");
    assert_eq!(server.stats().requests_total, 1);
    server.shutdown().await;
}
