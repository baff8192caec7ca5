//! The socket reader: one thread that reads every connection of a transport as soon as
//! its bytes arrive, whatever the runtime sending the requests is busy with.
//!
//! A runtime driving many connections gets round to a readable socket late; when two
//! server writes wait in the socket by then, one read takes both and the kernel reports
//! the second one's arrival for both (see [`super::wire`]). Here each connection's reads
//! run on a small runtime of their own (a thread doing nothing but `recvmsg`): every
//! segment is read, and stamped, on its own as soon as it arrives. The reads wait in the
//! connection's [`Inbox`] with their stamps until hyper asks for bytes on its own runtime;
//! writes stay there too (a tokio socket may be written from a task of another runtime).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Buf, Bytes};
use hyper::rt::ReadBufCursor;
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};

use super::wire::{read_now, WireClock, READ_AT_MOST};

/// How many bytes read ahead of hyper one connection may hold: the reader stops reading
/// that socket until hyper has taken some (TCP then holds the rest back at the server).
pub(crate) const QUEUE_AT_MOST: usize = 256 * 1024;

/// Starts the reader thread on the first connection and stops it when dropped (with the
/// transport's last connector). Shared by all of a transport's connections.
#[derive(Debug, Default)]
pub(crate) struct SocketReader {
    thread: OnceLock<Option<ReaderThread>>,
    /// The thread asks for a higher priority ([`raise_priority`]).
    raise_priority: bool,
}

#[derive(Debug)]
pub(crate) struct ReaderThread {
    runtime: Handle,
    /// Dropped with the reader: the thread's runtime then ends, and with it every
    /// connection's read task.
    _stop: oneshot::Sender<()>,
}

impl SocketReader {
    /// A reader whose thread asks for a higher priority when `raise_priority` is set.
    pub(crate) fn new(raise_priority: bool) -> Self {
        Self {
            thread: OnceLock::new(),
            raise_priority,
        }
    }

    /// The reader thread, started on the first call; `None` when the system refused a
    /// thread (the connections are then read by the runtime that sends).
    pub(crate) fn thread(&self) -> Option<&ReaderThread> {
        self.thread
            .get_or_init(|| start_thread(self.raise_priority))
            .as_ref()
    }
}

impl ReaderThread {
    /// Moves `stream` to the reader thread, which reads it from now on into the returned
    /// inbox. The stream stays writable from any runtime.
    pub(crate) fn adopt(
        &self,
        stream: TcpStream,
        kernel_stamps: bool,
    ) -> io::Result<(Arc<TcpStream>, Arc<Inbox>)> {
        let stream = stream.into_std()?;
        let stream = {
            // Registered with the reader's I/O driver: its readiness wakes the reader.
            let _reader_context = self.runtime.enter();
            Arc::new(TcpStream::from_std(stream)?)
        };
        let inbox = Arc::new(Inbox::default());
        // The guard is made here, not in the task: a task dropped before it first ran
        // still ends the connection's reading.
        let ending = EndsReading(inbox.clone());
        self.runtime
            .spawn(read_until_closed(stream.clone(), kernel_stamps, ending));
        Ok((stream, inbox))
    }
}

/// A thread with a one-thread runtime that only does I/O, at a raised priority if asked;
/// `None` (and a warning) when the system refuses a thread.
fn start_thread(raised: bool) -> Option<ReaderThread> {
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("aiperf-socket-reader".into())
        .spawn(move || {
            if raised {
                raise_priority();
            }
            // Built here, so it is also dropped here: never inside the caller's runtime.
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = handle_tx.send(Err(error));
                    return;
                }
            };
            let _ = handle_tx.send(Ok(runtime.handle().clone()));
            runtime.block_on(async {
                let _ = stopped.await;
            });
        });
    let started = spawned.and_then(|_| {
        handle_rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the thread ended at start")))
    });
    match started {
        Ok(runtime) => Some(ReaderThread {
            runtime,
            _stop: stop,
        }),
        Err(error) => {
            tracing::warn!(%error, "no socket reader thread; connections are read by the sending runtime");
            None
        }
    }
}

/// The nice value the reader thread asks for: well above the sending runtime's (0).
#[cfg(target_os = "linux")]
const READER_NICE: i32 = -15;

/// Asks the kernel to run this thread before the others when it has bytes to read.
///
/// On a machine whose cores are all busy (the client's threads, or a server beside it),
/// a reader of equal priority waits its turn behind them, and two server writes then meet
/// in one read and share the later one's stamp: at concurrency 512 on 2 cores, TTFT on
/// reused connections came out 1.4–2.3 ms (mean) and 0.4–15.6 ms (p99) above the wire's;
/// at nice -15, within 0.07 and 0.01 ms (bench/README.md). The reader only runs when
/// bytes arrive and stops at a full inbox, so it cannot starve the others, but it does
/// preempt them at every arrival: 7–18 % less capacity against a zero-latency mock, which
/// is why the transport asks for it only when told to
/// ([`HttpTransportBuilder::raise_reader_priority`](crate::HttpTransportBuilder::raise_reader_priority)).
/// Raising a priority needs `CAP_SYS_NICE` or an `RLIMIT_NICE` (`ulimit -e`) that allows
/// it; without, the thread keeps the default priority and this is logged at debug level.
fn raise_priority() {
    #[cfg(target_os = "linux")]
    {
        let thread = Some(rustix::thread::gettid());
        if let Err(error) = rustix::process::setpriority_process(thread, READER_NICE) {
            tracing::debug!(
                %error,
                nice = READER_NICE,
                "the socket reader keeps the default priority (needs CAP_SYS_NICE or ulimit -e)"
            );
        }
    }
}

