//! The [`DatasetSource`] trait, how the engine picks conversations from a dataset, and
//! [`ConversationStream`]: a dataset made as the run needs it.

use std::fmt;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::conversation::Conversation;

/// An error from a dataset source; sources say which file, line and field.
pub type DatasetError = Box<dyn std::error::Error + Send + Sync>;

/// Produces the conversations a benchmark sends: synthetic prompts, a user's file, a trace.
pub trait DatasetSource {
    /// Loads (or generates) every conversation, with what the run needs to know about
    /// them.
    fn load(&mut self) -> Result<Dataset, DatasetError>;
}

/// A loaded dataset: its conversations and the properties that decide how a run uses
/// them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dataset {
    /// In dataset order (a fixed schedule indexes into it).
    pub conversations: Vec<Conversation>,
    /// How to draw the conversations when the configuration does not say (a trace is
    /// meant to be sent in order, a pool of prompts shuffled).
    pub preferred_sampling: SamplingStrategy,
    /// The entries carry timestamps, so the dataset can be replayed on a fixed schedule.
    pub timestamped: bool,
}

/// A dataset made as the run needs it rather than loaded whole: `len` conversations in
/// dataset order, made by passes (iterators) the stream starts as often as the run needs.
/// Every pass must make the same conversations in the same order (a seeded generator
/// does): a run that starts more sessions than `len` starts a new pass, and
/// `inputs.json` is written from a pass of its own.
///
/// The engine sends a stream's conversations once each, in dataset order, made on a
/// thread of its own a bounded number ahead of the sessions and dropped once their
/// session ended, so a run's memory does not grow with its length (see
/// [`BenchmarkBuilder::conversation_stream`](crate::engine::BenchmarkBuilder::conversation_stream)).
///
/// ```
/// use aiperf_core::{Conversation, ConversationStream, Turn};
///
/// let stream = ConversationStream::new(3, || {
///     (0..3).map(|i| {
///         Ok(Conversation {
///             session_id: format!("session-{i}"),
///             turns: vec![Turn::text(format!("prompt {i}"))],
///             ..Conversation::default()
///         })
///     })
/// })
/// .single_turn();
/// let ids: Vec<String> = stream.pass().map(|c| c.unwrap().session_id).collect();
/// assert_eq!(ids, ["session-0", "session-1", "session-2"]);
/// assert_eq!(stream.len(), 3);
/// ```
#[derive(Clone)]
pub struct ConversationStream {
    len: usize,
    single_turn: bool,
    start: Arc<dyn Fn() -> ConversationPass + Send + Sync>,
}

/// One pass over a [`ConversationStream`]: its conversations in dataset order, or the
/// error that stopped the making of one.
pub type ConversationPass = Box<dyn Iterator<Item = Result<Conversation, DatasetError>> + Send>;

impl ConversationStream {
    /// A stream of `len` conversations, each pass made by an iterator `start` returns.
    pub fn new<I>(len: usize, start: impl Fn() -> I + Send + Sync + 'static) -> Self
    where
        I: Iterator<Item = Result<Conversation, DatasetError>> + Send + 'static,
    {
        Self {
            len,
            single_turn: false,
            start: Arc::new(move || Box::new(start())),
        }
    }

    /// Says every conversation has one turn: a shard then knows how many sessions of the
    /// whole run a request count means (see [`PhasePlan::for_shard`](crate::PhasePlan::for_shard)).
    #[must_use]
    pub fn single_turn(mut self) -> Self {
        self.single_turn = true;
        self
    }

    /// Whether every conversation has one turn (see [`single_turn`](Self::single_turn)).
    pub fn is_single_turn(&self) -> bool {
        self.single_turn
    }

    /// The number of conversations of a pass.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when a pass has no conversation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Starts a pass from the first conversation.
    pub fn pass(&self) -> ConversationPass {
        (self.start)()
    }

    /// The same stream with `adjust` applied to each conversation as it is made (e.g. a
    /// system prompt the configuration adds to every conversation).
    #[must_use]
    pub fn map(
        self,
        adjust: impl Fn(Conversation) -> Conversation + Send + Sync + 'static,
    ) -> Self {
        let adjust = Arc::new(adjust);
        let start = self.start;
        Self {
            start: Arc::new(move || {
                let adjust = Arc::clone(&adjust);
                Box::new(start().map(move |made| made.map(|c| adjust(c))))
            }),
            ..self
        }
    }
}

impl fmt::Debug for ConversationStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConversationStream")
            .field("len", &self.len)
            .field("single_turn", &self.single_turn)
            .finish_non_exhaustive()
    }
}

/// How conversations are drawn from the dataset as the benchmark runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingStrategy {
    /// In order, wrapping around.
    Sequential,
    /// Uniformly at random, with replacement.
    Random,
    /// A fresh permutation for every pass.
    #[default]
    Shuffle,
}

