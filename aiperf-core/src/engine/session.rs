//! One session: the turns of a conversation in order, each sent, stamped and handed to
//! the processor, with the history, pacing and per-request controls its phase asks for.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::task::JoinSet;

use super::job::JobBounds;
use super::phase::{PhaseRunner, PhaseState};
use super::watermark::Ticket;
use super::{random_uuid, Finished, Outcome, ToProcessor};
use crate::cache_bust;
use crate::conversation::{Branch, BranchMode, ContextMode, Conversation, Turn};
use crate::endpoint::{build_request, RequestInput};
use crate::record::{Credit, ErrorDetails};
use crate::schedule::PlannedSession;
use crate::transport::{HttpMethod, HttpRequest, SendControl, SessionKey};

/// A session about to run: what it sends, where, and what it starts from.
struct SessionRun {
    conversation: Arc<Conversation>,
    correlation_id: String,
    url: Arc<str>,
    /// The schedule's turn limit, if any (root sessions only).
    max_turns: Option<usize>,
    /// The history a forked child continues.
    inherited: Vec<Turn>,
}

/// The child sessions a session started: they end before it does (aborted with it when
/// a phase is cut short), and a join waits for some of them.
#[derive(Default)]
struct Children {
    tasks: JoinSet<()>,
    ended: HashSet<tokio::task::Id>,
}

impl Children {
    fn start(
        &mut self,
        task: Pin<Box<dyn Future<Output = ()> + Send + 'static>>,
    ) -> tokio::task::Id {
        self.tasks.spawn(task).id()
    }

    /// Waits until every child in `ids` ended.
    async fn wait_for(&mut self, ids: &[tokio::task::Id]) {
        while !ids.iter().all(|id| self.ended.contains(id)) {
            match self.tasks.join_next_with_id().await {
                Some(Ok((id, ()))) => self.ended.insert(id),
                Some(Err(error)) => self.ended.insert(error.id()),
                None => return,
            };
        }
    }

