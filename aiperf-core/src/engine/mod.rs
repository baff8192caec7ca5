//! The engine: runs phases, issues credits on schedule, sends requests and hands every
//! finished exchange to the record sink off the hot path.
//!
//! Threads and tasks:
//! - open-loop arrivals are timed on a dedicated OS thread (`std::thread::sleep` wakes
//!   within tens of microseconds; the async timer only has millisecond resolution), which
//!   spawns one task per arrival; a closed-loop phase runs one task per concurrency slot,
//!   which starts its next session when the last one ended (no busy waiting);
//! - each request task builds the body, sends it and pushes the raw exchange onto a
//!   channel: every stamp is taken before, so parsing, tokenizing and disk never touch the
//!   measured times;
//! - one processing thread parses exchanges into [`RequestRecord`]s and feeds the sink.
//!
//! The channel holds at most [`PROCESSING_BACKLOG`] exchanges. When the processing thread
//! falls that far behind (a client machine too small for the load), request tasks wait
//! to hand over their exchange before their slot frees: the offered load drops, which
//! shows as lower throughput (and schedule lag in open loop), instead of memory growing
//! without bound. The wait comes after the exchange ended, so no latency is affected.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cache_bust::CacheBust;
use crate::clock::Clock;
use crate::config::{ConfigError, ExportLevel, ValidatedConfig};
use crate::conversation::Conversation;
use crate::dataset::{ConversationSampler, ConversationStream, DatasetError, SamplingStrategy};
use crate::endpoint::Endpoint;
use crate::record::{
    Credit, ErrorDetails, HttpTiming, Phase, RawCapture, RequestRecord, TimedResponse,
};
use crate::schedule::ScheduleError;
use crate::seed::derive_seed;
use crate::sink::{RecordSink, RunContext, SinkError};
use crate::transport::{RawExchange, Transport};
use crate::RunInfo;

mod job;
mod phase;
mod plan;
mod prompt_maker;
mod session;
mod stream_maker;
mod watermark;

pub use plan::{Cancellation, PhasePlan};

use phase::PhaseRunner;
use prompt_maker::PromptMaker;
use stream_maker::StreamMaker;
use watermark::{Ticket, Unprocessed};

/// Most finished exchanges waiting for the processing thread (see the module docs). At
/// ~40 KB for a 128-token stream this bounds the backlog near 40 MB.
pub const PROCESSING_BACKLOG: usize = 256;

/// Live counters a UI can poll while the engine runs. Updating them costs one atomic add.
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests sent in the current phase.
    pub sent: AtomicU64,
    /// Requests whose records were processed in the current phase.
    pub completed: AtomicU64,
    /// Of those, the failed ones.
    pub errors: AtomicU64,
    /// True while the profiling phase runs (false during warmup).
    pub profiling: AtomicBool,
    /// The requests on the wire, by when they were sent: what shows a stalled server.
    pub in_flight: InFlight,
    /// True once sending has ended and the sink is finishing: computing the summary and
    /// writing what it writes after the run (e.g. `profile_export.parquet`, seconds for
    /// a million records). The runtime stays free meanwhile, so a watcher can say so.
    pub finishing: AtomicBool,
}

/// The requests on the wire and when each was sent. Registering one costs an
/// uncontended lock, taken before the request is handed to the transport and after its
/// exchange ended, never between the stamps.
#[derive(Debug, Default)]
pub struct InFlight {
    sent_at: Mutex<HashMap<u64, Instant>>,
    next_id: AtomicU64,
}

/// Requests that have waited longer than a threshold ([`InFlight::waiting_longer_than`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// How many.
    pub count: usize,
    /// How long the oldest has waited.
    pub longest: Duration,
}

impl InFlight {
    /// Registers a request sent now; it leaves when the guard drops (its exchange ended,
    /// or its task was cancelled).
    fn enter(&self) -> OnTheWire<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, Instant::now());
        OnTheWire {
            in_flight: self,
            id,
        }
    }

    /// The requests sent more than `threshold` ago that have not ended; `None` when there
    /// are none.
    pub fn waiting_longer_than(&self, threshold: Duration) -> Option<Waiting> {
        let now = Instant::now();
        let sent_at = self.lock();
        let waits = sent_at
            .values()
            .map(|at| now.saturating_duration_since(*at))
            .filter(|waited| *waited > threshold);
        let (count, longest) = waits.fold((0, Duration::ZERO), |(n, longest), waited| {
            (n + 1, longest.max(waited))
        });
        (count > 0).then_some(Waiting { count, longest })
    }

    /// How many requests are on the wire.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no request is on the wire.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Instant>> {
        // The map stays consistent whatever panicked while holding it.
        self.sent_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A request registered in [`InFlight`] until it drops.
