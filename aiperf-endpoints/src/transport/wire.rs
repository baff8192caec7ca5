//! Stamps as exact as the wire: when the bytes of each read reached the socket, and when
//! the last byte of a request was written, whatever the runtime was busy with meanwhile.
//!
//! A runtime driving many connections on one thread gets round to a readable socket late
//! (at concurrency 64 here: up to 9 ms at the 99th percentile), and a stamp taken when
//! hyper yields a frame carries that delay into TTFT and ITL. On Linux every TCP
//! connection asks for the kernel's receive timestamp (`SO_TIMESTAMPNS`) and reads with
//! `recvmsg`, so each read also returns the time its bytes arrived; that is converted once
//! per read to an [`Instant`] ([`instant_of_unix_time`]) and published on the connection's
//! [`WireClock`], which the body loop reads for each frame instead of `Instant::now()`.
//! Elsewhere, or when the option is refused, a read is stamped when it happens: still no
//! later than the frame it yields.
//!
//! Limits (documented in docs/metrics.md): TCP reports the arrival of the *last* segment
//! a read consumed, so when the reader was so late that two server writes wait in the
//! socket, both frames carry the second one's stamp; the wrapper sits below TLS, so a TLS
//! record split over reads carries the stamp of the read that completed it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower_service::Service;

#[cfg(target_os = "linux")]
use aiperf_core::clock::instant_of_unix_time;

/// The last read and write stamps of one connection, shared between the connection (which
/// sets them) and each response on it (which reads them); carried to the response through
/// the connection's [`Connected`] extras.
#[derive(Debug, Clone, Default)]
pub(crate) struct WireClock(Arc<Mutex<WireStamps>>);

#[derive(Debug, Default)]
struct WireStamps {
    received: Option<Instant>,
    written: Option<Instant>,
}

impl WireClock {
    fn stamps(&self) -> std::sync::MutexGuard<'_, WireStamps> {
        match self.0.lock() {
            Ok(stamps) => stamps,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// When the bytes of the connection's latest read reached the socket; now when nothing
    /// was read yet.
    fn received_at(&self) -> Instant {
        self.stamps().received.unwrap_or_else(Instant::now)
    }

    /// When the connection last wrote bytes to the socket, if it ever did.
    pub(crate) fn written_at(&self) -> Option<Instant> {
        self.stamps().written
    }

    /// Records a read; stamps never go backwards on one connection (two reads' kernel
    /// stamps converted a few nanoseconds apart could).
    fn read(&self, at: Instant) {
        let mut stamps = self.stamps();
        stamps.received = Some(stamps.received.map_or(at, |previous| previous.max(at)));
    }

    fn wrote(&self, at: Instant) {
        self.stamps().written = Some(at);
    }
}

/// The arrival stamps of one response's head and body frames, taken from its connection's
/// reads. Kernel stamps of successive reads are converted to instants one by one, so each
/// stamp is held to be no earlier than the request's start or the stamp before it.
#[derive(Debug)]
pub(crate) struct Arrivals {
    clock: Option<WireClock>,
    latest: Instant,
}

impl Arrivals {
    /// Stamps for a response on a connection with `clock` (none: stamps are taken when
    /// asked), sent at `started_at`.
    pub(crate) fn new(clock: Option<WireClock>, started_at: Instant) -> Self {
        Self {
            clock,
            latest: started_at,
        }
    }

    /// When what the response just got from its connection (the head, or a body frame)
    /// reached the socket.
    pub(crate) fn next(&mut self) -> Instant {
        let at = self
            .clock
            .as_ref()
            .map_or_else(Instant::now, WireClock::received_at);
        self.latest = self.latest.max(at);
        self.latest
    }
}

/// Wraps the TCP connector so every connection it opens is a [`WireStream`].
#[derive(Debug, Clone)]
pub(crate) struct WireConnector {
    tcp: HttpConnector,
}

impl WireConnector {
    pub(crate) fn new(tcp: HttpConnector) -> Self {
        Self { tcp }
    }
}

/// The TCP connector's error type is not nameable; hyper-rustls takes any boxed error.
type BoxError = Box<dyn std::error::Error + Send + Sync>;
type BoxedConnect = Pin<Box<dyn Future<Output = Result<WireStream, BoxError>> + Send>>;

impl Service<Uri> for WireConnector {
    type Response = WireStream;
    type Error = BoxError;
    type Future = BoxedConnect;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.tcp.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            let kernel_stamps = kernel::enable(io.inner());
            Ok(WireStream {
                io,
                kernel_stamps,
                clock: WireClock::default(),
            })
        })
    }
}

