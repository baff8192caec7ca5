//! [`SyntheticDataset`]: the default workload when no input file is given. Conversations of
//! sampled length whose turns carry generated prompts of exact token counts, synthetic
//! images, audio and video, think times and per-turn models
//! (docs/datasets.md#synthetic-dataset).

use aiperf_core::config::{InputConfig, RandomCorpusStyle, RangeRatio, RankingsOptions};
use aiperf_core::dataset::DatasetError;
use std::sync::{Arc, Mutex, PoisonError};

use aiperf_core::{
    Conversation, ConversationStream, Dataset, DatasetSource, SamplingStrategy, Turn,
};
use rand::{Rng, RngExt};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use crate::error::SyntheticError;
use crate::media::MediaSynth;
use crate::model_choice::ModelPicker;
use crate::prompt::PromptGenerator;
use crate::seed::{self, derive_rng, derive_seed};
use crate::seq_dist::SeqDistSampler;
use crate::tokenizer::Tokenizer;

/// Random streams of this module besides the shared ones in [`crate::seed`]: each option
/// draws from its own, so turning one on leaves every other draw unchanged.
mod streams {
    pub(super) const TURN_COUNT: &str = "composer.conversation.turn_count";
    pub(super) const TURN_DELAY: &str = "composer.conversation.turn_delay";
    pub(super) const SEQ_DIST: &str = "composer.turn.sequence_distribution";
    pub(super) const RANGE_RATIO: &str = "composer.turn.random_range_ratio";
    pub(super) const PREFIX_POOL: &str = "dataset.prompt.prefix";
    pub(super) const PREFIX_CHOICE: &str = "dataset.prompt.prefix.choice";
    pub(super) const SYSTEM_PROMPT: &str = "dataset.prompt.shared_system";
    pub(super) const USER_CONTEXT: &str = "dataset.prompt.user_context";
}

/// A length distribution: normal with `mean` and `stddev`, rounded up, at least 1 (the
/// Python AIPerf's rule).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LengthDistribution {
    /// Mean length in tokens.
    pub mean: f64,
    /// Standard deviation in tokens (0: every sample is `ceil(mean)`).
    pub stddev: f64,
}

impl LengthDistribution {
    /// A distribution, checked: both parameters finite, `mean >= 0`, `stddev >= 0`.
    /// `what` names the parameter in the error (e.g. `"input tokens"`).
    pub fn new(mean: f64, stddev: f64, what: &'static str) -> Result<Self, SyntheticError> {
        if !mean.is_finite() || mean < 0.0 {
            return Err(SyntheticError::InvalidDistribution {
                what,
                reason: format!("mean must be a number >= 0, got {mean}"),
            });
        }
        if !stddev.is_finite() || stddev < 0.0 {
            return Err(SyntheticError::InvalidDistribution {
                what,
                reason: format!("stddev must be a number >= 0, got {stddev}"),
            });
        }
        Ok(Self { mean, stddev })
    }

    /// Whether every sample is 1.
    fn always_one(&self) -> bool {
        self.mean <= 1.0 && self.stddev == 0.0
    }

    /// A distribution from options [`InputConfig::validate`] already checked.
    pub(crate) fn unchecked(mean: f64, stddev: f64) -> Self {
        Self { mean, stddev }
    }

    /// `max(1, ceil(x))` for a draw `x >= 0` of `N(mean, stddev)` (negative draws are
    /// redrawn, as the Python AIPerf does); exactly `max(1, ceil(mean))` when `stddev`
    /// is 0.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let value = match Normal::new(self.mean, self.stddev) {
            Ok(normal) if self.stddev > 0.0 => (0..100)
                .map(|_| normal.sample(rng))
                .find(|x| *x >= 0.0)
                .unwrap_or(self.mean),
            _ => self.mean,
        };
        // The float-to-int `as` saturates; negative values clamp to 1 below.
        (value.ceil().max(1.0).min(f64::from(u32::MAX))) as u32
    }
}

