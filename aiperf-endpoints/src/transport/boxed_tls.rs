//! Connections as hyper holds them: plain TCP inline, TLS boxed.
//!
//! hyper-rustls's `MaybeHttpsStream` holds a TLS session inline (rustls's state, about
//! 1 KB), so every plain connection would carry that room too, in the connection task
//! hyper keeps for as long as the connection is open: 10 MB over 10,000 streams.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::MaybeHttpsStream;
use hyper_util::client::legacy::connect::{Connected, Connection};
use tower_service::Service;

use super::wire::WireStream;

/// Wraps the TLS connector so that what it opens is a [`Stream`].
#[derive(Debug, Clone)]
pub(crate) struct BoxTls<C> {
    inner: C,
}

impl<C> BoxTls<C> {
    pub(crate) fn new(inner: C) -> Self {
        Self { inner }
    }
}

type BoxedConnect<E> = Pin<Box<dyn Future<Output = Result<Stream, E>> + Send>>;

impl<C> Service<Uri> for BoxTls<C>
where
    C: Service<Uri, Response = MaybeHttpsStream<WireStream>>,
    C::Future: Send + 'static,
{
    type Response = Stream;
    type Error = C::Error;
    type Future = BoxedConnect<C::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            Ok(match connecting.await? {
                MaybeHttpsStream::Http(plain) => Stream::Plain(plain),
                tls @ MaybeHttpsStream::Https(_) => Stream::Tls(Box::new(tls)),
            })
        })
    }
}

/// A connection: plain, or TLS (boxed).
#[derive(Debug)]
pub(crate) enum Stream {
    Plain(WireStream),
    Tls(Box<MaybeHttpsStream<WireStream>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Stream::Plain(plain) => plain.connected(),
            Stream::Tls(tls) => tls.connected(),
        }
    }
}

impl Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(plain) => Pin::new(plain).poll_read(cx, buf),
            Stream::Tls(tls) => Pin::new(&mut **tls).poll_read(cx, buf),
        }
    }
}

impl Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(plain) => Pin::new(plain).poll_write(cx, buf),
            Stream::Tls(tls) => Pin::new(&mut **tls).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(plain) => Pin::new(plain).poll_flush(cx),
            Stream::Tls(tls) => Pin::new(&mut **tls).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(plain) => Pin::new(plain).poll_shutdown(cx),
            Stream::Tls(tls) => Pin::new(&mut **tls).poll_shutdown(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(plain) => plain.is_write_vectored(),
            Stream::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(plain) => Pin::new(plain).poll_write_vectored(cx, bufs),
            Stream::Tls(tls) => Pin::new(&mut **tls).poll_write_vectored(cx, bufs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The point: a plain connection no longer takes a TLS session's room.
    #[test]
    fn a_plain_connection_takes_no_more_room_than_the_tcp_stream() {
        assert!(std::mem::size_of::<MaybeHttpsStream<WireStream>>() >= 1_000);
        assert_eq!(
            std::mem::size_of::<Stream>(),
            std::mem::size_of::<WireStream>()
        );
    }
}
