//! What to send: the synthetic workload, input files and the tokenizer (`--isl`,
//! `--input-file`, media and prompt options).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::dataset::SamplingStrategy;

use super::{at_least_one, non_negative, ConfigError};

/// The synthetic workload and tokenizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputConfig {
    /// Mean input sequence length in tokens.
    pub isl_mean: u32,
    /// Standard deviation of the input sequence length.
    pub isl_stddev: f64,
    /// Mean output length; `None` sends no max-tokens field.
    pub osl_mean: Option<u32>,
    /// Standard deviation of the output length.
    pub osl_stddev: f64,
    /// Number of distinct conversations generated.
    pub num_dataset_entries: usize,
    /// Root seed of every random choice.
    pub random_seed: Option<u64>,
    /// Tokenizer name or path; `None` means the primary model's name.
    pub tokenizer: Option<String>,
    /// `--input-file`: a dataset file or directory.
    pub input_file: Option<PathBuf>,
    /// `--custom-dataset-type`; `None` detects it from the file.
    pub custom_dataset_type: Option<CustomDatasetType>,
    /// `--public-dataset`.
    pub public_dataset: Option<PublicDataset>,
    /// `--dataset-sampling-strategy`; `None` takes the dataset's preferred strategy.
    pub sampling_strategy: Option<SamplingStrategy>,
    /// `--isl-block-size`: tokens per trace `hash_ids` block; `None` takes the trace
    /// format's default (mooncake 512, bailian 16).
    pub isl_block_size: Option<u32>,
}

/// The formats of `--input-file` (SPEC §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CustomDatasetType {
    /// One request per line; lines sharing a `session_id` form a session.
    SingleTurn,
    /// One conversation per line: `{"session_id", "turns": [...]}`.
    MultiTurn,
    /// Pools of turns sampled into conversations.
    RandomPool,
    /// Mooncake traces: `input_length`/`hash_ids`, `text_input`, `messages` or `payload`.
    MooncakeTrace,
    /// Alibaba Bailian (Qwen) traces with parent chat links.
    BailianTrace,
    /// BurstGPT CSV traces.
    BurstGptTrace,
}

impl CustomDatasetType {
    /// Every type, in the order auto-detection probes them.
    pub const ALL: [CustomDatasetType; 6] = [
        CustomDatasetType::MooncakeTrace,
        CustomDatasetType::BailianTrace,
        CustomDatasetType::BurstGptTrace,
        CustomDatasetType::MultiTurn,
        CustomDatasetType::SingleTurn,
        CustomDatasetType::RandomPool,
    ];

    /// The `--custom-dataset-type` spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            CustomDatasetType::SingleTurn => "single_turn",
            CustomDatasetType::MultiTurn => "multi_turn",
            CustomDatasetType::RandomPool => "random_pool",
            CustomDatasetType::MooncakeTrace => "mooncake_trace",
            CustomDatasetType::BailianTrace => "bailian_trace",
            CustomDatasetType::BurstGptTrace => "burst_gpt_trace",
        }
    }

    /// Whether this is a timestamped trace format (fixed-schedule replay candidates).
    pub fn is_trace(&self) -> bool {
        matches!(
            self,
            CustomDatasetType::MooncakeTrace
                | CustomDatasetType::BailianTrace
                | CustomDatasetType::BurstGptTrace
        )
    }
}

/// The public datasets of `--public-dataset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PublicDataset {
    /// ShareGPT (Vicuna, unfiltered, cleaned split).
    Sharegpt,
}

impl Default for InputConfig {
    fn default() -> Self {
        Self {
            isl_mean: 550,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            num_dataset_entries: 100,
            random_seed: None,
            tokenizer: None,
            input_file: None,
            custom_dataset_type: None,
            public_dataset: None,
            sampling_strategy: None,
            isl_block_size: None,
        }
    }
}

impl InputConfig {
    /// Checks the input options on their own (SPEC §1.4).
    pub fn validate(&self) -> Result<(), ConfigError> {
        at_least_one("--num-dataset-entries", self.num_dataset_entries as u64)?;
        non_negative("--isl-stddev", self.isl_stddev)?;
        non_negative("--osl-stddev", self.osl_stddev)?;
        if let Some(osl) = self.osl_mean {
            at_least_one("--osl", u64::from(osl))?;
        }
        Ok(())
    }
}