struct OnTheWire<'a> {
    in_flight: &'a InFlight,
    id: u64,
}

impl Drop for OnTheWire<'_> {
    fn drop(&mut self) {
        self.in_flight.lock().remove(&self.id);
    }
}

impl Progress {
    /// The sending side's reset when a phase starts; the processor resets its own
    /// counters when the phase's start reaches it (see [`spawn_processor`]).
    fn reset(&self, phase: Phase) {
        self.sent.store(0, Ordering::Relaxed);
        self.profiling
            .store(phase == Phase::Profiling, Ordering::Relaxed);
    }
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The builder is missing a part.
    #[error("the benchmark has no {0}: set it on the builder")]
    Missing(&'static str),
    /// The configuration is invalid once the endpoint's abilities are applied (e.g.
    /// prefill concurrency, which needs streaming, with an endpoint that does not stream).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The dataset has no conversations.
    #[error("the dataset is empty: there is nothing to send")]
    EmptyDataset,
    /// The schedule could not be built.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The thread that makes a [`ConversationStream`]'s conversations could not start.
    #[error("cannot start the thread that makes the dataset's conversations: {0}")]
    StreamThread(std::io::Error),
    /// A [`ConversationStream`] failed to make a conversation; the run stopped there.
    #[error("the dataset stream failed: {0}")]
    Dataset(DatasetError),
    /// The record sink failed (e.g. the disk is full).
    #[error("writing results failed: {0}")]
    Sink(SinkError),
}

/// A benchmark ready to run. Build one with [`Benchmark::builder`].
pub struct Benchmark<S: RecordSink> {
    /// The configuration that runs (streaming as the endpoint allows it).
    config: ValidatedConfig,
    shared: Arc<Shared>,
    phases: Vec<PhasePlan>,
    draws: phase::Draws,
    sink: S,
    cancel: CancellationToken,
    progress: Arc<Progress>,
    /// See [`BenchmarkBuilder::wall_clock_offset`].
    wall_offset_ns: i64,
}

impl<S: RecordSink> std::fmt::Debug for Benchmark<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Benchmark")
            .field("phases", &self.phases)
            .finish_non_exhaustive()
    }
}

/// What every request task needs, shared read-only.
struct Shared {
    endpoint: Arc<dyn Endpoint>,
    transport: Arc<dyn Transport>,
    urls: Vec<String>,
    model: String,
    streaming: bool,
    headers: Vec<(String, String)>,
    /// The header that carries the conversation's id.
    session_header: String,
    timeout: Option<Duration>,
    keep_raw: bool,
    cache_bust: CacheBust,
    /// Makes the deferred prompts ahead of the schedule, when the dataset has any.
    prompt_maker: Option<PromptMaker>,
    /// Makes the conversations of a streamed dataset ahead of the schedule.
    stream: Option<Arc<StreamMaker>>,
    /// The requests whose records the sink has not received: the processing watermark.
    unprocessed: Arc<Unprocessed>,
}

impl Shared {
    /// A streamed dataset's draw `draw` once made; `None` when the stream failed.
    async fn take_streamed(&self, draw: usize) -> Option<Arc<Conversation>> {
        self.stream.as_ref()?.take(draw as u64).await
    }
}

/// Builds a [`Benchmark`] of one configuration. The configuration decides everything it
/// can: URLs, model, streaming, headers, timeout, raw capture, seed and phases; the
/// builder takes only what is not configuration (the endpoint implementation, the
/// transport, the conversations, the sink) and, for custom load shapes, explicit phases.
pub struct BenchmarkBuilder {
    config: ValidatedConfig,
    endpoint: Option<Arc<dyn Endpoint>>,
    transport: Option<Arc<dyn Transport>>,
    conversations: Vec<Conversation>,
    sampling: SamplingStrategy,
    stream: Option<ConversationStream>,
    phases: Vec<PhasePlan>,
    cancel: CancellationToken,
    progress: Arc<Progress>,
    wall_offset_ns: i64,
}

