//! What a run sends: the synthetic workload, a user's dataset file or a public dataset,
//! and the replay decisions that depend on the data (fixed schedule, offsets, counts).

use std::collections::HashMap;
use std::time::Duration;

use aiperf_core::config::AccuracyConfig;
use aiperf_datasets::accuracy::{self, RowSource};
use aiperf_metrics::accuracy::{AnswerKey, AnswerSheet};

use aiperf_core::config::{
    CustomDatasetType, InputConfig, PromptCorpus, PublicDataset, SpeedBenchVariant,
};
use aiperf_core::dataset::DatasetError;
use aiperf_core::schedule::replay_window;
use aiperf_core::{
    BenchmarkConfig, ConfigError, Conversation, ConversationStream, Dataset, DatasetSource,
    EndpointInfo, SamplingStrategy, Transport, ValidatedConfig,
};
use aiperf_datasets::{
    adjust, catalogue, derive_rng, fetch_sharegpt, fetch_spec_bench, model_choice,
    sharegpt_cache_path, spec_bench_cache_path, CustomDataset, CustomDatasetOptions,
    DatasetFileError, LengthDistribution, ShareGptDataset, SpecBenchDataset, SyntheticDataset,
    SyntheticError, Tokenizer,
};

use crate::hooks::{Notice, RunHooks, LARGE_DATASET};

/// What the user asked for cannot run with the data as it is (a malformed dataset line,
/// a replay window with nothing in it, …).
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The ShareGPT download failed.
    #[error(transparent)]
    Download(#[from] DatasetFileError),
    /// The dataset could not be loaded (a dataset file's errors name its path, line and
    /// field).
    #[error("{0}")]
    Dataset(DatasetError),
    /// The synthetic dataset's options cannot produce prompts.
    #[error("cannot build the synthetic dataset: {0}")]
    Synthetic(#[from] SyntheticError),
    /// The dataset's timestamps call for a fixed schedule the other options contradict.
    #[error(transparent)]
    Replay(#[from] ConfigError),
    /// Fixed-schedule offsets without a fixed schedule (nor timestamps to replay).
    #[error("{0} requires a fixed schedule, or a trace whose entries have timestamps")]
    OffsetWithoutSchedule(&'static str),
    /// No entry lies within the replay window.
    #[error("no trace entry lies within the fixed schedule's start and end offsets")]
    EmptyReplayWindow,
    /// The dataset has no conversations.
    #[error("the dataset has no conversations")]
    Empty,
    /// The raw endpoint with a dataset whose turns are not complete request bodies.
    #[error(
        "the raw endpoint sends complete request bodies only, and {turns} turn(s) of the \
         dataset have none: use a raw_payload or inputs_json dataset file \
         (input.custom_dataset_type), or another endpoint type"
    )]
    RawEndpointWithoutBodies {
        /// How many turns have no body.
        turns: usize,
    },
    /// Accuracy mode without the benchmark's rows, in a build without the hub.
    #[error(
        "--accuracy-benchmark {0} needs the benchmark's rows: this build has no Hugging Face \
         datasets (the runner's `hub` feature), so point --input-file at a JSONL file or a \
         folder of them (docs/accuracy.md)"
    )]
    AccuracyWithoutRows(&'static str),
    /// The benchmark's rows cannot become questions.
    #[error(transparent)]
    Accuracy(#[from] aiperf_datasets::accuracy::AccuracyError),
    /// A user-centric rate with single-turn conversations.
    #[error(
        "a user-centric rate needs multi-turn conversations (2 or more turns per session on \
         average); use a request rate for single-turn workloads"
    )]
    UserCentricNeedsSessions,
}

/// How long the ShareGPT download may take before the run gives up (the Python AIPerf's
/// timeout).
const SHAREGPT_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// The conversations of a run, how they are drawn, and the configuration as the data
/// settled it.
#[derive(Debug)]
pub(crate) struct Workload {
    /// The run's configuration (a timestamped trace may have turned on the fixed schedule).
    pub(crate) config: ValidatedConfig,
    /// In dataset order (a fixed schedule indexes into it); empty with a `stream`.
    pub(crate) conversations: Vec<Conversation>,
    /// The conversations made as the run needs them, instead of `conversations`.
    pub(crate) stream: Option<ConversationStream>,
    /// How the engine draws the `conversations`.
    pub(crate) sampling: SamplingStrategy,
    /// Accuracy mode: what each conversation's question expects.
    pub(crate) answers: Option<AnswerSheet>,
}

