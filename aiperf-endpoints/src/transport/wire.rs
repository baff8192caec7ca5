//! Stamps as exact as the wire: when the bytes of each read reached the socket, and when
//! the last byte of a request was written, whatever the runtime was busy with meanwhile.
//!
//! A runtime driving many connections on one thread gets round to a readable socket late
//! (at concurrency 64 here: up to 9 ms at the 99th percentile), and a stamp taken when
//! the client takes a frame carries that delay into TTFT and ITL. On Linux every TCP
//! connection asks for the kernel's receive timestamp (`SO_TIMESTAMPNS`) and reads with
//! `recvmsg`, so each read also returns the time its bytes arrived; that is converted once
//! per read to an [`Instant`] ([`instant_of_unix_time`]) and published on the connection's
//! [`WireClock`], which the body loop reads for each frame instead of `Instant::now()`.
//! Elsewhere, or when the option is refused, a read is stamped when it happens: still no
//! later than the frame it yields.
//!
//! TCP reports the arrival of the *last* segment a read consumed, so when the reader is
//! so late that two server writes wait in the socket, both frames carry the second one's
//! stamp. The transport's [`SocketReader`] (on by default) reads every connection on a
//! thread of its own as soon as bytes arrive, so that rarely happens; each read waits with
//! its stamp until the client takes it, and is published when the client does. The wrapper sits
//! below TLS, so a TLS record split over reads carries the stamp of the read that
//! completed it (documented in docs/metrics.md).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Instant;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
#[cfg(target_os = "linux")]
use tokio::io::Interest;
use tokio::net::TcpStream;
use tower_service::Service;