impl std::fmt::Debug for BenchmarkBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchmarkBuilder")
            .field("urls", &self.config.endpoint.urls)
            .field("phases", &self.phases)
            .finish_non_exhaustive()
    }
}

impl Benchmark<crate::sink::CollectRecords> {
    /// Starts building a benchmark of `config`.
    pub fn builder(config: &ValidatedConfig) -> BenchmarkBuilder {
        BenchmarkBuilder {
            config: config.clone(),
            endpoint: None,
            transport: None,
            conversations: Vec::new(),
            sampling: SamplingStrategy::Shuffle,
            stream: None,
            phases: Vec::new(),
            cancel: CancellationToken::new(),
            progress: Arc::new(Progress::default()),
            wall_offset_ns: 0,
        }
    }
}

impl BenchmarkBuilder {
    /// The request/response format.
    #[must_use]
    pub fn endpoint(mut self, endpoint: Arc<dyn Endpoint>) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// The HTTP client.
    #[must_use]
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// The conversations to send, drawn by `sampling` (seeded from the configuration's
    /// random seed).
    #[must_use]
    pub fn conversations(
        mut self,
        conversations: Vec<Conversation>,
        sampling: SamplingStrategy,
    ) -> Self {
        self.conversations = conversations;
        self.sampling = sampling;
        self
    }

    /// Conversations made as the run needs them instead of loaded
    /// [`conversations`](Self::conversations) (which this replaces): sent once each, in
    /// dataset order, each made on a thread of its own at most a thousand or so ahead of
    /// the sessions and dropped once its session ended, so the run's memory stays flat
    /// however many requests it sends. A run that starts more sessions than the stream
    /// holds starts a new pass from its first conversation, as sequential sampling wraps
    /// around a loaded dataset. Phases that need the whole dataset (a fixed schedule, a
    /// user-centric rate) cannot be derived from a stream: see
    /// [`PhasePlan::for_stream`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use aiperf_core::{Benchmark, BenchmarkConfig, Conversation, ConversationStream, Turn};
    /// # use aiperf_core::{Endpoint, Transport};
    /// # fn build(endpoint: Arc<dyn Endpoint>, transport: Arc<dyn Transport>) {
    /// let mut config = BenchmarkConfig::default();
    /// config.endpoint.urls = vec!["http://localhost:8000".into()];
    /// config.load.request_count = Some(1_000_000);
    /// let config = config.validate().unwrap();
    /// // A million prompts, never more than a few thousand of them in memory.
    /// let prompts = ConversationStream::new(1_000_000, || {
    ///     (0..1_000_000).map(|i| {
    ///         Ok(Conversation {
    ///             session_id: i.to_string(),
    ///             turns: vec![Turn::text(format!("Say {i} in words."))],
    ///             ..Conversation::default()
    ///         })
    ///     })
    /// })
    /// .single_turn();
    /// let benchmark = Benchmark::builder(&config)
    ///     .endpoint(endpoint)
    ///     .transport(transport)
    ///     .conversation_stream(prompts)
    ///     .sink(aiperf_core::CollectRecords::default());
    /// # }
    /// ```
    #[must_use]
    pub fn conversation_stream(mut self, stream: ConversationStream) -> Self {
        self.conversations = Vec::new();
        self.stream = Some(stream);
        self
    }

    /// Adds a phase instead of those the configuration describes; phases run in the
    /// order added. For load shapes of your own (a custom [`Scheduler`](crate::Scheduler)).
    #[must_use]
    pub fn phase(mut self, plan: PhasePlan) -> Self {
        self.phases.push(plan);
        self
    }

    /// Adds phases in order (see [`phase`](Self::phase)).
    #[must_use]
    pub fn phases(mut self, plans: impl IntoIterator<Item = PhasePlan>) -> Self {
        self.phases.extend(plans);
        self
    }

    /// A token that stops the run early when cancelled (e.g. on Ctrl-C). Records already
    /// finished are kept; requests in flight are abandoned.
    #[must_use]
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Counters to poll for a progress display.
    #[must_use]
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// Wall-clock times in the records read `offset_ns` later than this machine's clock
    /// ([`Clock::shifted`]): the shards of one benchmark stamp in the time of a common
    /// reference so that they merge on one time axis. Durations are unaffected.
    #[must_use]
    pub fn wall_clock_offset(mut self, offset_ns: i64) -> Self {
        self.wall_offset_ns = offset_ns;
        self
    }