/// Loads the workload `config` describes and settles what depends on the data: a
/// timestamped trace turns on the fixed schedule (unless the configuration turns it off
/// explicitly), the replay window drops entries outside the offsets, and a replay
/// without a stop condition sends every entry once.
pub(crate) async fn load(
    config: ValidatedConfig,
    endpoint: &EndpointInfo,
    tokenizer: &Tokenizer,
    transport: &dyn Transport,
    own_source: Option<&mut (dyn DatasetSource + Send)>,
    hooks: &mut dyn RunHooks,
) -> Result<Workload, WorkloadError> {
    warn_about_corpus(&config.input);
    if let Some(accuracy) = &config.accuracy {
        return load_questions(accuracy, config.clone(), transport).await;
    }
    let speed_bench_from_hub = match config.input.custom_dataset_type {
        Some(CustomDatasetType::SpeedBench(variant)) if config.input.input_file.is_none() => {
            Some(variant)
        }
        _ => None,
    };
    if own_source.is_none()
        && speed_bench_from_hub.is_none()
        && streams_synthetic(&config, endpoint)
    {
        return synthetic_stream(config, endpoint, tokenizer);
    }
    let dataset = if let Some(source) = own_source {
        source.load()
    } else if let Some(variant) = speed_bench_from_hub {
        speed_bench_dataset(variant, transport).await
    } else {
        let entries = config.dataset_entries();
        if config.input.is_synthetic() && entries >= LARGE_DATASET {
            hooks.notice(&Notice::GeneratingDataset { entries });
        }
        let mut source = built_in_source(&config, endpoint, tokenizer, transport, hooks).await?;
        source.load()
    };
    let Dataset {
        mut conversations,
        preferred_sampling: preferred,
        mut timestamped,
    } = dataset.map_err(WorkloadError::Dataset)?;
    if !config.input.is_synthetic() && config.input.public_dataset.is_none() {
        fill_output_lengths(&mut conversations, &config)?;
    }
    // Synthetic turns already name theirs; a file's or an embedder's turns that name
    // none are spread over the models the same way.
    model_choice::assign_models(
        &mut conversations,
        &config.endpoint.models,
        &config.input.model_selection,
        config.input.random_seed.unwrap_or_else(rand::random),
    );
    if let Some(prompt) = config.input.prompt.system_prompt_text()? {
        adjust::prepend_system_prompt(&mut conversations, &prompt);
    }
    let trace = &config.input.trace;
    if let Some(ratio) = trace.session_sample_ratio {
        let seed = config.input.random_seed.unwrap_or_default();
        conversations = adjust::sample_sessions(conversations, ratio, seed);
    }
    if trace.allow_dataset_wrap {
        tracing::warn!(
            "--allow-dataset-wrap has no effect: every dataset, weka traces included, is \
             reused as the run needs"
        );
    }
    let maybe_weka = (config.input.input_file.is_some()
        && config
            .input
            .custom_dataset_type
            .is_none_or(|t| t == CustomDatasetType::WekaTrace))
        || is_weka_corpus(&config.input);
    if trace.use_think_time_only && !maybe_weka {
        tracing::warn!("--use-think-time-only has no effect: it applies to weka_trace files only");
    }
    if let Some(cap) = trace.inter_turn_delay_cap_seconds {
        let capped = adjust::cap_turn_delays(&mut conversations, cap * 1000.0);
        if capped > 0 {
            tracing::info!(capped, cap_seconds = cap, "capped inter-turn delays");
        }
    } else {
        let (long, longest_ms) = adjust::long_turn_delays(&conversations);
        if long > 0 {
            tracing::warn!(
                turns = long,
                longest_ms,
                "some think times are over {} s: the run will wait that long before those \
                 turns; --inter-turn-delay-cap-seconds shortens them",
                adjust::LONG_DELAY_MS / 1000.0
            );
        }
    }
    if trace.ignore_delays && !config.load.fixed_schedule.is_enabled() {
        adjust::strip_trace_timing(&mut conversations);
        timestamped = false;
    }
    if let Some(speedup) = trace.replay_speedup {
        adjust::speed_up_replay(&mut conversations, speedup);
    }

    let config = if timestamped && config.load.fixed_schedule.enabled.is_none() {
        hooks.notice(&Notice::ReplayingTimestamps);
        config.replaying_timestamps()?
    } else if conversations.iter().any(|c| c.with_descendants().len() > 1) {
        config.sending_each_session_tree(conversations.len() as u64)?
    } else {
        config
    };
    let fixed = &config.load.fixed_schedule;
    if let (false, Some(flag)) = (fixed.is_enabled(), fixed.offset_field()) {
        return Err(WorkloadError::OffsetWithoutSchedule(flag));
    }
    if fixed.is_enabled() {
        conversations = replay_window(conversations, fixed.start_offset_ms, fixed.end_offset_ms);
        if conversations.is_empty() {
            return Err(WorkloadError::EmptyReplayWindow);
        }
    }
    if conversations.is_empty() {
        return Err(WorkloadError::Empty);
    }
    let without_body = conversations
        .iter()
        .flat_map(|c| &c.turns)
        .filter(|turn| turn.raw_payload.is_none())
        .count();
    // Every request of the raw endpoint would fail: say so before sending any.
    if endpoint.name == "raw" && without_body > 0 {
        return Err(WorkloadError::RawEndpointWithoutBodies {
            turns: without_body,
        });
    }
    if config.load.user_centric.is_some() && average_turns(&conversations) < 2.0 {
        return Err(WorkloadError::UserCentricNeedsSessions);
    }
    let load = &config.load;
    let config = if fixed.is_enabled()
        && load.request_count.is_none()
        && load.benchmark_duration.is_none()
    {
        let every_turn = conversations.iter().map(|c| c.turns.len() as u64).sum();
        config.modified(|config| config.load.request_count = Some(every_turn))?
    } else {
        config
    };
    let sampling = if config.load.fixed_schedule.is_enabled() {
        SamplingStrategy::Sequential
    } else {
        config.input.sampling_strategy.unwrap_or(preferred)
    };
    Ok(Workload {
        config,
        conversations,
        stream: None,
        sampling,
        answers: None,
    })
}