/// Hands out conversations in the order a [`SamplingStrategy`] says, deterministically
/// for a seed.
#[derive(Debug)]
pub struct ConversationSampler {
    conversations: Vec<Arc<Conversation>>,
    strategy: SamplingStrategy,
    rng: ChaCha8Rng,
    order: Vec<usize>,
    position: usize,
}

impl ConversationSampler {
    /// A sampler over `conversations` (which must not be empty).
    ///
    /// Each conversation's turns are trimmed to what they hold: a loader that pushed them
    /// one by one leaves up to half its room spare (a one-turn conversation built by a
    /// push holds four 432-byte turns), and the sampler keeps every conversation for the
    /// whole run.
    pub fn new(conversations: Vec<Conversation>, strategy: SamplingStrategy, seed: u64) -> Self {
        Self {
            order: (0..conversations.len()).collect(),
            conversations: conversations
                .into_iter()
                .map(|mut conversation| {
                    conversation.turns.shrink_to_fit();
                    Arc::new(conversation)
                })
                .collect(),
            strategy,
            rng: ChaCha8Rng::seed_from_u64(seed),
            position: usize::MAX,
        }
    }

    /// The number of distinct conversations.
    pub fn len(&self) -> usize {
        self.conversations.len()
    }

    /// True when there is nothing to sample.
    pub fn is_empty(&self) -> bool {
        self.conversations.is_empty()
    }

    /// The conversation at `index` in dataset order (a schedule that fixes which
    /// conversation goes when), or `None` past the end.
    pub fn get(&self, index: usize) -> Option<Arc<Conversation>> {
        self.conversations.get(index).map(Arc::clone)
    }

    /// Every conversation, in dataset order.
    pub fn conversations(&self) -> &[Arc<Conversation>] {
        &self.conversations
    }

    /// The next conversation, or `None` for an empty dataset.
    pub fn next_conversation(&mut self) -> Option<Arc<Conversation>> {
        self.next_index()
            .map(|index| Arc::clone(&self.conversations[index]))
    }

    /// The dataset index of the next conversation, or `None` for an empty dataset.
    pub fn next_index(&mut self) -> Option<usize> {
        let len = self.conversations.len();
        if len == 0 {
            return None;
        }
        let index = match self.strategy {
            SamplingStrategy::Random => self.rng.random_range(0..len),
            SamplingStrategy::Sequential | SamplingStrategy::Shuffle => {
                if self.position >= len {
                    self.position = 0;
                    if self.strategy == SamplingStrategy::Shuffle {
                        self.order.shuffle(&mut self.rng);
                    }
                }
                self.position += 1;
                self.order[self.position - 1]
            }
        };
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Turn;

    fn dataset(n: usize) -> Vec<Conversation> {
        (0..n)
            .map(|i| Conversation {
                session_id: i.to_string(),
                turns: vec![Turn::text(i.to_string())],
                ..Conversation::default()
            })
            .collect()
    }

    fn ids(sampler: &mut ConversationSampler, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| sampler.next_conversation().unwrap().session_id.clone())
            .collect()
    }

    #[test]
    fn conversations_are_kept_without_spare_turns() {
        // As a loader reading turns one by one does it.
        let mut pushed = Vec::with_capacity(4);
        pushed.push(Turn::text("one"));
        assert!(pushed.capacity() > 1);
        let conversation = Conversation {
            turns: pushed,
            ..Conversation::default()
        };
        let sampler = ConversationSampler::new(vec![conversation], SamplingStrategy::Sequential, 1);
        let kept = sampler.get(0).unwrap();
        assert_eq!((kept.turns.len(), kept.turns.capacity()), (1, 1));
    }

    #[test]
    fn sequential_wraps_in_order() {
        let mut s = ConversationSampler::new(dataset(3), SamplingStrategy::Sequential, 1);
        assert_eq!(ids(&mut s, 5), ["0", "1", "2", "0", "1"]);
    }

    #[test]
    fn shuffle_visits_every_conversation_once_per_pass_and_is_seeded() {
        let mut a = ConversationSampler::new(dataset(10), SamplingStrategy::Shuffle, 7);
        let mut b = ConversationSampler::new(dataset(10), SamplingStrategy::Shuffle, 7);
        let pass = ids(&mut a, 10);
        let mut sorted = pass.clone();
        sorted.sort();
        let mut expected: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        expected.sort();
        assert_eq!(sorted, expected);
        assert_eq!(pass, ids(&mut b, 10));
    }

    #[test]
    fn empty_dataset_yields_nothing() {
        let mut s = ConversationSampler::new(Vec::new(), SamplingStrategy::Random, 1);
        assert!(s.next_conversation().is_none());
    }
}