/// What the reader read from one connection and hyper has not taken yet.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
    /// Wakes the read task: hyper took bytes from a full inbox, or dropped the connection.
    reader: Notify,
}

#[derive(Debug, Default)]
struct InboxState {
    reads: VecDeque<Received>,
    /// The bytes in `reads`.
    queued: usize,
    /// How reading ended (after `reads`): the socket's end, or its error.
    end: Option<io::Result<()>>,
    /// The task waiting for bytes.
    consumer: Option<Waker>,
    /// hyper dropped the connection: the read task ends and the socket closes.
    closed: bool,
}

/// One read: its bytes (what remains of them) and when they arrived.
#[derive(Debug)]
struct Received {
    at: Instant,
    bytes: Bytes,
}

impl Inbox {
    fn state(&self) -> MutexGuard<'_, InboxState> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Gives hyper the bytes of the oldest waiting read (as many as `buf` takes; the rest
    /// stays first in line), and publishes that read's stamp on `clock` so the frame they
    /// make carries it.
    pub(crate) fn poll_read(
        &self,
        clock: &WireClock,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let mut state = self.state();
        if let Some(read) = state.reads.front_mut() {
            let taken = read.bytes.len().min(buf.remaining());
            buf.put_slice(&read.bytes[..taken]);
            clock.read(read.at);
            if taken == read.bytes.len() {
                state.reads.pop_front();
            } else {
                read.bytes.advance(taken);
            }
            let was_full = state.queued >= QUEUE_AT_MOST;
            state.queued -= taken;
            let room = state.queued < QUEUE_AT_MOST;
            drop(state);
            if was_full && room {
                self.reader.notify_one();
            }
            return Poll::Ready(Ok(()));
        }
        if let Some(end) = state.end.take() {
            // The end stays: hyper may ask again after the socket's end.
            state.end = Some(Ok(()));
            return Poll::Ready(end);
        }
        if !state
            .consumer
            .as_ref()
            .is_some_and(|waiting| waiting.will_wake(cx.waker()))
        {
            state.consumer = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The bytes waiting for hyper.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.state().queued
    }

    /// hyper dropped the connection: the read task stops and drops its end of the socket.
    pub(crate) fn close(&self) {
        self.state().closed = true;
        self.reader.notify_one();
    }

    fn push(&self, at: Instant, bytes: Bytes) {
        let mut state = self.state();
        state.queued += bytes.len();
        state.reads.push_back(Received { at, bytes });
        let consumer = state.consumer.take();
        drop(state);
        if let Some(consumer) = consumer {
            consumer.wake();
        }
    }

    /// Reading ended; a first end stays (the reader stopping after a failure changes
    /// nothing).
    fn end(&self, end: io::Result<()>) {
        let mut state = self.state();
        if state.end.is_none() {
            state.end = Some(end);
        }
        let consumer = state.consumer.take();
        drop(state);
        if let Some(consumer) = consumer {
            consumer.wake();
        }
    }

    /// What the read task does next: stop, or read (there is room).
    fn may_read(&self) -> Option<bool> {
        let state = self.state();
        if state.closed {
            None
        } else {
            Some(state.queued < QUEUE_AT_MOST)
        }
    }
}

/// Tells hyper when the read task is gone without having said why (the transport, and
/// with it the reader thread, was dropped while the connection was still in use).
struct EndsReading(Arc<Inbox>);

impl Drop for EndsReading {
    fn drop(&mut self) {
        self.0.end(Err(io::Error::other(
            "the transport's socket reader stopped",
        )));
    }
}

/// The read task of one connection: reads what arrives, stamped, into the inbox until the
/// socket ends, fails or hyper drops the connection.
async fn read_until_closed(stream: Arc<TcpStream>, kernel_stamps: bool, ending: EndsReading) {
    let inbox = &ending.0;
    loop {
        match inbox.may_read() {
            None => return,
            // Full: wait until hyper takes some (or drops the connection).
            Some(false) => {
                inbox.reader.notified().await;
                continue;
            }
            Some(true) => {}
        }
        tokio::select! {
            biased;
            () = inbox.reader.notified() => continue,
            ready = stream.readable() => {
                if let Err(error) = ready {
                    inbox.end(Err(error));
                    return;
                }
            }
        }
        let read = read_now(&stream, kernel_stamps, READ_AT_MOST, |bytes, at| {
            (Bytes::copy_from_slice(bytes), at)
        });
        match read {
            Ok((bytes, _)) if bytes.is_empty() => {
                inbox.end(Ok(()));
                return;
            }
            Ok((bytes, at)) => inbox.push(at, bytes),
            // Readiness was stale: wait for the next.
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => {
                inbox.end(Err(error));
                return;
            }
        }
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    /// The calling thread's nice value, from `/proc`.
    fn own_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command name, which is in parentheses, start at field 3;
        // the nice value is field 19.
        let fields = &stat[stat.rfind(')').unwrap() + 2..];
        fields.split(' ').nth(16).unwrap().parse().unwrap()
    }

    /// The reader thread's nice value.
    async fn reader_nice(raised: bool) -> i32 {
        let thread = start_thread(raised).unwrap();
        thread.runtime.spawn(async { own_nice() }).await.unwrap()
    }

    #[tokio::test]
    async fn the_reader_thread_runs_at_a_raised_priority_when_asked_and_allowed() {
        let default = own_nice();
        let permitted = std::thread::spawn(|| {
            rustix::process::setpriority_process(Some(rustix::thread::gettid()), READER_NICE)
                .is_ok()
        })
        .join()
        .unwrap();
        let expected = if permitted { READER_NICE } else { default };
        assert_eq!(reader_nice(true).await, expected);
        assert_eq!(reader_nice(false).await, default);
    }
}