/// Whether the run streams its synthetic dataset (`SyntheticDataset::stream`) rather
/// than making it whole before the first request: when every entry is used once anyway
/// (no `--num-dataset-entries` pool for the sampler to reuse, and a request or session
/// count that sizes the dataset at one conversation each: a run bounded by time alone
/// reuses the default 100, which a stream would make again on every pass), and nothing
/// needs the whole dataset before the run: a fixed schedule, a user-centric rate (its
/// average turn count), the trace options that sample or rescale sessions, the raw
/// endpoint's check of every turn. Sent in dataset order instead of shuffled: with each
/// of the i.i.d. entries sent once, the order changes nothing; a sampling strategy the
/// user names is drawn as asked, from the whole dataset
/// (docs/datasets.md#made-as-the-run-goes-default-sizing).
fn streams_synthetic(config: &ValidatedConfig, endpoint: &EndpointInfo) -> bool {
    let input = &config.input;
    let trace = &input.trace;
    let sized_by_the_run = config.load.num_sessions.or(config.load.request_count);
    input.is_synthetic()
        && input.num_dataset_entries.is_none()
        && sized_by_the_run.is_some()
        && input.sampling_strategy.is_none()
        && !config.load.fixed_schedule.is_enabled()
        && config.load.user_centric.is_none()
        && trace.session_sample_ratio.is_none()
        && trace.replay_speedup.is_none()
        && !trace.ignore_delays
        && endpoint.name != "raw"
}