/// The three distributions of [`RankingsOptions`].
#[derive(Debug, Clone, Copy)]
struct RankingsShape {
    passages: LengthDistribution,
    passage_tokens: LengthDistribution,
    query_tokens: LengthDistribution,
}

impl RankingsShape {
    fn new(options: &RankingsOptions) -> Self {
        Self {
            passages: LengthDistribution::unchecked(options.passages_mean, options.passages_stddev),
            passage_tokens: LengthDistribution::unchecked(
                options.passage_tokens_mean,
                options.passage_tokens_stddev,
            ),
            query_tokens: LengthDistribution::unchecked(
                options.query_tokens_mean,
                options.query_tokens_stddev,
            ),
        }
    }
}

/// Generates conversations from an [`InputConfig`] (`--num-dataset-entries` of them, or
/// [`with_entries`](Self::with_entries) for a run's resolved count): per turn a
/// batch of prompts with exact token counts (ISL from `--isl` or `--seq-dist`), optional
/// images, audio and video, a `max_tokens` (OSL), a model and, after the first turn, a
/// think time; per conversation an optional shared system prompt and user context.
///
/// Every random choice comes from a stream derived from one root seed (see
/// [`derive_seed`]), so the same seed and tokenizer give a byte-identical dataset.
///
/// ```
/// use aiperf_core::config::InputConfig;
/// use aiperf_core::DatasetSource;
/// use aiperf_datasets::{SyntheticDataset, Tokenizer};
///
/// let mut input = InputConfig::default();
/// input.isl_mean = 64;
/// input.osl_mean = Some(16);
/// input.num_dataset_entries = Some(3);
/// input.random_seed = Some(42);
/// input.session.turns_mean = 2;
/// let tokenizer = Tokenizer::builtin();
/// let models = ["model-a".to_owned()];
/// let mut dataset = SyntheticDataset::new(&input, &models, tokenizer.clone()).unwrap();
/// let conversations = dataset.load().unwrap().conversations;
/// assert_eq!(conversations.len(), 3);
/// let turn = &conversations[0].turns[1];
/// assert_eq!(tokenizer.encode(&turn.texts[0]).len(), 64);
/// assert_eq!(turn.max_tokens, Some(16));
/// assert_eq!(turn.model.as_deref(), Some("model-a"));
/// ```
#[derive(Debug, Clone)]
pub struct SyntheticDataset {
    input: InputConfig,
    entries: usize,
    models: Vec<String>,
    tokenizer: Tokenizer,
    root_seed: u64,
    rankings: Option<RankingsShape>,
    isl: LengthDistribution,
    osl: Option<LengthDistribution>,
    seq_dist: Option<SeqDistSampler>,
    range_windows: Option<RangeWindows>,
    turns: LengthDistribution,
    delay: Option<LengthDistribution>,
    media: MediaSynth,
}

/// The inclusive (low, high) token windows `--random-range-ratio` draws lengths from.
#[derive(Debug, Clone, Copy)]
struct RangeWindows {
    isl: (u32, u32),
    osl: (u32, u32),
    /// Taken off each drawn input length, down to 1: the special tokens the tokenizer
    /// adds, for the SGLang style (the vLLM style takes them off the mean instead).
    isl_shift: u32,
}

