//! The socket reader: two threads that read every connection of a transport as soon as
//! its bytes arrive, whatever the runtime sending the requests is busy with.
//!
//! A runtime driving many connections gets round to a readable socket late; when two
//! server writes wait in the socket by then, one read takes both and the kernel reports
//! the second one's arrival for both (see [`super::wire`]). Here each connection's reads
//! run on a small runtime of their own (a thread doing nothing but `recvmsg`; the
//! connections take the [`READER_THREADS`] in turn): every segment is read, and stamped,
//! on its own as soon as it arrives. The reads wait in the
//! connection's [`Inbox`] with their stamps until the client asks for bytes on its own runtime;
//! writes stay there too (a tokio socket may be written from a task of another runtime).
//!
//! What the reader holds ahead of the client is bounded: [`READER_BUDGET`] shared evenly by
//! the open connections, at most [`QUEUE_AT_MOST`] and at least [`QUEUE_AT_LEAST`] each.
//! A connection at its bound is not read until the client takes some of its bytes: the kernel
//! holds the rest (not in the client's memory) and, as without the reader, a later read
//! then takes what arrived meanwhile at once.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use hyper::rt::ReadBufCursor;
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};

use super::wire::{read_now, WireClock, READ_AT_MOST};

/// The most bytes read ahead of the client one connection may hold: the reader stops reading
/// that socket until the client has taken some (TCP then holds the rest back at the server).
pub(crate) const QUEUE_AT_MOST: usize = 256 * 1024;

/// What all of a reader's connections may hold ahead of the client together, shared evenly.
/// A client far behind 10,000 streams (2 cores, bench/profile.sh section 8) held 15 KB a
/// stream here, 150 MB; 32 MiB leaves each of them 4 KiB (about 18 SSE events, 180 ms of
/// a stream at 10 ms per token) and keeps up to 128 connections at [`QUEUE_AT_MOST`].
pub(crate) const READER_BUDGET: usize = 32 * 1024 * 1024;

/// The least a connection may hold ahead of the client however many are open: a response
/// head and a few events.
pub(crate) const QUEUE_AT_LEAST: usize = 4 * 1024;

/// How many reads' places a drained queue keeps: one that grew with a backlog gives its
/// room back, as a connection may stay open (idle in the pool) long after.
const READS_KEPT: usize = 8;

/// How many threads read the sockets (never more than the CPUs). One thread read 512
/// streams on 2 cores shared with the mock a median 0.75 ms after their bytes arrived, and
/// TTFT came out within the goal (0.2 ms mean, 1 ms p99 of a packet capture) in 1 run of
/// 6 without the privilege to raise its priority; two threads, which get a larger share of
/// busy cores and split the backlog, did in 6 of 6, at the same streaming capacity
/// (bench/README.md, 2026-11-27, 17:30).
pub(crate) const READER_THREADS: usize = 2;

/// Starts the reader threads on the first connection and stops them when dropped (with
/// the transport's last connector). Shared by all of a transport's connections.
#[derive(Debug, Default)]
pub(crate) struct SocketReader {
    /// Empty when the system refused every thread.
    threads: OnceLock<Vec<ReaderThread>>,
    /// Which thread reads the next connection.
    next: AtomicUsize,
    /// All threads' connections: they share [`READER_BUDGET`] and one lateness count.
    connections: Arc<Connections>,
    /// The threads ask for a higher priority ([`raise_priority`]).
    raise_priority: bool,
}

#[derive(Debug)]
pub(crate) struct ReaderThread {
    runtime: Handle,
    /// The connections being read, which share [`READER_BUDGET`].
    connections: Arc<Connections>,
    /// Dropped with the reader: the thread's runtime then ends, and with it every
    /// connection's read task.
    _stop: oneshot::Sender<()>,
}

impl SocketReader {
    /// A reader whose threads ask for a higher priority when `raise_priority` is set.
    pub(crate) fn new(raise_priority: bool) -> Self {
        Self {
            raise_priority,
            ..Self::default()
        }
    }

    /// The reader thread for a new connection, the threads in turn; they start on the
    /// first call. `None` when the system refused every thread (the connections are then
    /// read by the runtime that sends).
    pub(crate) fn thread(&self) -> Option<&ReaderThread> {
        let threads = self.threads.get_or_init(|| {
            let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            (0..READER_THREADS.min(cpus))
                .map_while(|_| start_thread(self.raise_priority, self.connections.clone()))
                .collect()
        });
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        threads.get(turn.checked_rem(threads.len())?)
    }

    /// How late the reader threads read since the last call (nothing when they never
    /// started); the counts start again from zero.
    pub(crate) fn take_lateness(&self) -> ReadLateness {
        self.connections.lateness.take()
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
        self.connections.open.fetch_add(1, Ordering::Relaxed);
        let inbox = Arc::new(Inbox {
            state: Mutex::default(),
            reader: Notify::new(),
            connections: self.connections.clone(),
        });
        // The guard is made here, not in the task: a task dropped before it first ran
        // still ends the connection's reading (and leaves the budget to the others).
        let ending = EndsReading(inbox.clone());
        self.runtime
            .spawn(read_until_closed(stream.clone(), kernel_stamps, ending));
        Ok((stream, inbox))
    }
}

