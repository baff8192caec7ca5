//! Makes the deferred prompts of a run's conversations (`crate::deferred`) on a thread
//! of its own, in dataset order, at most [`MADE_AHEAD`] conversations and
//! [`MADE_AHEAD_BYTES`] of text beyond the furthest one a session asked for: the first
//! request waits for one conversation, not for the whole dataset, and a session whose
//! prompt is ready never waits.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::Notify;

use crate::conversation::Conversation;

/// How many conversations the maker runs ahead of the furthest one asked for: enough to
/// keep a fast schedule fed, few enough that a short run makes few prompts it never sends.
pub(super) const MADE_AHEAD: usize = 1024;

/// How much prompt text the maker holds ahead of the furthest conversation asked for:
/// a conversation of a long agentic trace is a whole session (3.5 MB of text in
/// bench/agentic_traces.py's), and 1,024 of them ahead would be gigabytes. At least one
/// conversation is made ahead, however long.
pub(super) const MADE_AHEAD_BYTES: usize = 64 * 1024 * 1024;

/// How far ahead of the demand the maker may run.
#[derive(Debug, Clone, Copy)]
struct Ahead {
    conversations: usize,
    bytes: usize,
}

/// The made conversations of a run, filled by the maker's thread.
pub(super) struct PromptMaker {
    state: Arc<State>,
}

struct State {
    /// In dataset order, prompts deferred.
    skeletons: Vec<Arc<Conversation>>,
    /// `made[i]`: `skeletons[i]` with its prompts made, from when the thread made it
    /// until a session takes it.
    made: Vec<Mutex<Made>>,
    ahead: Ahead,
    demand: Mutex<Demand>,
    /// Wakes the thread when the demand grows, a conversation is to be made again, or
    /// the run ends.
    demand_grew: Condvar,
    /// Wakes the sessions waiting for a conversation after each one is made.
    made_one: Notify,
}

/// One conversation's made form. A session that takes it holds it while it runs, and
/// the maker keeps only a weak reference after: a long trace replayed to its end would
/// otherwise hold every prompt it sent until the run ends. Drawn again once no session
/// holds it, it is made again (the same text).
enum Made {
    NotYet,
    Ready(Arc<Conversation>),
    Taken(Weak<Conversation>),
}

struct Demand {
    /// One past the furthest index a session asked for.
    wanted: usize,
    stopped: bool,
    /// The text bytes of each conversation made so far in dataset order.
    made_bytes: Vec<usize>,
    /// The text bytes of the made conversations at or past `wanted`.
    bytes_ahead: usize,
    /// Conversations taken and dropped that a session asked for again.
    again: Vec<usize>,
}

impl Demand {
    /// A session asked for the conversation at `index`: what was made up to it is no
    /// longer ahead.
    fn want(&mut self, index: usize) {
        let wanted = self.wanted.max(index + 1);
        let made = self.made_bytes.len();
        for bytes in &self.made_bytes[self.wanted.min(made)..wanted.min(made)] {
            self.bytes_ahead -= bytes;
        }
        self.wanted = wanted;
    }

    /// Whether the maker waits before making the conversation at `index` (in dataset
    /// order).
    fn ahead_enough(&self, index: usize, ahead: Ahead) -> bool {
        index >= self.wanted
            && (index >= self.wanted + ahead.conversations
                || (self.bytes_ahead > 0 && self.bytes_ahead >= ahead.bytes))
    }
}

impl PromptMaker {
    /// Starts the thread that makes the prompts of `conversations`.
    pub(super) fn start(conversations: Vec<Arc<Conversation>>) -> Self {
        Self::start_with(
            conversations,
            Ahead {
                conversations: MADE_AHEAD,
                bytes: MADE_AHEAD_BYTES,
            },
        )
    }

    fn start_with(conversations: Vec<Arc<Conversation>>, ahead: Ahead) -> Self {
        let state = Arc::new(State {
            made: conversations
                .iter()
                .map(|_| Mutex::new(Made::NotYet))
                .collect(),
            skeletons: conversations,
            ahead,
            demand: Mutex::new(Demand {
                wanted: 0,
                stopped: false,
                made_bytes: Vec::new(),
                bytes_ahead: 0,
                again: Vec::new(),
            }),
            demand_grew: Condvar::new(),
            made_one: Notify::new(),
        });
        let worker = Arc::clone(&state);
        std::thread::Builder::new()
            .name("prompt-maker".into())
            .spawn(move || worker.make_until_stopped())
            .map_or_else(
                |error| {
                    // Without the thread, sessions make their own (see `conversation`).
                    tracing::warn!("cannot start the prompt maker thread: {error}");
                    lock(&state.demand).stopped = true;
                },
                drop,
            );
        Self { state }
    }