impl RangeWindows {
    /// The windows of `ratio` for the input's style; the tokenizer adds `special_tokens`
    /// to each prompt on the server, which the input length already counts.
    fn new(input: &InputConfig, ratio: RangeRatio, osl_mean: u32, special_tokens: u32) -> Self {
        let style = input.prompt.random_corpus_style;
        let (isl_mean, isl_shift) = match style {
            RandomCorpusStyle::Vllm => (input.isl_mean.saturating_sub(special_tokens), 0),
            RandomCorpusStyle::Sglang => (input.isl_mean, special_tokens),
        };
        Self {
            isl: ratio.input_bounds(isl_mean, style),
            osl: ratio.output_bounds(osl_mean, style),
            isl_shift,
        }
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> (u32, u32) {
        let isl = rng.random_range(self.isl.0..=self.isl.1);
        (
            isl.saturating_sub(self.isl_shift).max(1),
            rng.random_range(self.osl.0..=self.osl.1),
        )
    }
}

impl SyntheticDataset {
    /// Checks `input` ([`InputConfig::validate`]), fixes the run's root seed (random when
    /// `input.random_seed` is `None`; see [`SyntheticDataset::root_seed`]) and, when
    /// video is on, finds ffmpeg. `models` are assigned to turns by
    /// `input.model_selection`; with none, turns name no model (the primary one is used).
    /// Without the `media` feature, an input that enables images, audio or video is
    /// [`MediaError::Disabled`](crate::MediaError::Disabled).
    pub fn new(
        input: &InputConfig,
        models: &[String],
        tokenizer: Tokenizer,
    ) -> Result<Self, SyntheticError> {
        input.validate()?;
        let root_seed = input.random_seed.unwrap_or_else(rand::random);
        let session = &input.session;
        let media = MediaSynth::new(input, root_seed)?;
        let special_tokens = u32::try_from(tokenizer.special_tokens_added()).unwrap_or(u32::MAX);
        Ok(Self {
            isl: LengthDistribution::unchecked(f64::from(input.isl_mean), input.isl_stddev),
            osl: input
                .osl_mean
                .map(|mean| LengthDistribution::unchecked(f64::from(mean), input.osl_stddev)),
            seq_dist: input
                .sequence_distribution
                .as_ref()
                .map(SeqDistSampler::new),
            range_windows: input
                .random_range_ratio
                .zip(input.osl_mean)
                .map(|(ratio, osl_mean)| RangeWindows::new(input, ratio, osl_mean, special_tokens)),
            turns: LengthDistribution::unchecked(
                f64::from(session.turns_mean),
                f64::from(session.turns_stddev),
            ),
            delay: (session.delay_mean_ms > 0.0).then(|| {
                LengthDistribution::unchecked(session.delay_mean_ms, session.delay_stddev_ms)
            }),
            input: input.clone(),
            entries: input.dataset_entries(),
            models: models.to_vec(),
            tokenizer,
            root_seed,
            rankings: None,
            media,
        })
    }

    /// Generate `entries` conversations instead of `input.num_dataset_entries` (or its
    /// default): a run passes [`BenchmarkConfig::dataset_entries`], which also counts the
    /// requests or sessions the run sends.
    ///
    /// [`BenchmarkConfig::dataset_entries`]: aiperf_core::BenchmarkConfig::dataset_entries
    #[must_use]
    pub fn with_entries(mut self, entries: usize) -> Self {
        self.entries = entries;
        self
    }

    /// Compose ranking requests (one query text and the passages to rank, one turn per
    /// conversation) instead of prompts: what the `*_rankings` endpoints take.
    #[must_use]
    pub fn with_rankings(mut self, rankings: bool) -> Self {
        self.rankings = rankings.then(|| RankingsShape::new(&self.input.rankings));
        self
    }

    /// The root seed every random stream of this dataset derives from.
    pub fn root_seed(&self) -> u64 {
        self.root_seed
    }

    /// The input options.
    pub fn input(&self) -> &InputConfig {
        &self.input
    }