/// The synthetic workload as a stream (see [`streams_synthetic`]), with what the
/// configuration adds to every conversation applied as each is made: the system prompt,
/// the think-time cap, and the warning about long think times (on the first one made).
fn synthetic_stream(
    config: ValidatedConfig,
    endpoint: &EndpointInfo,
    tokenizer: &Tokenizer,
) -> Result<Workload, WorkloadError> {
    let mut stream =
        SyntheticDataset::new(&config.input, &config.endpoint.models, tokenizer.clone())?
            .with_rankings(endpoint.takes_rankings)
            .with_entries(config.dataset_entries())
            .stream()?;
    if let Some(prompt) = config.input.prompt.system_prompt_text()? {
        stream = stream.map(move |mut conversation| {
            adjust::prepend_system_prompt(std::slice::from_mut(&mut conversation), &prompt);
            conversation
        });
    }
    if let Some(cap) = config.input.trace.inter_turn_delay_cap_seconds {
        stream = stream.map(move |mut conversation| {
            adjust::cap_turn_delays(std::slice::from_mut(&mut conversation), cap * 1000.0);
            conversation
        });
    } else if config.input.session.delay_mean_ms > 0.0 {
        let warned = std::sync::atomic::AtomicBool::new(false);
        stream = stream.map(move |conversation| {
            let (long, longest_ms) = adjust::long_turn_delays(std::slice::from_ref(&conversation));
            if long > 0 && !warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::warn!(
                    longest_ms,
                    "some think times are over {} s: the run will wait that long before \
                     those turns; --inter-turn-delay-cap-seconds shortens them",
                    adjust::LONG_DELAY_MS / 1000.0
                );
            }
            conversation
        });
    }
    Ok(Workload {
        config,
        conversations: Vec::new(),
        stream: Some(stream),
        sampling: SamplingStrategy::Sequential,
        answers: None,
    })
}

/// The benchmark's questions from the Hugging Face cache, or downloaded into it.
#[cfg(feature = "hub")]
async fn questions_from_hub(
    accuracy: &AccuracyConfig,
    seed: u64,
    transport: &dyn Transport,
) -> Result<Vec<accuracy::Question>, WorkloadError> {
    let options = aiperf_datasets::hub::HubOptions::from_env();
    let from = RowSource::Hub {
        options: &options,
        transport,
    };
    Ok(accuracy::load_questions(accuracy, from, seed).await?)
}

/// Without the hub, the rows must be a local copy.
#[cfg(not(feature = "hub"))]
async fn questions_from_hub(
    accuracy: &AccuracyConfig,
    _seed: u64,
    _transport: &dyn Transport,
) -> Result<Vec<accuracy::Question>, WorkloadError> {
    Err(WorkloadError::AccuracyWithoutRows(
        accuracy.benchmark.as_str(),
    ))
}

/// Accuracy mode: the benchmark's questions, one single-turn conversation each, asked in
/// order, and the answer sheet the replies are graded against.
async fn load_questions(
    accuracy: &AccuracyConfig,
    config: ValidatedConfig,
    transport: &dyn Transport,
) -> Result<Workload, WorkloadError> {
    let seed = config.input.random_seed.unwrap_or_default();
    let questions = match &config.input.input_file {
        Some(input) => accuracy::load_questions(accuracy, RowSource::Local(input), seed).await?,
        None => questions_from_hub(accuracy, seed, transport).await?,
    };
    let system_prompt = accuracy
        .system_prompt
        .as_deref()
        .or(accuracy.benchmark.default_system_prompt());
    let mut keys = HashMap::with_capacity(questions.len());
    let conversations = questions
        .iter()
        .enumerate()
        .map(|(i, question)| {
            let session_id = format!("{}-{i}", accuracy.benchmark);
            keys.insert(
                session_id.clone(),
                AnswerKey {
                    task: question.task.clone(),
                    answer: question.answer.clone(),
                },
            );
            accuracy::question_conversation(question, session_id, system_prompt)
        })
        .collect::<Vec<_>>();
    // Without a stop condition every question is asked once.
    let config = if config.request_count_defaulted() {
        let every_question = conversations.len() as u64;
        config.modified(|config| config.load.request_count = Some(every_question))?
    } else {
        config
    };
    Ok(Workload {
        config,
        conversations,
        stream: None,
        sampling: SamplingStrategy::Sequential,
        answers: Some(AnswerSheet {
            grader: accuracy.effective_grader(),
            verbose: accuracy.verbose,
            keys,
        }),
    })
}