    /// Finishes the builder with the sink that receives the records. Resolves what the
    /// configuration and the endpoint decide together: streaming only where the endpoint
    /// streams, the request URL of each base URL, the API-key header.
    pub fn sink<S: RecordSink>(self, sink: S) -> Result<Benchmark<S>, EngineError> {
        let endpoint = self.endpoint.ok_or(EngineError::Missing("endpoint"))?;
        let transport = self.transport.ok_or(EngineError::Missing("transport"))?;
        let empty = self
            .stream
            .as_ref()
            .map_or(self.conversations.is_empty(), ConversationStream::is_empty);
        if empty {
            return Err(EngineError::EmptyDataset);
        }
        let info = endpoint.info();
        let streaming = self.config.streams_with(info);
        let config = if streaming == self.config.endpoint.streaming {
            self.config
        } else {
            self.config
                .modified(|config| config.endpoint.streaming = streaming)?
        };
        let phases = match (self.phases.is_empty(), &self.stream) {
            (false, _) => self.phases,
            (true, Some(stream)) => PhasePlan::for_stream(&config, stream)?,
            (true, None) => PhasePlan::for_dataset(&config, &self.conversations)?,
        };
        let endpoint_config = &config.endpoint;
        let urls = config.request_urls(info);
        let (headers, _) =
            info.request_headers(endpoint_config.api_key.as_deref(), &endpoint_config.headers);
        let seed = config.input.random_seed.unwrap_or_else(rand::random);
        // The run's own token: a failed stream stops this run, not the caller's others.
        let cancel = self.cancel.child_token();
        let (draws, prompt_maker, stream) = if let Some(stream) = self.stream {
            let maker =
                StreamMaker::start(stream, cancel.clone()).map_err(EngineError::StreamThread)?;
            let maker = Arc::new(maker);
            let draws = phase::Draws::new(phase::DrawSource::Stream(Arc::clone(&maker)));
            (draws, None, Some(maker))
        } else {
            let sampler = ConversationSampler::new(
                self.conversations,
                self.sampling,
                derive_seed(seed, "dataset.sampling"),
            );
            let conversations = sampler.conversations();
            let prompt_maker = conversations
                .iter()
                .any(|c| c.has_deferred_text())
                .then(|| PromptMaker::start(conversations.to_vec()));
            (
                phase::Draws::new(phase::DrawSource::Sampler(sampler)),
                prompt_maker,
                None,
            )
        };
        let shared = Shared {
            urls,
            model: config.primary_model().to_owned(),
            streaming,
            headers,
            session_header: endpoint_config
                .session_header
                .clone()
                .unwrap_or_else(|| "X-Correlation-ID".into()),
            timeout: Some(endpoint_config.request_timeout),
            keep_raw: config.output.export_level == ExportLevel::Raw,
            cache_bust: config.input.cache_bust,
            prompt_maker,
            stream,
            unprocessed: Arc::default(),
            endpoint,
            transport,
        };
        Ok(Benchmark {
            draws,
            config,
            shared: Arc::new(shared),
            phases,
            sink,
            cancel,
            progress: self.progress,
            wall_offset_ns: self.wall_offset_ns,
        })
    }
}

/// A request that finished (or failed before it could be sent), waiting to be processed.
struct Finished {
    credit: Credit,
    /// Held until the record reached the sink.
    ticket: Ticket,
    model: String,
    payload: Bytes,
    /// The input-length text of a multi-turn request (its history included); `None` for
    /// a first turn, whose text the processor derives from the conversation.
    input_text: Option<String>,
    /// The headers sent, when the benchmark keeps raw exchanges.
    sent_headers: Option<Vec<(String, String)>>,
    outcome: Outcome,
}

/// What the processing thread receives, in order.
// Nearly every message is a `Finished`; boxing it to shrink the rare phase marker would
// cost an allocation per request.
#[allow(clippy::large_enum_variant)]
enum ToProcessor {
    /// A phase began at this instant (before any of its requests).
    PhaseStarted(Phase, Instant),
    /// A request finished.
    Finished(Finished),
}

