//! Makes the deferred prompts of a run's conversations (`crate::deferred`) on a thread
//! of its own, in dataset order, at most [`MADE_AHEAD`] conversations beyond the
//! furthest one a session asked for: the first request waits for one conversation, not
//! for the whole dataset, and a session whose prompt is ready never waits.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::sync::Notify;

use crate::conversation::Conversation;

/// How many conversations the maker runs ahead of the furthest one asked for: enough to
/// keep a fast schedule fed, few enough that a short run makes few prompts it never sends.
pub(super) const MADE_AHEAD: usize = 1024;

/// The made conversations of a run, filled by the maker's thread.
pub(super) struct PromptMaker {
    state: Arc<State>,
}

struct State {
    /// In dataset order, prompts deferred.
    skeletons: Vec<Arc<Conversation>>,
    /// `made[i]` is `skeletons[i]` with its prompts made, once the thread got there.
    made: Vec<OnceLock<Arc<Conversation>>>,
    demand: Mutex<Demand>,
    /// Wakes the thread when the demand grows or the run ends.
    demand_grew: Condvar,
    /// Wakes the sessions waiting for a conversation after each one is made.
    made_one: Notify,
}

struct Demand {
    /// One past the furthest index a session asked for.
    wanted: usize,
    stopped: bool,
}

impl PromptMaker {
    /// Starts the thread that makes the prompts of `conversations`.
    pub(super) fn start(conversations: Vec<Arc<Conversation>>) -> Self {
        let state = Arc::new(State {
            made: conversations.iter().map(|_| OnceLock::new()).collect(),
            skeletons: conversations,
            demand: Mutex::new(Demand {
                wanted: 0,
                stopped: false,
            }),
            demand_grew: Condvar::new(),
            made_one: Notify::new(),
        });
        let worker = Arc::clone(&state);
        std::thread::Builder::new()
            .name("prompt-maker".into())
            .spawn(move || worker.make_in_order())
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
            demand.wanted = demand.wanted.max(index + 1);
            demand.stopped
        };
        state.demand_grew.notify_one();
        let slot = &state.made[index];
        if stopped {
            return Arc::clone(slot.get_or_init(|| state.make(index)));
        }
        loop {
            let made_one = state.made_one.notified();
            tokio::pin!(made_one);
            made_one.as_mut().enable();
            if let Some(made) = slot.get() {
                return Arc::clone(made);
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
    fn make_in_order(&self) {
        for index in 0..self.skeletons.len() {
            {
                let mut demand = lock(&self.demand);
                while !demand.stopped && index >= demand.wanted + MADE_AHEAD {
                    demand = self
                        .demand_grew
                        .wait(demand)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if demand.stopped {
                    return;
                }
            }
            self.made[index].get_or_init(|| self.make(index));
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

/// The demand, whatever panicked while holding it (a panic leaves it consistent).
fn lock(demand: &Mutex<Demand>) -> MutexGuard<'_, Demand> {
    demand.lock().unwrap_or_else(PoisonError::into_inner)
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
}
