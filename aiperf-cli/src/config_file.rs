//! `aiperf profile -f FILE`: the configuration file is the base and the flags given on
//! the command line override the matching fields; a flag that has no field to override
//! is refused by name rather than ignored (the Python AIPerf 0.13's rule). Also the
//! `aiperf config init|validate|expand` subcommands.

use std::path::Path;

use aiperf_core::BenchmarkConfig;
use aiperf_runner::config_file::{self, ConfigFile, TEMPLATES};
use aiperf_runner::RunSpec;
use clap::CommandFactory;

use crate::args::{Cli, ConfigCommand, ProfileArgs};
use crate::assemble;

/// Copies one flag's field from the flags' configuration onto the file's.
type Override = fn(&mut BenchmarkConfig, &BenchmarkConfig);

/// The flags that override a field of the benchmark configuration, by clap id.
const BENCHMARK_OVERRIDES: &[(&str, Override)] = &[
    ("models", |c, f| {
        c.endpoint.models.clone_from(&f.endpoint.models);
    }),
    ("urls", |c, f| c.endpoint.urls.clone_from(&f.endpoint.urls)),
    ("endpoint_type", |c, f| {
        c.endpoint
            .endpoint_type
            .clone_from(&f.endpoint.endpoint_type);
    }),
    ("custom_endpoint", |c, f| {
        c.endpoint
            .custom_endpoint
            .clone_from(&f.endpoint.custom_endpoint);
    }),
    ("streaming", |c, f| {
        c.endpoint.streaming = f.endpoint.streaming;
    }),
    ("api_key", |c, f| {
        c.endpoint.api_key.clone_from(&f.endpoint.api_key);
    }),
    ("headers", |c, f| {
        c.endpoint.headers.clone_from(&f.endpoint.headers);
    }),
    ("extra_inputs", |c, f| {
        c.endpoint.extra_inputs.clone_from(&f.endpoint.extra_inputs);
    }),
    ("request_timeout_seconds", |c, f| {
        c.endpoint.request_timeout = f.endpoint.request_timeout;
    }),
    ("use_legacy_max_tokens", |c, f| {
        c.endpoint.use_legacy_max_tokens = f.endpoint.use_legacy_max_tokens;
    }),
    ("use_server_token_count", |c, f| {
        c.endpoint.use_server_token_count = f.endpoint.use_server_token_count;
    }),
    ("request_content_type", |c, f| {
        c.endpoint.request_content_type = f.endpoint.request_content_type;
    }),
    ("download_video_content", |c, f| {
        c.endpoint.download_video_content = f.endpoint.download_video_content;
    }),
    ("per_chunk_usage", |c, f| {
        c.endpoint.per_chunk_usage = f.endpoint.per_chunk_usage;
    }),
    ("session_header", |c, f| {
        c.endpoint
            .session_header
            .clone_from(&f.endpoint.session_header);
    }),
    ("random_range_ratio", |c, f| {
        c.input.random_range_ratio = f.input.random_range_ratio;
    }),
    ("prompt_corpus", |c, f| {
        c.input.prompt.corpus = f.input.prompt.corpus;
    }),
    ("random_corpus_style", |c, f| {
        c.input.prompt.random_corpus_style = f.input.prompt.random_corpus_style;
    }),
    ("system_prompt", |c, f| {
        c.input
            .prompt
            .system_prompt
            .clone_from(&f.input.prompt.system_prompt);
    }),
    ("system_prompt_file", |c, f| {
        c.input
            .prompt
            .system_prompt_file
            .clone_from(&f.input.prompt.system_prompt_file);
    }),
    ("ignore_trace_delays", |c, f| {
        c.input.trace.ignore_delays = f.input.trace.ignore_delays;
    }),
    ("use_think_time_only", |c, f| {
        c.input.trace.use_think_time_only = f.input.trace.use_think_time_only;
    }),
    ("trace_session_sample_ratio", |c, f| {
        c.input.trace.session_sample_ratio = f.input.trace.session_sample_ratio;
    }),
    ("replay_speedup", |c, f| {
        c.input.trace.replay_speedup = f.input.trace.replay_speedup;
    }),
    ("inter_turn_delay_cap_seconds", |c, f| {
        c.input.trace.inter_turn_delay_cap_seconds = f.input.trace.inter_turn_delay_cap_seconds;
    }),
    ("max_context_length", |c, f| {
        c.input.trace.max_context_length = f.input.trace.max_context_length;
    }),
    ("synthesis_speedup_ratio", |c, f| {
        c.input.trace.synthesis.speedup_ratio = f.input.trace.synthesis.speedup_ratio;
    }),
    ("synthesis_prefix_len_multiplier", |c, f| {
        c.input.trace.synthesis.prefix_len_multiplier =
            f.input.trace.synthesis.prefix_len_multiplier;
    }),
    ("synthesis_prefix_root_multiplier", |c, f| {
        c.input.trace.synthesis.prefix_root_multiplier =
            f.input.trace.synthesis.prefix_root_multiplier;
    }),
    ("synthesis_prompt_len_multiplier", |c, f| {
        c.input.trace.synthesis.prompt_len_multiplier =
            f.input.trace.synthesis.prompt_len_multiplier;
    }),
    ("synthesis_output_len_multiplier", |c, f| {
        c.input.trace.synthesis.output_len_multiplier =
            f.input.trace.synthesis.output_len_multiplier;
    }),
    ("synthesis_max_isl", |c, f| {
        c.input.trace.synthesis.max_isl = f.input.trace.synthesis.max_isl;
    }),
    ("synthesis_max_osl", |c, f| {
        c.input.trace.synthesis.max_osl = f.input.trace.synthesis.max_osl;
    }),
    ("cache_bust", |c, f| c.input.cache_bust = f.input.cache_bust),
    ("allow_dataset_wrap", |c, f| {
        c.input.trace.allow_dataset_wrap = f.input.trace.allow_dataset_wrap;
    }),
    ("no_allow_dataset_wrap", |c, f| {
        c.input.trace.allow_dataset_wrap = f.input.trace.allow_dataset_wrap;
    }),
    ("omit_kv_hints", |c, f| {
        c.input.trace.omit_kv_hints = f.input.trace.omit_kv_hints;
    }),
    ("force_min_tokens", |c, f| {
        c.input.trace.omit_min_tokens = f.input.trace.omit_min_tokens;
    }),
    ("no_force_min_tokens", |c, f| {
        c.input.trace.omit_min_tokens = f.input.trace.omit_min_tokens;
    }),
    ("dataset_filters", |c, f| {
        c.input.dataset_filters.clone_from(&f.input.dataset_filters);
    }),
    ("hf_subset", |c, f| {
        c.input.hf_subset.clone_from(&f.input.hf_subset);
    }),
    ("hf_weka_dataset", |c, f| {
        c.input.hf_weka_dataset.clone_from(&f.input.hf_weka_dataset);
        c.input.public_dataset.clone_from(&f.input.public_dataset);
    }),
    ("tokenizer_revision", |c, f| {
        c.input
            .tokenizer_revision
            .clone_from(&f.input.tokenizer_revision);
    }),
    ("tokenizer_trust_remote_code", |c, f| {
        c.input.tokenizer_trust_remote_code = f.input.tokenizer_trust_remote_code;
    }),
    ("apply_chat_template", |c, f| {
        c.input.apply_chat_template = f.input.apply_chat_template;
    }),
    ("request_rate_series", |c, f| {
        c.load
            .request_rate_series
            .clone_from(&f.load.request_rate_series);
    }),
    ("failed_request_threshold", |c, f| {
        c.load.failed_request_threshold = f.load.failed_request_threshold;
    }),
    ("isl", |c, f| c.input.isl_mean = f.input.isl_mean),
    ("isl_stddev", |c, f| c.input.isl_stddev = f.input.isl_stddev),
    ("osl", |c, f| c.input.osl_mean = f.input.osl_mean),
    ("osl_stddev", |c, f| c.input.osl_stddev = f.input.osl_stddev),
    ("seq_dist", |c, f| {
        c.input
            .sequence_distribution
            .clone_from(&f.input.sequence_distribution);
    }),
    ("prompt_batch_size", |c, f| {
        c.input.prompt.batch_size = f.input.prompt.batch_size;
    }),
    ("prefix_pool_size", |c, f| {
        c.input.prompt.prefix_pool_size = f.input.prompt.prefix_pool_size;
    }),
    ("prefix_length", |c, f| {
        c.input.prompt.prefix_length = f.input.prompt.prefix_length;
    }),
    ("shared_system_prompt_length", |c, f| {
        c.input.prompt.shared_system_length = f.input.prompt.shared_system_length;
    }),
    ("user_context_prompt_length", |c, f| {
        c.input.prompt.user_context_length = f.input.prompt.user_context_length;
    }),
    ("num_dataset_entries", |c, f| {
        c.input.num_dataset_entries = f.input.num_dataset_entries;
    }),
    ("session_turns_mean", |c, f| {
        c.input.session.turns_mean = f.input.session.turns_mean;
    }),
    ("session_turns_stddev", |c, f| {
        c.input.session.turns_stddev = f.input.session.turns_stddev;
    }),
    ("session_turn_delay_mean", |c, f| {
        c.input.session.delay_mean_ms = f.input.session.delay_mean_ms;
    }),
    ("session_turn_delay_stddev", |c, f| {
        c.input.session.delay_stddev_ms = f.input.session.delay_stddev_ms;
    }),
    ("session_delay_ratio", |c, f| {
        c.input.session.delay_ratio = f.input.session.delay_ratio;
    }),
    ("model_selection_strategy", |c, f| {
        c.input.model_selection = f.input.model_selection.clone();
    }),
    ("input_file", |c, f| {
        c.input.input_file.clone_from(&f.input.input_file);
    }),
    ("custom_dataset_type", |c, f| {
        c.input.custom_dataset_type = f.input.custom_dataset_type;
    }),
    ("dataset_sampling_strategy", |c, f| {
        c.input.sampling_strategy = f.input.sampling_strategy;
    }),
    ("isl_block_size", |c, f| {
        c.input.isl_block_size = f.input.isl_block_size;
    }),
    ("random_seed", |c, f| {
        c.input.random_seed = f.input.random_seed;
    }),
    ("tokenizer", |c, f| {
        c.input.tokenizer.clone_from(&f.input.tokenizer);
    }),
    ("goodput", |c, f| c.goodput.clone_from(&f.goodput)),
    ("concurrency", |c, f| {
        c.load.concurrency = f.load.concurrency;
    }),
    ("concurrency_ramp_duration", |c, f| {
        c.load.concurrency_ramp_duration = f.load.concurrency_ramp_duration;
    }),
    ("prefill_concurrency", |c, f| {
        c.load.prefill_concurrency = f.load.prefill_concurrency;
    }),
    ("prefill_concurrency_ramp_duration", |c, f| {
        c.load.prefill_concurrency_ramp_duration = f.load.prefill_concurrency_ramp_duration;
    }),
    ("request_rate", |c, f| {
        c.load.request_rate = f.load.request_rate;
    }),
    ("request_rate_ramp_duration", |c, f| {
        c.load.request_rate_ramp_duration = f.load.request_rate_ramp_duration;
    }),
    ("arrival_pattern", |c, f| {
        c.load.arrival_pattern = f.load.arrival_pattern;
    }),
    ("arrival_smoothness", |c, f| {
        c.load.arrival_smoothness = f.load.arrival_smoothness;
    }),
    ("request_count", |c, f| {
        c.load.request_count = f.load.request_count;
    }),
    ("num_sessions", |c, f| {
        c.load.num_sessions = f.load.num_sessions;
    }),
    ("benchmark_duration", |c, f| {
        c.load.benchmark_duration = f.load.benchmark_duration;
    }),
    ("benchmark_grace_period", |c, f| {
        c.load.benchmark_grace_period = f.load.benchmark_grace_period;
    }),
    ("fixed_schedule", |c, f| {
        c.load.fixed_schedule.enabled = f.load.fixed_schedule.enabled;
    }),
    ("no_fixed_schedule", |c, f| {
        c.load.fixed_schedule.enabled = f.load.fixed_schedule.enabled;
    }),
    ("fixed_schedule_auto_offset", |c, f| {
        c.load.fixed_schedule.auto_offset = f.load.fixed_schedule.auto_offset;
    }),
    ("fixed_schedule_start_offset", |c, f| {
        c.load.fixed_schedule.start_offset_ms = f.load.fixed_schedule.start_offset_ms;
    }),
    ("fixed_schedule_end_offset", |c, f| {
        c.load.fixed_schedule.end_offset_ms = f.load.fixed_schedule.end_offset_ms;
    }),
    ("user_centric_rate", |c, f| {
        c.load.user_centric = f.load.user_centric;
    }),
    ("num_users", |c, f| {
        c.load.num_users = f.load.num_users;
        c.load.user_centric = f.load.user_centric;
    }),
    ("request_cancellation_rate", |c, f| {
        c.load.request_cancellation_rate = f.load.request_cancellation_rate;
    }),
    ("request_cancellation_delay", |c, f| {
        c.load.request_cancellation_delay = f.load.request_cancellation_delay;
    }),
    ("warmup_request_count", |c, f| {
        c.load.warmup.request_count = f.load.warmup.request_count;
    }),
    ("warmup_duration", |c, f| {
        c.load.warmup.duration = f.load.warmup.duration;
    }),
    ("num_warmup_sessions", |c, f| {
        c.load.warmup.num_sessions = f.load.warmup.num_sessions;
    }),
    ("warmup_concurrency", |c, f| {
        c.load.warmup.concurrency = f.load.warmup.concurrency;
    }),
    ("warmup_prefill_concurrency", |c, f| {
        c.load.warmup.prefill_concurrency = f.load.warmup.prefill_concurrency;
    }),
    ("warmup_request_rate", |c, f| {
        c.load.warmup.request_rate = f.load.warmup.request_rate;
    }),
    ("warmup_arrival_pattern", |c, f| {
        c.load.warmup.arrival_pattern = f.load.warmup.arrival_pattern;
    }),
    ("warmup_grace_period", |c, f| {
        c.load.warmup.grace_period = f.load.warmup.grace_period;
    }),
    ("warmup_concurrency_ramp_duration", |c, f| {
        c.load.warmup.concurrency_ramp_duration = f.load.warmup.concurrency_ramp_duration;
    }),
    ("warmup_request_rate_ramp_duration", |c, f| {
        c.load.warmup.request_rate_ramp_duration = f.load.warmup.request_rate_ramp_duration;
    }),
    ("artifact_dir", |c, f| {
        c.output.artifact_dir.clone_from(&f.output.artifact_dir);
    }),
    ("profile_export_prefix", |c, f| {
        c.output.export_prefix.clone_from(&f.output.export_prefix);
    }),
    ("export_level", |c, f| {
        c.output.export_level = f.output.export_level;
    }),
];