    /// Generates the conversations.
    pub fn generate(&self) -> Result<Vec<Conversation>, SyntheticError> {
        let mut composer = Composer::new(Arc::new(self.clone()))?;
        let mut conversations = Vec::with_capacity(self.entries);
        for _ in 0..self.entries {
            conversations.push(composer.conversation()?);
        }
        tracing::debug!(
            entries = conversations.len(),
            seed = self.root_seed,
            "synthetic dataset generated"
        );
        Ok(conversations)
    }
}

impl SyntheticDataset {
    /// The conversations [`generate`](Self::generate) makes, made as a run needs them:
    /// every pass of the stream makes the same conversations in the same order, each
    /// one's random draws as in the whole dataset (every property has its own random
    /// stream, drawn in dataset order). What a run whose every entry is used once (one
    /// conversation per request, the default sizing) sends instead of the whole
    /// dataset made up front.
    pub fn stream(self) -> Result<ConversationStream, SyntheticError> {
        let entries = self.entries;
        let single_turn = self.rankings.is_some() || self.turns.always_one();
        let dataset = Arc::new(self);
        // Made now, for the first pass: setting up the prompt corpus takes a while, which
        // the run's first requests must not wait for (and a failure shows before the run).
        let first = Mutex::new(Some(Composer::new(Arc::clone(&dataset))?));
        let stream = ConversationStream::new(entries, move || {
            let prepared = first.lock().unwrap_or_else(PoisonError::into_inner).take();
            let mut composer =
                Some(prepared.map_or_else(|| Composer::new(Arc::clone(&dataset)), Ok));
            std::iter::from_fn(move || match composer.as_mut()? {
                Ok(composer) => Some(composer.conversation().map_err(DatasetError::from)),
                // Made once already (above): reported once should it fail again.
                Err(_) => composer
                    .take()
                    .and_then(Result::err)
                    .map(|error| Err(error.into())),
            })
            .take(entries)
        });
        Ok(if single_turn {
            stream.single_turn()
        } else {
            stream
        })
    }
}

/// Synthetic prompts are a pool, drawn shuffled, without timestamps.
impl DatasetSource for SyntheticDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        Ok(Dataset {
            conversations: self.generate()?,
            preferred_sampling: SamplingStrategy::Shuffle,
            timestamped: false,
        })
    }
}

/// The state of one generation pass: the random streams and the round-robin counter.
struct Composer {
    dataset: Arc<SyntheticDataset>,
    prompts: PromptGenerator,
    system_message: Option<String>,
    user_context: PromptGenerator,
    prefixes: Vec<String>,
    prefix_rng: ChaCha8Rng,
    length_rng: ChaCha8Rng,
    osl_rng: ChaCha8Rng,
    seq_rng: ChaCha8Rng,
    range_rng: ChaCha8Rng,
    conversations_made: usize,
    passages_rng: ChaCha8Rng,
    turn_count_rng: ChaCha8Rng,
    delay_rng: ChaCha8Rng,
    models: ModelPicker,
    media: MediaSynth,
}

impl Composer {
    fn new(dataset: Arc<SyntheticDataset>) -> Result<Self, SyntheticError> {
        let root = dataset.root_seed;
        let input = &dataset.input;
        let prompts = PromptGenerator::with_corpus(
            dataset.tokenizer.clone(),
            derive_seed(root, seed::PROMPT_CORPUS),
            input.prompt.corpus(),
            input.prompt.random_corpus_style,
        )?;
        let prefixes = if input.prompt.has_prefix_pool() {
            let mut pool = prompts.fork(derive_seed(root, streams::PREFIX_POOL));
            (0..input.prompt.prefix_pool_size)
                .map(|_| pool.generate(input.prompt.prefix_length as usize))
                .collect()
        } else {
            Vec::new()
        };
        let system_message = input.prompt.shared_system_length.map(|length| {
            prompts
                .fork(derive_seed(root, streams::SYSTEM_PROMPT))
                .generate(length as usize)
        });
        let user_context = prompts.fork(derive_seed(root, streams::USER_CONTEXT));
        Ok(Self {
            prompts,
            system_message,
            user_context,
            prefixes,
            prefix_rng: derive_rng(root, streams::PREFIX_CHOICE),
            length_rng: derive_rng(root, seed::PROMPT_LENGTH),
            osl_rng: derive_rng(root, seed::MAX_TOKENS),
            seq_rng: derive_rng(root, streams::SEQ_DIST),
            range_rng: derive_rng(root, streams::RANGE_RATIO),
            conversations_made: 0,
            passages_rng: derive_rng(root, seed::RANKING_PASSAGES),
            turn_count_rng: derive_rng(root, streams::TURN_COUNT),
            delay_rng: derive_rng(root, streams::TURN_DELAY),
            models: ModelPicker::new(&dataset.models, &input.model_selection, root),
            media: dataset.media.clone(),
            dataset,
        })
    }