/// `--prompt-corpus` where it changes nothing: for a dataset whose prompts are sent as
/// written (the Python AIPerf ignores it there silently), and for `sonnet`, which is not
/// shipped here.
fn warn_about_corpus(input: &InputConfig) {
    let Some(corpus) = input.prompt.corpus else {
        return;
    };
    let verbatim = match (&input.public_dataset, input.custom_dataset_type) {
        (Some(_), _) if !is_weka_corpus(input) => Some("the public dataset's".to_owned()),
        (None, Some(kind)) if !kind.is_trace() => Some(format!("the {} file's", kind.as_str())),
        _ => None,
    };
    if let Some(prompts) = verbatim {
        tracing::warn!(
            "--prompt-corpus has no effect: {prompts} prompts are sent as written (only \
             synthetic prompts and trace hash-id blocks are synthesized)"
        );
    } else if corpus == PromptCorpus::Sonnet {
        tracing::warn!(
            "--prompt-corpus sonnet: Shakespeare's sonnets are not shipped with aiperf-rs; \
             prompts are cut from its built-in English prose instead"
        );
    }
}

/// Whether the public dataset is a weka trace corpus (its prompts are synthesized from
/// hash-id blocks, and its turns have think times).
fn is_weka_corpus(input: &InputConfig) -> bool {
    let Some(PublicDataset::Hub(name)) = &input.public_dataset else {
        return false;
    };
    catalogue::find(name).is_some_and(|entry| entry.rows == catalogue::RowConversion::WekaTrace)
}

/// The source the configuration names: ShareGPT (the given copy, or the cache,
/// downloaded once), a dataset file, or synthetic prompts.
async fn built_in_source(
    config: &BenchmarkConfig,
    endpoint: &EndpointInfo,
    tokenizer: &Tokenizer,
    transport: &dyn Transport,
    hooks: &mut dyn RunHooks,
) -> Result<Box<dyn DatasetSource + Send>, WorkloadError> {
    let input = &config.input;
    if let Some(PublicDataset::Hub(name)) = &input.public_dataset {
        return hub_public_source(name, config, tokenizer, transport).await;
    }
    if input.public_dataset == Some(PublicDataset::Sharegpt) {
        let path = if let Some(path) = &input.input_file {
            path.clone()
        } else {
            let path = sharegpt_cache_path();
            if !path.exists() {
                hooks.notice(&Notice::DownloadingShareGpt {
                    path: &path,
                    timeout: SHAREGPT_DOWNLOAD_TIMEOUT,
                });
                fetch_sharegpt(transport, &path, SHAREGPT_DOWNLOAD_TIMEOUT).await?;
            }
            path
        };
        let keep_short_replies = input.osl_mean.is_some();
        return Ok(Box::new(ShareGptDataset::new(
            path,
            keep_short_replies,
            tokenizer.clone(),
        )));
    }
    if let Some(path) = &input.input_file {
        let options = CustomDatasetOptions {
            dataset_type: input.custom_dataset_type,
            block_size: input.isl_block_size,
            // A random pool draws as many conversations as a synthetic dataset would hold.
            num_conversations: Some(config.dataset_entries()),
            seed: input.random_seed.unwrap_or_default(),
            corpus: input.prompt.corpus,
            random_corpus_style: input.prompt.random_corpus_style,
            omit_kv_hints: input.trace.omit_kv_hints,
            omit_min_tokens: input.trace.omit_min_tokens,
            max_context_length: input.trace.max_context_length,
            use_think_time_only: input.trace.use_think_time_only,
            synthesis: input.trace.synthesis.clone(),
            tracelab_join: input.trace.tracelab_join,
            // The engine makes them ahead of the schedule: the first request waits for
            // one prompt, not for every prompt of a long trace.
            defer_prompts: true,
        };
        return Ok(Box::new(CustomDataset::new(
            path,
            options,
            tokenizer.clone(),
        )));
    }
    let synthetic = SyntheticDataset::new(input, &config.endpoint.models, tokenizer.clone())?
        .with_rankings(endpoint.takes_rankings)
        .with_entries(config.dataset_entries());
    Ok(Box::new(synthetic))
}

/// A SPEED-Bench variant's rows from the Hugging Face cache, or downloaded into it.
#[cfg(feature = "hub")]
async fn speed_bench_dataset(
    variant: SpeedBenchVariant,
    transport: &dyn Transport,
) -> Result<Dataset, DatasetError> {
    let options = aiperf_datasets::hub::HubOptions::from_env();
    let conversations =
        aiperf_datasets::custom::load_speed_bench_from_hub(variant, &options, transport).await?;
    Ok(Dataset {
        conversations,
        ..Dataset::default()
    })
}