/// Flags of a whole option group the file cannot express (synthetic media, rankings):
/// any of them gives the flags' group.
const GROUP_OVERRIDES: &[(&[&str], Override)] = &[
    (&["shard", "shard_count", "shard_index"], |c, f| {
        c.load.shard = f.load.shard;
    }),
    (
        &[
            "accuracy_benchmark",
            "accuracy_tasks",
            "accuracy_n_shots",
            "accuracy_enable_cot",
            "accuracy_no_enable_cot",
            "accuracy_grader",
            "accuracy_system_prompt",
            "accuracy_verbose",
        ],
        |c, f| c.accuracy.clone_from(&f.accuracy),
    ),
    (
        &[
            "image_width_mean",
            "image_width_stddev",
            "image_height_mean",
            "image_height_stddev",
            "image_batch_size",
            "image_format",
        ],
        |c, f| c.input.image.clone_from(&f.input.image),
    ),
    (
        &[
            "audio_length_mean",
            "audio_length_stddev",
            "audio_batch_size",
            "audio_format",
            "audio_depths",
            "audio_sample_rates",
            "audio_num_channels",
        ],
        |c, f| c.input.audio.clone_from(&f.input.audio),
    ),
    (
        &[
            "video_width",
            "video_height",
            "video_duration",
            "video_fps",
            "video_batch_size",
            "video_synth_type",
            "video_format",
            "video_codec",
        ],
        |c, f| c.input.video.clone_from(&f.input.video),
    ),
    (
        &[
            "passages_mean",
            "passages_stddev",
            "passage_tokens_mean",
            "passage_tokens_stddev",
            "query_tokens_mean",
            "query_tokens_stddev",
        ],
        |c, f| c.input.rankings.clone_from(&f.input.rankings),
    ),
];

