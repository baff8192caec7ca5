//! The engine: runs phases, issues credits on schedule, sends requests and hands every
//! finished exchange to the record sink off the hot path.
//!
//! Threads and tasks:
//! - open-loop arrivals are timed on a dedicated OS thread (`std::thread::sleep` wakes
//!   within tens of microseconds; the async timer only has millisecond resolution), which
//!   spawns one task per arrival; closed-loop phases issue from an async loop that waits
//!   on a semaphore (no busy waiting);
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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::config::{ArrivalPattern, BenchmarkConfig};
use crate::conversation::{Conversation, Turn};
use crate::dataset::{ConversationSampler, SamplingStrategy};
use crate::endpoint::{Endpoint, RequestInput};
use crate::record::{Credit, ErrorDetails, Phase, RequestRecord, TimedResponse};
use crate::schedule::{Arrival, ClosedLoop, RateScheduler, ScheduleError, Scheduler};
use crate::seed::derive_seed;
use crate::sink::{RecordSink, SinkError};
use crate::transport::{HttpMethod, HttpRequest, RawExchange, Transport};
use crate::{PhaseStats, RunInfo};

/// Most finished exchanges waiting for the processing thread (see the module docs). At
/// ~40 KB for a 128-token stream this bounds the backlog near 40 MB.
pub const PROCESSING_BACKLOG: usize = 256;

/// One phase of a run: its load shape and its stop conditions.
pub struct PhasePlan {
    /// Warmup or profiling.
    pub phase: Phase,
    /// When each request goes.
    pub scheduler: Box<dyn Scheduler>,
    /// Maximum requests in flight (`None`: unlimited).
    pub concurrency: Option<usize>,
    /// Stop after this many requests.
    pub request_count: Option<u64>,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
    /// After the duration, wait this long for in-flight requests, then cancel them.
    pub grace_period: Duration,
}

impl std::fmt::Debug for PhasePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhasePlan")
            .field("phase", &self.phase)
            .field("concurrency", &self.concurrency)
            .field("request_count", &self.request_count)
            .field("duration", &self.duration)
            .field("grace_period", &self.grace_period)
            .finish_non_exhaustive()
    }
}

impl PhasePlan {
    /// The phases a validated configuration asks for: warmup (closed loop, when
    /// `warmup_request_count` is set) then profiling.
    pub fn from_config(config: &BenchmarkConfig) -> Result<Vec<PhasePlan>, ScheduleError> {
        let load = &config.load;
        let seed = config.input.random_seed.unwrap_or_else(rand::random);
        let mut plans = Vec::new();
        if let Some(count) = load.warmup_request_count {
            plans.push(PhasePlan {
                phase: Phase::Warmup,
                scheduler: Box::new(ClosedLoop),
                concurrency: Some(load.concurrency.unwrap_or(1)),
                request_count: Some(count),
                duration: None,
                grace_period: Duration::MAX,
            });
        }
        let (scheduler, concurrency): (Box<dyn Scheduler>, Option<usize>) =
            match (load.request_rate, load.arrival_pattern) {
                (Some(rate), Some(pattern)) if pattern != ArrivalPattern::ConcurrencyBurst => (
                    Box::new(RateScheduler::new(
                        rate,
                        pattern,
                        load.arrival_smoothness,
                        derive_seed(seed, pattern.seed_stream()),
                    )?),
                    load.concurrency,
                ),
                _ => (Box::new(ClosedLoop), Some(load.concurrency.unwrap_or(1))),
            };
        plans.push(PhasePlan {
            phase: Phase::Profiling,
            scheduler,
            concurrency,
            request_count: load.request_count,
            duration: load.benchmark_duration.map(Duration::from_secs_f64),
            grace_period: config.grace_period(),
        });
        Ok(plans)
    }
}

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
}