    /// The conversation at dataset `index` with its prompts made, waiting (without
    /// blocking the runtime) for the thread to get there.
    pub(super) async fn conversation(&self, index: usize) -> Arc<Conversation> {
        let state = &self.state;
        let stopped = {
            let mut demand = lock(&state.demand);
            demand.want(index);
            demand.stopped
        };
        state.demand_grew.notify_one();
        if stopped {
            return state.take(index).unwrap_or_else(|| {
                let made = state.make(index);
                *lock(&state.made[index]) = Made::Taken(Arc::downgrade(&made));
                made
            });
        }
        loop {
            let made_one = state.made_one.notified();
            tokio::pin!(made_one);
            made_one.as_mut().enable();
            if let Some(made) = state.take(index) {
                return made;
            }
            if state.to_make_again(index) {
                lock(&state.demand).again.push(index);
                state.demand_grew.notify_one();
            }
            made_one.await;
        }
    }
}

impl Drop for PromptMaker {
    fn drop(&mut self) {
        lock(&self.state.demand).stopped = true;
        self.state.demand_grew.notify_one();
    }
}

impl State {
    /// The made conversation at `index`, if it is there or still held by a session.
    fn take(&self, index: usize) -> Option<Arc<Conversation>> {
        let mut made = lock(&self.made[index]);
        match &*made {
            Made::NotYet => None,
            Made::Ready(conversation) => {
                let conversation = Arc::clone(conversation);
                *made = Made::Taken(Arc::downgrade(&conversation));
                Some(conversation)
            }
            Made::Taken(taken) => taken.upgrade(),
        }
    }

    /// True (once) when the conversation at `index` was taken and dropped: the thread is
    /// to make it again.
    fn to_make_again(&self, index: usize) -> bool {
        let mut made = lock(&self.made[index]);
        let dropped = matches!(&*made, Made::Taken(taken) if taken.strong_count() == 0);
        if dropped {
            *made = Made::NotYet;
        }
        dropped
    }

