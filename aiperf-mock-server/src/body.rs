//! The response body: a full buffer, or a token stream paced by its [`Schedule`].
//!
//! A token stream is a state machine polled by hyper: it sleeps until the next event is due
//! (`tokio::time::Sleep`, reset in place, never re-allocated), renders the event straight into a
//! byte buffer and hands it to hyper as one frame. Events that are already due (always, in fast
//! mode) are coalesced into one frame of up to 16 KiB. Mid-stream faults happen at a fixed
//! event index.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

use crate::error::DroppedByFault;
use crate::faults::FaultKind;
use crate::state::State;
use crate::timing::Schedule;
use crate::tokens::{Finish, Plan};

const MAX_FRAME: usize = 16 * 1024;

/// Kind of the tokens in one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Reasoning,
    Content,
}

/// Renders the events of one streaming format (chat, completions, responses, TGI).
pub(crate) trait EventWriter: Send + Sync + 'static {
    /// Written just before the first token (e.g. the chat role chunk).
    fn prologue(&self, _out: &mut Vec<u8>) {}
    /// One event carrying output tokens `first..end`; `finish` is set on the last content event.
    fn tokens(
        &self,
        out: &mut Vec<u8>,
        kind: TokenKind,
        first: u32,
        end: u32,
        finish: Option<Finish>,
    );
    /// Written after the last token (usage chunk, `[DONE]`, completion events).
    fn epilogue(&self, out: &mut Vec<u8>);
    /// The `event: error` fault.
    fn sse_error(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(
            b"event: error\ndata: {\"error\":{\"message\":\"Injected mid-stream error (aiperf-mock-server --sse-error-rate)\",\"type\":\"server_error\",\"code\":500}}\n\n",
        );
    }
    /// The malformed-chunk fault: an event whose data is not JSON.
    fn malformed(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(
            b"data: {\"id\":\"malformed\",\"choices\":[{\"delta\":{\"content\":\n\n",
        );
    }
}

/// Tracks one in-flight inference request; undoes the accounting when dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub state: Arc<State>,
    pub arrival: Instant,
    kv_tokens: i64,
}

impl InFlight {
    /// Count a new request in flight; returns the guard and how many were in flight before it.
    pub(crate) fn enter(state: Arc<State>, arrival: Instant) -> (Self, u64) {
        let before = state.stats.in_flight.fetch_add(1, Relaxed);
        let guard = Self {
            state,
            arrival,
            kv_tokens: 0,
        };
        (guard, u64::try_from(before).unwrap_or(0))
    }

    /// Account a plan: prompt tokens, KV cache use.
    pub(crate) fn planned(&mut self, plan: &Plan) {
        let s = &self.state.stats;
        s.prompt_tokens
            .fetch_add(u64::from(plan.prompt_tokens), Relaxed);
        self.kv_tokens = i64::from(plan.prompt_tokens) + i64::from(plan.completion());
        s.active_tokens.fetch_add(self.kv_tokens, Relaxed);
    }

    pub(crate) fn emitted(&self, n: u32, reasoning: bool) {
        self.state
            .stats
            .tokens_generated
            .fetch_add(u64::from(n), Relaxed);
        if reasoning {
            self.state
                .stats
                .reasoning_tokens
                .fetch_add(u64::from(n), Relaxed);
        }
    }

    pub(crate) fn first_token(&self) {
        self.state.stats.ttft.observe(self.arrival.elapsed());
    }

    pub(crate) fn finished(&self, finish: Finish) {
        let s = &self.state.stats;
        s.e2e.observe(self.arrival.elapsed());
        match finish {
            Finish::Length => s.finished_length.fetch_add(1, Relaxed),
            Finish::Stop => s.finished_stop.fetch_add(1, Relaxed),
        };
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.stats.in_flight.fetch_sub(1, Relaxed);
        self.state
            .stats
            .active_tokens
            .fetch_sub(self.kv_tokens, Relaxed);
    }
}

/// A mid-stream fault and the event index before which it fires.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamFault {
    pub kind: FaultKind,
    pub at_event: u32,
    pub stall: Duration,
}