impl Progress {
    fn reset(&self, phase: Phase) {
        self.sent.store(0, Ordering::Relaxed);
        self.completed.store(0, Ordering::Relaxed);
        self.errors.store(0, Ordering::Relaxed);
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
    /// The dataset has no conversations.
    #[error("the dataset is empty: there is nothing to send")]
    EmptyDataset,
    /// The schedule could not be built.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The record sink failed (e.g. the disk is full).
    #[error("writing results failed: {0}")]
    Sink(SinkError),
}

/// A benchmark ready to run. Build one with [`Benchmark::builder`].
pub struct Benchmark<S: RecordSink> {
    shared: Arc<Shared>,
    phases: Vec<PhasePlan>,
    sampler: ConversationSampler,
    sink: S,
    cancel: CancellationToken,
    progress: Arc<Progress>,
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
    timeout: Option<Duration>,
}

/// Builds a [`Benchmark`].
pub struct BenchmarkBuilder {
    endpoint: Option<Arc<dyn Endpoint>>,
    transport: Option<Arc<dyn Transport>>,
    urls: Vec<String>,
    model: Option<String>,
    streaming: bool,
    headers: Vec<(String, String)>,
    timeout: Option<Duration>,
    conversations: Vec<Conversation>,
    sampling: SamplingStrategy,
    seed: u64,
    phases: Vec<PhasePlan>,
    cancel: CancellationToken,
    progress: Arc<Progress>,
}

impl std::fmt::Debug for BenchmarkBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchmarkBuilder")
            .field("urls", &self.urls)
            .field("model", &self.model)
            .field("phases", &self.phases)
            .finish_non_exhaustive()
    }
}

impl Benchmark<crate::sink::CollectRecords> {
    /// Starts building a benchmark.
    pub fn builder() -> BenchmarkBuilder {
        BenchmarkBuilder {
            endpoint: None,
            transport: None,
            urls: Vec::new(),
            model: None,
            streaming: false,
            headers: Vec::new(),
            timeout: None,
            conversations: Vec::new(),
            sampling: SamplingStrategy::Shuffle,
            seed: 0,
            phases: Vec::new(),
            cancel: CancellationToken::new(),
            progress: Arc::new(Progress::default()),
        }
    }
}

impl BenchmarkBuilder {
    /// The request/response format.
    pub fn endpoint(mut self, endpoint: Arc<dyn Endpoint>) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// The HTTP client.
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// A full request URL (base URL plus endpoint path). Several URLs are used round-robin,
    /// one per conversation.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.urls.push(url.into());
        self
    }

    /// The model addressed when a turn names none.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Ask for streamed responses.
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// A header sent with every request (e.g. `Authorization`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Bound on each request.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The conversations to send, drawn by `sampling` with `seed`.
    pub fn conversations(
        mut self,
        conversations: Vec<Conversation>,
        sampling: SamplingStrategy,
        seed: u64,
    ) -> Self {
        self.conversations = conversations;
        self.sampling = sampling;
        self.seed = seed;
        self
    }

    /// Adds a phase; phases run in the order added.
    pub fn phase(mut self, plan: PhasePlan) -> Self {
        self.phases.push(plan);
        self
    }

    /// Adds phases in order, e.g. those of [`PhasePlan::from_config`].
    pub fn phases(mut self, plans: impl IntoIterator<Item = PhasePlan>) -> Self {
        self.phases.extend(plans);
        self
    }

    /// A token that stops the run early when cancelled (e.g. on Ctrl-C). Records already
    /// finished are kept; requests in flight are abandoned.
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Counters to poll for a progress display.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// Finishes the builder with the sink that receives the records.
    pub fn sink<S: RecordSink>(self, sink: S) -> Result<Benchmark<S>, EngineError> {
        let endpoint = self.endpoint.ok_or(EngineError::Missing("endpoint"))?;
        let transport = self.transport.ok_or(EngineError::Missing("transport"))?;
        let model = self.model.ok_or(EngineError::Missing("model"))?;
        if self.urls.is_empty() {
            return Err(EngineError::Missing("URL"));
        }
        if self.phases.is_empty() {
            return Err(EngineError::Missing("phase"));
        }
        if self.conversations.is_empty() {
            return Err(EngineError::EmptyDataset);
        }
        Ok(Benchmark {
            shared: Arc::new(Shared {
                endpoint,
                transport,
                urls: self.urls,
                model,
                streaming: self.streaming,
                headers: self.headers,
                timeout: self.timeout,
            }),
            phases: self.phases,
            sampler: ConversationSampler::new(self.conversations, self.sampling, self.seed),
            sink,
            cancel: self.cancel,
            progress: self.progress,
        })
    }
}