// Nearly every request is exchanged; boxing the exchange to shrink the rare failure to
// send would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Exchanged(RawExchange),
    NotSent { at: Instant, error: ErrorDetails },
}

impl<S: RecordSink> Benchmark<S> {
    /// Runs every phase and returns what the sink made of the records.
    pub async fn run(self) -> Result<S::Output, EngineError> {
        // A progress shared with an earlier run still says that run was finishing.
        self.progress.finishing.store(false, Ordering::Relaxed);
        let clock = Clock::start().shifted(self.wall_offset_ns);
        let mut sink = self.sink;
        sink.start(&RunContext {
            config: &self.config,
            endpoint: self.shared.endpoint.info(),
            urls: &self.shared.urls,
        })
        .map_err(EngineError::Sink)?;
        let (tx, rx) = mpsc::channel::<ToProcessor>(PROCESSING_BACKLOG);
        let processor = spawn_processor(
            rx,
            sink,
            &self.shared,
            clock,
            Arc::clone(&self.progress),
            self.cancel.clone(),
        );
        let draws = Arc::new(Mutex::new(self.draws));
        let mut info = RunInfo {
            clock: Some(clock),
            ..RunInfo::default()
        };
        for plan in self.phases {
            if self.cancel.is_cancelled() {
                break;
            }
            let runner = PhaseRunner {
                shared: Arc::clone(&self.shared),
                draws: Arc::clone(&draws),
                results: tx.clone(),
                cancel: self.cancel.clone(),
                progress: Arc::clone(&self.progress),
                clock,
            };
            let phase = plan.phase;
            tracing::info!("{phase} phase started");
            let stats = runner.run(plan).await;
            tracing::info!(
                "{phase} phase finished: {} sent, {} completed, {} cancelled",
                stats.sent,
                stats.completed,
                stats.cancelled
            );
            info.phases.push(stats);
        }
        info.was_cancelled = self.cancel.is_cancelled();
        drop(tx);
        let sink = tokio::task::spawn_blocking(move || processor.join())
            .await
            .map_err(|e| EngineError::Sink(e.to_string().into()))?
            .map_err(|_| EngineError::Sink("the record processor panicked".into()))?
            .map_err(EngineError::Sink)?;
        if let Some(failure) = self.shared.stream.as_ref().and_then(|s| s.failure()) {
            return Err(EngineError::Dataset(failure));
        }
        self.progress.finishing.store(true, Ordering::Relaxed);
        // On the blocking pool, as the processor's join: a sink's after-run writing must
        // not stall the caller's runtime (its watchers and displays).
        tokio::task::spawn_blocking(move || sink.finish(&info))
            .await
            .map_err(|e| EngineError::Sink(e.to_string().into()))?
            .map_err(EngineError::Sink)
    }
}

/// How long the processing thread goes on with records that finished before a
/// cancellation; what is left after that is skipped, so a cancelled run ends promptly
/// even when records are slow to process (huge responses).
pub const PROCESSING_AFTER_CANCEL: Duration = Duration::from_secs(2);

/// How much the processing thread lowers its priority in a streaming run (nice +10 from
/// where the process runs).
#[cfg(target_os = "linux")]
const PROCESSOR_NICE_INCREMENT: i32 = 10;

/// Lowers the calling (processing) thread's priority, which needs no privilege. In a
/// streaming run every chunk's stamp depends on the transport's reader getting the CPU
/// the moment bytes arrive; a processing thread of equal priority competes with it on a
/// busy machine, and records can wait: they are stamped already. On two cores at
/// concurrency 512, without the privilege to raise the reader's priority, TTFT on reused
/// connections came within +0.2 to +1.2 ms (mean) of a packet capture instead of +0.4 to
/// +2.6 ms, at the same capacity (bench/README.md, 2026-11-27). Refused, the thread keeps
/// its priority.
fn yield_to_stamping_threads() {
    #[cfg(target_os = "linux")]
    {
        let thread = Some(rustix::thread::gettid());
        let lowered = rustix::process::getpriority_process(thread).and_then(|nice| {
            rustix::process::setpriority_process(thread, (nice + PROCESSOR_NICE_INCREMENT).min(19))
        });
        if let Err(error) = lowered {
            tracing::debug!(%error, "the record processor keeps its priority");
        }
    }
}