    fn conversation(&mut self) -> Result<Conversation, SyntheticError> {
        let turns = if let Some(shape) = self.dataset.rankings {
            vec![self.rankings_turn(shape)]
        } else {
            let count = self.dataset.turns.sample(&mut self.turn_count_rng);
            // Sized up front: collected from a fallible iterator, a one-turn conversation
            // would hold room for four turns (1.3 KB more per conversation, and a
            // synthetic dataset has one conversation per request).
            let mut turns = Vec::with_capacity(count as usize);
            for index in 0..count {
                turns.push(self.turn(index == 0)?);
            }
            turns
        };
        let user_context_message = self
            .dataset
            .input
            .prompt
            .user_context_length
            .map(|length| self.user_context.generate(length as usize));
        let session_id = session_id(self.conversations_made);
        self.conversations_made += 1;
        Ok(Conversation {
            session_id,
            system_message: self.system_message.clone(),
            user_context_message,
            turns,
            ..Conversation::default()
        })
    }

    fn turn(&mut self, first: bool) -> Result<Turn, SyntheticError> {
        let dataset = Arc::clone(&self.dataset);
        let input = &dataset.input;
        let seq = match (&dataset.seq_dist, dataset.range_windows) {
            (Some(sampler), _) => Some(sampler.sample(&mut self.seq_rng)),
            (None, Some(windows)) => Some(windows.sample(&mut self.range_rng)),
            (None, None) => None,
        };
        let mut texts = Vec::new();
        // The count of the turn's text when it is one prompt, as it was made: a batch's
        // texts are sent joined, a prefix is joined to its prompt.
        let mut known_tokens = None;
        if input.text_enabled() {
            let batch = input.prompt.batch_size;
            for _ in 0..batch {
                let tokens = match seq {
                    Some((isl, _)) => isl,
                    None => dataset.isl.sample(&mut self.length_rng),
                };
                let (prompt, known) = self.prompts.generate_counted(tokens as usize);
                if let Some(prefix) = self.random_prefix(first) {
                    texts.push(format!("{prefix} {prompt}"));
                } else {
                    known_tokens = known.filter(|_| batch == 1);
                    texts.push(prompt);
                }
            }
        }
        let media = self.media.turn()?;
        let delay_ms = match (&dataset.delay, first) {
            (Some(delay), false) => {
                Some(f64::from(delay.sample(&mut self.delay_rng)) * input.session.delay_ratio)
            }
            _ => None,
        };
        let max_tokens = match seq {
            Some((_, osl)) => Some(osl),
            None => dataset.osl.map(|osl| osl.sample(&mut self.osl_rng)),
        };
        Ok(Turn {
            texts,
            images: media.images,
            audios: media.audios,
            audio_duration_s: media.audio_duration_s,
            videos: media.videos,
            model: self.models.next(),
            max_tokens,
            delay_ms,
            known_tokens,
            ..Turn::default()
        })
    }

    /// A pooled prefix for the first turn, when a pool exists.
    fn random_prefix(&mut self, first: bool) -> Option<String> {
        if !first || self.prefixes.is_empty() {
            return None;
        }
        let index = self.prefix_rng.random_range(0..self.prefixes.len());
        Some(self.prefixes[index].clone())
    }

    fn rankings_turn(&mut self, shape: RankingsShape) -> Turn {
        let query = shape.query_tokens.sample(&mut self.length_rng) as usize;
        let count = shape.passages.sample(&mut self.passages_rng);
        let mut texts = vec![self.prompts.generate(query)];
        for _ in 0..count {
            let tokens = shape.passage_tokens.sample(&mut self.length_rng);
            texts.push(self.prompts.generate(tokens as usize));
        }
        Turn {
            texts,
            model: self.models.next(),
            max_tokens: self.dataset.osl.map(|osl| osl.sample(&mut self.osl_rng)),
            ..Turn::default()
        }
    }
}