/// A request that finished (or failed before it could be sent), waiting to be processed.
struct Finished {
    credit: Credit,
    model: String,
    payload: Bytes,
    /// The input-length text of a multi-turn request (its history included); `None` for
    /// a first turn, whose text the processor derives from the conversation.
    input_text: Option<String>,
    outcome: Outcome,
}

enum Outcome {
    Exchanged(RawExchange),
    NotSent { at: Instant, error: ErrorDetails },
}

impl<S: RecordSink> Benchmark<S> {
    /// Runs every phase and returns what the sink made of the records.
    pub async fn run(self) -> Result<S::Output, EngineError> {
        let clock = Clock::start();
        let (tx, rx) = mpsc::channel::<Finished>(PROCESSING_BACKLOG);
        let processor = spawn_processor(
            rx,
            self.sink,
            Arc::clone(&self.shared.endpoint),
            clock,
            Arc::clone(&self.progress),
        );
        let sampler = Arc::new(Mutex::new(self.sampler));
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
                sampler: Arc::clone(&sampler),
                results: tx.clone(),
                cancel: self.cancel.clone(),
                progress: Arc::clone(&self.progress),
                clock,
            };
            info.phases.push(runner.run(plan).await);
        }
        info.was_cancelled = self.cancel.is_cancelled();
        drop(tx);
        let sink = tokio::task::spawn_blocking(move || processor.join())
            .await
            .map_err(|e| EngineError::Sink(e.to_string().into()))?
            .map_err(|_| EngineError::Sink("the record processor panicked".into()))?
            .map_err(EngineError::Sink)?;
        sink.finish(&info).map_err(EngineError::Sink)
    }
}

/// Parses exchanges into records and feeds the sink, on its own thread so that parsing
/// and token counting never compete with the async runtime that sends requests.
fn spawn_processor<S: RecordSink>(
    mut rx: mpsc::Receiver<Finished>,
    mut sink: S,
    endpoint: Arc<dyn Endpoint>,
    clock: Clock,
    progress: Arc<Progress>,
) -> std::thread::JoinHandle<Result<S, SinkError>> {
    std::thread::spawn(move || {
        let mut failure = None;
        while let Some(finished) = rx.blocking_recv() {
            if failure.is_some() {
                continue; // drain so senders never block; the first error is reported
            }
            let record = to_record(finished, endpoint.as_ref(), clock);
            if !record.is_valid() {
                progress.errors.fetch_add(1, Ordering::Relaxed);
            }
            progress.completed.fetch_add(1, Ordering::Relaxed);
            if let Err(error) = sink.on_record(record) {
                failure = Some(error);
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(sink),
        }
    })
}

/// Turns a finished exchange into a record: parse, convert stamps, classify the error.
fn to_record(finished: Finished, endpoint: &dyn Endpoint, clock: Clock) -> RequestRecord {
    let Finished {
        credit,
        model,
        payload,
        input_text,
        outcome,
    } = finished;
    let conversation = Arc::clone(&credit.conversation);
    let turn = conversation.turns.get(credit.turn_index);
    let input_text = input_text
        .unwrap_or_else(|| conversation.input_text(turn.map(std::slice::from_ref).unwrap_or(&[])));
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
            record.chunk_count = exchange.chunks.len();
            record.body_bytes = exchange.chunks.iter().map(|c| c.bytes.len()).sum();
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
        }
    }
    record
}

/// Runs one phase.
struct PhaseRunner {
    shared: Arc<Shared>,
    sampler: Arc<Mutex<ConversationSampler>>,
    results: mpsc::Sender<Finished>,
    cancel: CancellationToken,
    progress: Arc<Progress>,
    clock: Clock,
}

