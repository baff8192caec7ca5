//! `aiperf synthesize agentic-code` (docs/datasets.md#agentic-code-sessions): synthetic
//! agentic coding sessions written as a mooncake trace.
//!
//! Every session opens with a layered prefix: L1 (tools and system prompt, shared by all
//! sessions), L1.5 (a repository's instructions, shared within a group; groups drawn
//! with Zipf weights) and L2 (the session's own files, lognormal). Each later turn
//! resends the whole context plus the previous reply plus new tokens (lognormal), after a
//! think time drawn from a mixture of fast agentic and slow human delays (shorter as the
//! context fills). A session ends when its context would reach `max_prompt_tokens`, or
//! earlier by a reset whose chance grows with the context.
//!
//! Rows are written as the Python AIPerf 0.13 writes them: `input_length` is the turn's
//! *new* tokens and `hash_ids` its new blocks (turn 0: the whole layered prefix), the
//! first turn has `timestamp` 0 and `group_id`, later turns a `delay`. Same config and
//! seed: the same file.
//!
//! ```
//! use aiperf_datasets::agentic_code::{synthesize_sessions, AgenticCodeConfig};
//!
//! let sessions = synthesize_sessions(&AgenticCodeConfig::default(), 5, 42)?;
//! assert_eq!(sessions.len(), 5);
//! assert!(sessions.iter().all(|s| s.turns[0].hash_ids[0] == 0)); // L1 is shared
//! # Ok::<(), aiperf_datasets::agentic_code::AgenticCodeError>(())
//! ```

use std::path::{Path, PathBuf};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::seed::derive_rng;

/// Blocks reserved for each group's L1.5 prefix (as in 0.13, so ids match its layout).
const MAX_GROUP_BLOCKS: u64 = 200;
/// Groups a config may have.
const MAX_GROUPS: u64 = 1_000;
/// Blocks reserved for each session's own context.
const MAX_SESSION_BLOCKS: u64 = 4_000;
/// The shortest reply drawn (unless `generation_length.max` is shorter).
const OUTPUT_MIN: f64 = 30.0;
/// Redraws of a lognormal sample outside its `min`/`max` before it is clamped.
const MAX_REDRAWS: usize = 100;

/// Why a session set could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum AgenticCodeError {
    /// The config file does not parse or a value is out of range.
    #[error("{path}: {message}")]
    Config {
        /// The config file (or `defaults`).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Reading the config or writing the dataset failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A lognormal distribution given by its real-space mean and median (mean ≥ median),
/// with optional hard bounds (values outside are redrawn, then clamped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lognormal {
    /// Real-space mean.
    pub mean: f64,
    /// Real-space median.
    pub median: f64,
    /// Lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Upper bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// `new_tokens_per_turn` only: scales mean and median, to make up for the draws
    /// the context limit cuts off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bias: Option<f64>,
    /// Log-space mean, with `sigma` (as 0.13's manifests record them); derived from
    /// mean and median when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<f64>,
    /// Log-space standard deviation, with `mu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
}

impl Lognormal {
    pub(crate) fn new(mean: f64, median: f64) -> Self {
        Self {
            mean,
            median,
            min: None,
            max: None,
            bias: None,
            mu: None,
            sigma: None,
        }
    }

