//! [`SyntheticDataset`]: single-turn conversations with generated prompts of sampled
//! length, the default workload when no input file is given.

use aiperf_core::dataset::DatasetError;
use aiperf_core::{Conversation, DatasetSource, Turn};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use crate::error::SyntheticError;
use crate::prompt::PromptGenerator;
use crate::seed::{self, derive_rng, derive_seed};
use crate::tokenizer::Tokenizer;

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

    /// `max(1, ceil(N(mean, stddev)))`; exactly `max(1, ceil(mean))` when `stddev` is 0.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let value = if self.stddev > 0.0 {
            match Normal::new(self.mean, self.stddev) {
                Ok(normal) => normal.sample(rng),
                Err(_) => self.mean,
            }
        } else {
            self.mean
        };
        // The float-to-int `as` saturates; negative values clamp to 1 below.
        (value.ceil().max(1.0).min(f64::from(u32::MAX))) as u32
    }
}

/// What a [`SyntheticDataset`] generates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticConfig {
    /// Mean input length in tokens (`--isl`, default 550).
    pub isl_mean: u32,
    /// Input length standard deviation (`--isl-stddev`, default 0).
    pub isl_stddev: f64,
    /// Mean requested output length (`--osl`); `None` sends no max-tokens field.
    pub osl_mean: Option<u32>,
    /// Output length standard deviation (`--osl-stddev`, default 0).
    pub osl_stddev: f64,
    /// How many conversations (`--num-dataset-entries`, default 100).
    pub num_entries: usize,
    /// Root seed (`--random-seed`); `None` picks a random one for this run.
    pub seed: Option<u64>,
    /// Model to put on each turn; `None` leaves the primary model.
    pub model: Option<String>,
    /// Compose ranking requests (a query and passages) instead of one prompt per turn.
    pub rankings: Option<RankingsConfig>,
}

/// The shape of synthetic ranking requests (`--rankings-*`): each turn's first text is the
/// query, the rest are the passages to rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankingsConfig {
    /// Mean passages per request (`--rankings-passages-mean`, default 1).
    pub passages_mean: f64,
    /// Standard deviation of the passage count.
    pub passages_stddev: f64,
    /// Mean tokens per passage (`--rankings-passages-prompt-token-mean`, default 550).
    pub passage_tokens_mean: f64,
    /// Standard deviation of the passage length.
    pub passage_tokens_stddev: f64,
    /// Mean tokens of the query (`--rankings-query-prompt-token-mean`, default 550).
    pub query_tokens_mean: f64,
    /// Standard deviation of the query length.
    pub query_tokens_stddev: f64,
}

impl Default for RankingsConfig {
    fn default() -> Self {
        Self {
            passages_mean: 1.0,
            passages_stddev: 0.0,
            passage_tokens_mean: 550.0,
            passage_tokens_stddev: 0.0,
            query_tokens_mean: 550.0,
            query_tokens_stddev: 0.0,
        }
    }
}

/// The three distributions of a [`RankingsConfig`], checked.
#[derive(Debug, Clone, Copy)]
struct RankingsShape {
    passages: LengthDistribution,
    passage_tokens: LengthDistribution,
    query_tokens: LengthDistribution,
}

impl RankingsShape {
    fn new(config: &RankingsConfig) -> Result<Self, SyntheticError> {
        Ok(Self {
            passages: LengthDistribution::new(
                config.passages_mean,
                config.passages_stddev,
                "ranking passages",
            )?,
            passage_tokens: LengthDistribution::new(
                config.passage_tokens_mean,
                config.passage_tokens_stddev,
                "passage tokens",
            )?,
            query_tokens: LengthDistribution::new(
                config.query_tokens_mean,
                config.query_tokens_stddev,
                "query tokens",
            )?,
        })
    }
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        Self {
            isl_mean: 550,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            num_entries: 100,
            seed: None,
            model: None,
            rankings: None,
        }
    }
}

