//! Running one phase: issuing sessions on schedule within the phase's limits, then
//! draining what is in flight.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::plan::{Cancellation, PhasePlan};
use super::session::SessionStart;
use super::stream_maker::StreamMaker;
use super::{Progress, Shared, ToProcessor};
use crate::clock::{instant_after, saturating_secs, Clock};
use crate::config::Shard;
use crate::conversation::Conversation;
use crate::dataset::ConversationSampler;
use crate::record::Phase;
use crate::schedule::{Arrival, PlannedSession, Scheduler, TurnPacing};
use crate::PhaseStats;

/// Runs one phase.
pub(super) struct PhaseRunner {
    pub(super) shared: Arc<Shared>,
    pub(super) draws: Arc<Mutex<Draws>>,
    pub(super) results: mpsc::Sender<ToProcessor>,
    pub(super) cancel: CancellationToken,
    pub(super) progress: Arc<Progress>,
    pub(super) clock: Clock,
}

/// What the issuer and the session tasks of a phase share: stop conditions, counters and
/// the per-request controls.
pub(super) struct PhaseState {
    pub(super) phase: Phase,
    pub(super) start: Instant,
    request_limit: Option<u64>,
    session_limit: Option<u64>,
    /// Requests reserved (about to be sent or sent).
    sent: AtomicU64,
    /// Requests whose exchange ended and was handed to the processor.
    pub(super) returned: AtomicU64,
    sessions_started: AtomicU64,
    deadline: Option<Instant>,
    /// `--prefill-concurrency` slots: held from send to the first body chunk.
    pub(super) prefill: Option<Arc<Semaphore>>,
    /// When later turns of a session are due (the scheduler's choice).
    pub(super) turn_pacing: TurnPacing,
    cancellation: Option<(Cancellation, Mutex<ChaCha8Rng>)>,
}

impl PhaseState {
    /// Reserves one request of a session already under way; returns its credit id.
    pub(super) fn reserve(&self) -> Option<u64> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        reserve_below(&self.sent, self.request_limit)
    }

    /// Reserves the first request of a new session, within the session limit too;
    /// returns (credit id, session index).
    fn reserve_session(&self) -> Option<(u64, u64)> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        let session_index = reserve_below(&self.sessions_started, self.session_limit)?;
        Some((
            reserve_below(&self.sent, self.request_limit)?,
            session_index,
        ))
    }

    /// True once no further session can start: the session or request limit is reached.
    /// An open loop checks before it waits for the next arrival, so a run that reached
    /// its count does not sit out the schedule's next gap (and count it in its window).
    fn sessions_exhausted(&self) -> bool {
        let reached = |counter: &AtomicU64, limit: Option<u64>| {
            limit.is_some_and(|limit| counter.load(Ordering::Relaxed) >= limit)
        };
        reached(&self.sessions_started, self.session_limit)
            || reached(&self.sent, self.request_limit)
    }

    /// Whether this request is one the client cancels on purpose, and after how long.
    pub(super) fn draw_cancellation(&self) -> Option<Duration> {
        let (cancellation, rng) = self.cancellation.as_ref()?;
        let draw: f64 = rng.lock().ok()?.random();
        (draw < cancellation.probability).then_some(cancellation.delay)
    }
}

/// Increments `counter` unless it reached `limit`; returns the value before.
fn reserve_below(counter: &AtomicU64, limit: Option<u64>) -> Option<u64> {
    match limit {
        None => Some(counter.fetch_add(1, Ordering::Relaxed)),
        Some(limit) => counter
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok(),
    }
}