    fn check(&self, name: &str) -> Result<(), String> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.mean) || !positive(self.median) {
            return Err(format!("{name}: mean and median must be greater than 0"));
        }
        if self.mean < self.median {
            return Err(format!(
                "{name}: mean ({}) must be at least the median ({}) for a lognormal",
                self.mean, self.median
            ));
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min > max {
                return Err(format!("{name}: min ({min}) must be at most max ({max})"));
            }
        }
        if self.bias.is_some_and(|b| !positive(b)) {
            return Err(format!("{name}: bias must be greater than 0"));
        }
        match (self.mu, self.sigma) {
            (None, None) => Ok(()),
            (Some(mu), Some(sigma)) if mu.is_finite() && sigma.is_finite() && sigma >= 0.0 => {
                Ok(())
            }
            _ => Err(format!(
                "{name}: mu and sigma must be given together, finite, sigma at least 0"
            )),
        }
    }

    /// The distribution of `ln x`: μ = ln(median), σ = √(2 ln(mean/median)) unless
    /// given; μ moves by ln(bias).
    fn sampler(&self) -> Result<LogNormal<f64>, String> {
        let ratio = self.mean / self.median;
        let derived_sigma = if ratio > 1.0 {
            (2.0 * ratio.ln()).sqrt()
        } else {
            0.0
        };
        let sigma = self.sigma.unwrap_or(derived_sigma);
        let mu = self.mu.unwrap_or_else(|| self.median.ln()) + self.bias.unwrap_or(1.0).ln();
        LogNormal::new(mu, sigma).map_err(|e| e.to_string())
    }

    fn sample(&self, sampler: &LogNormal<f64>, rng: &mut ChaCha8Rng) -> f64 {
        let inside = |v: f64| self.min.is_none_or(|m| v >= m) && self.max.is_none_or(|m| v <= m);
        let mut value = sampler.sample(rng);
        for _ in 0..MAX_REDRAWS {
            if inside(value) {
                break;
            }
            value = sampler.sample(rng);
        }
        if let Some(min) = self.min {
            value = value.max(min);
        }
        if let Some(max) = self.max {
            value = value.min(max);
        }
        value
    }
}

/// Think time between turns: a mixture of agentic (fast) and human (slow) delays, in
/// milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InterTurnDelay {
    /// Share of agentic delays, 0 to 1.
    pub agentic_fraction: f64,
    /// Agentic delays.
    pub agentic_delay: Lognormal,
    /// Human delays.
    pub human_delay: Lognormal,
    /// Hard cap on a delay.
    pub max: Option<f64>,
}

impl Default for InterTurnDelay {
    fn default() -> Self {
        Self {
            agentic_fraction: 0.7,
            agentic_delay: Lognormal::new(2_500.0, 1_800.0),
            human_delay: Lognormal::new(40_000.0, 25_000.0),
            max: None,
        }
    }
}

/// Chance that a session ends after a turn: `base_probability · (1 + (context_scaling −
/// 1) · context / max_prompt_tokens)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reset {
    /// Chance per turn at an empty context.
    pub base_probability: f64,
    /// Multiplier of that chance at a full context (at least 1).
    pub context_scaling: f64,
}

impl Default for Reset {
    fn default() -> Self {
        Self {
            base_probability: 0.02,
            context_scaling: 2.0,
        }
    }
}

/// L1.5 groups (repositories): how many, and how skewed their popularity is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Layer15Groups {
    /// Number of groups, 1 to 1000.
    pub num_groups: u64,
    /// Zipf exponent of the group weights.
    pub zipf_alpha: f64,
}

impl Default for Layer15Groups {
    fn default() -> Self {
        Self {
            num_groups: 50,
            zipf_alpha: 1.2,
        }
    }
}

/// The layered shared prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheLayers {
    /// L1 tokens, shared by every session.
    pub layer1_tokens: u64,
    /// L1.5 tokens, shared within a group (at most 200 blocks).
    pub layer1_5_tokens: u64,
    /// L2 tokens, each session's own opening context.
    pub layer2: Lognormal,
    /// The L1.5 groups.
    pub layer1_5_groups: Layer15Groups,
}

impl Default for CacheLayers {
    fn default() -> Self {
        Self {
            layer1_tokens: 32_000,
            layer1_5_tokens: 20_000,
            layer2: Lognormal::new(10_000.0, 5_000.0),
            layer1_5_groups: Layer15Groups::default(),
        }
    }
}