    async fn wait_all(&mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// What the issuer decided about a new session.
pub(super) struct SessionStart {
    /// The credit of its first request.
    pub(super) credit_id: u64,
    /// Sessions started before this one in the phase (picks the URL round-robin).
    pub(super) session_index: u64,
    /// When the first request was meant to go.
    pub(super) scheduled_at: Instant,
    /// Where the conversation is in the dataset (where its made prompts are).
    pub(super) dataset_index: usize,
    /// The conversation as the dataset holds it (prompts possibly not made yet); `None`
    /// for a stream's draw, which the session takes from the stream.
    pub(super) conversation: Option<Arc<Conversation>>,
    /// Turn limit and correlation id fixed by the schedule, if any.
    pub(super) planned: PlannedSession,
}

impl PhaseRunner {
    /// One conversation: its first turn under the start's credit, later turns each
    /// reserving a credit of their own, all holding the same concurrency slot, which
    /// the sessions it starts (branches) share until the last of them ended.
    pub(super) async fn session(
        &self,
        start: SessionStart,
        permit: OwnedSemaphorePermit,
        state: Arc<PhaseState>,
    ) {
        let _permit = permit;
        let SessionStart {
            credit_id,
            session_index,
            scheduled_at,
            dataset_index,
            conversation,
            planned,
        } = start;
        let conversation = match (conversation, &self.shared.prompt_maker) {
            (Some(_), Some(maker)) => maker.conversation(dataset_index).await,
            (Some(conversation), None) => conversation,
            (None, _) => match self.shared.take_streamed(dataset_index).await {
                Some(conversation) => conversation,
                // The stream failed: the run is cancelled and reports why.
                None => return,
            },
        };
        let url: Arc<str> = self.shared.urls[session_index as usize % self.shared.urls.len()]
            .as_str()
            .into();
        let correlation_id = planned.correlation_id.unwrap_or_else(random_uuid);
        let run = SessionRun {
            conversation,
            correlation_id,
            url,
            max_turns: planned.max_turns,
            inherited: Vec::new(),
        };
        self.converse(run, Some((credit_id, scheduled_at)), &state)
            .await;
    }

    /// Sends the turns of `run` in order. `first` is the credit of its first request and
    /// when that was due; a child session has none and reserves its own once its first
    /// turn is due. Returns once every session it started ended too.
    async fn converse(
        &self,
        run: SessionRun,
        first: Option<(u64, Instant)>,
        state: &Arc<PhaseState>,
    ) {
        let SessionRun {
            conversation,
            correlation_id,
            url,
            max_turns,
            inherited,
        } = run;
        let conversation = cache_bust::mark(
            &conversation,
            self.shared.cache_bust,
            &correlation_id,
            state.phase,
        )
        .map_or(conversation, Arc::new);
        let turn_count = max_turns.map_or(conversation.turns.len(), |max| {
            max.min(conversation.turns.len())
        });
        let carries_history = conversation.context_mode == ContextMode::DeltasWithoutResponses;
        let mut children = Children::default();
        for child in &conversation.pre_session_spawns {
            children.start(self.child(child, Vec::new(), &url, state));
        }
        // Children a later turn waits for, by that turn's index.
        let mut joins: Vec<(usize, Vec<tokio::task::Id>)> = Vec::new();
        let (mut credit_id, mut scheduled_at) = first.unwrap_or((0, Instant::now()));
        // Later turns carry the conversation so far: earlier user turns and the
        // assistant's replies as the server gave them (after a fork, the parent's).
        let mut history: Vec<Turn> = inherited;
        for turn_index in 0..turn_count {
            let turn = &conversation.turns[turn_index];
            for (_, ids) in joins.iter().filter(|(at, _)| *at == turn_index) {
                children.wait_for(ids).await;
            }
            if turn_index > 0 || first.is_none() {
                scheduled_at = self.wait_for_turn(state, turn, scheduled_at).await;
                match state.reserve() {
                    Some(id) if !self.cancel.is_cancelled() => credit_id = id,
                    _ => break,
                }
            }
            let (ticket, issued_at) = self.shared.unprocessed.issue();
            let credit = Credit {
                id: credit_id,
                phase: state.phase,
                conversation: Arc::clone(&conversation),
                turn_index,
                correlation_id: correlation_id.clone(),
                request_id: random_uuid(),
                scheduled_at,
                issued_at,
            };
            self.progress.sent.fetch_add(1, Ordering::Relaxed);
            let is_last = turn_index + 1 == turn_count;
            let forks = turn.branches.iter().any(|b| b.mode == BranchMode::Fork);
            let want_reply = (carries_history && !is_last) || forks;
            // A turn sent on its own needs no copy; history (or a fork's) does. The only
            // turn of a conversation is sent on its own too: copied into the history it
            // would be held twice while it streams (1.7 KB a stream at ISL 128).
            let sent_alone = !forks && (!carries_history || (is_last && history.is_empty()));
            let keeps_history = !sent_alone;
            let turns: &[Turn] = if keeps_history {
                if !carries_history {
                    history.clear();
                }
                history.push(turn.clone());
                &history
            } else {
                std::slice::from_ref(turn)
            };
            // Spawns recorded as starting while this request was in flight start
            // with its send; the rest once it has its reply.
            let (on_send, after_reply): (Vec<&Branch>, Vec<&Branch>) = turn
                .branches
                .iter()
                .partition(|b| b.on_send && b.mode == BranchMode::Spawn);
            for branch in on_send {
                let ids = self.start_branch(branch, &[], &mut children, &url, state);
                if let Some(at) = branch.join_at {
                    joins.push((at, ids));
                }
            }
            let reply = self
                .send_turn(
                    Issued { credit, ticket },
                    &url,
                    turns,
                    want_reply,
                    is_last,
                    state,
                )
                .await;
            state.returned.fetch_add(1, Ordering::Relaxed);
            if let Some(reply) = reply.filter(|r| keeps_history && !r.is_empty()) {
                history.push(Turn {
                    role: Some("assistant".into()),
                    texts: vec![reply],
                    ..Turn::default()
                });
            }
            for branch in after_reply {
                let from = match branch.mode {
                    BranchMode::Fork => &history[..],
                    BranchMode::Spawn => &[],
                };
                let ids = self.start_branch(branch, from, &mut children, &url, state);
                if let Some(at) = branch.join_at {
                    joins.push((at, ids));
                }
            }
        }
        children.wait_all().await;
    }

    /// Starts the children of `branch` from `history`; returns their task ids.
    fn start_branch(
        &self,
        branch: &Branch,
        history: &[Turn],
        children: &mut Children,
        url: &Arc<str>,
        state: &Arc<PhaseState>,
    ) -> Vec<tokio::task::Id> {
        branch
            .children
            .iter()
            .map(|child| children.start(self.child(child, history.to_vec(), url, state)))
            .collect()
    }

    /// The task of a child session, sent to `url` like its parent's, starting from
    /// `inherited` history.
    fn child(
        &self,
        conversation: &Arc<Conversation>,
        inherited: Vec<Turn>,
        url: &Arc<str>,
        state: &Arc<PhaseState>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let runner = self.clone_for_task();
        let state = Arc::clone(state);
        let run = SessionRun {
            conversation: Arc::clone(conversation),
            correlation_id: random_uuid(),
            url: Arc::clone(url),
            max_turns: None,
            inherited,
        };
        Box::pin(async move { runner.converse(run, None, &state).await })
    }

    /// Waits until a later turn is due, as the phase's scheduler paces turns, and
    /// returns the instant it was due.
    async fn wait_for_turn(
        &self,
        state: &PhaseState,
        turn: &Turn,
        previous_due: Instant,
    ) -> Instant {
        let now = Instant::now();
        let due = state.turn_pacing.due(turn, previous_due, state.start, now);
        if due > now {
            tokio::time::sleep_until(due.into()).await;
        }
        due
    }

    /// Builds, sends and hands over one request: the hot path. `turns` is what the
    /// request carries (the history, then the turn). When `want_reply`, the reply text is
    /// read out of the response for the next turn's history; the stamps are taken by then.
    async fn send_turn(
        &self,
        issued: Issued,
        url: &str,
        turns: &[Turn],
        want_reply: bool,
        last_turn: bool,
        state: &PhaseState,
    ) -> Option<String> {
        let Issued { credit, ticket } = issued;
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
        let built = match build_request(shared.endpoint.as_ref(), &input) {
            Ok(built) => built,
            Err(error) => {
                let finished = Finished {
                    credit,
                    ticket,
                    model,
                    payload: Bytes::new(),
                    input_text,
                    sent_headers: None,
                    outcome: Outcome::NotSent {
                        at: Instant::now(),
                        error: ErrorDetails {
                            code: None,
                            kind: Some("EndpointError".into()),
                            message: error.to_string(),
                        },
                    },
                };
                let _ = Box::pin(self.results.send(ToProcessor::Finished(finished))).await;
                return None;
            }
        };
        let mut headers = built.headers;
        headers.extend(shared.headers.iter().cloned());
        headers.push(("X-Request-ID".into(), credit.request_id.clone()));
        headers.push((shared.session_header.clone(), credit.correlation_id.clone()));
        let sent_headers = shared.keep_raw.then(|| headers.clone());
        let request = HttpRequest {
            method: HttpMethod::Post,
            url: url.to_owned(),
            headers,
            body: built.body.clone(),
            timeout: shared.timeout,
        };
        let prefill_slot = match &state.prefill {
            Some(slots) => Arc::clone(slots).acquire_owned().await.ok(),
            None => None,
        };
        let first_chunk = prefill_slot.as_ref().map(|_| Arc::new(Notify::new()));
        let session = Some(SessionKey {
            id: credit.correlation_id.clone(),
            last: last_turn,
        });
        let bounds = JobBounds {
            timeout: shared.timeout,
            cancel_after: state.draw_cancellation(),
        };
        let control = SendControl {
            cancel_after: bounds.cancel_after,
            first_chunk: first_chunk.clone(),
            session: session.clone(),
            chunk_tap: None,
        };
        let on_the_wire = self.progress.in_flight.enter();
        let send = shared.transport.send_controlled(request, control);
        let exchange = match (prefill_slot, first_chunk) {
            (Some(slot), Some(first_chunk)) => {
                tokio::pin!(send);
                // The prefill slot frees at the first body chunk or when the exchange ends.
                tokio::select! {
                    biased;
                    exchange = &mut send => exchange,
                    () = first_chunk.notified() => {
                        drop(slot);
                        send.await
                    }
                }
            }
            _ => send.await,
        };
        // This and the two sends to the processor are boxed: they run after the response
        // (or instead of it), but inline they would size the session's task, held while it
        // streams, by their state: 3,944 bytes a session, 2,624 with the three boxed.
        let exchange = Box::pin(self.follow_job(&credit, url, session, bounds, exchange)).await;
        drop(on_the_wire);
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
        let _ = Box::pin(self.results.send(ToProcessor::Finished(Finished {
            credit,
            ticket,
            model,
            payload: built.json_view.unwrap_or(built.body),
            input_text,
            sent_headers,
            outcome: Outcome::Exchanged(exchange),
        })))
        .await;
        reply
    }
}

/// A credit with its [`Ticket`]: the request counts as unprocessed until its record
/// reaches the sink.
struct Issued {
    credit: Credit,
    ticket: Ticket,
}