/// Stop conditions shared by the issuer and the session tasks of a phase.
struct Budget {
    phase: Phase,
    limit: Option<u64>,
    /// Requests reserved (about to be sent or sent).
    sent: AtomicU64,
    /// Requests whose exchange ended and was handed to the processor.
    returned: AtomicU64,
    next_session: AtomicU64,
    deadline: Option<Instant>,
}

impl Budget {
    /// Reserves one request within the phase's stop conditions; returns its credit id.
    fn reserve(&self) -> Option<u64> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        match self.limit {
            None => Some(self.sent.fetch_add(1, Ordering::Relaxed)),
            Some(limit) => self
                .sent
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < limit).then_some(n + 1)
                })
                .ok(),
        }
    }
}

impl PhaseRunner {
    async fn run(self, plan: PhasePlan) -> PhaseStats {
        let PhasePlan {
            phase,
            mut scheduler,
            concurrency,
            request_count,
            duration,
            grace_period,
        } = plan;
        self.progress.reset(phase);
        let start = Instant::now();
        let budget = Arc::new(Budget {
            phase,
            limit: request_count,
            sent: AtomicU64::new(0),
            returned: AtomicU64::new(0),
            next_session: AtomicU64::new(0),
            deadline: duration.map(|d| start + d),
        });
        let slots = Arc::new(Semaphore::new(
            concurrency.unwrap_or(Semaphore::MAX_PERMITS),
        ));
        let mut tasks = JoinSet::new();
        let first = scheduler.next_arrival();
        if first == Arrival::WhenSlotFree {
            self.issue_closed_loop(&budget, &slots, &mut tasks).await;
        } else {
            self.issue_open_loop(scheduler, first, start, &budget, &slots, &mut tasks)
                .await;
        }
        let sending_end = Instant::now();
        let (cancelled, grace_expired) = self.drain(&mut tasks, &budget, grace_period).await;
        let sent = budget.sent.load(Ordering::Relaxed);
        PhaseStats {
            phase,
            start_ns: self.clock.perf_ns(start),
            sending_end_ns: self.clock.perf_ns(sending_end),
            end_ns: self.clock.perf_ns(Instant::now()),
            sent,
            completed: sent.saturating_sub(cancelled),
            cancelled,
            grace_expired,
        }
    }