/// Flags that set the options around the runs, applied in [`run_spec`]: a group's flags
/// replace the file's options of that group.
const TRANSPORT_FLAGS: &[&str] = &[
    "connection_reuse_strategy",
    "tls_ca_file",
    "tls_insecure_skip_verify",
    "http2",
    "max_response_mib",
    "no_socket_reader",
    "socket_reader",
];
const READINESS_FLAGS: &[&str] = &[
    "wait_for_model_timeout",
    "wait_for_model_mode",
    "wait_for_model_interval",
];
const TELEMETRY_FLAGS: &[&str] = &[
    "gpu_telemetry",
    "no_gpu_telemetry",
    "server_metrics",
    "no_server_metrics",
    "server_metrics_formats",
];
/// Flags that set one option around the runs each.
const SPEC_FLAGS: &[&str] = &[
    "slice_duration",
    "export_http_trace",
    "export_outputs_json",
    "num_profile_runs",
    "profile_run_cooldown_seconds",
    "confidence_level",
    "profile_run_disable_warmup_after_first",
    "no_profile_run_disable_warmup_after_first",
    "set_consistent_seed",
    "no_set_consistent_seed",
    "slo",
    "start_at",
    "clock_reference",
];

/// Flags about the console and the process, not the benchmark: they apply as usual.
const PROCESS_FLAGS: &[&str] = &[
    "config_file",
    // 0.13's only working values, checked and otherwise without effect.
    "url_strategy",
    "transport",
    // Plotting runs after the runs, on what they wrote.
    "auto_plot",
    "no_auto_plot",
    "plot_required",
    "ui_type",
    "log_level",
    "verbose",
    "extra_verbose",
    "workers_max",
    "show_trace_timing",
    "no_sweep_table",
];