impl PhaseRunner {
    pub(super) async fn run(self, plan: PhasePlan) -> PhaseStats {
        let PhasePlan {
            phase,
            mut scheduler,
            concurrency,
            concurrency_ramp,
            prefill_concurrency,
            prefill_ramp,
            request_count,
            session_count,
            duration,
            grace_period,
            cancellation,
            shard,
            run_wide_sessions,
        } = plan;
        self.progress.reset(phase);
        lock(&self.draws).start_phase();
        let start = Instant::now();
        // The processor only goes away after every phase ended.
        let _ = self
            .results
            .send(ToProcessor::PhaseStarted(phase, start))
            .await;
        let (slots, slot_ramp) = limited_slots(concurrency, concurrency_ramp, start);
        let (prefill, prefill_ramp_task) = match prefill_concurrency {
            Some(limit) => {
                let (slots, ramp) = limited_slots(Some(limit), prefill_ramp, start);
                (Some(slots), ramp)
            }
            None => (None, None),
        };
        let state = Arc::new(PhaseState {
            phase,
            start,
            request_limit: request_count,
            session_limit: session_count,
            sent: AtomicU64::new(0),
            returned: AtomicU64::new(0),
            sessions_started: AtomicU64::new(0),
            deadline: duration.map(|d| instant_after(start, d)),
            prefill,
            turn_pacing: scheduler.turn_pacing(),
            cancellation: cancellation.map(|c| (c, Mutex::new(ChaCha8Rng::seed_from_u64(c.seed)))),
        });
        let mut tasks = JoinSet::new();
        match scheduler.next_arrival() {
            Arrival::WhenSlotFree => {
                // Without a limit a closed loop has one slot, as `rate_or_closed_loop` gives.
                let workers = concurrency.unwrap_or(1);
                self.issue_closed_loop(&state, shard, &slots, workers, &mut tasks)
                    .await;
            }
            Arrival::Exhausted => {}
            first => {
                self.issue_open_loop(scheduler, first, shard, &state, &slots, &mut tasks)
                    .await;
            }
        }
        if shard.is_some() {
            lock(&self.draws).end_phase(run_wide_sessions);
        }
        let sending_end = Instant::now();
        let (cancelled, grace_expired) = self.drain(&mut tasks, &state, grace_period).await;
        for ramp in [slot_ramp, prefill_ramp_task].into_iter().flatten() {
            ramp.abort();
        }
        let sent = state.sent.load(Ordering::Relaxed);
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

    /// Closed loop: one task per concurrency slot starts a session, runs it to its end
    /// and starts the next, until a stop condition holds. A task per session cost a spawn,
    /// a join and a wake-up of the issuer at every session's end (about 8 % of the sending
    /// thread's samples in a non-streaming run), and with several sending threads a hop
    /// between them. Returns once no further session starts.
    /// A shard's `m`-th session is the run's session `m × count + index`.
    async fn issue_closed_loop(
        &self,
        state: &Arc<PhaseState>,
        shard: Option<Shard>,
        slots: &Arc<Semaphore>,
        workers: usize,
        tasks: &mut JoinSet<()>,
    ) {
        let issuing = self.cancel.child_token();
        for _ in 0..workers {
            let runner = self.clone_for_task();
            let (state, slots, issuing) = (Arc::clone(state), Arc::clone(slots), issuing.clone());
            tasks.spawn(async move { runner.fill_slot(&state, shard, &slots, &issuing).await });
        }
        let deadline = sleep_until_opt(state.deadline);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                biased;
                () = issuing.cancelled() => return,
                () = &mut deadline => return issuing.cancel(),
                // A slot ends early only if its session panicked: the others go on.
                ended = tasks.join_next() => if ended.is_none() { return },
            }
        }
    }

    /// One slot of a closed loop: sessions one after another while `issuing` holds; the
    /// first slot that finds no session to start ends `issuing` for all.
    async fn fill_slot(
        &self,
        state: &Arc<PhaseState>,
        shard: Option<Shard>,
        slots: &Arc<Semaphore>,
        issuing: &CancellationToken,
    ) {
        loop {
            if issuing.is_cancelled() {
                return;
            }
            let Some(permit) = take_slot(slots, issuing).await else {
                return issuing.cancel();
            };
            let Some(start) = self.next_session(state, shard) else {
                return issuing.cancel();
            };
            self.session(start, permit, Arc::clone(state)).await;
        }
    }

    /// Reserves and draws the next session of a closed loop, or `None` when a limit is
    /// reached or the draws ran out. The draws stay locked from the reservation on, so
    /// that session numbers and draws pair up in order whichever slot asks.
    fn next_session(&self, state: &PhaseState, shard: Option<Shard>) -> Option<SessionStart> {
        let mut draws = lock(&self.draws);
        let (credit_id, local_index) = state.reserve_session()?;
        let session_index = shard.map_or(local_index, |s| s.global_index(local_index));
        let (dataset_index, conversation) = draws.conversation(session_index, None)?;
        Some(SessionStart {
            credit_id,
            session_index,
            scheduled_at: Instant::now(),
            dataset_index,
            conversation,
            planned: PlannedSession::default(),
        })
    }

    /// Open loop: a timing thread wakes at each arrival, picks its conversation and hands
    /// it over; its session task then waits for a slot if a concurrency cap is set. Late
    /// sends are recorded as schedule lag; no arrival is dropped. Arrivals are the run's
    /// sessions in order: a shard passes over those it does not own without waiting.
    async fn issue_open_loop(
        &self,
        mut scheduler: Box<dyn Scheduler>,
        first: Arrival,
        shard: Option<Shard>,
        state: &Arc<PhaseState>,
        slots: &Arc<Semaphore>,
        tasks: &mut JoinSet<()>,
    ) {
        let (arrivals_tx, mut arrivals) = mpsc::unbounded_channel::<SessionStart>();
        let timer_state = Arc::clone(state);
        let cancel = self.cancel.clone();
        let draws = Arc::clone(&self.draws);
        let timer = std::thread::spawn(move || {
            let mut arrival = first;
            for session_index in 0.. {
                let planned = match arrival {
                    Arrival::At(at) => PlannedSession {
                        at,
                        ..PlannedSession::default()
                    },
                    Arrival::Planned(planned) => planned,
                    Arrival::WhenSlotFree | Arrival::Exhausted => break,
                };
                let due = instant_after(timer_state.start, planned.at);
                if timer_state.deadline.is_some_and(|d| due >= d) {
                    break;
                }
                if shard.is_some_and(|s| !s.owns(session_index)) {
                    arrival = scheduler.next_arrival();
                    continue;
                }
                if timer_state.sessions_exhausted() || !sleep_precisely_until(due, &cancel) {
                    break;
                }
                let Some((credit_id, _)) = timer_state.reserve_session() else {
                    break;
                };
                let Some((dataset_index, conversation)) =
                    lock(&draws).conversation(session_index, planned.conversation)
                else {
                    break;
                };
                let start = SessionStart {
                    credit_id,
                    session_index,
                    scheduled_at: due,
                    dataset_index,
                    conversation,
                    planned,
                };
                if arrivals_tx.send(start).is_err() {
                    break;
                }
                arrival = scheduler.next_arrival();
            }
        });
        while let Some(start) = arrivals.recv().await {
            let slots = Arc::clone(slots);
            let runner = self.clone_for_task();
            let state = Arc::clone(state);
            reap_finished(tasks);
            tasks.spawn(async move {
                let Ok(permit) = slots.acquire_owned().await else {
                    return;
                };
                runner.session(start, permit, state).await;
            });
        }
        // The timer thread has finished once the channel closed.
        if timer.join().is_err() {
            tracing::error!("the arrival timer thread panicked");
        }
    }

    pub(super) fn clone_for_task(&self) -> PhaseRunner {
        PhaseRunner {
            shared: Arc::clone(&self.shared),
            draws: Arc::clone(&self.draws),
            results: self.results.clone(),
            cancel: self.cancel.clone(),
            progress: Arc::clone(&self.progress),
            clock: self.clock,
        }
    }

    /// Waits for in-flight requests: without a duration until they all return; with one,
    /// until the duration plus the grace period, then cancels the rest. Ctrl-C cancels at
    /// once. Returns (requests cancelled, whether the grace period expired).
    async fn drain(
        &self,
        tasks: &mut JoinSet<()>,
        state: &PhaseState,
        grace: Duration,
    ) -> (u64, bool) {
        let give_up_at = state.deadline.and_then(|d| d.checked_add(grace));
        let give_up = sleep_until_opt(give_up_at);
        tokio::pin!(give_up);
        let mut grace_expired = false;
        loop {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => break,
                () = &mut give_up => { grace_expired = true; break }
                next = tasks.join_next() => if next.is_none() { return (0, false) },
            }
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        let cancelled = state.sent.load(Ordering::Relaxed) - state.returned.load(Ordering::Relaxed);
        (cancelled, grace_expired)
    }
}