/// The id of the `index`-th generated conversation, as the Python AIPerf numbers them
/// (`session_000000`, `session_000001`, …), so `conversation_id` in the records finds the
/// same conversation in `inputs.json` and reads the same in both tools.
pub(crate) fn session_id(index: usize) -> String {
    format!("session_{index:06}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn input(seed: Option<u64>) -> InputConfig {
        InputConfig {
            isl_mean: 100,
            isl_stddev: 30.0,
            osl_mean: Some(50),
            osl_stddev: 10.0,
            num_dataset_entries: Some(20),
            random_seed: seed,
            ..InputConfig::default()
        }
    }

    fn dataset(input: &InputConfig) -> SyntheticDataset {
        SyntheticDataset::new(input, &[], Tokenizer::builtin()).unwrap()
    }

    #[test]
    fn lengths_are_exact_and_vary_with_stddev() {
        let t = Tokenizer::builtin();
        let dataset = dataset(&input(Some(7)));
        let conversations = dataset.generate().unwrap();
        let mut length_rng = derive_rng(7, seed::PROMPT_LENGTH);
        let mut osl_rng = derive_rng(7, seed::MAX_TOKENS);
        let mut distinct = std::collections::HashSet::new();
        for c in &conversations {
            assert_eq!(c.turns.len(), 1);
            let turn = &c.turns[0];
            let expected = dataset.isl.sample(&mut length_rng) as usize;
            assert_eq!(t.count(&turn.texts[0]), expected);
            distinct.insert(expected);
            let osl = dataset.osl.unwrap().sample(&mut osl_rng);
            assert_eq!(turn.max_tokens, Some(osl));
            assert_eq!(turn.model, None);
            assert_eq!(turn.delay_ms, None);
        }
        assert!(distinct.len() > 5);
    }

    #[test]
    fn a_turn_of_one_prompt_carries_its_count_and_no_other_does() {
        use aiperf_core::TokenCounter;
        let t = Tokenizer::builtin();
        let counter = t.id().unwrap();
        let made = |change: &dyn Fn(&mut InputConfig)| {
            let mut input = input(Some(11));
            input.session.turns_mean = 2;
            change(&mut input);
            dataset(&input).generate().unwrap()
        };
        for conversation in made(&|_| {}) {
            for turn in &conversation.turns {
                let text = &turn.texts[0];
                let known = turn.known_tokens.unwrap().tokens_of(text, counter);
                assert_eq!(known, Some(t.count(text)));
            }
        }
        // A prefix on the first turn (not the later ones); a batch of two prompts.
        let prefixed = made(&|input| {
            input.prompt.prefix_pool_size = 3;
            input.prompt.prefix_length = 10;
        });
        for conversation in &prefixed {
            assert_eq!(conversation.turns[0].known_tokens, None);
            assert!(conversation.turns[1].known_tokens.is_some());
        }
        let batched = made(&|input| input.prompt.batch_size = 2);
        assert!(batched
            .iter()
            .flat_map(|c| &c.turns)
            .all(|turn| turn.known_tokens.is_none()));
    }

    #[test]
    fn every_pass_of_the_stream_makes_the_generated_conversations_in_order() {
        let mut input = input(Some(3));
        input.session.turns_mean = 2;
        input.session.turns_stddev = 1;
        input.session.delay_mean_ms = 40.0;
        let models = ["a".to_owned(), "b".to_owned()];
        let dataset = SyntheticDataset::new(&input, &models, Tokenizer::builtin())
            .unwrap()
            .with_entries(7);
        let whole = dataset.generate().unwrap();
        let stream = dataset.stream().unwrap();
        assert_eq!(stream.len(), 7);
        assert!(!stream.is_single_turn());
        for _ in 0..2 {
            let pass: Vec<Conversation> = stream.pass().map(Result::unwrap).collect();
            assert_eq!(pass, whole);
        }
        assert!(whole.iter().any(|c| c.turns.len() > 1));
    }

    #[test]
    fn a_stream_of_one_turn_conversations_says_so() {
        let stream = dataset(&input(Some(3))).stream().unwrap();
        assert!(stream.is_single_turn());
        assert_eq!(stream.pass().count(), 20);
    }

    #[test]
    fn a_conversation_holds_room_for_its_turns_only() {
        // A dataset has one conversation per request: three spare turns each were most
        // of a million-request run's memory.
        for c in dataset(&input(Some(5))).generate().unwrap() {
            assert_eq!((c.turns.len(), c.turns.capacity()), (1, 1));
        }
    }

    #[test]
    fn session_ids_count_up_as_in_python() {
        let ids: Vec<String> = dataset(&input(Some(5)))
            .generate()
            .unwrap()
            .into_iter()
            .map(|c| c.session_id)
            .collect();
        assert_eq!(ids[0], "session_000000");
        assert_eq!(ids[19], "session_000019");
        assert_eq!(ids.len(), 20);
    }

    #[test]
    fn no_seed_picks_one_per_run() {
        let first = dataset(&input(None));
        let again = dataset(&input(Some(first.root_seed())));
        assert_eq!(first.generate().unwrap(), again.generate().unwrap());
    }

    #[test]
    fn invalid_input_is_rejected_with_reason() {
        let err = SyntheticDataset::new(
            &InputConfig {
                isl_stddev: -1.0,
                ..InputConfig::default()
            },
            &[],
            Tokenizer::builtin(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "input.isl_stddev must be 0 or more, got -1"
        );
    }

    #[test]
    fn rankings_turns_hold_a_query_and_the_passages() {
        let tokenizer = Tokenizer::builtin();
        let mut input = input(Some(4));
        input.rankings = RankingsOptions {
            passages_mean: 3.0,
            passages_stddev: 1.0,
            passage_tokens_mean: 40.0,
            query_tokens_mean: 12.0,
            ..RankingsOptions::default()
        };
        let conversations = dataset(&input).with_rankings(true).generate().unwrap();
        let mut counts = std::collections::BTreeSet::new();
        for conversation in &conversations {
            assert_eq!(conversation.turns.len(), 1);
            let texts = &conversation.turns[0].texts;
            assert_eq!(tokenizer.count(&texts[0]), 12, "the query");
            assert!(texts[1..].iter().all(|p| tokenizer.count(p) == 40));
            counts.insert(texts.len() - 1);
        }
        assert!(counts.len() > 1, "passage counts vary: {counts:?}");
        assert!(counts.iter().all(|n| *n >= 1));
    }

    #[test]
    fn length_sampling_rounds_up_and_clamps() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let d = LengthDistribution::new(2.4, 0.0, "x").unwrap();
        assert_eq!(d.sample(&mut rng), 3);
        let d = LengthDistribution::new(0.2, 0.0, "x").unwrap();
        assert_eq!(d.sample(&mut rng), 1);
        let d = LengthDistribution::new(1.0, 100.0, "x").unwrap();
        assert!((0..1000).all(|_| d.sample(&mut rng) >= 1));
        let d = LengthDistribution::new(1000.0, 100.0, "x").unwrap();
        let mean = (0..4000)
            .map(|_| f64::from(d.sample(&mut rng)))
            .sum::<f64>()
            / 4000.0;
        assert!((mean - 1000.5).abs() < 10.0, "{mean}");
        assert!(LengthDistribution::new(1.0, -1.0, "x").is_err());
    }

    #[cfg(not(feature = "media"))]
    #[test]
    fn without_media_each_kind_is_refused_naming_the_feature() {
        let mut images = input(Some(1));
        images.image.width_mean = 8.0;
        images.image.height_mean = 8.0;
        let mut audio = input(Some(1));
        audio.audio.length_mean = 0.5;
        let mut video = input(Some(1));
        video.video.width = Some(8);
        video.video.height = Some(8);
        for (input, kind) in [(images, "images"), (audio, "audio"), (video, "video")] {
            let err = SyntheticDataset::new(&input, &[], Tokenizer::builtin()).unwrap_err();
            assert!(
                matches!(
                    err,
                    SyntheticError::Media(crate::MediaError::Disabled { what }) if what == kind
                ),
                "{err:?}"
            );
            assert!(err.to_string().contains("feature \"media\""), "{err}");
        }
        assert!(SyntheticDataset::new(&input(Some(1)), &[], Tokenizer::builtin()).is_ok());
    }
}
