//! What a run sends: the synthetic workload, a user's dataset file or a public dataset,
//! and the replay decisions that depend on the data (fixed schedule, offsets, counts).

use std::time::Duration;

use aiperf_core::config::PublicDataset;
use aiperf_core::schedule::replay_window;
use aiperf_core::{
    BenchmarkConfig, Conversation, DatasetSource, EndpointInfo, SamplingStrategy, Transport,
};
use aiperf_datasets::{
    derive_rng, fetch_sharegpt, load_custom_dataset, load_sharegpt, sharegpt_cache_path,
    CustomDatasetOptions, DatasetFileError, LengthDistribution, SyntheticDataset, SyntheticError,
    Tokenizer,
};

use crate::args::ProfileArgs;

/// A problem with what the user asked for that only shows once the data is read (a
/// malformed dataset line, a replay window with nothing in it): exit status 2.
#[derive(Debug)]
pub struct UsageError(String);

impl UsageError {
    fn message(message: String) -> Self {
        Self(message)
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

impl From<DatasetFileError> for UsageError {
    fn from(error: DatasetFileError) -> Self {
        Self(error.to_string())
    }
}

impl From<SyntheticError> for UsageError {
    fn from(error: SyntheticError) -> Self {
        Self(format!("cannot build the synthetic dataset: {error}"))
    }
}

/// How long the ShareGPT download may take before the run gives up (the Python AIPerf's
/// timeout).
const SHAREGPT_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// The conversations of a run and how they are drawn.
#[derive(Debug)]
pub struct Workload {
    /// In dataset order (a fixed schedule indexes into it).
    pub conversations: Vec<Conversation>,
    /// How the engine draws them.
    pub sampling: SamplingStrategy,
}

/// Loads the workload `config` describes and settles what depends on the data: a
/// timestamped trace turns on the fixed schedule (unless `--no-fixed-schedule`), the
/// replay window drops entries outside the offsets, and a replay without a stop condition
/// sends every entry once. `config` is updated (and re-validated) accordingly.
pub async fn load(
    args: &ProfileArgs,
    config: &mut BenchmarkConfig,
    endpoint: &EndpointInfo,
    tokenizer: &Tokenizer,
    transport: &dyn Transport,
) -> Result<Workload, UsageError> {
    let input = &config.input;
    let seed = input.random_seed.unwrap_or_default();
    let (mut conversations, preferred, timestamped) =
        if input.public_dataset == Some(PublicDataset::Sharegpt) {
            // --input-file names a local copy; otherwise the cache, downloaded once.
            let path = match &input.input_file {
                Some(path) => path.clone(),
                None => {
                    let path = sharegpt_cache_path();
                    if !path.exists() {
                        eprintln!(
                            "Downloading ShareGPT to {} (once; up to {} s)…",
                            path.display(),
                            SHAREGPT_DOWNLOAD_TIMEOUT.as_secs()
                        );
                        fetch_sharegpt(transport, &path, SHAREGPT_DOWNLOAD_TIMEOUT).await?;
                    }
                    path
                }
            };
            let conversations = load_sharegpt(&path, input.osl_mean.is_some(), tokenizer)?;
            (conversations, SamplingStrategy::Sequential, false)
        } else if let Some(path) = &input.input_file {
            let options = CustomDatasetOptions {
                dataset_type: input.custom_dataset_type,
                block_size: input.isl_block_size,
                num_conversations: config.load.num_sessions.map(|n| n as usize),
                seed,
            };
            let mut loaded = load_custom_dataset(path, &options, tokenizer)?;
            fill_output_lengths(&mut loaded.conversations, config, seed)?;
            (
                loaded.conversations,
                loaded.preferred_sampling,
                loaded.timestamped,
            )
        } else {
            let conversations =
                SyntheticDataset::new(input, &config.endpoint.models, tokenizer.clone())?
                    .with_rankings(endpoint.takes_rankings)
                    .load()
                    .map_err(|e| {
                        UsageError::message(format!("cannot build the synthetic dataset: {e}"))
                    })?;
            (conversations, SamplingStrategy::Shuffle, false)
        };

    if timestamped && config.load.fixed_schedule.enabled.is_none() {
        promote_to_fixed_schedule(args, config)?;
    }
    let fixed = &config.load.fixed_schedule;
    if let (false, Some(flag)) = (fixed.is_enabled(), fixed.offset_flag()) {
        return Err(UsageError::message(format!(
            "{flag} requires --fixed-schedule, or a trace whose entries have timestamps"
        )));
    }
    let load = &mut config.load;
    if load.fixed_schedule.is_enabled() {
        let fixed = &load.fixed_schedule;
        conversations = replay_window(conversations, fixed.start_offset_ms, fixed.end_offset_ms);
        if conversations.is_empty() {
            return Err(UsageError::message(
                "no trace entry lies within --fixed-schedule-start-offset and \
                 --fixed-schedule-end-offset"
                    .into(),
            ));
        }
        if load.request_count.is_none() && load.benchmark_duration.is_none() {
            load.request_count = Some(conversations.iter().map(|c| c.turns.len() as u64).sum());
        }
    }
    if conversations.is_empty() {
        return Err(UsageError::message(
            "the dataset has no conversations".into(),
        ));
    }
    if load.user_centric.is_some() && average_turns(&conversations) < 2.0 {
        return Err(UsageError::message(
            "--user-centric-rate needs multi-turn conversations (--session-turns-mean 2 or \
             more); use --request-rate for single-turn workloads"
                .into(),
        ));
    }
    let sampling = if load.fixed_schedule.is_enabled() {
        SamplingStrategy::Sequential
    } else {
        config.input.sampling_strategy.unwrap_or(preferred)
    };
    Ok(Workload {
        conversations,
        sampling,
    })
}

/// A trace with timestamps replays them: the request count then defaults to the whole
/// trace rather than 10, and options that contradict a replay are reported as for an
/// explicit `--fixed-schedule`.
fn promote_to_fixed_schedule(
    args: &ProfileArgs,
    config: &mut BenchmarkConfig,
) -> Result<(), UsageError> {
    eprintln!("The input trace has timestamps: replaying them (--no-fixed-schedule to not).");
    config.load.fixed_schedule.enabled = Some(true);
    if args.load.request_count.is_none() {
        config.load.request_count = None;
    }
    *config = config
        .clone()
        .validate()
        .map_err(|e| UsageError::message(e.to_string()))?;
    Ok(())
}

/// `--osl` for the turns of a dataset file that give no output length of their own (a
/// line's `output_length` wins), drawn as for synthetic prompts.
fn fill_output_lengths(
    conversations: &mut [Conversation],
    config: &BenchmarkConfig,
    seed: u64,
) -> Result<(), UsageError> {
    let Some(mean) = config.input.osl_mean else {
        return Ok(());
    };
    let lengths =
        LengthDistribution::new(f64::from(mean), config.input.osl_stddev, "output tokens")?;
    let mut rng = derive_rng(seed, "composer.turn.max_tokens");
    for turn in conversations.iter_mut().flat_map(|c| c.turns.iter_mut()) {
        if turn.max_tokens.is_none() && turn.raw_payload.is_none() {
            turn.max_tokens = Some(lengths.sample(&mut rng));
        }
    }
    Ok(())
}

fn average_turns(conversations: &[Conversation]) -> f64 {
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    turns as f64 / conversations.len().max(1) as f64
}
