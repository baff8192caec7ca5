//! The connection-level stamps behind the `http_req_*` metrics: when a new connection
//! started and finished connecting (carried on the connection, so every response on it
//! knows whether it reused it) and how many bytes the request and the response head
//! took. When bytes were written and read is [`super::wire`]'s.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tower_service::Service;

/// When a connection was opened: stored with the connection and copied into the
/// extensions of every response that travels on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectTiming {
    pub(crate) started: Instant,
    pub(crate) connected: Instant,
}

/// Wraps a connector to stamp each connection it opens.
#[derive(Debug, Clone)]
pub(crate) struct TimedConnector<C> {
    inner: C,
}

impl<C> TimedConnector<C> {
    pub(crate) fn new(inner: C) -> Self {
        Self { inner }
    }
}

type BoxedConnect<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<C> Service<Uri> for TimedConnector<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = Timed<C::Response>;
    type Error = C::Error;
    type Future = BoxedConnect<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let started = Instant::now();
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            Ok(Timed {
                io,
                timing: ConnectTiming {
                    started,
                    connected: Instant::now(),
                },
            })
        })
    }
}

/// A connection that knows when it was opened; reads and writes pass straight through.
#[derive(Debug)]
pub(crate) struct Timed<T> {
    io: T,
    timing: ConnectTiming,
}

impl<T> Timed<T> {
    /// When the connection was opened.
    pub(crate) fn timing(&self) -> ConnectTiming {
        self.timing
    }
}

impl<T: Connection> Connection for Timed<T> {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.timing)
    }
}

impl<T: Read + Unpin> Read for Timed<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Timed<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

/// The size of an HTTP/1.1 request as written: request line, the given headers plus
/// `content-length` (and `host` from the URL when the headers have none), the blank line
/// and the body.
pub(crate) fn request_size(request: &http::Request<Full<Bytes>>, body_len: usize) -> u64 {
    let uri = request.uri();
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut size = request.method().as_str().len() + 1 + target.len() + " HTTP/1.1\r\n".len();
    if !request.headers().contains_key(http::header::HOST) {
        let host = uri.authority().map_or("", |a| a.as_str());
        size += "host: \r\n".len() + host.len();
    }
    size += "content-length: \r\n".len() + body_len.to_string().len();
    for (name, value) in request.headers() {
        size += name.as_str().len() + 2 + value.len() + 2;
    }
    (size + 2 + body_len) as u64
}

/// The size of a response head as received: status line, headers and the blank line.
pub(crate) fn response_head_size(response: &http::response::Parts) -> u64 {
    let status = response.status;
    let reason = status.canonical_reason().unwrap_or("");
    let mut size = "HTTP/1.1 000 \r\n".len() + reason.len();
    for (name, value) in &response.headers {
        size += name.as_str().len() + 2 + value.len() + 2;
    }
    (size + 2) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_size_counts_line_headers_and_body() {
        let request = http::Request::post("http://127.0.0.1:8000/v1/chat")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(b"{\"x\":1}")))
            .unwrap();
        let expected = "POST /v1/chat HTTP/1.1\r\nhost: 127.0.0.1:8000\r\ncontent-length: 7\r\n\
                        content-type: application/json\r\n\r\n{\"x\":1}"
            .len() as u64;
        assert_eq!(request_size(&request, 7), expected);
    }

    #[test]
    fn a_host_header_of_the_request_is_counted_once() {
        let request = http::Request::post("http://127.0.0.1:80/v1/chat")
            .header("host", "127.0.0.1")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let expected =
            "POST /v1/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}".len() as u64;
        assert_eq!(request_size(&request, 2), expected);
    }
}
