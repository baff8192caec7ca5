//! Connections that close right after their first response while advertising keep-alive
//! ([`Quirks::close_after_response`](crate::Quirks::close_after_response)).
//!
//! llama.cpp's `llama-server` answers with `Keep-Alive: timeout=5, max=100` and yet closes
//! the socket about 0.14 ms after each streamed response. A client that takes the
//! connection from its pool at once races that close: its next request goes out on a
//! socket the server is closing and gets no answer. This serves every connection that
//! way, deterministically: one response with the keep-alive header, then the connection
//! shuts down; a second request that arrives first is never answered.

use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::body::MockBody;
use crate::error::DroppedByFault;
use crate::server::handle;
use crate::state::State;

/// What llama-server advertises on every response.
const KEEP_ALIVE: &str = "timeout=5, max=100";

/// Serves one response on `stream`, then closes it.
pub(crate) async fn serve(stream: TcpStream, state: Arc<State>) {
    let answered = Arc::new(Notify::new());
    let taken = Arc::new(AtomicBool::new(false));
    let service = {
        let answered = Arc::clone(&answered);
        service_fn(move |request: Request<Incoming>| {
            let state = Arc::clone(&state);
            let answered = Arc::clone(&answered);
            let first = !taken.swap(true, Ordering::Relaxed);
            async move {
                if !first {
                    // Erring makes hyper drop the connection without writing a byte: the
                    // request that raced the close.
                    return Err(Refused);
                }
                let mut response = handle(state, request).await.map_err(|_| Refused)?;
                response
                    .headers_mut()
                    .insert("keep-alive", HeaderValue::from_static(KEEP_ALIVE));
                Ok::<_, Refused>(response.map(|body| Answered { body, answered }))
            }
        })
    };
    let mut connection = pin!(http1::Builder::new()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service));
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = answered.notified() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, "closing connection ended with an error");
    }
}

/// The error that closes a connection without an answer.
#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection closing after its response; request not answered")
    }
}

impl std::error::Error for Refused {}

/// A response body that signals, once hyper has finished with it, that the connection can
/// close.
struct Answered {
    body: MockBody,
    answered: Arc<Notify>,
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.answered.notify_one();
    }
}

impl Body for Answered {
    type Data = Bytes;
    type Error = DroppedByFault;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