/// A paced stream of SSE events.
pub(crate) struct TokenStream {
    writer: Box<dyn EventWriter>,
    plan: Plan,
    per_event: u32,
    reasoning_events: u32,
    total_events: u32,
    next_event: u32,
    /// `None` in fast mode: everything is due at once.
    schedule: Option<Schedule>,
    sleep: Option<Pin<Box<Sleep>>>,
    stall_until: Option<Instant>,
    fault: Option<StreamFault>,
    started: bool,
    /// [`crate::Quirks::ping_comments`]: the opening ping is still to be sent.
    ping_at_open: bool,
    ping: bool,
    done: bool,
    yielded_before_drop: bool,
    guard: InFlight,
}

impl std::fmt::Debug for TokenStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStream")
            .field("plan", &self.plan)
            .field("next_event", &self.next_event)
            .field("total_events", &self.total_events)
            .finish_non_exhaustive()
    }
}

impl TokenStream {
    pub(crate) fn new(
        writer: Box<dyn EventWriter>,
        plan: Plan,
        per_event: u32,
        schedule: Option<Schedule>,
        fault: Option<(FaultKind, u32, Duration)>,
        guard: InFlight,
    ) -> Self {
        let per_event = per_event.max(1);
        let reasoning_events = plan.reasoning.div_ceil(per_event);
        let total_events = reasoning_events + plan.content.div_ceil(per_event);
        let fault = fault.map(|(kind, after_tokens, stall)| StreamFault {
            kind,
            at_event: event_at_token(
                after_tokens.min(plan.completion().saturating_sub(1)),
                &plan,
                per_event,
            )
            .min(total_events.saturating_sub(1)),
            stall,
        });
        let ping = guard.state.cfg.quirks.ping_comments;
        Self {
            writer,
            plan,
            per_event,
            reasoning_events,
            total_events,
            next_event: 0,
            schedule,
            sleep: None,
            stall_until: None,
            fault,
            started: false,
            ping_at_open: ping,
            ping,
            done: false,
            yielded_before_drop: false,
            guard,
        }
    }

    /// Tokens of event `e`.
    fn event_tokens(&self, e: u32) -> (TokenKind, u32, u32) {
        let k = self.per_event;
        if e < self.reasoning_events {
            let s = e * k;
            (TokenKind::Reasoning, s, (s + k).min(self.plan.reasoning))
        } else {
            let s = self.plan.reasoning + (e - self.reasoning_events) * k;
            (TokenKind::Content, s, (s + k).min(self.plan.completion()))
        }
    }