/// Generates `num_entries` single-turn conversations whose user text has a sampled,
/// exact token count, and (when an output length is configured) a sampled `max_tokens`.
///
/// Every random choice comes from a stream derived from one root seed (see
/// [`derive_seed`]), so the same seed and tokenizer give a byte-identical dataset.
///
/// ```
/// use aiperf_core::DatasetSource;
/// use aiperf_datasets::{SyntheticConfig, SyntheticDataset, Tokenizer};
///
/// let config = SyntheticConfig {
///     isl_mean: 64,
///     osl_mean: Some(16),
///     num_entries: 3,
///     seed: Some(42),
///     ..SyntheticConfig::default()
/// };
/// let tokenizer = Tokenizer::builtin();
/// let mut dataset = SyntheticDataset::new(config, tokenizer.clone()).unwrap();
/// let conversations = dataset.load().unwrap();
/// assert_eq!(conversations.len(), 3);
/// let turn = &conversations[0].turns[0];
/// assert_eq!(tokenizer.encode(&turn.texts[0]).len(), 64);
/// assert_eq!(turn.max_tokens, Some(16));
/// ```
#[derive(Debug, Clone)]
pub struct SyntheticDataset {
    config: SyntheticConfig,
    isl: LengthDistribution,
    osl: Option<LengthDistribution>,
    rankings: Option<RankingsShape>,
    tokenizer: Tokenizer,
    root_seed: u64,
}

impl SyntheticDataset {
    /// Checks `config` and fixes the run's root seed (random when `config.seed` is
    /// `None`; see [`SyntheticDataset::root_seed`]).
    pub fn new(config: SyntheticConfig, tokenizer: Tokenizer) -> Result<Self, SyntheticError> {
        if config.isl_mean == 0 {
            return Err(SyntheticError::NothingToGenerate);
        }
        let isl = LengthDistribution::new(
            f64::from(config.isl_mean),
            config.isl_stddev,
            "input tokens",
        )?;
        let osl = config
            .osl_mean
            .map(|mean| {
                LengthDistribution::new(f64::from(mean), config.osl_stddev, "output tokens")
            })
            .transpose()?;
        let rankings = config
            .rankings
            .as_ref()
            .map(RankingsShape::new)
            .transpose()?;
        let root_seed = config.seed.unwrap_or_else(rand::random);
        Ok(Self {
            config,
            isl,
            osl,
            rankings,
            tokenizer,
            root_seed,
        })
    }

    /// The root seed every random stream of this dataset derives from.
    pub fn root_seed(&self) -> u64 {
        self.root_seed
    }

    /// The configuration.
    pub fn config(&self) -> &SyntheticConfig {
        &self.config
    }

    /// Generates the conversations.
    pub fn generate(&self) -> Result<Vec<Conversation>, SyntheticError> {
        let root = self.root_seed;
        let mut prompts = PromptGenerator::new(
            self.tokenizer.clone(),
            derive_seed(root, seed::PROMPT_CORPUS),
        )?;
        let mut length_rng = derive_rng(root, seed::PROMPT_LENGTH);
        let mut osl_rng = derive_rng(root, seed::MAX_TOKENS);
        let mut id_rng = derive_rng(root, seed::SESSION_ID);
        let mut passages_rng = derive_rng(root, seed::RANKING_PASSAGES);
        let conversations = (0..self.config.num_entries)
            .map(|_| {
                let texts = match &self.rankings {
                    None => vec![prompts.generate(self.isl.sample(&mut length_rng) as usize)],
                    Some(shape) => {
                        let query = shape.query_tokens.sample(&mut length_rng) as usize;
                        let count = shape.passages.sample(&mut passages_rng);
                        std::iter::once(prompts.generate(query))
                            .chain((0..count).map(|_| {
                                let tokens = shape.passage_tokens.sample(&mut length_rng);
                                prompts.generate(tokens as usize)
                            }))
                            .collect()
                    }
                };
                let turn = Turn {
                    texts,
                    model: self.config.model.clone(),
                    max_tokens: self.osl.map(|osl| osl.sample(&mut osl_rng)),
                    ..Turn::default()
                };
                Conversation {
                    session_id: session_uuid(&mut id_rng),
                    turns: vec![turn],
                    ..Conversation::default()
                }
            })
            .collect();
        tracing::debug!(
            entries = self.config.num_entries,
            seed = root,
            "synthetic dataset generated"
        );
        Ok(conversations)
    }
}

impl DatasetSource for SyntheticDataset {
    fn load(&mut self) -> Result<Vec<Conversation>, DatasetError> {
        Ok(self.generate()?)
    }
}