/// What the sessions look like (the Python AIPerf 0.13's `SessionDistributionConfig`
/// and its defaults; `--config` JSON, or the `generation_params` of a `manifest.json`,
/// 0.13's included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgenticCodeConfig {
    /// New tokens added by each turn after the first.
    pub new_tokens_per_turn: Lognormal,
    /// Reply lengths.
    pub generation_length: Lognormal,
    /// Think time between turns.
    pub inter_turn_delay: InterTurnDelay,
    /// Early session ends; `null` for none.
    pub reset: Option<Reset>,
    /// The context limit: a turn that would reach it ends the session.
    pub max_prompt_tokens: u64,
    /// Tokens per `hash_ids` block.
    pub block_size: u64,
    /// The layered shared prefix.
    pub cache: CacheLayers,
    /// 0.13's explicit turn-count mode; only `null` (not supported here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Value>,
    /// 0.13's restart splits; only 0 (not supported here).
    pub restart_initial_probability: f64,
    /// 0.13's restart turn range; unused without restart splits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_turn_range: Option<Vec<u64>>,
}

impl Default for AgenticCodeConfig {
    fn default() -> Self {
        Self {
            new_tokens_per_turn: Lognormal::new(3_500.0, 1_800.0),
            generation_length: Lognormal::new(500.0, 300.0),
            inter_turn_delay: InterTurnDelay::default(),
            reset: Some(Reset::default()),
            max_prompt_tokens: 200_000,
            block_size: 512,
            cache: CacheLayers::default(),
            turns: None,
            restart_initial_probability: 0.0,
            restart_turn_range: None,
        }
    }
}

/// The configs 0.13 bundles, by the name `--config` takes instead of a path. 0.13's
/// `default.json` is not its built-in defaults (which a run without `--config` uses):
/// shorter turns, a 167 000-token context and no group layer.
pub const BUNDLED_CONFIGS: [(&str, &str); 1] = [(
    "default",
    r#"{
  "new_tokens_per_turn": {"mean": 6000, "median": 6000, "max": 10000, "bias": 1.1},
  "generation_length": {"mean": 1000, "median": 1000, "max": 1500},
  "inter_turn_delay": {
    "agentic_fraction": 0.7,
    "agentic_delay": {"mean": 2500, "median": 1800, "max": 10000},
    "human_delay": {"mean": 40000, "median": 25000, "max": 120000},
    "max": null
  },
  "reset": {"base_probability": 0.01, "context_scaling": 1.5},
  "max_prompt_tokens": 167000,
  "block_size": 512,
  "cache": {
    "layer1_tokens": 32000,
    "layer1_5_tokens": 0,
    "layer2": {"mean": 15000, "median": 5000, "max": 30000},
    "layer1_5_groups": {"num_groups": 1, "zipf_alpha": 0.6}
  }
}"#,
)];

impl AgenticCodeConfig {
    /// The config `--config` names, as 0.13 resolves it: a [bundled](BUNDLED_CONFIGS)
    /// name first, else a config JSON or `manifest.json` path. Returns it with the name
    /// its run directory starts with (the bundled name, or the file's stem).
    pub fn resolve(path_or_name: &str) -> Result<(Self, String), AgenticCodeError> {
        if let Some((name, text)) = BUNDLED_CONFIGS.iter().find(|(n, _)| *n == path_or_name) {
            return Ok((Self::parse(text, name)?, (*name).to_owned()));
        }
        let path = Path::new(path_or_name);
        if !path.is_file() {
            let names: Vec<&str> = BUNDLED_CONFIGS.iter().map(|(name, _)| *name).collect();
            return Err(AgenticCodeError::Config {
                path: path_or_name.to_owned(),
                message: format!(
                    "no such file, nor a bundled config (bundled: {})",
                    names.join(", ")
                ),
            });
        }
        let name = path
            .file_stem()
            .map_or_else(|| "config".into(), |s| s.to_string_lossy().into_owned());
        Ok((Self::from_file(path)?, name))
    }