/// Without the hub, SPEED-Bench rows must be a local copy.
#[cfg(not(feature = "hub"))]
async fn speed_bench_dataset(
    variant: SpeedBenchVariant,
    _: &dyn Transport,
) -> Result<Dataset, DatasetError> {
    Err(format!(
        "--custom-dataset-type {}: this build has no Hugging Face datasets (the runner's \
         `hub` feature), so pass the rows with --input-file",
        variant.name
    )
    .into())
}

/// A Hugging Face public dataset of the catalogue: its split from `--input-file` (a
/// local copy of its files), else the hub cache, else downloaded into the cache.
async fn hub_public_source(
    name: &str,
    config: &BenchmarkConfig,
    tokenizer: &Tokenizer,
    transport: &dyn Transport,
) -> Result<Box<dyn DatasetSource + Send>, WorkloadError> {
    let unusable = |reason: String| {
        WorkloadError::Dataset(format!("--public-dataset {name}: {reason}").into())
    };
    let entry = catalogue::find(name).ok_or_else(|| {
        unusable("no such public dataset; `aiperf plugins public-dataset-loader` lists them".into())
    })?;
    if !entry.rows.is_supported() {
        return Err(unusable(format!(
            "aiperf-rs does not load this dataset yet ({})",
            entry.summary
        )));
    }
    if entry.rows == catalogue::RowConversion::SpecBench {
        let path = if let Some(path) = &config.input.input_file {
            path.clone()
        } else {
            let path = spec_bench_cache_path();
            if !path.exists() {
                let offline =
                    aiperf_datasets::resolve::HubEnv::from_lookup(|key| std::env::var(key).ok())
                        .offline;
                fetch_spec_bench(transport, &path, SHAREGPT_DOWNLOAD_TIMEOUT, offline).await?;
            }
            path
        };
        return Ok(Box::new(SpecBenchDataset::new(path)));
    }
    hub_files_source(entry, config, tokenizer, transport).await
}

#[cfg(not(feature = "hub"))]
async fn hub_files_source(
    entry: &'static catalogue::PublicDatasetEntry,
    _: &BenchmarkConfig,
    _: &Tokenizer,
    _: &dyn Transport,
) -> Result<Box<dyn DatasetSource + Send>, WorkloadError> {
    Err(WorkloadError::Dataset(
        format!(
            "--public-dataset {}: this build has no Hugging Face datasets (the runner's `hub` \
             feature)",
            entry.name
        )
        .into(),
    ))
}

/// The entry's files (`--input-file`, the cache or a download) as a source.
#[cfg(feature = "hub")]
async fn hub_files_source(
    entry: &'static catalogue::PublicDatasetEntry,
    config: &BenchmarkConfig,
    tokenizer: &Tokenizer,
    transport: &dyn Transport,
) -> Result<Box<dyn DatasetSource + Send>, WorkloadError> {
    use aiperf_datasets::hub;
    let input = &config.input;
    let unusable = |reason: String| {
        WorkloadError::Dataset(format!("--public-dataset {}: {reason}", entry.name).into())
    };
    let files = if let Some(path) = &input.input_file {
        vec![path.clone()]
    } else {
        let mut dataset = hub::hub_dataset(entry, input.hf_subset.as_deref());
        // weka_hf replays whichever corpus --hf-weka-dataset names.
        if let (None, Some(repo)) = (&dataset, &input.hf_weka_dataset) {
            dataset = Some(hub::HubDataset {
                id: repo.trim().to_string(),
                config: input.hf_subset.clone(),
                split: entry.split.to_string(),
                revision: None,
            });
        }
        let dataset = dataset.ok_or_else(|| unusable("it is not a Hugging Face dataset".into()))?;
        hub::resolve(&dataset, &hub::HubOptions::from_env(), transport)
            .await
            .map_err(|e| WorkloadError::Dataset(e.into()))?
    };
    if let catalogue::RowConversion::AgentTrace { version } = entry.rows {
        let options = hub::exgentic::ExgenticOptions {
            version,
            filters: hub::exgentic::ExgenticFilters::parse(version, &input.dataset_filters)
                .map_err(|e| WorkloadError::Dataset(e.into()))?,
            max_sessions: exgentic_sessions(config).ok_or_else(|| {
                unusable(
                    "Exgentic requires a finite entry or request count; set \
                     --num-conversations, --num-dataset-entries, or --request-count"
                        .into(),
                )
            })?,
            fixed_schedule: config.load.fixed_schedule.is_enabled(),
        };
        return Ok(Box::new(hub::HubExgenticDataset::new(files, options)));
    }
    if entry.rows == catalogue::RowConversion::WekaTrace {
        let options = CustomDatasetOptions {
            seed: input.random_seed.unwrap_or_default(),
            corpus: input.prompt.corpus,
            random_corpus_style: input.prompt.random_corpus_style,
            max_context_length: input.trace.max_context_length,
            use_think_time_only: input.trace.use_think_time_only,
            // As for a trace file: made ahead of the schedule, not all before it.
            defer_prompts: true,
            ..CustomDatasetOptions::default()
        };
        return Ok(Box::new(hub::HubWekaDataset::new(
            files,
            options,
            tokenizer.clone(),
        )));
    }
    let load = &config.load;
    let max_conversations = entry.row_limit(
        load.request_count,
        input.num_dataset_entries,
        load.num_sessions,
    );
    Ok(Box::new(hub::HubPublicDataset::new(
        entry,
        files,
        max_conversations,
    )))
}

