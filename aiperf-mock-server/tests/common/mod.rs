//! A raw hyper HTTP/1 client that stamps every body frame as it arrives.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// What came back, with arrival stamps.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Just before the request was handed to hyper.
    pub sent: Instant,
    /// Response head received.
    pub head_at: Instant,
    /// Body frames and when they arrived.
    pub frames: Vec<(Instant, Bytes)>,
    /// The body ended with an error (connection dropped).
    pub error: Option<String>,
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Reply {
    pub(crate) fn body(&self) -> Vec<u8> {
        self.frames
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.body()).unwrap()
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    pub(crate) fn ms_since_sent(&self, t: Instant) -> f64 {
        (t - self.sent).as_secs_f64() * 1000.0
    }
    /// SSE events of the body.
    pub(crate) fn events(&self) -> Vec<Event> {
        parse_sse(&self.text())
    }
    /// `data` of every event, parsed as JSON, `[DONE]` and non-JSON left out.
    pub(crate) fn data_json(&self) -> Vec<Value> {
        self.events()
            .iter()
            .filter(|e| e.data != "[DONE]")
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect()
    }
    /// Arrival time of the frame holding the byte at `offset` of the body.
    pub(crate) fn arrival_of_offset(&self, offset: usize) -> Instant {
        let mut end = 0;
        for (t, b) in &self.frames {
            end += b.len();
            if offset < end {
                return *t;
            }
        }
        panic!("offset {offset} beyond body of {end} bytes");
    }
}

pub(crate) fn parse_sse(text: &str) -> Vec<Event> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut ev = Event {
                event: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    ev.event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    ev.data.push_str(v);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            ev
        })
        .collect()
}

/// A kept-alive HTTP/1 connection.
pub(crate) struct Conn {
    addr: SocketAddr,
    send: SendRequest<Full<Bytes>>,
}

impl Conn {
    pub(crate) async fn open(addr: SocketAddr) -> Conn {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Conn { addr, send }
    }

    pub(crate) async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Reply, String> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string());
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            req = req.header("content-type", "application/json");
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(Bytes::from(body.to_string()))).unwrap();
        self.send.ready().await.map_err(|e| e.to_string())?;
        let sent = Instant::now();
        let resp = self
            .send
            .send_request(req)
            .await
            .map_err(|e| e.to_string())?;
        let head_at = Instant::now();
        let (parts, mut body) = resp.into_parts();
        let mut frames = Vec::new();
        let mut error = None;
        loop {
            match body.frame().await {
                Some(Ok(f)) => {
                    let t = Instant::now();
                    if let Ok(d) = f.into_data() {
                        frames.push((t, d));
                    }
                }
                Some(Err(e)) => {
                    error = Some(e.to_string());
                    break;
                }
                None => break,
            }
        }
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            sent,
            head_at,
            frames,
            error,
        })
    }
}

/// One request on a new connection.
pub(crate) async fn request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Reply, String> {
    Conn::open(addr)
        .await
        .send(method, path, headers, body)
        .await
}

pub(crate) async fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    request(addr, Method::POST, path, &[], &body.to_string())
        .await
        .unwrap()
}

pub(crate) async fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, Method::GET, path, &[], "").await.unwrap()
}

/// Content deltas (chat) of a streamed reply, in order.
pub(crate) fn chat_content(r: &Reply) -> (String, String) {
    let mut content = String::new();
    let mut reasoning = String::new();
    for v in r.data_json() {
        if let Some(d) = v["choices"].get(0).map(|c| &c["delta"]) {
            if let Some(s) = d["content"].as_str() {
                content.push_str(s);
            }
            if let Some(s) = d["reasoning_content"].as_str() {
                reasoning.push_str(s);
            }
        }
    }
    (content, reasoning)
}

/// Words of a generated text (each is one token).
pub(crate) fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Prometheus text exposition: check every line, return `(name{labels}, value)` samples.
pub(crate) fn parse_prometheus(text: &str) -> Vec<(String, f64)> {
    let mut typed = std::collections::HashSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap();
            let kind = it.next().unwrap();
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            typed.insert(name.to_string());
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line}");
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad sample line {line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line}"));
        let name = series.split('{').next().unwrap();
        if series.contains('{') {
            assert!(series.ends_with('}'), "unterminated labels in {line}");
        }
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad name {name}"
        );
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "sample without # TYPE: {line}");
        samples.push((series.to_string(), value));
    }
    samples
}

/// Value of the first sample whose series starts with `prefix`.
pub(crate) fn sample(samples: &[(String, f64)], prefix: &str) -> f64 {
    samples
        .iter()
        .find(|(s, _)| s.starts_with(prefix))
        .map_or_else(|| panic!("no sample {prefix}"), |(_, v)| *v)
}

pub(crate) fn dur_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How many times a lateness check is measured before it fails. A loaded machine only
/// ever delays the client that stamps arrivals, now and then; a schedule that drifts is
/// late in every attempt. So a check passes when one attempt meets it, and a real drift
/// still fails all of them.
pub(crate) const ATTEMPTS: usize = 3;

/// Runs `attempt` until it returns `Ok`, at most [`ATTEMPTS`] times; panics with every
/// attempt's reason if none did.
pub(crate) async fn in_some_attempt<F, Fut>(mut attempt: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut reasons = Vec::new();
    for _ in 0..ATTEMPTS {
        match attempt().await {
            Ok(()) => return,
            Err(reason) => reasons.push(reason),
        }
    }
    panic!("late in every attempt: {}", reasons.join("; "));
}