    /// Ready when `deadline` has passed; otherwise arms the sleep.
    fn wait_until(&mut self, deadline: Instant, cx: &mut Context<'_>) -> Poll<()> {
        if deadline <= Instant::now() {
            return Poll::Ready(());
        }
        let deadline = tokio::time::Instant::from_std(deadline);
        let sleep = match &mut self.sleep {
            Some(s) => {
                s.as_mut().reset(deadline);
                s
            }
            None => self
                .sleep
                .insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        sleep.as_mut().poll(cx)
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, DroppedByFault>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let mut buf: Vec<u8> = Vec::new();
        let frame = |buf: Vec<u8>| Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))));
        if self.ping_at_open {
            // Before the first token is due, as a keep-alive ping can be: it must not
            // count as the first token.
            self.ping_at_open = false;
            push_ping(&mut buf);
            return frame(buf);
        }
        loop {
            if let Some(until) = self.stall_until {
                if self.wait_until(until, cx).is_pending() {
                    return Poll::Pending;
                }
                self.stall_until = None;
            }
            let e = self.next_event;
            if let Some(f) = self.fault.filter(|f| f.at_event == e) {
                if !buf.is_empty() {
                    return frame(buf);
                }
                if f.kind == FaultKind::Drop && !self.yielded_before_drop {
                    // Let hyper flush what was sent so far before the connection is cut.
                    self.yielded_before_drop = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                self.fault = None;
                self.guard.state.stats.count_fault(f.kind);
                match f.kind {
                    FaultKind::Drop => {
                        self.done = true;
                        tracing::debug!(event = e, "fault: dropping connection mid-stream");
                        return Poll::Ready(Some(Err(DroppedByFault)));
                    }
                    FaultKind::SseError => {
                        self.done = true;
                        self.writer.sse_error(&mut buf);
                        return frame(buf);
                    }
                    FaultKind::Malformed => {
                        self.writer.malformed(&mut buf);
                        return frame(buf);
                    }
                    FaultKind::Oversized => {
                        let padding = self.guard.state.cfg.faults.oversized_bytes;
                        push_padding(&mut buf, usize::try_from(padding).unwrap_or(0));
                        return frame(buf);
                    }
                    FaultKind::Stall => {
                        if let Some(s) = &mut self.schedule {
                            s.shift(f.stall);
                        }
                        self.stall_until = Some(Instant::now() + f.stall);
                        continue;
                    }
                    _ => {}
                }
            }
            if e >= self.total_events {
                self.writer.epilogue(&mut buf);
                self.done = true;
                self.guard.finished(self.plan.finish);
                return frame(buf);
            }
            let (kind, first, end) = self.event_tokens(e);
            if let Some(due) = self.schedule.as_mut().map(|s| s.due(end - 1)) {
                if !buf.is_empty() && due > Instant::now() {
                    return frame(buf);
                }
                if self.wait_until(due, cx).is_pending() {
                    return Poll::Pending;
                }
            }
            if !self.started {
                self.started = true;
                self.writer.prologue(&mut buf);
                self.guard.first_token();
            }
            let finish = (e + 1 == self.total_events).then_some(self.plan.finish);
            if self.ping {
                push_ping(&mut buf);
            }
            self.writer.tokens(&mut buf, kind, first, end, finish);
            self.guard
                .emitted(end - first, kind == TokenKind::Reasoning);
            self.next_event += 1;
            if buf.len() >= MAX_FRAME {
                return frame(buf);
            }
        }
    }
}

/// An SSE comment as sse-starlette's keep-alive ping writes it: `: ping - <time>`, CRLF.
fn push_ping(out: &mut Vec<u8>) {
    let now = crate::routes::unix_now();
    out.extend_from_slice(format!(": ping - {now}\r\n\r\n").as_bytes());
}

/// An SSE comment of `bytes` bytes in all (clients skip comments).
fn push_padding(out: &mut Vec<u8>, bytes: usize) {
    let filler = bytes.saturating_sub(4);
    out.reserve(bytes);
    out.extend_from_slice(b": ");
    out.resize(out.len() + filler, b'x');
    out.extend_from_slice(b"\n\n");
}

/// Index of the first event that starts at or after token `k`.
fn event_at_token(k: u32, plan: &Plan, per_event: u32) -> u32 {
    let re = plan.reasoning.div_ceil(per_event);
    if k <= plan.reasoning {
        k.div_ceil(per_event).min(re)
    } else {
        re + (k - plan.reasoning).div_ceil(per_event)
    }
}

/// The body of every response.
#[derive(Debug)]
pub(crate) enum MockBody {
    Full(Option<Bytes>),
    Stream(Box<TokenStream>),
}

impl MockBody {
    pub(crate) fn full(b: impl Into<Bytes>) -> Self {
        MockBody::Full(Some(b.into()))
    }
}

impl Body for MockBody {
    type Data = Bytes;
    type Error = DroppedByFault;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            MockBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            MockBody::Stream(s) => s.poll_next(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            MockBody::Full(b) => b.is_none(),
            MockBody::Stream(s) => s.done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            MockBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            MockBody::Full(None) => SizeHint::with_exact(0),
            MockBody::Stream(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_event_index() {
        let plan = Plan {
            prompt_tokens: 1,
            reasoning: 4,
            content: 10,
            finish: Finish::Length,
        };
        assert_eq!(event_at_token(0, &plan, 1), 0);
        assert_eq!(event_at_token(5, &plan, 1), 5);
        assert_eq!(event_at_token(4, &plan, 3), 2);
        assert_eq!(event_at_token(5, &plan, 3), 3);
        assert_eq!(event_at_token(3, &plan, 3), 1);
    }
}