/// Parses exchanges into records and feeds the sink, on its own thread so that parsing
/// and token counting never compete with the async runtime that sends requests.
fn spawn_processor<S: RecordSink>(
    mut rx: mpsc::Receiver<ToProcessor>,
    mut sink: S,
    shared: &Shared,
    clock: Clock,
    progress: Arc<Progress>,
    cancel: CancellationToken,
) -> std::thread::JoinHandle<Result<S, SinkError>> {
    let (endpoint, unprocessed) = (
        Arc::clone(&shared.endpoint),
        Arc::clone(&shared.unprocessed),
    );
    let streaming = shared.streaming;
    std::thread::spawn(move || {
        if streaming {
            yield_to_stamping_threads();
        }
        let mut failure = None;
        // Records of an earlier phase that finish late (a warmup request still in flight
        // when profiling began) do not count toward the current phase's progress.
        let mut current_phase = None;
        let mut stop_processing_at = None;
        let mut skipped = 0_u64;
        let mut since_watermark = 0_u32;
        while let Some(message) = next_message(&mut rx) {
            if failure.is_some() {
                continue; // drain so senders never block; the first error is reported
            }
            if cancel.is_cancelled() {
                let stop_at = *stop_processing_at
                    .get_or_insert_with(|| Instant::now() + PROCESSING_AFTER_CANCEL);
                if Instant::now() >= stop_at && matches!(message, ToProcessor::Finished(_)) {
                    skipped += 1;
                    continue;
                }
            }
            let delivered = match message {
                ToProcessor::PhaseStarted(phase, at) => {
                    current_phase = Some(phase);
                    progress.completed.store(0, Ordering::Relaxed);
                    progress.errors.store(0, Ordering::Relaxed);
                    sink.on_phase_start(phase, clock.perf_ns(at))
                }
                ToProcessor::Finished(finished) => {
                    let record = to_record(finished, endpoint.as_ref(), clock);
                    if current_phase == Some(record.credit.phase) {
                        if !record.is_valid() {
                            progress.errors.fetch_add(1, Ordering::Relaxed);
                        }
                        progress.completed.fetch_add(1, Ordering::Relaxed);
                    }
                    since_watermark += 1;
                    sink.on_record(record).and_then(|()| {
                        if since_watermark < RECORDS_PER_WATERMARK {
                            return Ok(());
                        }
                        since_watermark = 0;
                        sink.on_watermark(clock.perf_ns(unprocessed.watermark()))
                    })
                }
            };
            if let Err(error) = delivered {
                failure = Some(error);
            }
        }
        if skipped > 0 {
            tracing::warn!(
                "cancelled: {skipped} finished requests were left unprocessed (processing \
                 stops {} s after a cancellation)",
                PROCESSING_AFTER_CANCEL.as_secs()
            );
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(sink),
        }
    })
}

/// How many records the processing thread hands the sink between two watermarks: often
/// enough that what a sink keeps until then stays small, rarely enough that the lock
/// and the sink's settling cost nothing per record.
const RECORDS_PER_WATERMARK: u32 = 1024;

/// How long the processing thread naps when it finds no message, before it blocks on the
/// channel. Under load the messages of the nap pile up and are taken without waiting, so
/// a request task seldom has to wake the thread: a wake is a system call on the sending
/// worker and a context switch on the processor, per record otherwise. At the default
/// backlog the channel fills in a nap only beyond 256,000 records/s.
const PROCESSING_NAP: Duration = Duration::from_millis(1);

/// The next message for the processing thread; `None` once every sender is gone.
fn next_message(rx: &mut mpsc::Receiver<ToProcessor>) -> Option<ToProcessor> {
    use mpsc::error::TryRecvError;
    match rx.try_recv() {
        Ok(message) => return Some(message),
        Err(TryRecvError::Disconnected) => return None,
        Err(TryRecvError::Empty) => {}
    }
    std::thread::sleep(PROCESSING_NAP);
    match rx.try_recv() {
        Ok(message) => Some(message),
        Err(TryRecvError::Disconnected) => None,
        Err(TryRecvError::Empty) => rx.blocking_recv(),
    }
}