    /// Reads a config JSON, or the `generation_params` of a `manifest.json`.
    pub fn from_file(path: &Path) -> Result<Self, AgenticCodeError> {
        let text = std::fs::read_to_string(path).map_err(|source| AgenticCodeError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// A config JSON, or a `manifest.json`'s `generation_params`, read from `source`.
    fn parse(text: &str, source: &str) -> Result<Self, AgenticCodeError> {
        let invalid = |message: String| AgenticCodeError::Config {
            path: source.to_owned(),
            message,
        };
        let mut value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if let Some(params) = value.get_mut("generation_params") {
            value = params.take();
        }
        let config: Self = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        config.check().map_err(invalid)?;
        Ok(config)
    }

    /// `--max-isl` sets the context limit, `--max-osl` the longest reply.
    #[must_use]
    pub fn with_limits(mut self, max_isl: Option<u64>, max_osl: Option<u32>) -> Self {
        if let Some(isl) = max_isl {
            self.max_prompt_tokens = isl;
        }
        if let Some(osl) = max_osl {
            self.generation_length.max = Some(f64::from(osl));
        }
        self
    }

    /// Checks every range.
    pub fn check(&self) -> Result<(), String> {
        if self.turns.as_ref().is_some_and(|t| !t.is_null())
            || self.restart_initial_probability != 0.0
        {
            return Err(
                "the explicit `turns` mode and restart splits (restart_initial_probability) \
                 are not supported; leave them out"
                    .into(),
            );
        }
        self.new_tokens_per_turn.check("new_tokens_per_turn")?;
        self.generation_length.check("generation_length")?;
        self.inter_turn_delay
            .agentic_delay
            .check("inter_turn_delay.agentic_delay")?;
        self.inter_turn_delay
            .human_delay
            .check("inter_turn_delay.human_delay")?;
        self.cache.layer2.check("cache.layer2")?;
        if !(0.0..=1.0).contains(&self.inter_turn_delay.agentic_fraction) {
            return Err("inter_turn_delay.agentic_fraction must be 0 to 1".into());
        }
        if let Some(reset) = &self.reset {
            if !(0.0..=1.0).contains(&reset.base_probability) || reset.context_scaling < 1.0 {
                return Err(
                    "reset: base_probability must be 0 to 1 and context_scaling at least 1".into(),
                );
            }
        }
        if self.max_prompt_tokens == 0 || self.block_size == 0 {
            return Err("max_prompt_tokens and block_size must be at least 1".into());
        }
        let groups = self.cache.layer1_5_groups.num_groups;
        if groups == 0 || groups > MAX_GROUPS {
            return Err(format!(
                "cache.layer1_5_groups.num_groups must be 1 to {MAX_GROUPS}"
            ));
        }
        if self.cache.layer1_5_tokens.div_ceil(self.block_size) > MAX_GROUP_BLOCKS {
            return Err(format!(
                "cache.layer1_5_tokens needs more than {MAX_GROUP_BLOCKS} blocks of \
                 {} tokens",
                self.block_size
            ));
        }
        let session_blocks = self.max_prompt_tokens.div_ceil(self.block_size);
        if session_blocks > MAX_SESSION_BLOCKS {
            return Err(format!(
                "max_prompt_tokens {} needs more than {MAX_SESSION_BLOCKS} blocks of {} \
                 tokens per session",
                self.max_prompt_tokens, self.block_size
            ));
        }
        Ok(())
    }
}

/// One turn of a synthesized session.
#[derive(Debug, Clone, PartialEq)]
pub struct AgenticTurn {
    /// The whole context sent (prefix, history and new tokens).
    pub input_length: u64,
    /// Tokens added since the previous turn (turn 0: the whole context).
    pub new_tokens: u64,
    /// Reply tokens.
    pub output_length: u32,
    /// Think time before this turn, in milliseconds (0 for turn 0).
    pub delay_ms: f64,
    /// Every block of the context.
    pub hash_ids: Vec<u64>,
}

/// A synthesized session.
#[derive(Debug, Clone, PartialEq)]
pub struct AgenticSession {
    /// `sess-` and 12 hex digits.
    pub session_id: String,
    /// The L1.5 group.
    pub group_id: u64,
    /// The turns, in order.
    pub turns: Vec<AgenticTurn>,
    /// Why it has no further turn.
    pub end: SessionEnd,
}

/// Why a synthesized session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The next turn's context would have reached `max_prompt_tokens`.
    ContextLimit,
    /// The reset draw ended it (its chance grows with the context).
    Reset,
}

/// Synthesizes `count` sessions from `config` with `seed`.
pub fn synthesize_sessions(
    config: &AgenticCodeConfig,
    count: usize,
    seed: u64,
) -> Result<Vec<AgenticSession>, AgenticCodeError> {
    let invalid = |message: String| AgenticCodeError::Config {
        path: "config".into(),
        message,
    };
    config.check().map_err(invalid)?;
    let mut synthesizer = Synthesizer::new(config, seed).map_err(invalid)?;
    Ok((0..count as u64)
        .map(|index| synthesizer.session(index))
        .collect())
}

struct Samplers {
    new_tokens: LogNormal<f64>,
    output: LogNormal<f64>,
    agentic_delay: LogNormal<f64>,
    human_delay: LogNormal<f64>,
    layer2: LogNormal<f64>,
}

struct Synthesizer<'c> {
    config: &'c AgenticCodeConfig,
    samplers: Samplers,
    rng: ChaCha8Rng,
    group_weights: Vec<f64>,
    l1_blocks: u64,
    l15_blocks: u64,
    output_min: f64,
}