/// The `aiperf profile` specification from `args.config_file` with the flags in `given`
/// (clap ids of the flags on the command line) applied on top. Errors are usage errors.
pub(crate) fn run_spec(
    path: &Path,
    args: &ProfileArgs,
    given: &[String],
    has_sweep_lists: bool,
    command_line: String,
) -> anyhow::Result<RunSpec> {
    if has_sweep_lists {
        anyhow::bail!(
            "comma-list sweeps cannot be combined with --config; put the sweep under \
             `sweep:` in the configuration file"
        );
    }
    let refused: Vec<String> = given
        .iter()
        .filter(|id| !is_applicable(id))
        .map(|id| flag_name(id))
        .collect();
    if !refused.is_empty() {
        anyhow::bail!(
            "these flags cannot be combined with --config and would otherwise be ignored: {}. \
             Set the equivalent values in the configuration file, or drop --config and pass \
             the run entirely on the command line",
            refused.join(", ")
        );
    }
    let mut file = config_file::load_config_file(path)?;
    apply_flags(&mut file, args, given)?;
    let mut spec = file.into_run_spec()?;
    check_each_benchmark(&spec)?;
    let is_given = |ids: &[&str]| ids.iter().any(|id| given.iter().any(|g| g == id));
    if is_given(TRANSPORT_FLAGS) {
        spec.transport = assemble::transport_options(args);
    }
    if is_given(READINESS_FLAGS) {
        spec.readiness = args
            .endpoint
            .readiness()?
            .map(|r| aiperf_runner::ReadinessOptions {
                timeout: r.timeout,
                interval: r.interval,
                mode: r.mode,
            });
    }
    if is_given(TELEMETRY_FLAGS) {
        spec.telemetry = args.telemetry.to_options()?;
    }
    if is_given(&["slice_duration"]) {
        spec.records.slice_duration = args
            .output
            .slice_duration
            .map(aiperf_core::clock::saturating_secs);
    }
    if is_given(&["export_http_trace"]) {
        spec.records.export_http_trace = args.output.export_http_trace;
    }
    if is_given(&["export_outputs_json"]) {
        spec.records.export_outputs_json = args.output.export_outputs_json;
    }
    let runs = assemble::multi_run_options(&args.runs);
    if is_given(&["num_profile_runs"]) {
        spec.runs.count = runs.count;
    }
    if is_given(&["profile_run_cooldown_seconds"]) {
        spec.runs.cooldown = runs.cooldown;
    }
    if is_given(&["confidence_level"]) {
        spec.runs.confidence_level = runs.confidence_level;
    }
    if is_given(&[
        "profile_run_disable_warmup_after_first",
        "no_profile_run_disable_warmup_after_first",
    ]) {
        spec.runs.warmup_only_before_first_run = runs.warmup_only_before_first_run;
    }
    if is_given(&["set_consistent_seed", "no_set_consistent_seed"]) {
        spec.runs.consistent_seed = runs.consistent_seed;
    }
    if is_given(&["slo"]) {
        spec.slos = assemble::slos(args)?;
    }
    if is_given(&["start_at"]) {
        spec.start_at = args.load.start_at;
    }
    if is_given(&["clock_reference"]) {
        spec.clock_reference.clone_from(&args.load.clock_reference);
    }
    spec.command_line = Some(command_line);
    Ok(spec)
}