/// Turns a finished exchange into a record: parse, convert stamps, classify the error.
fn to_record(finished: Finished, endpoint: &dyn Endpoint, clock: Clock) -> RequestRecord {
    let Finished {
        credit,
        ticket,
        model,
        payload,
        input_text,
        sent_headers,
        outcome,
    } = finished;
    // Let go before the record reaches the sink: the watermark is only read between
    // records, on this thread, so it cannot pass this record's start too soon.
    drop(ticket);
    let conversation = Arc::clone(&credit.conversation);
    let turn = conversation.turns.get(credit.turn_index);
    let input_text = input_text
        .unwrap_or_else(|| conversation.input_text(turn.map_or(&[], std::slice::from_ref)));
    let requested_max_tokens = turn.and_then(|t| t.max_tokens);
    let mut record = RequestRecord {
        credit_issued_ns: clock.perf_ns(credit.issued_at),
        scheduled_ns: clock.perf_ns(credit.scheduled_at),
        credit,
        model,
        clock,
        start_ns: 0,
        head_ns: None,
        end_ns: 0,
        status: None,
        responses: Vec::new(),
        error: None,
        input_text,
        requested_max_tokens,
        payload,
        chunk_count: 0,
        body_bytes: 0,
        http: None,
        retries: 0,
        raw: None,
    };
    match outcome {
        Outcome::NotSent { at, error } => {
            record.start_ns = clock.perf_ns(at);
            record.end_ns = record.start_ns;
            record.error = Some(error);
        }
        Outcome::Exchanged(exchange) => {
            record.start_ns = clock.perf_ns(exchange.started_at);
            record.head_ns = exchange.head_at.map(|at| clock.perf_ns(at));
            record.end_ns = clock.perf_ns(exchange.ended_at);
            record.status = exchange.status;
            record.retries = exchange.retries;
            record.http = exchange.trace.map(|trace| HttpTiming {
                connection_reused: trace.connection_reused,
                connect_ns: trace
                    .connect
                    .map(|(start, end)| (clock.perf_ns(start), clock.perf_ns(end))),
                request_sent_ns: trace.request_sent_at.map(|at| clock.perf_ns(at)),
                first_chunk_ns: exchange.chunks.first().map(|c| clock.perf_ns(c.at)),
                request_bytes: trace.request_bytes,
                response_head_bytes: trace.response_head_bytes,
            });
            record.chunk_count = exchange.chunks.len();
            record.body_bytes = exchange.chunks.bytes().len();
            let parsed = endpoint.parse(&exchange);
            record.responses = parsed
                .responses
                .into_iter()
                .map(|response| TimedResponse {
                    perf_ns: clock.perf_ns(response.at),
                    response,
                })
                .collect();
            record.error = exchange
                .error
                .as_ref()
                .map(ErrorDetails::from)
                .or(parsed.error);
            if record.error.is_none() && !record.is_valid() {
                record.error = Some(ErrorDetails::invalid_result());
            }
            record.raw = sent_headers.map(|request_headers| {
                Box::new(RawCapture {
                    request_headers,
                    content_type: exchange.content_type,
                    chunks: exchange.chunks,
                })
            });
        }
    }
    record
}

/// A version-4 UUID from the thread's user-space generator (`Uuid::new_v4` asks the
/// kernel for entropy on every call, a system call per request on the hot path), encoded
/// into a stack buffer and copied once (`to_string` goes through the formatter and grows
/// its string).
fn random_uuid() -> String {
    let mut text = uuid::Uuid::encode_buffer();
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .hyphenated()
        .encode_lower(&mut text)
        .to_owned()
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    /// The calling thread's nice value (field 19 of `/proc/thread-self/stat`).
    fn own_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let fields = &stat[stat.rfind(')').unwrap() + 2..];
        fields.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn the_processor_yields_ten_nice_steps_to_the_stamping_threads_without_privilege() {
        let (before, after) = std::thread::spawn(|| {
            let before = own_nice();
            yield_to_stamping_threads();
            (before, own_nice())
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + PROCESSOR_NICE_INCREMENT).min(19));
        assert_eq!(own_nice(), before, "only the calling thread");
    }

    #[test]
    fn request_ids_are_version_4_uuids_in_their_usual_lower_case_form() {
        let id = random_uuid();
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(id, parsed.to_string());
        assert_ne!(random_uuid(), id);
    }
}