impl<'c> Synthesizer<'c> {
    fn new(config: &'c AgenticCodeConfig, seed: u64) -> Result<Self, String> {
        let groups = config.cache.layer1_5_groups.clone();
        let weights: Vec<f64> = (1..=groups.num_groups)
            .map(|k| 1.0 / (k as f64).powf(groups.zipf_alpha))
            .collect();
        let total: f64 = weights.iter().sum();
        Ok(Self {
            samplers: Samplers {
                new_tokens: config.new_tokens_per_turn.sampler()?,
                output: config.generation_length.sampler()?,
                agentic_delay: config.inter_turn_delay.agentic_delay.sampler()?,
                human_delay: config.inter_turn_delay.human_delay.sampler()?,
                layer2: config.cache.layer2.sampler()?,
            },
            rng: derive_rng(seed, "dataset.agentic_code"),
            group_weights: weights.iter().map(|w| w / total).collect(),
            l1_blocks: config.cache.layer1_tokens.div_ceil(config.block_size),
            l15_blocks: config.cache.layer1_5_tokens.div_ceil(config.block_size),
            output_min: config
                .generation_length
                .max
                .map_or(OUTPUT_MIN, |max| OUTPUT_MIN.min(max.floor())),
            config,
        })
    }

    fn session(&mut self, index: u64) -> AgenticSession {
        let config = self.config;
        let session_id = format!("sess-{:012x}", self.rng.random::<u64>() & 0xffff_ffff_ffff);
        let group_id = self.group();
        // Session content starts on a fresh block after the whole-block shared prefix.
        let prefix_tokens = (self.l1_blocks + self.l15_blocks) * config.block_size;
        let layer2 = (config
            .cache
            .layer2
            .sample(&self.samplers.layer2, &mut self.rng) as u64)
            .max(1);
        let first = (prefix_tokens + layer2).min(config.max_prompt_tokens - 1);
        let output = self.output_length();
        let mut turns = vec![AgenticTurn {
            input_length: first,
            new_tokens: first,
            output_length: output,
            delay_ms: 0.0,
            hash_ids: self.hash_ids(index, group_id, first),
        }];
        let end = loop {
            let last = &turns[turns.len() - 1];
            let (previous_input, previous_output) = (last.input_length, last.output_length);
            let delay_ms = self.delay_ms(previous_input);
            let new_tokens = (config
                .new_tokens_per_turn
                .sample(&self.samplers.new_tokens, &mut self.rng)
                as u64)
                .max(1);
            let input_length = previous_input + u64::from(previous_output) + new_tokens;
            if input_length >= config.max_prompt_tokens {
                break SessionEnd::ContextLimit;
            }
            if self.resets(input_length) {
                break SessionEnd::Reset;
            }
            let output_length = self.output_length();
            turns.push(AgenticTurn {
                input_length,
                new_tokens,
                output_length,
                delay_ms,
                hash_ids: self.hash_ids(index, group_id, input_length),
            });
        };
        AgenticSession {
            session_id,
            group_id,
            turns,
            end,
        }
    }

