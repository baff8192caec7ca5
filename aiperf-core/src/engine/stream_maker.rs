//! Makes a [`ConversationStream`]'s conversations on a thread of its own, in dataset
//! order, at most [`MADE_AHEAD`] beyond the furthest draw a session asked for, and hands
//! each to the one session that drew it: the run holds the conversations in flight and
//! those made ahead, never the whole dataset, and the first request waits for one
//! conversation, not for all of them.
//!
//! Draws are numbered from 0 for the whole run; draw `d` is conversation `d mod len` of
//! the stream, made by a new pass each time the previous one ended (as a sequential
//! sampler wraps around a loaded dataset).
//!
//! The thread fills the window ahead of the demand (never more than one pass: a short
//! stream is not made over and over before the run needs it), then sleeps until half of
//! it was drawn: it wakes once per half window, not once per session (a wake-up is a
//! system call on the sending runtime and a context switch).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::prompt_maker::MADE_AHEAD;

use crate::conversation::Conversation;
use crate::dataset::{ConversationStream, DatasetError};

/// The conversations made and not yet taken, filled by the maker's thread.
pub(super) struct StreamMaker {
    state: Arc<State>,
}

struct State {
    /// How many draws the thread makes ahead of the demand: [`MADE_AHEAD`], or one pass
    /// of a shorter stream.
    ahead: u64,
    /// Once the window is full, the thread sleeps while this many are still ahead.
    refill_at: u64,
    window: Mutex<Window>,
    /// Wakes the thread when the demand grows or the run ends.
    demand_grew: Condvar,
    /// Wakes the sessions waiting for a conversation after each one is made.
    made_one: Notify,
}

struct Window {
    /// Made draws whose session has not taken them yet.
    ready: HashMap<u64, Arc<Conversation>>,
    /// Draws no session of this process takes (another shard's) and not made yet: each
    /// is dropped as soon as it is made.
    passed_over: HashSet<u64>,
    /// The draw the thread makes next.
    next: u64,
    /// One past the furthest draw a session asked for.
    wanted: u64,
    /// Nothing more is made: the run ended, or the stream failed.
    stopped: bool,
    /// Why the stream failed, until the run reports it.
    failure: Option<DatasetError>,
}

impl StreamMaker {
    /// Starts the thread that makes `stream`'s conversations; a failure of the stream
    /// cancels `cancel` (the run stops, and reports it).
    pub(super) fn start(
        stream: ConversationStream,
        cancel: CancellationToken,
    ) -> std::io::Result<Self> {
        let ahead = MADE_AHEAD.min(stream.len()) as u64;
        let state = Arc::new(State {
            ahead,
            refill_at: ahead / 2,
            window: Mutex::new(Window {
                ready: HashMap::new(),
                passed_over: HashSet::new(),
                next: 0,
                wanted: 0,
                stopped: false,
                failure: None,
            }),
            demand_grew: Condvar::new(),
            made_one: Notify::new(),
        });
        let worker = Arc::clone(&state);
        std::thread::Builder::new()
            .name("dataset-stream".into())
            .spawn(move || worker.make_in_order(&stream, &cancel))?;
        Ok(Self { state })
    }

    /// Draw `draw`'s conversation, waiting (without blocking the runtime) for the thread
    /// to make it; `None` when it never will (the stream failed). Each draw is taken
    /// once: the maker keeps no reference to it.
    pub(super) async fn take(&self, draw: u64) -> Option<Arc<Conversation>> {
        let state = &self.state;
        let refill = {
            let mut window = lock(&state.window);
            window.wanted = window.wanted.max(draw + 1);
            window.next < window.wanted + state.refill_at
        };
        if refill {
            state.demand_grew.notify_one();
        }
        loop {
            let made_one = state.made_one.notified();
            tokio::pin!(made_one);
            made_one.as_mut().enable();
            {
                let mut window = lock(&state.window);
                if let Some(made) = window.ready.remove(&draw) {
                    return Some(made);
                }
                if window.stopped {
                    return None;
                }
            }
            made_one.await;
        }
    }

    /// Draw `draw` goes to no session of this process: it is not kept once made.
    pub(super) fn pass_over(&self, draw: u64) {
        let mut window = lock(&self.state.window);
        if draw < window.next {
            window.ready.remove(&draw);
        } else {
            window.passed_over.insert(draw);
        }
    }

    /// Why the stream failed, if it did.
    pub(super) fn failure(&self) -> Option<DatasetError> {
        lock(&self.state.window).failure.take()
    }
}

impl Drop for StreamMaker {
    fn drop(&mut self) {
        lock(&self.state.window).stopped = true;
        self.state.demand_grew.notify_one();
    }
}