/// The run's conversation draws: where they come from and how many were drawn, so
/// that every session gets the conversation one process would give it, whichever shard
/// starts it.
pub(super) struct Draws {
    source: DrawSource,
    drawn: u64,
    /// Draws made before the current phase.
    phase_offset: u64,
}

/// Where the draws come from.
// One per run: boxing the sampler would save nothing worth the indirection.
#[allow(clippy::large_enum_variant)]
pub(super) enum DrawSource {
    /// A loaded dataset, drawn by its sampler.
    Sampler(ConversationSampler),
    /// A stream: draw `d` is its `d`-th conversation made, taken by the session itself.
    Stream(Arc<StreamMaker>),
}

impl Draws {
    pub(super) fn new(source: DrawSource) -> Self {
        Self {
            source,
            drawn: 0,
            phase_offset: 0,
        }
    }

    /// The phase's sessions are numbered from the draws made so far.
    fn start_phase(&mut self) {
        self.phase_offset = self.drawn;
    }

    /// A shard's phase ended: when the whole run's session count is known, the next
    /// phase draws on from where one process would.
    fn end_phase(&mut self, run_wide_sessions: Option<u64>) {
        if let Some(sessions) = run_wide_sessions {
            self.skip_to(self.phase_offset + sessions);
        }
    }