fn is_applicable(id: &str) -> bool {
    // Refused 0.13 options stop the command before any file is read.
    let refused = crate::args::refused::REFUSED
        .iter()
        .any(|option| option.name == id);
    refused
        || BENCHMARK_OVERRIDES.iter().any(|(flag, _)| *flag == id)
        || GROUP_OVERRIDES.iter().any(|(flags, _)| flags.contains(&id))
        || [
            TRANSPORT_FLAGS,
            READINESS_FLAGS,
            TELEMETRY_FLAGS,
            SPEC_FLAGS,
            PROCESS_FLAGS,
        ]
        .iter()
        .any(|flags| flags.contains(&id))
}

/// The flags' values onto every benchmark of the file (the base and each sweep point,
/// whose swept values stay).
fn apply_flags(file: &mut ConfigFile, args: &ProfileArgs, given: &[String]) -> anyhow::Result<()> {
    let flags = assemble::build_config(args)?;
    let replaces_dataset_file = given
        .iter()
        .any(|id| id == "input_file" || id == "custom_dataset_type");
    if replaces_dataset_file && file.benchmark.input.input_file.is_none() {
        anyhow::bail!(
            "--input-file and --custom-dataset-type replace the file of a `type: file` \
             dataset; {} declares no such dataset",
            file.file
        );
    }
    file.change_every_run(|benchmark| {
        for id in given {
            if let Some((_, apply)) = BENCHMARK_OVERRIDES.iter().find(|(flag, _)| flag == id) {
                apply(benchmark, &flags);
            }
        }
        for (ids, apply) in GROUP_OVERRIDES {
            if given.iter().any(|id| ids.contains(&id.as_str())) {
                apply(benchmark, &flags);
            }
        }
    });
    Ok(())
}