/// A UUID (version 4 layout) drawn from `rng`: deterministic for a seeded stream.
pub fn session_uuid<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut bytes: [u8; 16] = rng.random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn config(seed: Option<u64>) -> SyntheticConfig {
        SyntheticConfig {
            isl_mean: 100,
            isl_stddev: 30.0,
            osl_mean: Some(50),
            osl_stddev: 10.0,
            num_entries: 20,
            seed,
            model: None,
            rankings: None,
        }
    }

    #[test]
    fn same_seed_gives_byte_identical_dataset() {
        let t = Tokenizer::builtin();
        let a = SyntheticDataset::new(config(Some(42)), t.clone())
            .unwrap()
            .load()
            .unwrap();
        let b = SyntheticDataset::new(config(Some(42)), t.clone())
            .unwrap()
            .load()
            .unwrap();
        let c = SyntheticDataset::new(config(Some(43)), t)
            .unwrap()
            .load()
            .unwrap();
        let json = |d: &Vec<Conversation>| serde_json::to_vec(d).unwrap();
        assert_eq!(json(&a), json(&b));
        assert_ne!(json(&a), json(&c));
    }

    #[test]
    fn lengths_are_exact_and_vary_with_stddev() {
        let t = Tokenizer::builtin();
        let dataset = SyntheticDataset::new(config(Some(7)), t.clone()).unwrap();
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
        }
        assert!(distinct.len() > 5);
    }

    #[test]
    fn zero_stddev_is_exactly_the_mean_and_no_osl_means_no_max_tokens() {
        let t = Tokenizer::builtin();
        let config = SyntheticConfig {
            isl_mean: 33,
            num_entries: 10,
            seed: Some(1),
            model: Some("m".into()),
            ..SyntheticConfig::default()
        };
        for c in SyntheticDataset::new(config, t.clone())
            .unwrap()
            .generate()
            .unwrap()
        {
            assert_eq!(t.count(&c.turns[0].texts[0]), 33);
            assert_eq!(c.turns[0].max_tokens, None);
            assert_eq!(c.turns[0].model.as_deref(), Some("m"));
        }
    }

    #[test]
    fn session_ids_are_deterministic_distinct_uuids() {
        let t = Tokenizer::builtin();
        let ids = |seed| -> Vec<String> {
            SyntheticDataset::new(config(Some(seed)), t.clone())
                .unwrap()
                .generate()
                .unwrap()
                .into_iter()
                .map(|c| c.session_id)
                .collect()
        };
        let a = ids(5);
        assert_eq!(a, ids(5));
        let unique: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(unique.len(), a.len());
        for id in &a {
            assert_eq!(id.len(), 36);
            assert_eq!(&id[14..15], "4");
            assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        }
    }

    #[test]
    fn no_seed_picks_one_per_run() {
        let t = Tokenizer::builtin();
        let dataset = SyntheticDataset::new(config(None), t.clone()).unwrap();
        let again = SyntheticDataset::new(
            SyntheticConfig {
                seed: Some(dataset.root_seed()),
                ..config(None)
            },
            t,
        )
        .unwrap();
        assert_eq!(dataset.generate().unwrap(), again.generate().unwrap());
    }

    #[test]
    fn invalid_config_is_rejected_with_reason() {
        let t = Tokenizer::builtin();
        let err = SyntheticDataset::new(
            SyntheticConfig {
                isl_stddev: -1.0,
                ..SyntheticConfig::default()
            },
            t.clone(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("input tokens"), "{err}");
        let err = SyntheticDataset::new(
            SyntheticConfig {
                isl_mean: 0,
                ..SyntheticConfig::default()
            },
            t,
        )
        .unwrap_err();
        assert!(matches!(err, SyntheticError::NothingToGenerate));
    }

    #[test]
    fn rankings_turns_hold_a_query_and_the_passages() {
        let tokenizer = Tokenizer::builtin();
        let config = SyntheticConfig {
            num_entries: 20,
            seed: Some(4),
            rankings: Some(RankingsConfig {
                passages_mean: 3.0,
                passages_stddev: 1.0,
                passage_tokens_mean: 40.0,
                query_tokens_mean: 12.0,
                ..RankingsConfig::default()
            }),
            ..SyntheticConfig::default()
        };
        let conversations = SyntheticDataset::new(config, tokenizer.clone())
            .unwrap()
            .generate()
            .unwrap();
        let mut counts = std::collections::BTreeSet::new();
        for conversation in &conversations {
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
    }
}