/// A TCP connection that stamps each read with the arrival of its bytes and each write
/// with its completion.
#[derive(Debug)]
pub(crate) struct WireStream {
    io: TokioIo<TcpStream>,
    /// The kernel accepted `SO_TIMESTAMPNS`: reads go through `recvmsg`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    kernel_stamps: bool,
    clock: WireClock,
}

impl Connection for WireStream {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.clock.clone())
    }
}

impl Read for WireStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        #[cfg(target_os = "linux")]
        if this.kernel_stamps {
            return kernel::poll_read(this.io.inner(), &this.clock, cx, buf);
        }
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if read.is_ready() {
            this.clock.read(Instant::now());
        }
        read
    }
}

impl Write for WireStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        // Stamped before the system call: a thread that loses the CPU right after it would
        // stamp the write late, after the server already started (seen under load).
        let before = Instant::now();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.clock.wrote(before);
        }
        written
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
        let this = self.get_mut();
        let before = Instant::now();
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.clock.wrote(before);
        }
        written
    }
}

/// Kernel receive timestamps through `recvmsg` (Linux).
#[cfg(target_os = "linux")]
mod kernel {
    use std::cell::RefCell;
    use std::io::IoSliceMut;
    use std::os::fd::AsRawFd;
    use std::task::{ready, Context, Poll};
    use std::time::Duration;

    use hyper::rt::ReadBufCursor;
    use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
    use nix::sys::time::TimeSpec;
    use tokio::io::Interest;
    use tokio::net::TcpStream;

    use super::{instant_of_unix_time, Instant, WireClock};

    /// The most bytes one read takes: hyper's read buffer starts at 8 KiB and grows for
    /// large bodies; 64 KiB keeps those reads as large as hyper's own.
    const READ_AT_MOST: usize = 64 * 1024;

    /// Per thread, not per connection: 10,000 open streams must not hold 10,000 buffers.
    struct Scratch {
        bytes: Vec<u8>,
        control: Vec<u8>,
    }

    thread_local! {
        static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch {
            bytes: vec![0; READ_AT_MOST],
            control: nix::cmsg_space!(TimeSpec),
        });
    }

    /// Asks the kernel to stamp received data; false when it refuses.
    pub(super) fn enable(stream: &TcpStream) -> bool {
        match setsockopt(stream, sockopt::ReceiveTimestampns, &true) {
            Ok(()) => true,
            Err(error) => {
                tracing::debug!(%error, "no kernel receive timestamps; stamping reads as they happen");
                false
            }
        }
    }

    /// Reads what the socket holds (as much as `buf` takes) and records when it arrived.
    pub(super) fn poll_read(
        stream: &TcpStream,
        clock: &WireClock,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            ready!(stream.poll_read_ready(cx))?;
            let received = SCRATCH.with_borrow_mut(|scratch| {
                let Scratch { bytes, control } = scratch;
                let want = buf.remaining().min(bytes.len());
                let into = &mut bytes[..want];
                stream
                    .try_io(Interest::READABLE, || receive(stream, into, control))
                    .map(|(len, arrived)| {
                        buf.put_slice(&into[..len]);
                        arrived
                    })
            });
            match received {
                Ok(arrived) => {
                    clock.read(arrived.map_or_else(Instant::now, |at| {
                        instant_of_unix_time(Duration::new(
                            u64::try_from(at.tv_sec()).unwrap_or(0),
                            u32::try_from(at.tv_nsec()).unwrap_or(0),
                        ))
                    }));
                    return Poll::Ready(Ok(()));
                }
                // Readiness was stale: wait for the next wake-up.
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }

    /// One `recvmsg`: the byte count and the kernel's receive stamp, when it sent one.
    fn receive(
        stream: &TcpStream,
        into: &mut [u8],
        control: &mut [u8],
    ) -> std::io::Result<(usize, Option<TimeSpec>)> {
        let mut iov = [IoSliceMut::new(into)];
        let message = recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(control),
            MsgFlags::empty(),
        )?;
        let arrived = message.cmsgs().ok().and_then(|mut messages| {
            messages.find_map(|message| match message {
                ControlMessageOwned::ScmTimestampns(at) => Some(at),
                _ => None,
            })
        });
        Ok((message.bytes, arrived))
    }
}