#[cfg(test)]
impl ReaderThread {
    /// Counts `more` connections as open, as if that many shared the budget.
    pub(crate) fn count_as_open(&self, more: usize) {
        self.connections.open.fetch_add(more, Ordering::Relaxed);
    }
}

/// A thread with a one-thread runtime that only does I/O, at a raised priority if asked,
/// reading connections counted among `connections`; `None` (and a warning) when the system
/// refuses a thread.
fn start_thread(raised: bool, connections: Arc<Connections>) -> Option<ReaderThread> {
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
            connections,
            _stop: stop,
        }),
        Err(error) => {
            tracing::warn!(%error, "the system refused a socket reader thread; without any, connections are read by the sending runtime");
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

/// The connections a reader reads: they share its [`READER_BUDGET`], and how late their
/// reads were is counted together.
#[derive(Debug, Default)]
struct Connections {
    open: AtomicUsize,
    lateness: Lateness,
}

/// How late the socket reader read what arrived, over a span of time
/// ([`HttpTransport::take_read_lateness`](crate::HttpTransport::take_read_lateness)).
///
/// A read's lateness is the time from the arrival of its bytes (the kernel's stamp) to the
/// read. A read later than the gap between two server writes takes both, and the chunks
/// of the first then carry the second one's stamp; a few late reads mean the CPUs were
/// busy, many mean TTFT and ITL may be late by up to the lateness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadLateness {
    /// Reads of response bytes.
    pub reads: u64,
    /// Reads more than [`ReadLateness::LATE`] after their bytes arrived.
    pub late: u64,
    /// Reads more than [`ReadLateness::VERY_LATE`] after their bytes arrived.
    pub very_late: u64,
    /// The lateness of the latest of the late reads (zero when none was late).
    pub latest: Duration,
}

impl ReadLateness {
    /// Late: a fifth of a token gap of 5 ms.
    pub const LATE: Duration = Duration::from_millis(1);
    /// Very late: a whole token gap of 5 ms.
    pub const VERY_LATE: Duration = Duration::from_millis(5);

    /// The share of the reads that were late (0 without reads).
    pub fn late_share(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.late as f64 / self.reads as f64
        }
    }
}

/// [`ReadLateness`] as the reader thread counts it.
#[derive(Debug, Default)]
struct Lateness {
    reads: AtomicU64,
    late: AtomicU64,
    very_late: AtomicU64,
    latest_ns: AtomicU64,
}

impl Lateness {
    fn record(&self, lateness: Duration) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        if lateness > ReadLateness::LATE {
            self.late.fetch_add(1, Ordering::Relaxed);
            if lateness > ReadLateness::VERY_LATE {
                self.very_late.fetch_add(1, Ordering::Relaxed);
            }
            let nanos = u64::try_from(lateness.as_nanos()).unwrap_or(u64::MAX);
            self.latest_ns.fetch_max(nanos, Ordering::Relaxed);
        }
    }

    fn take(&self) -> ReadLateness {
        ReadLateness {
            reads: self.reads.swap(0, Ordering::Relaxed),
            late: self.late.swap(0, Ordering::Relaxed),
            very_late: self.very_late.swap(0, Ordering::Relaxed),
            latest: Duration::from_nanos(self.latest_ns.swap(0, Ordering::Relaxed)),
        }
    }
}

impl Connections {
    /// How many bytes one connection may hold ahead of the client now.
    fn bound(&self) -> usize {
        bound_among(self.open.load(Ordering::Relaxed))
    }
}

/// One connection's share of [`READER_BUDGET`] among `open`.
fn bound_among(open: usize) -> usize {
    (READER_BUDGET / open.max(1)).clamp(QUEUE_AT_LEAST, QUEUE_AT_MOST)
}

/// What the reader read from one connection and the client has not taken yet.
#[derive(Debug)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
    /// Wakes the read task: the client took bytes from a full inbox, or dropped the connection.
    reader: Notify,
    connections: Arc<Connections>,
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
    /// The client dropped the connection: the read task ends and the socket closes.
    closed: bool,
    /// The read task waits for the client to take bytes (the inbox was at its bound).
    reader_waits: bool,
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

    /// Gives the client the bytes of the oldest waiting read (as many as `buf` takes; the rest
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
                if state.reads.is_empty() {
                    state.reads.shrink_to(READS_KEPT);
                }
            } else {
                read.bytes.advance(taken);
            }
            state.queued -= taken;
            // Against the bound now: connections opened or closed since the reader
            // stopped move it.
            let wake_reader = state.reader_waits && state.queued < self.connections.bound();
            if wake_reader {
                state.reader_waits = false;
            }
            drop(state);
            if wake_reader {
                self.reader.notify_one();
            }
            return Poll::Ready(Ok(()));
        }
        if let Some(end) = state.end.take() {
            // The end stays: the client may ask again after the socket's end.
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

    /// The bytes waiting for the client.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.state().queued
    }

    /// How many reads the queue has room for without growing.
    #[cfg(test)]
    pub(crate) fn reads_capacity(&self) -> usize {
        self.state().reads.capacity()
    }

    /// The client dropped the connection: the read task stops and drops its end of the socket.
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

    /// What the read task does next: stop (`None`), wait for the client to take bytes (no
    /// room), or read at most the room left under the connection's bound.
    fn room(&self) -> Option<usize> {
        let mut state = self.state();
        if state.closed {
            return None;
        }
        let room = self.connections.bound().saturating_sub(state.queued);
        state.reader_waits = room == 0;
        Some(room)
    }
}