    fn group(&mut self) -> u64 {
        let mut draw: f64 = self.rng.random();
        for (group, weight) in self.group_weights.iter().enumerate() {
            if draw < *weight {
                return group as u64;
            }
            draw -= weight;
        }
        self.group_weights.len() as u64 - 1
    }

    fn output_length(&mut self) -> u32 {
        let drawn = self
            .config
            .generation_length
            .sample(&self.samplers.output, &mut self.rng);
        // `as` saturates; the floor keeps replies from being trivially short.
        drawn.max(self.output_min).max(1.0) as u32
    }

    fn delay_ms(&mut self, previous_input: u64) -> f64 {
        let delay = &self.config.inter_turn_delay;
        let agentic = self.rng.random::<f64>() < delay.agentic_fraction;
        let drawn = if agentic {
            delay
                .agentic_delay
                .sample(&self.samplers.agentic_delay, &mut self.rng)
        } else {
            delay
                .human_delay
                .sample(&self.samplers.human_delay, &mut self.rng)
        };
        // Fuller contexts come with quicker follow-ups (down to a fifth).
        let ratio = previous_input as f64 / self.config.max_prompt_tokens as f64;
        let scaled = drawn * (1.0 - 0.8 * ratio).max(0.2);
        delay.max.map_or(scaled, |max| scaled.min(max))
    }

    fn resets(&mut self, input_length: u64) -> bool {
        let Some(reset) = &self.config.reset else {
            return false;
        };
        let ratio = input_length as f64 / self.config.max_prompt_tokens as f64;
        let chance = reset.base_probability * (1.0 + (reset.context_scaling - 1.0) * ratio);
        self.rng.random::<f64>() < chance
    }

    /// L1 ++ the group's L1.5 ++ the session's blocks, ⌈input / block⌉ in all. A
    /// session's blocks only grow, so each turn extends the previous one's.
    fn hash_ids(&self, session: u64, group: u64, input_length: u64) -> Vec<u64> {
        let total = input_length.div_ceil(self.config.block_size);
        let l1 = total.min(self.l1_blocks);
        let l15 = (total - l1).min(self.l15_blocks);
        let own = total - l1 - l15;
        let group_base = self.l1_blocks + group * MAX_GROUP_BLOCKS;
        let session_base =
            self.l1_blocks + MAX_GROUPS * MAX_GROUP_BLOCKS + session * MAX_SESSION_BLOCKS;
        (0..l1)
            .chain(group_base..group_base + l15)
            .chain(session_base..session_base + own)
            .collect()
    }
}

/// The mooncake JSONL rows of `sessions`, as 0.13 writes them: each row's
/// `input_length` is the turn's new tokens and its `hash_ids` exactly
/// ⌈new tokens / block⌉ ids (turn 0: its layered prefix ids; later turns: fresh ids
/// from a trace-wide counter).
pub fn mooncake_rows(sessions: &[AgenticSession], block_size: u64) -> Vec<Value> {
    let mut next_id = 0;
    let mut rows = Vec::new();
    for session in sessions {
        for (index, turn) in session.turns.iter().enumerate() {
            let row = if index == 0 {
                next_id = turn
                    .hash_ids
                    .iter()
                    .max()
                    .map_or(next_id, |max| next_id.max(max + 1));
                json!({
                    "session_id": session.session_id,
                    "input_length": turn.new_tokens,
                    "output_length": turn.output_length,
                    "hash_ids": turn.hash_ids,
                    "timestamp": 0.0,
                    "group_id": session.group_id,
                })
            } else {
                let blocks = turn.new_tokens.div_ceil(block_size);
                let ids: Vec<u64> = (next_id..next_id + blocks).collect();
                next_id += blocks;
                json!({
                    "session_id": session.session_id,
                    "input_length": turn.new_tokens,
                    "output_length": turn.output_length,
                    "hash_ids": ids,
                    "delay": (turn.delay_ms * 10.0).round() / 10.0,
                })
            };
            rows.push(row);
        }
    }
    rows
}