/// Without kernel timestamps, reads are stamped as they happen.
#[cfg(not(target_os = "linux"))]
mod kernel {
    pub(super) fn enable(_stream: &tokio::net::TcpStream) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    use super::*;

    /// A connected pair: our stream (kernel stamps as asked) and the server's end.
    async fn pair(kernel_stamps: bool) -> (WireStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        let io = TokioIo::new(client.unwrap());
        let kernel_stamps = kernel_stamps && kernel::enable(io.inner());
        let stream = WireStream {
            io,
            kernel_stamps,
            clock: WireClock::default(),
        };
        (stream, accepted.unwrap().0)
    }

    async fn read(stream: &mut WireStream) -> Vec<u8> {
        let mut storage = [0u8; 64];
        let mut buf = hyper::rt::ReadBuf::new(&mut storage);
        std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_read(cx, buf.unfilled()))
            .await
            .unwrap();
        buf.filled().to_vec()
    }

    /// Bytes written, then read 100 ms later: stamped when they arrived, not when read.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_read_is_stamped_with_the_kernel_arrival_time() {
        let (mut stream, mut server) = pair(true).await;
        assert!(stream.kernel_stamps, "the kernel refused SO_TIMESTAMPNS");
        let before_write = Instant::now();
        server.write_all(b"data: 1\n\n").await.unwrap();
        let after_write = Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let read_at = Instant::now();
        assert_eq!(read(&mut stream).await, b"data: 1\n\n");
        let stamp = stream.clock.received_at();
        // On loopback the segment arrives within the write call.
        let slack = Duration::from_millis(1);
        assert!(
            stamp + slack >= before_write,
            "{stamp:?} before {before_write:?}"
        );
        assert!(
            stamp <= after_write + slack,
            "{stamp:?} after {after_write:?}"
        );
        assert!(read_at.duration_since(stamp) >= Duration::from_millis(99));
    }

    /// The limit docs/metrics.md names: two writes 100 ms apart that wait in the socket
    /// are read at once and both carry the second one's arrival. Linux merges small
    /// segments queued on a socket and keeps the newest stamp, so not even a one-byte peek
    /// first would return the first write's.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_backlog_read_at_once_carries_its_last_segments_stamp() {
        let (mut stream, mut server) = pair(true).await;
        server.write_all(b"data: 1\n\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before_second = Instant::now();
        server.write_all(b"data: 2\n\n").await.unwrap();
        let after_second = Instant::now();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(read(&mut stream).await, b"data: 1\n\ndata: 2\n\n");
        let stamp = stream.clock.received_at();
        let slack = Duration::from_millis(1);
        assert!(stamp + slack >= before_second && stamp <= after_second + slack);
    }

    /// No stamp is earlier than the request's start or the stamp before it.
    #[test]
    fn a_response_stamp_never_goes_back() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let clock = WireClock::default();
        let mut arrivals = Arrivals::new(Some(clock.clone()), at(10));
        clock.read(at(5));
        assert_eq!(arrivals.next(), at(10), "not before the request started");
        clock.read(at(30));
        assert_eq!(arrivals.next(), at(30));
        // Reads converted out of order on the connection are already held in order.
        clock.read(at(29));
        assert_eq!(arrivals.next(), at(30));
    }

    /// Without the kernel's stamp, the read's own time.
    #[tokio::test]
    async fn without_kernel_stamps_a_read_is_stamped_when_it_happens() {
        let (mut stream, mut server) = pair(false).await;
        server.write_all(b"data: 1\n\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let read_at = Instant::now();
        assert_eq!(read(&mut stream).await, b"data: 1\n\n");
        assert!(stream.clock.received_at() >= read_at);
    }

    /// A write is stamped when the socket took it; nothing was read yet.
    #[tokio::test]
    async fn a_write_is_stamped_when_the_socket_took_it() {
        let (mut stream, _server) = pair(true).await;
        assert_eq!(stream.clock.written_at(), None);
        let before = Instant::now();
        std::future::poll_fn(|cx| Pin::new(&mut stream).poll_write(cx, b"GET / HTTP/1.1\r\n\r\n"))
            .await
            .unwrap();
        let written = stream.clock.written_at().unwrap();
        assert!(written >= before && written <= Instant::now());
    }
}