    /// The conversation of the phase's session `number` and its dataset index (a
    /// stream's: its draw, the conversation `None` as the session takes it from the
    /// stream): the dataset's `index` when the schedule names one, else the draw for
    /// that number (passing over the draws of other shards' sessions). A stream has no
    /// index to name, so a schedule naming one gets nothing.
    fn conversation(
        &mut self,
        number: u64,
        index: Option<usize>,
    ) -> Option<(usize, Option<Arc<Conversation>>)> {
        if index.is_none() {
            self.skip_to(self.phase_offset + number);
        }
        match &mut self.source {
            DrawSource::Sampler(sampler) => {
                let index = if let Some(index) = index {
                    index
                } else {
                    self.drawn += 1;
                    sampler.next_index()?
                };
                Some((index, Some(sampler.get(index)?)))
            }
            DrawSource::Stream(_) if index.is_some() => None,
            DrawSource::Stream(_) => {
                let draw = self.drawn;
                self.drawn += 1;
                Some((usize::try_from(draw).ok()?, None))
            }
        }
    }

    fn skip_to(&mut self, draws: u64) {
        while self.drawn < draws {
            match &mut self.source {
                DrawSource::Sampler(sampler) => {
                    if sampler.next_index().is_none() {
                        return;
                    }
                }
                DrawSource::Stream(maker) => maker.pass_over(self.drawn),
            }
            self.drawn += 1;
        }
    }
}

/// The draws, whatever panicked while holding them (a panic leaves them consistent).
fn lock(draws: &Mutex<Draws>) -> std::sync::MutexGuard<'_, Draws> {
    draws
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A semaphore of `limit` slots (unlimited when `None`). With a ramp it starts at one
/// slot and gains one at a time, evenly spaced, until the limit at `start + ramp`; the
/// returned task does that and is aborted when the phase ends.
fn limited_slots(
    limit: Option<usize>,
    ramp: Option<Duration>,
    start: Instant,
) -> (Arc<Semaphore>, Option<JoinHandle<()>>) {
    let Some(limit) = limit else {
        return (Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)), None);
    };
    let ramp = ramp.filter(|_| limit > 1);
    let Some(ramp) = ramp else {
        return (Arc::new(Semaphore::new(limit)), None);
    };
    let slots = Arc::new(Semaphore::new(1));
    let raiser = Arc::clone(&slots);
    let steps = (limit - 1) as u32;
    let task = tokio::spawn(async move {
        for step in 1..=steps {
            let share = f64::from(step) / f64::from(steps);
            let at = instant_after(start, saturating_secs(ramp.as_secs_f64() * share));
            tokio::time::sleep_until(at.into()).await;
            raiser.add_permits(1);
        }
    });
    (slots, Some(task))
}

/// A free slot of `slots`, waiting only when none is (a ramp hands them out one at a
/// time); `None` once `issuing` ended.
async fn take_slot(
    slots: &Arc<Semaphore>,
    issuing: &CancellationToken,
) -> Option<OwnedSemaphorePermit> {
    if let Ok(permit) = Arc::clone(slots).try_acquire_owned() {
        return Some(permit);
    }
    tokio::select! {
        biased;
        () = issuing.cancelled() => None,
        permit = Arc::clone(slots).acquire_owned() => permit.ok(),
    }
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