/// The checks that need the endpoint (its type exists, goodput tags apply), per run.
fn check_each_benchmark(spec: &RunSpec) -> anyhow::Result<()> {
    assemble::check_endpoint_options(&spec.benchmark)?;
    for point in spec.sweep.iter().flat_map(|sweep| &sweep.points) {
        assemble::check_endpoint_options(&point.benchmark)
            .map_err(|error| error.context(format!("sweep point {}", point.label)))?;
    }
    Ok(())
}

/// `--long-name` of the `aiperf profile` argument with clap id `id`.
fn flag_name(id: &str) -> String {
    let command = Cli::command();
    command
        .find_subcommand("profile")
        .and_then(|profile| profile.get_arguments().find(|arg| arg.get_id() == id))
        .and_then(clap::Arg::get_long)
        .map_or_else(|| id.to_owned(), |long| format!("--{long}"))
}

/// `aiperf config …`. Errors are usage errors (exit status 2).
pub(crate) fn run_config_command(command: &ConfigCommand) -> anyhow::Result<()> {
    match command {
        ConfigCommand::Init {
            template,
            list,
            model,
            url,
            output,
        } => {
            if *list {
                for t in TEMPLATES {
                    println!("{:<14} {}", t.name, t.description);
                }
                return Ok(());
            }
            let chosen = config_file::template(template).ok_or_else(|| {
                let names: Vec<&str> = TEMPLATES.iter().map(|t| t.name).collect();
                anyhow::anyhow!(
                    "unknown template {template:?}; choose one of {}",
                    names.join(", ")
                )
            })?;
            let text = chosen.render(model.as_deref(), url.as_deref());
            match output {
                Some(path) => {
                    std::fs::write(path, text)
                        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
                    eprintln!("Wrote {} (template {})", path.display(), chosen.name);
                }
                None => print!("{text}"),
            }
            Ok(())
        }
        ConfigCommand::Validate { file } => {
            let spec = config_file::load_config_file(file)?.into_run_spec()?;
            check_each_benchmark(&spec)?;
            let runs = spec.sweep.as_ref().map_or(1, |sweep| sweep.points.len());
            println!(
                "{}: OK ({runs} configuration{}, {} run{} each)",
                file.display(),
                if runs == 1 { "" } else { "s" },
                spec.runs.count,
                if spec.runs.count == 1 { "" } else { "s" },
            );
            Ok(())
        }
        ConfigCommand::Expand { file } => {
            let spec = config_file::load_config_file(file)?.into_run_spec()?;
            match &spec.sweep {
                None => println!("{}: no sweep; one configuration", file.display()),
                Some(sweep) => {
                    println!(
                        "{}: {} sweep, {} points",
                        file.display(),
                        sweep.sweep_type.name(),
                        sweep.points.len()
                    );
                    for (i, point) in sweep.points.iter().enumerate() {
                        let parameters: Vec<String> = point
                            .parameters
                            .iter()
                            .map(|(name, value)| format!("{name}={value}"))
                            .collect();
                        println!("{:>3}  {:<32} {}", i + 1, point.label, parameters.join(" "));
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags refused beside a file on purpose (0.13 refuses them too): the sweep is
    /// the file's, and a public dataset would replace the file's dataset.
    const REFUSED_WITH_A_FILE: &[&str] = &[
        "public_dataset",
        "sweep_type",
        "parameter_sweep_cooldown_seconds",
    ];

    /// Every `aiperf profile` flag either overrides something, applies as usual or is
    /// refused on purpose: a new flag that lands in no list fails here, so that it is not
    /// refused beside a file by accident.
    #[test]
    fn every_profile_flag_is_classified() {
        let command = Cli::command();
        let profile = command.find_subcommand("profile").unwrap();
        let unclassified: Vec<&str> = profile
            .get_arguments()
            .map(|arg| arg.get_id().as_str())
            .filter(|id| *id != "help")
            .filter(|id| !is_applicable(id) && !REFUSED_WITH_A_FILE.contains(id))
            .collect();
        assert!(
            unclassified.is_empty(),
            "unclassified flags: {unclassified:?}"
        );
        let count = profile.get_arguments().count();
        assert!(count >= 130, "only {count} flags looked at");
        for id in REFUSED_WITH_A_FILE {
            assert!(!is_applicable(id), "{id}");
            assert!(
                profile.get_arguments().any(|arg| arg.get_id() == id),
                "{id}"
            );
        }
    }

    #[test]
    fn refused_flags_are_named_as_typed() {
        assert_eq!(flag_name("sweep_type"), "--sweep-type");
        assert_eq!(flag_name("public_dataset"), "--public-dataset");
    }
}