/// Tells the client when the read task is gone without having said why (the transport, and
/// with it the reader thread, was dropped while the connection was still in use).
struct EndsReading(Arc<Inbox>);

impl Drop for EndsReading {
    fn drop(&mut self) {
        self.0.connections.open.fetch_sub(1, Ordering::Relaxed);
        self.0.end(Err(io::Error::other(
            "the transport's socket reader stopped",
        )));
    }
}

/// The read task of one connection: reads what arrives, stamped, into the inbox until the
/// socket ends, fails or the client drops the connection.
async fn read_until_closed(stream: Arc<TcpStream>, kernel_stamps: bool, ending: EndsReading) {
    let inbox = &ending.0;
    loop {
        match inbox.room() {
            None => return,
            // Full: wait until the client takes some (or drops the connection).
            Some(0) => {
                inbox.reader.notified().await;
                continue;
            }
            Some(_) => {}
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
        // No more than the room, taken now: connections opened while this one waited
        // for bytes lowered its share. The bound holds exactly.
        let room = match inbox.room() {
            None => return,
            Some(0) => continue,
            Some(room) => room,
        };
        let read = read_now(
            &stream,
            kernel_stamps,
            room.min(READ_AT_MOST),
            |bytes, at| (Bytes::copy_from_slice(bytes), at),
        );
        match read {
            Ok((bytes, _)) if bytes.is_empty() => {
                inbox.end(Ok(()));
                return;
            }
            Ok((bytes, at)) => {
                inbox.connections.lateness.record(at.elapsed());
                inbox.push(at, bytes);
            }
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
        let thread = start_thread(raised, Arc::default()).unwrap();
        thread.runtime.spawn(async { own_nice() }).await.unwrap()
    }

    /// Reads are counted, late ones (over 1 ms) and very late ones (over 5 ms) apart, with
    /// the latest lateness; taking the counts starts them again.
    #[test]
    fn lateness_counts_late_and_very_late_reads_and_the_latest() {
        let lateness = Lateness::default();
        for micros in [0, 999, 1_000, 1_001, 4_999, 5_000, 5_001, 21_400] {
            lateness.record(Duration::from_micros(micros));
        }
        assert_eq!(
            lateness.take(),
            ReadLateness {
                reads: 8,
                late: 5,
                very_late: 2,
                latest: Duration::from_micros(21_400),
            }
        );
        assert_eq!(lateness.take(), ReadLateness::default());
        assert!((lateness_of(5, 8).late_share() - 0.625).abs() < 1e-12);
        assert!(lateness_of(0, 0).late_share().abs() < 1e-12);
    }

    fn lateness_of(late: u64, reads: u64) -> ReadLateness {
        ReadLateness {
            reads,
            late,
            ..ReadLateness::default()
        }
    }

    /// New connections go to the reader threads in turn, as many threads as
    /// [`READER_THREADS`] allows on this machine, sharing one budget.
    #[test]
    fn connections_take_the_reader_threads_in_turn() {
        let reader = SocketReader::default();
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let threads = READER_THREADS.min(cpus);
        let turns: Vec<&ReaderThread> = (0..=threads).map(|_| reader.thread().unwrap()).collect();
        assert!(std::ptr::eq(turns[0], turns[threads]));
        for (i, a) in turns[..threads].iter().enumerate() {
            assert!(Arc::ptr_eq(&a.connections, &reader.connections));
            for b in &turns[i + 1..threads] {
                assert!(!std::ptr::eq(*a, *b));
            }
        }
    }

    /// Each connection's share of the budget: the most up to 128 connections, the least
    /// from 8,192 on, even shares between.
    #[test]
    fn connections_share_the_budget_evenly_between_the_least_and_the_most() {
        assert_eq!(bound_among(0), 262_144);
        assert_eq!(bound_among(1), 262_144);
        assert_eq!(bound_among(128), 262_144);
        assert_eq!(bound_among(129), 260_111);
        assert_eq!(bound_among(1_000), 33_554);
        assert_eq!(bound_among(8_192), 4_096);
        assert_eq!(bound_among(10_000), 4_096);
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