    /// Makes conversations in dataset order as far ahead of the demand as allowed, and
    /// again those asked for after they were dropped, until the run ends.
    fn make_until_stopped(&self) {
        let mut next = 0;
        loop {
            let index = {
                let mut demand = lock(&self.demand);
                loop {
                    if demand.stopped {
                        return;
                    }
                    if let Some(again) = demand.again.pop() {
                        break again;
                    }
                    if next < self.skeletons.len() && !demand.ahead_enough(next, self.ahead) {
                        next += 1;
                        break next - 1;
                    }
                    demand = self
                        .demand_grew
                        .wait(demand)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            let conversation = self.make(index);
            let first_time = index + 1 == next && lock(&self.demand).made_bytes.len() == index;
            if first_time {
                let bytes = text_bytes(&conversation);
                let mut demand = lock(&self.demand);
                demand.made_bytes.push(bytes);
                if index >= demand.wanted {
                    demand.bytes_ahead += bytes;
                }
            }
            *lock(&self.made[index]) = Made::Ready(conversation);
            self.made_one.notify_waiters();
        }
    }

    fn make(&self, index: usize) -> Arc<Conversation> {
        let skeleton = &self.skeletons[index];
        if skeleton.has_deferred_text() {
            Arc::new(skeleton.materialized())
        } else {
            Arc::clone(skeleton)
        }
    }
}

/// The prompt text a made conversation holds.
fn text_bytes(conversation: &Conversation) -> usize {
    conversation
        .turns
        .iter()
        .flat_map(|turn| &turn.texts)
        .map(String::len)
        .sum()
}

/// The lock, whatever panicked while holding it (a panic leaves what it guards consistent).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::conversation::Turn;
    use crate::deferred::DeferredText;

    fn counted(n: usize, made: &Arc<AtomicUsize>) -> Vec<Arc<Conversation>> {
        (0..n)
            .map(|i| {
                let made = Arc::clone(made);
                Arc::new(Conversation {
                    session_id: i.to_string(),
                    turns: vec![Turn {
                        deferred_text: Some(DeferredText::new(move || {
                            made.fetch_add(1, Ordering::SeqCst);
                            format!("prompt {i}")
                        })),
                        ..Turn::default()
                    }],
                    ..Conversation::default()
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn makes_what_is_asked_for_and_stops_ahead_of_it() {
        let made = Arc::new(AtomicUsize::new(0));
        let maker = PromptMaker::start(counted(MADE_AHEAD + 100, &made));
        let third = maker.conversation(2).await;
        assert_eq!(third.turns[0].texts, ["prompt 2"]);
        assert_eq!(third.turns[0].deferred_text, None);
        // The thread stops MADE_AHEAD past the demand (3): give it time to get there.
        for _ in 0..500 {
            if made.load(Ordering::SeqCst) >= MADE_AHEAD + 3 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(made.load(Ordering::SeqCst), MADE_AHEAD + 3);
        let last = maker.conversation(MADE_AHEAD + 99).await;
        assert_eq!(last.turns[0].texts, [format!("prompt {}", MADE_AHEAD + 99)]);
        // Asked for again: the same made conversation, not made twice.
        assert!(Arc::ptr_eq(&maker.conversation(2).await, &third));
        assert_eq!(made.load(Ordering::SeqCst), MADE_AHEAD + 100);
    }

    #[tokio::test]
    async fn long_conversations_are_made_ahead_up_to_the_byte_bound() {
        let made = Arc::new(AtomicUsize::new(0));
        let long = |i: usize| {
            let made = Arc::clone(&made);
            Arc::new(Conversation {
                turns: vec![Turn {
                    deferred_text: Some(DeferredText::new(move || {
                        made.fetch_add(1, Ordering::SeqCst);
                        "x".repeat(1_000 + i)
                    })),
                    ..Turn::default()
                }],
                ..Conversation::default()
            })
        };
        let ahead = Ahead {
            conversations: 100,
            bytes: 3_500,
        };
        let maker = PromptMaker::start_with((0..20).map(long).collect(), ahead);
        let settled = || async {
            let mut last = usize::MAX;
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                let now = made.load(Ordering::SeqCst);
                if now == last {
                    return now;
                }
                last = now;
            }
        };
        assert_eq!(maker.conversation(0).await.turns[0].texts[0].len(), 1_000);
        // Asked for 0: ahead are 1, 2, 3 (1,001 + 1,002 + 1,003 = 3,006 bytes) and 4
        // (4,010 bytes, over the bound: the thread stops after it).
        assert_eq!(settled().await, 5);
        assert_eq!(maker.conversation(10).await.turns[0].texts[0].len(), 1_010);
        assert_eq!(settled().await, 15);
        // One is made ahead, however long.
        let one = PromptMaker::start_with(
            (0..3).map(long).collect(),
            Ahead {
                conversations: 100,
                bytes: 1,
            },
        );
        made.store(0, Ordering::SeqCst);
        one.conversation(0).await;
        assert_eq!(settled().await, 2);
    }

    #[tokio::test]
    async fn a_conversation_is_not_kept_once_sent_and_is_made_again_when_drawn_again() {
        let made = Arc::new(AtomicUsize::new(0));
        let maker = PromptMaker::start(counted(3, &made));
        // Every conversation made and the others held, so that the maker makes nothing
        // ahead while the count below is taken (it did, now and then, under load).
        let others = [maker.conversation(0).await, maker.conversation(2).await];
        let first = maker.conversation(1).await;
        let while_held = maker.conversation(1).await;
        assert!(
            Arc::ptr_eq(&first, &while_held),
            "shared while a session holds it"
        );
        let kept = Arc::downgrade(&first);
        drop((first, while_held));
        assert!(
            kept.upgrade().is_none(),
            "the maker does not keep what it handed out"
        );
        let before = made.load(Ordering::SeqCst);
        let again = maker.conversation(1).await;
        assert_eq!(again.turns[0].texts, ["prompt 1"]);
        assert_eq!(made.load(Ordering::SeqCst), before + 1, "made once more");
        drop(others);
    }
}