/// Writes `dataset.jsonl` ([`mooncake_rows`]) and `manifest.json` (seed, session
/// count, config name and the config, which `--config` reads back) into `dir`, creating
/// it; returns the dataset's path.
pub fn write_dataset(
    dir: &Path,
    sessions: &[AgenticSession],
    config: &AgenticCodeConfig,
    seed: u64,
    config_name: &str,
) -> Result<PathBuf, AgenticCodeError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| AgenticCodeError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let dataset = dir.join("dataset.jsonl");
    let mut text = String::new();
    for row in mooncake_rows(sessions, config.block_size) {
        text.push_str(&row.to_string());
        text.push('\n');
    }
    std::fs::write(&dataset, text).map_err(io(&dataset))?;
    let manifest = dir.join("manifest.json");
    let body = json!({
        "seed": seed,
        "num_sessions": sessions.len(),
        "config_name": config_name,
        "generation_params": config,
    });
    let pretty = serde_json::to_string_pretty(&body).map_err(|e| AgenticCodeError::Config {
        path: manifest.display().to_string(),
        message: e.to_string(),
    })?;
    std::fs::write(&manifest, pretty).map_err(io(&manifest))?;
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_default_is_0_13_s_default_json_not_the_built_in_defaults() {
        let (config, name) =
            AgenticCodeConfig::resolve("default").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(name, "default");
        assert_ne!(config, AgenticCodeConfig::default());
        assert_eq!(config.max_prompt_tokens, 167_000);
        assert_eq!(config.new_tokens_per_turn.max, Some(10_000.0));
        assert_eq!(config.new_tokens_per_turn.bias, Some(1.1));
        assert_eq!(config.inter_turn_delay.agentic_fraction, 0.7);
        assert_eq!(config.cache.layer1_5_tokens, 0);
        assert_eq!(config.cache.layer2.median, 5_000.0);

        let error = AgenticCodeConfig::resolve("/no/such/spec.json")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("/no/such/spec.json: no such file, nor a bundled config (bundled: default)")
        );
    }

    #[test]
    fn a_python_manifest_loads_with_its_recorded_mu_and_sigma() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("manifest.json");
        let manifest = r#"{"seed": 42, "num_sessions": 2, "config_name": "default",
            "generation_params": {
              "generation_length": {"mu": 5.0, "sigma": 0.5, "mean": 500.0, "median": 300.0,
                                    "min": null, "max": null},
              "turns": null, "restart_initial_probability": 0.0, "restart_turn_range": [5, 15]}}"#;
        std::fs::write(&path, manifest).unwrap_or_else(|e| panic!("{e}"));
        let config = AgenticCodeConfig::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.generation_length.mu, Some(5.0));
        assert_eq!(config.max_prompt_tokens, 200_000);

        std::fs::write(&path, r#"{"restart_initial_probability": 0.1}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let error = AgenticCodeConfig::from_file(&path)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error,
            Some(format!(
                "{}: the explicit `turns` mode and restart splits (restart_initial_probability) \
                 are not supported; leave them out",
                path.display()
            ))
        );
    }

    #[test]
    fn later_turns_extend_the_session_blocks_of_the_turn_before() {
        let sessions = synthesize_sessions(&AgenticCodeConfig::default(), 3, 1)
            .unwrap_or_else(|e| panic!("{e}"));
        for session in &sessions {
            for pair in session.turns.windows(2) {
                let (before, after) = (&pair[0].hash_ids, &pair[1].hash_ids);
                assert!(after.len() >= before.len());
                assert_eq!(after[..before.len() - 1], before[..before.len() - 1]);
                assert_eq!(
                    pair[1].input_length,
                    pair[0].input_length + u64::from(pair[0].output_length) + pair[1].new_tokens
                );
            }
        }
    }
}