impl State {
    fn make_in_order(&self, stream: &ConversationStream, cancel: &CancellationToken) {
        let mut pass = stream.pass();
        let mut made_in_pass = 0;
        loop {
            {
                let mut window = lock(&self.window);
                if window.next >= window.wanted + self.ahead {
                    while !window.stopped && window.next >= window.wanted + self.refill_at {
                        window = self
                            .demand_grew
                            .wait(window)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                }
                if window.stopped {
                    return;
                }
            }
            if made_in_pass == stream.len() {
                pass = stream.pass();
                made_in_pass = 0;
            }
            let made = pass.next().unwrap_or_else(|| {
                Err(format!(
                    "the dataset stream ended after {made_in_pass} of its {} conversations",
                    stream.len()
                )
                .into())
            });
            made_in_pass += 1;
            let made = made.map(with_prompts_made);
            let failed = made.is_err();
            if failed {
                // Before a session can see the stream stopped: the run stops sending.
                cancel.cancel();
            }
            {
                let mut window = lock(&self.window);
                match made {
                    Ok(conversation) => {
                        let draw = window.next;
                        window.next += 1;
                        if !window.passed_over.remove(&draw) {
                            window.ready.insert(draw, Arc::new(conversation));
                        }
                    }
                    Err(error) => {
                        window.failure = Some(error);
                        window.stopped = true;
                    }
                }
            }
            self.made_one.notify_waiters();
            if failed {
                return;
            }
        }
    }
}

/// The conversation with its deferred prompts made: made here, off the sending path.
fn with_prompts_made(conversation: Conversation) -> Conversation {
    if conversation.has_deferred_text() {
        conversation.materialized()
    } else {
        conversation
    }
}

/// The window, whatever panicked while holding it (a panic leaves it consistent).
fn lock(window: &Mutex<Window>) -> MutexGuard<'_, Window> {
    window.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::conversation::Turn;

    /// A stream of `len` one-turn conversations `"0"`, `"1"`, …; `made` counts every
    /// conversation made, over all passes.
    fn counted(len: usize, made: &Arc<AtomicUsize>) -> ConversationStream {
        let made = Arc::clone(made);
        ConversationStream::new(len, move || {
            let made = Arc::clone(&made);
            (0..len).map(move |i| {
                made.fetch_add(1, Ordering::SeqCst);
                Ok(Conversation {
                    session_id: i.to_string(),
                    turns: vec![Turn::text(format!("prompt {i}"))],
                    ..Conversation::default()
                })
            })
        })
    }

    /// How many were made once the thread had time to reach `bound` (and to go past
    /// it, were it to).
    async fn made_by_then(made: &AtomicUsize, bound: usize) -> usize {
        for _ in 0..1_000 {
            if made.load(Ordering::SeqCst) >= bound {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        made.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn makes_a_bounded_number_ahead_and_keeps_nothing_taken_or_passed_over() {
        let made = Arc::new(AtomicUsize::new(0));
        let maker =
            StreamMaker::start(counted(1_000_000, &made), CancellationToken::new()).unwrap();
        let first = maker.take(0).await.unwrap();
        assert_eq!(first.turns[0].texts, ["prompt 0"]);
        // The session that took it holds the only reference: dropped when it ends.
        assert_eq!(Arc::strong_count(&first), 1);
        assert_eq!(made_by_then(&made, 1 + MADE_AHEAD).await, 1 + MADE_AHEAD);
        // Another shard's draws: not kept, whether made already (1) or not yet (5000).
        maker.pass_over(1);
        maker.pass_over(5_000);
        let far = maker.take(5_001).await.unwrap();
        assert_eq!(far.session_id, "5001");
        assert_eq!(
            made_by_then(&made, 5_002 + MADE_AHEAD).await,
            5_002 + MADE_AHEAD
        );
        let window = lock(&maker.state.window);
        // Made and not taken: draws 2..=5_001+MADE_AHEAD but 5_000 and 5_001.
        assert_eq!(window.ready.len(), 5_002 + MADE_AHEAD - 4);
        assert!(!window.ready.contains_key(&1) && !window.ready.contains_key(&5_000));
        assert!(window.passed_over.is_empty());
    }

    #[tokio::test]
    async fn draws_past_the_end_start_a_new_pass() {
        let made = Arc::new(AtomicUsize::new(0));
        let maker = StreamMaker::start(counted(3, &made), CancellationToken::new()).unwrap();
        assert_eq!(maker.take(0).await.unwrap().session_id, "0");
        // One pass ahead, not MADE_AHEAD draws of a short stream made over and over: 4
        // when the draw came before the thread had made the pass, 3 when it came after
        // (the thread sleeps then until half its window was drawn).
        let made_then = made_by_then(&made, 3).await;
        assert!((3..=1 + 3).contains(&made_then), "{made_then} made");
        let mut ids = vec!["0".to_string()];
        for draw in 1..7 {
            ids.push(maker.take(draw).await.unwrap().session_id.clone());
        }
        assert_eq!(ids, ["0", "1", "2", "0", "1", "2", "0"]);
    }

    #[tokio::test]
    async fn a_failing_stream_cancels_the_run_and_says_why() {
        let stream = ConversationStream::new(5, || {
            (0..5).map(|i| match i {
                0 => Ok(Conversation::default()),
                _ => Err("line 2: no prompt".into()),
            })
        });
        let cancel = CancellationToken::new();
        let maker = StreamMaker::start(stream, cancel.clone()).unwrap();
        assert!(maker.take(0).await.is_some());
        assert!(maker.take(1).await.is_none());
        assert!(cancel.is_cancelled());
        assert_eq!(maker.failure().unwrap().to_string(), "line 2: no prompt");
    }

    #[tokio::test]
    async fn a_stream_shorter_than_it_says_is_a_failure() {
        let stream = ConversationStream::new(2, || std::iter::once(Ok(Conversation::default())));
        let maker = StreamMaker::start(stream, CancellationToken::new()).unwrap();
        assert!(maker.take(0).await.is_some());
        assert!(maker.take(1).await.is_none());
        assert_eq!(
            maker.failure().unwrap().to_string(),
            "the dataset stream ended after 1 of its 2 conversations"
        );
    }
}