    /// Closed loop: start a session whenever a slot frees, until a stop condition holds.
    async fn issue_closed_loop(
        &self,
        budget: &Arc<Budget>,
        slots: &Arc<Semaphore>,
        tasks: &mut JoinSet<()>,
    ) {
        let deadline = sleep_until_opt(budget.deadline);
        tokio::pin!(deadline);
        loop {
            let permit = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                _ = &mut deadline => break,
                permit = Arc::clone(slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let Some(credit_id) = budget.reserve() else {
                break;
            };
            let scheduled_at = Instant::now();
            reap_finished(tasks);
            tasks.spawn(self.session(credit_id, scheduled_at, permit, Arc::clone(budget)));
        }
    }

    /// Open loop: a timing thread wakes at each arrival and spawns its session task, which
    /// then waits for a slot if a concurrency cap is set. Late sends are recorded as
    /// schedule lag; no arrival is dropped.
    async fn issue_open_loop(
        &self,
        mut scheduler: Box<dyn Scheduler>,
        first: Arrival,
        start: Instant,
        budget: &Arc<Budget>,
        slots: &Arc<Semaphore>,
        tasks: &mut JoinSet<()>,
    ) {
        let (arrivals_tx, mut arrivals) = mpsc::unbounded_channel::<(u64, Instant)>();
        let timer_budget = Arc::clone(budget);
        let cancel = self.cancel.clone();
        let timer = std::thread::spawn(move || {
            let mut arrival = first;
            while let Arrival::At(offset) = arrival {
                let due = start + offset;
                if timer_budget.deadline.is_some_and(|d| due >= d) {
                    break;
                }
                if !sleep_precisely_until(due, &cancel) {
                    break;
                }
                let Some(credit_id) = timer_budget.reserve() else {
                    break;
                };
                if arrivals_tx.send((credit_id, due)).is_err() {
                    break;
                }
                arrival = scheduler.next_arrival();
            }
        });
        while let Some((credit_id, due)) = arrivals.recv().await {
            let slots = Arc::clone(slots);
            let session = self.session_after_slot(credit_id, due, slots, Arc::clone(budget));
            reap_finished(tasks);
            tasks.spawn(session);
        }
        // The timer thread has finished once the channel closed.
        if timer.join().is_err() {
            tracing::error!("the arrival timer thread panicked");
        }
    }

    fn session_after_slot(
        &self,
        credit_id: u64,
        scheduled_at: Instant,
        slots: Arc<Semaphore>,
        budget: Arc<Budget>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let runner = self.clone_for_task();
        async move {
            let Ok(permit) = slots.acquire_owned().await else {
                return;
            };
            runner
                .session(credit_id, scheduled_at, permit, budget)
                .await;
        }
    }

    fn clone_for_task(&self) -> PhaseRunner {
        PhaseRunner {
            shared: Arc::clone(&self.shared),
            sampler: Arc::clone(&self.sampler),
            results: self.results.clone(),
            cancel: self.cancel.clone(),
            progress: Arc::clone(&self.progress),
            clock: self.clock,
        }
    }

    /// One conversation: its first turn under `credit_id`, later turns each reserving a
    /// credit of their own, all holding the same concurrency slot.
    fn session(
        &self,
        credit_id: u64,
        scheduled_at: Instant,
        permit: OwnedSemaphorePermit,
        budget: Arc<Budget>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let runner = self.clone_for_task();
        async move {
            let _permit = permit;
            let conversation = runner
                .sampler
                .lock()
                .ok()
                .and_then(|mut sampler| sampler.next_conversation());
            let Some(conversation) = conversation else {
                return;
            };
            let session_index = budget.next_session.fetch_add(1, Ordering::Relaxed);
            let url = &runner.shared.urls[session_index as usize % runner.shared.urls.len()];
            let correlation_id = random_uuid();
            let (mut credit_id, mut scheduled_at) = (credit_id, scheduled_at);
            // Later turns carry the conversation so far: earlier user turns and the
            // assistant's replies as the server gave them.
            let mut history: Vec<Turn> = Vec::new();
            let last = conversation.turns.len().saturating_sub(1);
            for turn_index in 0..conversation.turns.len() {
                if turn_index > 0 {
                    if let Some(delay) = conversation.turns[turn_index].delay_ms {
                        tokio::time::sleep(Duration::from_secs_f64(delay.max(0.0) / 1000.0)).await;
                    }
                    match budget.reserve() {
                        Some(id) if !runner.cancel.is_cancelled() => credit_id = id,
                        _ => return,
                    }
                    scheduled_at = Instant::now();
                }
                let credit = Credit {
                    id: credit_id,
                    phase: budget.phase,
                    conversation: Arc::clone(&conversation),
                    turn_index,
                    correlation_id: correlation_id.clone(),
                    request_id: random_uuid(),
                    scheduled_at,
                    issued_at: Instant::now(),
                };
                runner.progress.sent.fetch_add(1, Ordering::Relaxed);
                let reply = if turn_index == 0 {
                    let first = &conversation.turns[..1];
                    runner
                        .send_turn(credit, url, first, turn_index < last)
                        .await
                } else {
                    history.push(conversation.turns[turn_index].clone());
                    runner
                        .send_turn(credit, url, &history, turn_index < last)
                        .await
                };
                budget.returned.fetch_add(1, Ordering::Relaxed);
                if turn_index < last {
                    if turn_index == 0 {
                        history.push(conversation.turns[0].clone());
                    }
                    if let Some(reply) = reply.filter(|r| !r.is_empty()) {
                        history.push(Turn {
                            role: Some("assistant".into()),
                            texts: vec![reply],
                            ..Turn::default()
                        });
                    }
                }
            }
        }
    }

    /// Builds, sends and hands over one request: the hot path. `turns` is what the
    /// request carries (the history, then the turn). When `want_reply`, the reply text is
    /// read out of the response for the next turn's history; the stamps are taken by then.
    async fn send_turn(
        &self,
        credit: Credit,
        url: &str,
        turns: &[Turn],
        want_reply: bool,
    ) -> Option<String> {
        let shared = &self.shared;
        let conversation = Arc::clone(&credit.conversation);
        let current = &conversation.turns[credit.turn_index];
        let model = current
            .model
            .clone()
            .unwrap_or_else(|| shared.model.clone());
        let input = RequestInput {
            model: &model,
            system_message: conversation.system_message.as_deref(),
            user_context_message: conversation.user_context_message.as_deref(),
            turns,
            streaming: shared.streaming,
        };
        let input_text = (turns.len() > 1).then(|| conversation.input_text(turns));
        let built = match crate::endpoint::build_request(shared.endpoint.as_ref(), &input) {
            Ok(built) => built,
            Err(error) => {
                let finished = Finished {
                    credit,
                    model,
                    payload: Bytes::new(),
                    input_text,
                    outcome: Outcome::NotSent {
                        at: Instant::now(),
                        error: ErrorDetails {
                            code: None,
                            kind: Some("EndpointError".into()),
                            message: error.to_string(),
                        },
                    },
                };
                let _ = self.results.send(finished).await;
                return None;
            }
        };
        let mut headers = built.headers;
        headers.extend(shared.headers.iter().cloned());
        headers.push(("X-Request-ID".into(), credit.request_id.clone()));
        headers.push(("X-Correlation-ID".into(), credit.correlation_id.clone()));
        let request = HttpRequest {
            method: HttpMethod::Post,
            url: url.to_owned(),
            headers,
            body: built.body.clone(),
            timeout: shared.timeout,
        };
        let exchange = shared.transport.send(request).await;
        let reply = want_reply.then(|| {
            shared
                .endpoint
                .parse(&exchange)
                .responses
                .iter()
                .map(|r| r.text.as_str())
                .collect::<String>()
        });
        // The processor only goes away after every phase ended; a send error means the
        // run is shutting down and the record has nowhere to go.
        let _ = self
            .results
            .send(Finished {
                credit,
                model,
                payload: built.body,
                input_text,
                outcome: Outcome::Exchanged(exchange),
            })
            .await;
        reply
    }

    /// Waits for in-flight requests: without a duration until they all return; with one,
    /// until the duration plus the grace period, then cancels the rest. Ctrl-C cancels at
    /// once. Returns (requests cancelled, whether the grace period expired).
    async fn drain(
        &self,
        tasks: &mut JoinSet<()>,
        budget: &Budget,
        grace: Duration,
    ) -> (u64, bool) {
        let give_up_at = budget.deadline.and_then(|d| d.checked_add(grace));
        let give_up = sleep_until_opt(give_up_at);
        tokio::pin!(give_up);
        let mut grace_expired = false;
        loop {
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                _ = &mut give_up => { grace_expired = true; break }
                next = tasks.join_next() => if next.is_none() { return (0, false) },
            }
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        let cancelled =
            budget.sent.load(Ordering::Relaxed) - budget.returned.load(Ordering::Relaxed);
        (cancelled, grace_expired)
    }
}

/// A version-4 UUID from the thread's user-space generator (`Uuid::new_v4` asks the
/// kernel for entropy on every call, a system call per request on the hot path).
fn random_uuid() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

/// Drops the tasks that already finished: a `JoinSet` keeps every finished task until it
/// is joined, which would grow by one session per request over a long run.
fn reap_finished(tasks: &mut JoinSet<()>) {
    while tasks.try_join_next().is_some() {}
}

/// Sleeps until `at`, or forever when `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Sleeps the current OS thread until `due`, waking early to notice cancellation.
/// Returns false when cancelled.
fn sleep_precisely_until(due: Instant, cancel: &CancellationToken) -> bool {
    const CHECK_EVERY: Duration = Duration::from_millis(50);
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(CHECK_EVERY));
    }
}