use super::reader::{Inbox, ReaderThread, SocketReader};

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
    pub(super) fn read(&self, at: Instant) {
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

/// Wraps the TCP connector so every connection it opens is a [`WireStream`], read by the
/// transport's [`SocketReader`] when it has one.
#[derive(Debug, Clone)]
pub(crate) struct WireConnector {
    tcp: HttpConnector,
    reader: Option<Arc<SocketReader>>,
}

impl WireConnector {
    pub(crate) fn new(tcp: HttpConnector, reader: Option<Arc<SocketReader>>) -> Self {
        Self { tcp, reader }
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
        let reader = self.reader.clone();
        Box::pin(async move {
            let stream = connecting.await?.into_inner();
            let thread = reader.as_deref().and_then(SocketReader::thread);
            Ok(WireStream::new(stream, thread)?)
        })
    }
}

/// A TCP connection that stamps each read with the arrival of its bytes and each write
/// with its completion.
#[derive(Debug)]
pub(crate) struct WireStream {
    stream: Arc<TcpStream>,
    reads: Reads,
    clock: WireClock,
}

/// Who reads the socket.
#[derive(Debug)]
enum Reads {
    /// The runtime that polls the connection, when the client asks; `kernel_stamps`: the kernel
    /// accepted `SO_TIMESTAMPNS` and reads go through `recvmsg`.
    Here { kernel_stamps: bool },
    /// The socket reader's thread, as soon as bytes arrive; they wait here.
    Reader(Arc<Inbox>),
}

impl WireStream {
    /// A new connection, moved to the reader thread when there is one.
    fn new(stream: TcpStream, reader: Option<&ReaderThread>) -> std::io::Result<Self> {
        let kernel_stamps = kernel::enable(&stream);
        let (stream, reads) = match reader {
            Some(reader) => {
                let (stream, inbox) = reader.adopt(stream, kernel_stamps)?;
                (stream, Reads::Reader(inbox))
            }
            None => (Arc::new(stream), Reads::Here { kernel_stamps }),
        };
        Ok(Self {
            stream,
            reads,
            clock: WireClock::default(),
        })
    }
}

impl Drop for WireStream {
    fn drop(&mut self) {
        if let Reads::Reader(inbox) = &self.reads {
            inbox.close();
        }
    }
}

impl Connection for WireStream {
    fn connected(&self) -> Connected {
        self.stream.connected().extra(self.clock.clone())
    }
}

impl Read for WireStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let kernel_stamps = match &this.reads {
            Reads::Reader(inbox) => return inbox.poll_read(&this.clock, cx, buf),
            Reads::Here { kernel_stamps } => *kernel_stamps,
        };
        loop {
            ready!(this.stream.poll_read_ready(cx))?;
            let read = read_now(&this.stream, kernel_stamps, buf.remaining(), |bytes, at| {
                buf.put_slice(bytes);
                this.clock.read(at);
            });
            match read {
                Ok(()) => return Poll::Ready(Ok(())),
                // Readiness was stale: wait for the next wake-up.
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl Write for WireStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        this.write_with(cx, |stream| stream.try_write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Writes go straight to the socket.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let shut = socket2::SockRef::from(&*self.stream).shutdown(std::net::Shutdown::Write);
        Poll::Ready(match shut {
            // Shut already, or the peer is gone: nothing is left to send either way.
            Err(error) if error.kind() == std::io::ErrorKind::NotConnected => Ok(()),
            shut => shut,
        })
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        this.write_with(cx, |stream| stream.try_write_vectored(bufs))
    }
}

impl WireStream {
    /// Writes once the socket takes bytes, stamping the write. The socket may be driven by
    /// the reader thread's runtime: waiting for it to be writable works from any runtime.
    fn write_with(
        &mut self,
        cx: &mut Context<'_>,
        mut write: impl FnMut(&TcpStream) -> std::io::Result<usize>,
    ) -> Poll<std::io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            // Stamped before the system call: a thread that loses the CPU right after it
            // would stamp the write late, after the server already started (seen under
            // load).
            let before = Instant::now();
            match write(&self.stream) {
                Ok(written) => {
                    if written > 0 {
                        self.clock.wrote(before);
                    }
                    return Poll::Ready(Ok(written));
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

/// The most bytes one read of the socket reader takes: hyper's read buffer (with
/// `--http2`) grows to this for large bodies, and the HTTP/1 client takes what a read
/// holds in parts of its 8 KiB buffer.
pub(crate) const READ_AT_MOST: usize = 64 * 1024;

/// Per thread, not per connection: 10,000 open streams must not hold 10,000 buffers.
struct Scratch {
    bytes: Vec<u8>,
    #[cfg(target_os = "linux")]
    control: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch {
        bytes: vec![0; READ_AT_MOST],
        #[cfg(target_os = "linux")]
        control: nix::cmsg_space!(nix::sys::time::TimeSpec),
    });
}

/// Reads what the socket holds now (at most `want` bytes, none at its end) and hands the
/// bytes and their arrival to `take`; `WouldBlock` when nothing is there. The arrival is
/// the kernel's receive stamp with `kernel_stamps`, else the time of the read.
pub(crate) fn read_now<R>(
    stream: &TcpStream,
    kernel_stamps: bool,
    want: usize,
    take: impl FnOnce(&[u8], Instant) -> R,
) -> std::io::Result<R> {
    SCRATCH.with_borrow_mut(|scratch| {
        let want = want.min(scratch.bytes.len());
        #[cfg(target_os = "linux")]
        if kernel_stamps {
            let Scratch { bytes, control } = scratch;
            let into = &mut bytes[..want];
            let (len, arrived) =
                read_draining(stream, want, || kernel::receive(stream, into, control))?;
            return Ok(take(&into[..len], arrived.unwrap_or_else(Instant::now)));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = kernel_stamps;
        let into = &mut scratch.bytes[..want];
        let len = stream.try_read(into)?;
        Ok(take(&into[..len], Instant::now()))
    })
}

#[cfg(all(test, target_os = "linux"))]
thread_local! {
    /// How many reads on this thread found the socket empty.
    pub(crate) static FOUND_EMPTY: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One read of at most `want` bytes through the stream's readiness (Linux). A read that took
/// fewer bytes than it asked for (but some) emptied the socket, so the readiness is
/// cleared, as tokio's own `poll_read` does: otherwise the next poll, typically right
/// after the next request is written, spends a system call finding the socket empty (one
/// `recvmsg` in two did, at concurrency 64 against a fast mock; bench/README.md).
#[cfg(target_os = "linux")]
fn read_draining<T>(
    stream: &TcpStream,
    want: usize,
    mut read: impl FnMut() -> std::io::Result<(usize, T)>,
) -> std::io::Result<(usize, T)> {
    let mut drained = None;
    let result = stream.try_io(Interest::READABLE, || {
        let (len, extra) = read()?;
        if len > 0 && len < want {
            drained = Some((len, extra));
            // What tokio takes as "nothing left": it clears the readiness it saw.
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        Ok((len, extra))
    });
    match drained {
        Some(read) => Ok(read),
        None => result,
    }
}

/// Kernel receive timestamps through `recvmsg` (Linux).
#[cfg(target_os = "linux")]
mod kernel {
    use std::io::IoSliceMut;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
    use tokio::net::TcpStream;

    use super::{instant_of_unix_time, Instant};

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

    /// One `recvmsg`: the byte count and the kernel's receive stamp, when it sent one.
    pub(super) fn receive(
        stream: &TcpStream,
        into: &mut [u8],
        control: &mut [u8],
    ) -> std::io::Result<(usize, Option<Instant>)> {
        let mut iov = [IoSliceMut::new(into)];
        let message = recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(control),
            MsgFlags::empty(),
        );
        #[cfg(test)]
        if message == Err(nix::errno::Errno::EAGAIN) {
            super::FOUND_EMPTY.set(super::FOUND_EMPTY.get() + 1);
        }
        let message = message?;
        let arrived = message.cmsgs().ok().and_then(|mut messages| {
            messages.find_map(|message| match message {
                ControlMessageOwned::ScmTimestampns(at) => Some(at),
                _ => None,
            })
        });
        Ok((
            message.bytes,
            arrived.map(|at| {
                instant_of_unix_time(Duration::new(
                    u64::try_from(at.tv_sec()).unwrap_or(0),
                    u32::try_from(at.tv_nsec()).unwrap_or(0),
                ))
            }),
        ))
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

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::super::reader::{QUEUE_AT_LEAST, QUEUE_AT_MOST};
    use super::*;

    /// A connected pair: our stream, read by this runtime (kernel stamps as asked), and
    /// the server's end.
    async fn pair(kernel_stamps: bool) -> (WireStream, TcpStream) {
        let (client, server) = connected().await;
        let kernel_stamps = kernel_stamps && kernel::enable(&client);
        let stream = WireStream {
            stream: Arc::new(client),
            reads: Reads::Here { kernel_stamps },
            clock: WireClock::default(),
        };
        (stream, server)
    }

    /// A connected pair whose client end `reader` reads.
    async fn pair_on(reader: &SocketReader) -> (WireStream, TcpStream) {
        let (client, server) = connected().await;
        let stream = WireStream::new(client, Some(reader.thread().unwrap())).unwrap();
        assert!(matches!(stream.reads, Reads::Reader(_)));
        (stream, server)
    }

    async fn connected() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (client.unwrap(), accepted.unwrap().0)
    }

    /// One read of at most `at_most` bytes.
    async fn read_at_most(stream: &mut WireStream, at_most: usize) -> std::io::Result<Vec<u8>> {
        let mut storage = vec![0u8; at_most];
        let mut buf = hyper::rt::ReadBuf::new(&mut storage);
        std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_read(cx, buf.unfilled())).await?;
        Ok(buf.filled().to_vec())
    }

    async fn read(stream: &mut WireStream) -> Vec<u8> {
        read_at_most(stream, 64).await.unwrap()
    }

    /// Bytes written, then read 100 ms later: stamped when they arrived, not when read.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_read_is_stamped_with_the_kernel_arrival_time() {
        let (mut stream, mut server) = pair(true).await;
        assert!(
            matches!(
                stream.reads,
                Reads::Here {
                    kernel_stamps: true
                }
            ),
            "the kernel refused SO_TIMESTAMPNS"
        );
        let before_write = Instant::now();
        server.write_all(b"data: 1\n\n").await.unwrap();
        let after_write = Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let read_at = Instant::now();
        assert_eq!(read(&mut stream).await, b"data: 1\n\n");
        let stamp = stream.clock.received_at();
        // On loopback the segment usually arrives within the write call, but on a busy
        // machine TCP may send it a little after the call returned (over 1 ms once, in a
        // full test run); the read, 100 ms later, is far off either way.
        let slack = Duration::from_millis(1);
        assert!(
            stamp + slack >= before_write,
            "{stamp:?} before {before_write:?}"
        );
        assert!(
            stamp <= after_write + Duration::from_millis(40),
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
        // The second write's arrival (the first came 100 ms before it), not the read's
        // (50 ms after); sent a little after its call returned on a busy machine.
        let slack = Duration::from_millis(1);
        assert!(
            stamp + slack >= before_second,
            "{stamp:?} before {before_second:?}"
        );
        assert!(
            stamp <= after_second + Duration::from_millis(25),
            "{stamp:?} after {after_second:?}"
        );
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

    /// The point of the socket reader: two writes 100 ms apart arrive while the runtime
    /// that consumes them is blocked, and each is still read (and stamped) on its own.
    /// Read by that runtime, both would be read at once with the second one's stamp (the
    /// test above).
    #[tokio::test]
    async fn the_reader_reads_and_stamps_each_write_on_its_own_while_the_runtime_is_blocked() {
        let reader = SocketReader::default();
        let (mut stream, server) = pair_on(&reader).await;
        let mut server = server.into_std().unwrap();
        server.set_nonblocking(false).unwrap();
        // Written from a thread of its own: this runtime is about to block.
        let writer = std::thread::spawn(move || {
            use std::io::Write as _;
            server.write_all(b"data: 1\n\n").unwrap();
            std::thread::sleep(Duration::from_millis(100));
            server.write_all(b"data: 2\n\n").unwrap();
            server
        });
        std::thread::sleep(Duration::from_millis(400));
        let _server = writer.join().unwrap();
        let read_at = Instant::now();
        assert_eq!(read(&mut stream).await, b"data: 1\n\n");
        let first = stream.clock.received_at();
        assert_eq!(read(&mut stream).await, b"data: 2\n\n");
        let second = stream.clock.received_at();
        // 100 ms apart at the server; a reader thread late on a loaded machine eats into
        // that, read together they would be 0 apart.
        let gap = second.duration_since(first);
        assert!(gap >= Duration::from_millis(50), "gap {gap:?}");
        let waited = read_at.duration_since(second);
        assert!(
            waited >= Duration::from_millis(100),
            "stamped {waited:?} before the read"
        );
    }

    /// A read larger than the client's buffer is handed over in parts, each with the read's
    /// stamp; the next read follows.
    #[tokio::test]
    async fn a_read_larger_than_the_buffer_is_handed_over_in_parts() {
        let reader = SocketReader::default();
        let (mut stream, mut server) = pair_on(&reader).await;
        server.write_all(b"0123456789").await.unwrap();
        // Until the reader has it: then the next write is a read of its own.
        while stream_queued(&stream) < 10 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        server.write_all(b"abc").await.unwrap();
        server.shutdown().await.unwrap();
        assert_eq!(read_at_most(&mut stream, 4).await.unwrap(), b"0123");
        let first = stream.clock.received_at();
        assert_eq!(read_at_most(&mut stream, 4).await.unwrap(), b"4567");
        assert_eq!(stream.clock.received_at(), first);
        assert_eq!(read_at_most(&mut stream, 64).await.unwrap(), b"89");
        assert_eq!(read_at_most(&mut stream, 64).await.unwrap(), b"abc");
        // The socket's end, as often as asked.
        assert_eq!(read_at_most(&mut stream, 64).await.unwrap(), b"");
        assert_eq!(read_at_most(&mut stream, 64).await.unwrap(), b"");
    }

    fn stream_queued(stream: &WireStream) -> usize {
        match &stream.reads {
            Reads::Reader(inbox) => inbox.queued(),
            Reads::Here { .. } => unreachable!("read by the reader"),
        }
    }

    /// A reset after data: the data first, then the error.
    #[tokio::test]
    async fn an_error_after_data_comes_after_the_data() {
        let reader = SocketReader::default();
        let (mut stream, server) = pair_on(&reader).await;
        let server = server.into_std().unwrap();
        server.set_nonblocking(false).unwrap();
        {
            use std::io::Write as _;
            (&server).write_all(b"partial").unwrap();
        }
        // Let the data arrive first: a reset on a socket with unread data throws it away.
        while stream_queued(&stream) < 7 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Closing with a zero linger sends a reset.
        socket2::SockRef::from(&server)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(server);
        assert_eq!(read(&mut stream).await, b"partial");
        let error = read_at_most(&mut stream, 64).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "{error}");
    }

    /// The client dropping a connection closes its socket: the server reads its end.
    #[tokio::test]
    async fn dropping_a_stream_closes_its_socket() {
        let reader = SocketReader::default();
        let (stream, mut server) = pair_on(&reader).await;
        drop(stream);
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), server.read(&mut byte)).await;
        assert_eq!(read.expect("the socket stayed open").unwrap(), 0);
    }

    /// A 5 MB body through a consumer slower than the server: the reader holds exactly its
    /// bound ahead (one connection: the most) and loses no byte.
    #[tokio::test]
    async fn a_slow_consumer_holds_back_the_reader_and_gets_every_byte() {
        let reader = SocketReader::default();
        let (stream, server) = pair_on(&reader).await;
        let most_queued = slow_consumer_takes_all_of_a_body(stream, server).await;
        assert_eq!(most_queued, QUEUE_AT_MOST);
    }

    /// With 10,000 connections open, a connection holds only its share of the reader's
    /// budget: the least, 4 KiB; the body still arrives whole.
    #[tokio::test]
    async fn with_many_connections_open_each_holds_its_share_of_the_budget() {
        let reader = SocketReader::default();
        let (stream, server) = pair_on(&reader).await;
        reader.thread().unwrap().count_as_open(9_999);
        let most_queued = slow_consumer_takes_all_of_a_body(stream, server).await;
        assert_eq!(most_queued, QUEUE_AT_LEAST);
    }

    /// Sends a 5 MB body that `stream` takes in 8 KiB reads with a pause every 64 KiB,
    /// checks every byte arrived, and returns the most bytes that waited for it.
    async fn slow_consumer_takes_all_of_a_body(
        mut stream: WireStream,
        mut server: TcpStream,
    ) -> usize {
        const BODY_BYTES: usize = 5 * 1000 * 1000;
        let body: Vec<u8> = (0..BODY_BYTES).map(|i| (i % 251) as u8).collect();
        let sent = body.clone();
        tokio::spawn(async move {
            server.write_all(&sent).await.unwrap();
            server.shutdown().await.unwrap();
        });
        let mut received = Vec::with_capacity(BODY_BYTES);
        let mut most_queued = 0;
        loop {
            most_queued = most_queued.max(stream_queued(&stream));
            let bytes = read_at_most(&mut stream, 8 * 1024).await.unwrap();
            if bytes.is_empty() {
                break;
            }
            received.extend_from_slice(&bytes);
            if received.len() % (64 * 1024) < 8 * 1024 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        assert!(received == body, "{} bytes, not the body", received.len());
        most_queued
    }

    /// A queue that grew with a backlog of 100 reads gives its room back once the client took
    /// them all, keeping room for 8.
    #[tokio::test]
    async fn a_drained_queue_gives_back_the_room_a_backlog_took() {
        let reader = SocketReader::default();
        let (mut stream, mut server) = pair_on(&reader).await;
        for event in 0..100 {
            server.write_all(b"data: 1\n\n").await.unwrap();
            // Until the reader has it: then the next write is a read of its own.
            while stream_queued(&stream) < (event + 1) * 9 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        assert!(reads_capacity(&stream) >= 100);
        for _ in 0..100 {
            assert_eq!(read(&mut stream).await, b"data: 1\n\n");
        }
        assert_eq!(stream_queued(&stream), 0);
        assert_eq!(reads_capacity(&stream), 8);
    }

    fn reads_capacity(stream: &WireStream) -> usize {
        match &stream.reads {
            Reads::Reader(inbox) => inbox.reads_capacity(),
            Reads::Here { .. } => unreachable!("read by the reader"),
        }
    }

    /// A transport dropped while a connection is still in use: the reader thread ends and
    /// the connection reports why.
    #[tokio::test]
    async fn a_stream_whose_reader_stopped_says_so() {
        let reader = SocketReader::default();
        let (mut stream, _server) = pair_on(&reader).await;
        drop(reader);
        let error = tokio::time::timeout(Duration::from_secs(10), read_at_most(&mut stream, 64))
            .await
            .expect("no end after the reader stopped")
            .unwrap_err();
        assert_eq!(error.to_string(), "the transport's socket reader stopped");
    }

    /// Writes through a stream the reader reads: stamped, and the server gets them; a
    /// shutdown ends the server's reading.
    #[tokio::test]
    async fn a_stream_the_reader_reads_writes_and_shuts_down_from_this_runtime() {
        let reader = SocketReader::default();
        let (mut stream, mut server) = pair_on(&reader).await;
        let before = Instant::now();
        let request = b"GET / HTTP/1.1\r\n\r\n";
        let written =
            std::future::poll_fn(|cx| Pin::new(&mut stream).poll_write(cx, request)).await;
        assert_eq!(written.unwrap(), request.len());
        assert!(stream.clock.written_at().unwrap() >= before);
        std::future::poll_fn(|cx| Pin::new(&mut stream).poll_shutdown(cx))
            .await
            .unwrap();
        let mut received = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), server.read_to_end(&mut received))
            .await
            .expect("no end after the shutdown")
            .unwrap();
        assert_eq!(received, request);
    }
}