/// How many Exgentic sessions a run reads, as the Python AIPerf 0.13 counts them:
/// `--num-dataset-entries`, else `--num-conversations`, else `--request-count`; `None`
/// for a run bounded by time alone (the split is too large to read whole).
#[cfg(feature = "hub")]
fn exgentic_sessions(config: &BenchmarkConfig) -> Option<usize> {
    let load = &config.load;
    let run_size = load.num_sessions.or(load.request_count);
    config
        .input
        .num_dataset_entries
        .or_else(|| run_size.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
}

/// `--osl` for the turns of a dataset file that give no output length of their own (a
/// line's `output_length` wins), drawn as for synthetic prompts: each conversation's
/// turns, then those of the sessions it starts.
fn fill_output_lengths(
    conversations: &mut [Conversation],
    config: &BenchmarkConfig,
) -> Result<(), WorkloadError> {
    let seed = config.input.random_seed.unwrap_or_default();
    let Some(mean) = config.input.osl_mean else {
        return Ok(());
    };
    let lengths =
        LengthDistribution::new(f64::from(mean), config.input.osl_stddev, "output tokens")?;
    let mut rng = derive_rng(seed, "composer.turn.max_tokens");
    for conversation in conversations {
        conversation.for_each_turn_mut(&mut |turn| {
            if turn.max_tokens.is_none() && turn.raw_payload.is_none() {
                turn.max_tokens = Some(lengths.sample(&mut rng));
            }
        });
    }
    Ok(())
}

fn average_turns(conversations: &[Conversation]) -> f64 {
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    turns as f64 / conversations.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aiperf_core::{Branch, BranchMode, Turn};

    use super::*;

    #[test]
    fn osl_reaches_the_turns_of_child_sessions() {
        let mut parent = Turn::text("parent");
        parent.branches.push(Branch {
            mode: BranchMode::Spawn,
            children: vec![Arc::new(Conversation {
                session_id: "child".into(),
                turns: vec![
                    Turn::text("child 1"),
                    Turn {
                        max_tokens: Some(3),
                        ..Turn::text("child 2")
                    },
                ],
                ..Conversation::default()
            })],
            join_at: None,
            on_send: false,
        });
        let mut conversations = vec![Conversation {
            session_id: "parent".into(),
            turns: vec![parent],
            ..Conversation::default()
        }];
        let mut config = BenchmarkConfig::default();
        config.input.osl_mean = Some(40);
        fill_output_lengths(&mut conversations, &config).unwrap();
        let lengths: Vec<Option<u32>> = conversations[0]
            .with_descendants()
            .iter()
            .flat_map(|c| c.turns.iter().map(|t| t.max_tokens))
            .collect();
        // A child turn's own output length wins, as a root turn's does.
        assert_eq!(lengths, [Some(40), Some(40), Some(3)]);
    }
}
