//! The Python AIPerf 0.13 configuration schema (version "2.0") read onto
//! [`BenchmarkConfig`] and the options around a run. Only the keys aiperf-rs implements
//! are read; every other key of the 0.13 schema is refused by name.

use aiperf_core::clock::saturating_secs;
use aiperf_core::config::{ArrivalPattern, CustomDatasetType, ExportLevel, UserCentricConfig};
use aiperf_core::config::{LoadConfig, ModelSelectionStrategy, WarmupConfig};
use aiperf_core::{BenchmarkConfig, RequestContentType};
use aiperf_endpoints::readiness::WaitMode;

use super::reader::{Field, MapReader};
use super::yaml::{Node, Value};
use super::ConfigFileError;
use crate::spec::{
    ConnectionReuse, MultiRunOptions, ReadinessOptions, RecordOptions, TelemetryOptions,
    TransportOptions,
};

/// What the `benchmark:` section gives.
#[derive(Debug, Clone, Default)]
pub(super) struct BenchmarkParts {
    pub(super) config: BenchmarkConfig,
    pub(super) transport: TransportOptions,
    pub(super) records: RecordOptions,
    /// `None` without `gpuTelemetry:` and `serverMetrics:` (the defaults apply).
    pub(super) telemetry: Option<TelemetryOptions>,
    /// `endpoint.waitForModel*`; `None` unless the timeout is above 0.
    pub(super) readiness: Option<ReadinessOptions>,
}

/// 0.13 keys of the phases that aiperf-rs does not implement.
const REFUSED_PHASE_KEYS: &[&str] = &[
    "adaptive_assessment_period",
    "adaptive_control_max",
    "adaptive_control_min",
    "adaptive_control_variable",
    "adaptive_min_completed_requests",
    "adaptive_scale",
    "adaptive_scale_base_step",
    "adaptive_scale_max_step_multiplier",
    "adaptive_scale_step_percent",
    "adaptive_scale_step_policy",
    "adaptive_scale_strategy_type",
    "adaptive_sustain_duration",
    "agentic_cache_warmup_duration",
    "agentic_warmup_grace_period",
    "burst_phase_starts",
    "failed_request_threshold",
    "kind",
    "rate_series",
    "seamless",
    "sla",
    "system_idle_gap_cap_seconds",
    "timing_mode",
    "trajectory_start_max_ratio",
    "trajectory_start_min_ratio",
];

/// The top level: `schemaVersion`, `randomSeed`, `multiRun`; `benchmark` and `sweep`
/// are returned for the caller to read (a sweep re-reads the benchmark per point).
pub(super) struct TopLevel<'a> {
    pub(super) random_seed: Option<u64>,
    pub(super) benchmark: Field<'a>,
    pub(super) sweep: Option<Field<'a>>,
    pub(super) runs: MultiRunOptions,
}

pub(super) fn read_top_level<'a>(
    file: &'a str,
    root: &'a Node,
) -> Result<TopLevel<'a>, ConfigFileError> {
    let mut top = MapReader::new(file, "", root)?;
    if let Some(version) = top.take("schema_version") {
        let text = version.string()?;
        if !matches!(text.as_str(), "2.0" | "2") {
            return Err(version.error(&format!(
                "schema version {text:?} is not supported; aiperf-rs reads version \"2.0\""
            )));
        }
    }
    let random_seed = top.take("random_seed").map(|f| f.count()).transpose()?;
    let runs = match top.take("multi_run") {
        Some(field) => read_multi_run(&field)?,
        None => MultiRunOptions::default(),
    };
    let sweep = top.take("sweep");
    let benchmark = top.take("benchmark").ok_or_else(|| {
        ConfigFileError::at(
            file,
            root.line,
            "benchmark",
            "missing: the file needs a `benchmark:` section",
        )
    })?;
    top.finish(&["plot", "variables", "no_sweep_table"])?;
    Ok(TopLevel {
        random_seed,
        benchmark,
        sweep,
        runs,
    })
}

fn read_multi_run(field: &Field<'_>) -> Result<MultiRunOptions, ConfigFileError> {
    let mut r = field.map()?;
    let mut runs = MultiRunOptions::default();
    if let Some(f) = r.take("num_runs") {
        runs.count = f.count()?;
    }
    if let Some(f) = r.take("cooldown_seconds") {
        runs.cooldown = saturating_secs(f.seconds()?);
    }
    if let Some(f) = r.take("confidence_level") {
        runs.confidence_level = f.number()?;
    }
    if let Some(f) = r.take("set_consistent_seed") {
        runs.consistent_seed = f.boolean()?;
    }
    if let Some(f) = r.take("disable_warmup_after_first") {
        runs.warmup_only_before_first_run = f.boolean()?;
    }
    r.finish(&["convergence", "vary_seed_per_trial"])?;
    Ok(runs)
}

/// Reads the `benchmark:` section.
pub(super) fn read_benchmark(
    file: &str,
    node: &Node,
    random_seed: Option<u64>,
) -> Result<BenchmarkParts, ConfigFileError> {
    let mut r = MapReader::new(file, "benchmark", node)?;
    let mut parts = BenchmarkParts::default();
    parts.config.input.random_seed = random_seed;
    let config = &mut parts.config;

    match (r.take("model"), r.take("models")) {
        (Some(_), Some(models)) => {
            return Err(models.error("give either `model` or `models`, not both"))
        }
        (Some(field), None) | (None, Some(field)) => read_models(&field, config)?,
        (None, None) => {}
    }
    if let Some(field) = r.take("endpoint") {
        read_endpoint(&field, &mut parts)?;
    }
    let config = &mut parts.config;
    match (r.take("dataset"), r.take("datasets")) {
        (Some(_), Some(datasets)) => {
            return Err(datasets.error("give either `dataset` or `datasets`, not both"))
        }
        (Some(dataset), None) => read_dataset(&dataset, config)?,
        (None, Some(datasets)) => {
            let Value::Seq(items) = &datasets.node.value else {
                return Err(datasets.error("expected a list of datasets"));
            };
            match items.as_slice() {
                [] => {}
                [one] => read_dataset(&item_field(&datasets, 0, one), config)?,
                [_, second, ..] => {
                    return Err(ConfigFileError::at(
                        file,
                        second.line,
                        &format!("{}[1]", datasets.path),
                        "several datasets are not available in aiperf-rs (one per run)",
                    ))
                }
            }
        }
        (None, None) => {}
    }
    read_phases(&mut r, config)?;
    if let Some(field) = r.take("artifacts") {
        read_artifacts(&field, &mut parts)?;
    }
    let config = &mut parts.config;
    if let Some(field) = r.take("slos") {
        let mut slos = field.map()?;
        for entry in slos.rest() {
            let slo = Field {
                file,
                line: entry.line,
                path: format!("{}.{}", field.path, entry.key),
                node: &entry.value,
            };
            config.goodput.push((entry.key.clone(), slo.number()?));
        }
    }
    if let Some(field) = r.take("tokenizer") {
        config.input.tokenizer = Some(match &field.node.value {
            Value::Map(_) => {
                let mut t = field.map()?;
                let name = t
                    .take("name")
                    .ok_or_else(|| field.error("missing `name`"))?
                    .string()?;
                t.finish(&[
                    "apply_chat_template",
                    "resolved_names",
                    "revision",
                    "trust_remote_code",
                ])?;
                name
            }
            _ => field.string()?,
        });
    }
    if let Some(f) = r.take("gpu_telemetry") {
        let telemetry = parts
            .telemetry
            .get_or_insert_with(TelemetryOptions::default);
        let mut g = f.map()?;
        if let Some(f) = g.take("enabled") {
            telemetry.gpu = f.boolean()?;
        }
        if let Some(f) = g.take("urls") {
            telemetry.gpu_urls = f.strings()?;
        }
        if let Some(f) = g.take("collector") {
            let collector = f.string()?;
            if collector != "dcgm" {
                return Err(f.error(&format!(
                    "collector {collector:?} is not available in aiperf-rs; run a DCGM \
                     exporter and use collector dcgm"
                )));
            }
        }
        if let Some(f) = g.take("mode") {
            let mode = f.string()?;
            if mode != "summary" {
                return Err(f.error(&format!(
                    "mode {mode:?} is not available in a configuration file; use \
                     --gpu-telemetry dashboard"
                )));
            }
        }
        g.finish(&["metrics_file"])?;
    }
    if let Some(f) = r.take("server_metrics") {
        let telemetry = parts
            .telemetry
            .get_or_insert_with(TelemetryOptions::default);
        let mut m = f.map()?;
        if let Some(f) = m.take("enabled") {
            telemetry.server_metrics = f.boolean()?;
        }
        if let Some(f) = m.take("urls") {
            telemetry.server_urls = f.strings()?;
        }
        if let Some(f) = m.take("formats") {
            telemetry.server_metrics_formats = f
                .strings()?
                .into_iter()
                .map(|name| {
                    serde_json::from_value(serde_json::Value::String(name.clone())).map_err(|_| {
                        f.error(&format!(
                            "expected json, csv, jsonl or parquet, got {name:?}"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        m.finish(&["discovery"])?;
    }
    r.finish(&[
        "accuracy",
        "logging",
        "metrics",
        "mlflow",
        "network_latency",
        "otel",
        "runtime",
        "scenario",
        "unsafe_override",
        "wandb",
    ])?;
    Ok(parts)
}

/// The `i`-th item of a list field, as a field of its own.
fn item_field<'a>(list: &Field<'a>, i: usize, node: &'a Node) -> Field<'a> {
    Field {
        file: list.file,
        line: node.line,
        path: format!("{}[{i}]", list.path),
        node,
    }
}

fn items<'a>(field: &Field<'a>) -> Vec<Field<'a>> {
    match &field.node.value {
        Value::Seq(nodes) => nodes
            .iter()
            .enumerate()
            .map(|(i, node)| item_field(field, i, node))
            .collect(),
        _ => vec![field.clone()],
    }
}

/// `model: name`, `models: [a, b]`, `models: [{name: a}]` or
/// `models: {items: [{name: a, weight: 0.7}, ...], strategy: weighted}`.
fn read_models(field: &Field<'_>, config: &mut BenchmarkConfig) -> Result<(), ConfigFileError> {
    let mut strategy = None;
    let list = if let Value::Map(_) = field.node.value {
        let mut r = field.map()?;
        strategy = r.take("strategy");
        let items = r
            .take("items")
            .ok_or_else(|| field.error("missing `items`"))?;
        r.finish(&[])?;
        items
    } else {
        field.clone()
    };
    let mut weights = Vec::new();
    for item in items(&list) {
        let (name, weight) = if let Value::Map(_) = item.node.value {
            let mut r = item.map()?;
            let name = r
                .take("name")
                .ok_or_else(|| item.error("missing `name`"))?
                .string()?;
            let weight = r.take("weight").map(|w| w.number()).transpose()?;
            r.finish(&["lora", "modalities", "tokenizer"])?;
            (name, weight)
        } else {
            (item.string()?, None)
        };
        let name = name.trim().to_owned();
        if !name.is_empty() {
            config.endpoint.models.push(name);
            weights.push((item, weight));
        }
    }
    if let Some(strategy) = strategy {
        let selection = match strategy.string()?.replace('-', "_").as_str() {
            "round_robin" => ModelSelectionStrategy::RoundRobin,
            "random" => ModelSelectionStrategy::Random,
            "weighted" => ModelSelectionStrategy::Weighted(
                weights
                    .into_iter()
                    .map(|(item, weight)| {
                        weight.ok_or_else(|| {
                            item.error(
                                "missing `weight`: the weighted strategy needs one on every model",
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => {
                return Err(strategy.error(&format!(
                    "expected round_robin, random or weighted, got {other:?}"
                )))
            }
        };
        selection
            .check(config.endpoint.models.len())
            .map_err(|e| strategy.error(&e.to_string()))?;
        config.input.model_selection = selection;
    }
    Ok(())
}

fn read_endpoint(field: &Field<'_>, parts: &mut BenchmarkParts) -> Result<(), ConfigFileError> {
    let mut r = field.map()?;
    let endpoint = &mut parts.config.endpoint;
    match (r.take("url"), r.take("urls")) {
        (Some(_), Some(urls)) => return Err(urls.error("give either `url` or `urls`, not both")),
        (Some(f), None) | (None, Some(f)) => {
            endpoint.urls = f.strings()?.iter().map(|url| normalise_url(url)).collect();
        }
        (None, None) => {}
    }
    if let Some(f) = r.take("type") {
        endpoint.endpoint_type = f.string()?;
    }
    if let Some(f) = r.take("path") {
        endpoint.custom_endpoint = Some(f.string()?);
    }
    if let Some(f) = r.take("api_key") {
        endpoint.api_key = Some(f.string()?);
    }
    if let Some(f) = r.take("timeout") {
        endpoint.request_timeout = saturating_secs(f.seconds()?);
    }
    if let Some(f) = r.take("streaming") {
        endpoint.streaming = f.boolean()?;
    }
    if let Some(f) = r.take("headers") {
        let mut headers = f.map()?;
        for entry in headers.rest() {
            let value = Field {
                file: f.file,
                line: entry.line,
                path: format!("{}.{}", f.path, entry.key),
                node: &entry.value,
            };
            endpoint.headers.push((entry.key.clone(), value.string()?));
        }
    }
    if let Some(f) = r.take("extra") {
        match f.json() {
            serde_json::Value::Object(map) => endpoint.extra_inputs = map,
            _ => return Err(f.error("expected a mapping of request fields")),
        }
    }
    if let Some(f) = r.take("use_legacy_max_tokens") {
        endpoint.use_legacy_max_tokens = f.boolean()?;
    }
    if let Some(f) = r.take("use_server_token_count") {
        endpoint.use_server_token_count = f.boolean()?;
    }
    if let Some(f) = r.take("per_chunk_usage") {
        endpoint.per_chunk_usage = f.boolean()?;
    }
    if let Some(f) = r.take("download_video_content") {
        endpoint.download_video_content = f.boolean()?;
    }
    if let Some(f) = r.take("session_header") {
        endpoint.session_header = Some(f.string()?);
    }
    if let Some(f) = r.take("url_strategy") {
        // Requests go to the URLs in turn, 0.13's only strategy.
        let strategy = f.string()?;
        if strategy != "round_robin" {
            return Err(f.error(&format!("expected round_robin, got {strategy:?}")));
        }
    }
    if let Some(f) = r.take("transport") {
        // Chosen from the URL scheme anyway; http is 0.13's only transport.
        let transport = f.string()?;
        if transport != "http" {
            return Err(f.error(&format!("expected http, got {transport:?}")));
        }
    }
    if let Some(f) = r.take("request_content_type") {
        // The media type, as 0.13's files spell it, or its command-line spelling.
        endpoint.request_content_type = Some(match f.string()?.as_str() {
            "application/json" | "application-json" => RequestContentType::ApplicationJson,
            "multipart/form-data" | "multipart-form-data" => RequestContentType::MultipartFormData,
            other => {
                return Err(f.error(&format!(
                    "expected application/json or multipart/form-data, got {other:?}"
                )))
            }
        });
    }
    if let Some(f) = r.take("connection_reuse") {
        parts.transport.connection_reuse = match f.string()?.replace('-', "_").as_str() {
            "pooled" => ConnectionReuse::Pooled,
            "never" => ConnectionReuse::Never,
            "sticky_user_sessions" => ConnectionReuse::StickyUserSessions,
            other => {
                return Err(f.error(&format!(
                    "expected pooled, never or sticky_user_sessions, got {other:?}"
                )))
            }
        };
    }
    parts.readiness = read_readiness(&mut r)?;
    r.finish(&[
        "reset_kv_cache",
        "server_profiler",
        "template",
        "uuid_and_strip",
    ])
}

/// `waitForModelTimeout` (seconds; 0 or absent: no wait), `waitForModelInterval`
/// (default 5 s) and `waitForModelMode` (`inference`, `models` or `both`). As in 0.13, an
/// interval or mode other than the default without a timeout is an error: it would do
/// nothing.
fn read_readiness(r: &mut MapReader<'_>) -> Result<Option<ReadinessOptions>, ConfigFileError> {
    let timeout = r.take("wait_for_model_timeout");
    let interval = r.take("wait_for_model_interval");
    let mode = r.take("wait_for_model_mode");
    let interval_secs = match &interval {
        Some(f) => {
            let secs = f.seconds()?;
            if secs <= 0.0 {
                return Err(f.error("expected more than 0 seconds"));
            }
            secs
        }
        None => 5.0,
    };
    let wait_mode = match &mode {
        Some(f) => match f.string()?.as_str() {
            "inference" => WaitMode::Inference,
            "models" => WaitMode::Models,
            "both" => WaitMode::Both,
            other => {
                return Err(f.error(&format!(
                    "expected inference, models or both, got {other:?}"
                )))
            }
        },
        None => WaitMode::Inference,
    };
    let timeout_secs = match &timeout {
        Some(f) => f.seconds()?,
        None => 0.0,
    };
    if timeout_secs == 0.0 {
        let not_default = [
            (interval.as_ref(), interval_secs != 5.0),
            (mode.as_ref(), wait_mode != WaitMode::Inference),
        ];
        if let Some((Some(f), _)) = not_default.into_iter().find(|(_, differs)| *differs) {
            return Err(f.error(
                "has no effect without a waitForModelTimeout above 0, which turns the \
                 readiness probe on",
            ));
        }
        return Ok(None);
    }
    Ok(Some(ReadinessOptions {
        timeout: saturating_secs(timeout_secs),
        interval: saturating_secs(interval_secs),
        mode: wait_mode,
    }))
}

/// `http://` is prepended when a URL has no scheme; `mock` is kept as is.
fn normalise_url(url: &str) -> String {
    if url.trim() == crate::MOCK_URL {
        crate::MOCK_URL.to_owned()
    } else {
        aiperf_core::url::with_default_scheme(url)
    }
}

fn read_dataset(field: &Field<'_>, config: &mut BenchmarkConfig) -> Result<(), ConfigFileError> {
    let mut r = field.map()?;
    r.take("name");
    let kind = match r.take("type") {
        Some(f) => f.string()?,
        None => "synthetic".to_owned(),
    };
    let input = &mut config.input;
    if let Some(f) = r.take("random_seed") {
        input.random_seed = Some(f.count()?);
    }
    if let Some(f) = r.take("sampling") {
        let name = f.string()?;
        input.sampling_strategy = Some(
            serde_json::from_value(serde_json::Value::String(name.clone())).map_err(|_| {
                f.error(&format!(
                    "expected sequential, random or shuffle, got {name:?}"
                ))
            })?,
        );
    }
    match kind.as_str() {
        "synthetic" => {
            if let Some(f) = r.take("entries") {
                input.num_dataset_entries = Some(f.count()?);
            }
            if let Some(prompts) = r.take("prompts") {
                let mut p = prompts.map()?;
                read_lengths(&mut p, config)?;
                if let Some(f) = p.take("batch_size") {
                    config.input.prompt.batch_size = f.count()?;
                }
                read_corpus(&mut p, config)?;
                if let Some(f) = p.take("random_corpus_style") {
                    config.input.prompt.random_corpus_style = named(&f, "vllm or sglang")?;
                }
                p.finish(&[
                    "block_size",
                    "cache_bust",
                    "random_range_ratio",
                    "sequence_distribution",
                ])?;
            }
            read_lengths(&mut r, config)?;
            read_system_prompt(&mut r, config)?;
            r.finish(&[
                "audio",
                "images",
                "prefix_prompts",
                "rankings",
                "turn_delay",
                "turn_delay_ratio",
                "turns",
                "video",
            ])
        }
        "file" => {
            let path = r
                .take("path")
                .ok_or_else(|| field.error("a file dataset needs `path`"))?;
            input.input_file = Some(path.string()?.into());
            if let Some(f) = r.take("format") {
                let name = f.string()?.replace('-', "_");
                let format = CustomDatasetType::from_name(&name)
                    .ok_or_else(|| f.error(&format!("unknown dataset format {name:?}")))?;
                input.custom_dataset_type = Some(format);
            }
            read_trace_options(&mut r, config)?;
            if let Some(synthesis) = r.take("synthesis") {
                read_synthesis(&synthesis, config)?;
            }
            if let Some(f) = r.take("block_size") {
                config.input.isl_block_size = Some(f.count()?);
            }
            if let Some(f) = r.take("max_context_length") {
                config.input.trace.max_context_length = Some(f.count()?);
            }
            read_system_prompt(&mut r, config)?;
            if let Some(prompts) = r.take("prompts") {
                let mut p = prompts.map()?;
                read_corpus(&mut p, config)?;
                p.finish(&[])?;
            }
            r.finish(&[
                "audio_batch_size",
                "cache_bust",
                "entries",
                "image_batch_size",
                "max_idle_gap_cap_seconds",
                "open_loop_replay",
                "open_loop_strict",
                "osl",
                "prompt_batch_size",
                "records",
                "trace_idle_gap_cap_seconds",
                "video_batch_size",
            ])
        }
        "public" => {
            let name = r
                .take("dataset")
                .ok_or_else(|| field.error("a public dataset needs `dataset`"))?;
            input.public_dataset = Some(name.string()?.into());
            if let Some(f) = r.take("entries") {
                input.num_dataset_entries = Some(f.count()?);
            }
            if let Some(f) = r.take("hf_subset") {
                input.hf_subset = Some(f.string()?);
            }
            if let Some(f) = r.take("hf_weka_dataset") {
                input.hf_weka_dataset = Some(f.string()?);
            }
            if let Some(f) = r.take("filters") {
                let mut filters = f.map()?;
                for entry in filters.rest() {
                    let value = Field {
                        file: f.file,
                        line: entry.line,
                        path: format!("{}.{}", f.path, entry.key),
                        node: &entry.value,
                    };
                    input
                        .dataset_filters
                        .insert(entry.key.clone(), value.string()?);
                }
            }
            // The trace options 0.13's public dataset takes (its Weka corpora replay).
            let trace = &mut input.trace;
            read_replay_delays(&mut r, trace)?;
            if let Some(f) = r.take("max_context_length") {
                trace.max_context_length = Some(f.count()?);
            }
            read_system_prompt(&mut r, config)?;
            if let Some(prompts) = r.take("prompts") {
                let mut p = prompts.map()?;
                read_corpus(&mut p, config)?;
                p.finish(&[])?;
            }
            r.finish(&[
                "cache_bust",
                "osl",
                "synthesis",
                "trace_idle_gap_cap_seconds",
            ])
        }
        other => Err(field.error(&format!(
            "unknown dataset type {other:?}; expected synthetic, file or public"
        ))),
    }
}

/// `prompts.corpus` of a dataset: `--prompt-corpus`.
fn read_corpus(p: &mut MapReader<'_>, config: &mut BenchmarkConfig) -> Result<(), ConfigFileError> {
    if let Some(f) = p.take("corpus") {
        config.input.prompt.corpus = Some(named(&f, "sonnet, coding or random")?);
    }
    Ok(())
}

/// A string value naming a variant of `T` by its serde name (case-insensitive, as in
/// 0.13); `expected` lists the names for the error.
fn named<T: serde::de::DeserializeOwned>(
    f: &Field<'_>,
    expected: &str,
) -> Result<T, ConfigFileError> {
    let name = f.string()?;
    serde_json::from_value(serde_json::Value::String(name.to_ascii_lowercase()))
        .map_err(|_| f.error(&format!("expected {expected}, got {name:?}")))
}

/// `system_prompt` / `system_prompt_file` of a dataset: `--system-prompt` and
/// `--system-prompt-file`.
fn read_system_prompt(
    r: &mut MapReader<'_>,
    config: &mut BenchmarkConfig,
) -> Result<(), ConfigFileError> {
    let prompt = &mut config.input.prompt;
    if let Some(f) = r.take("system_prompt") {
        prompt.system_prompt = Some(f.string()?);
    }
    if let Some(f) = r.take("system_prompt_file") {
        prompt.system_prompt_file = Some(f.string()?.into());
    }
    Ok(())
}

/// How a file dataset's turns are timed and sampled: `--ignore-trace-delays`,
/// `--use-think-time-only`, `--replay-speedup`, `--trace-session-sample-ratio`,
/// `--inter-turn-delay-cap-seconds`, and the
/// `baseten_trace` body options `--omit-kv-hints` and `--no-force-min-tokens`.
fn read_trace_options(
    r: &mut MapReader<'_>,
    config: &mut BenchmarkConfig,
) -> Result<(), ConfigFileError> {
    let trace = &mut config.input.trace;
    read_replay_delays(r, trace)?;
    if let Some(f) = r.take("replay_speedup") {
        trace.replay_speedup = Some(f.number()?);
    }
    if let Some(f) = r.take("trace_session_sample_ratio") {
        trace.session_sample_ratio = Some(f.number()?);
    }
    if let Some(f) = r.take("omit_kv_hints") {
        trace.omit_kv_hints = f.boolean()?;
    }
    if let Some(f) = r.take("force_min_tokens") {
        trace.omit_min_tokens = !f.boolean()?;
    }
    Ok(())
}

/// How a replay waits between recorded requests, for file and public datasets alike:
/// `--ignore-trace-delays`, `--use-think-time-only`, `--inter-turn-delay-cap-seconds`.
fn read_replay_delays(
    r: &mut MapReader<'_>,
    trace: &mut aiperf_core::config::TraceOptions,
) -> Result<(), ConfigFileError> {
    if let Some(f) = r.take("ignore_trace_delays") {
        trace.ignore_delays = f.boolean()?;
    }
    if let Some(f) = r.take("use_think_time_only") {
        trace.use_think_time_only = f.boolean()?;
    }
    if let Some(f) = r.take("inter_turn_delay_cap_seconds") {
        trace.inter_turn_delay_cap_seconds = Some(f.number()?);
    }
    Ok(())
}

/// `synthesis:` of a file dataset: the `--synthesis-*` options (and
/// `--allow-dataset-wrap`, which 0.13 keeps there). Their ranges are checked with the
/// rest of the configuration.
fn read_synthesis(field: &Field<'_>, config: &mut BenchmarkConfig) -> Result<(), ConfigFileError> {
    let mut r = field.map()?;
    let trace = &mut config.input.trace;
    let synthesis = &mut trace.synthesis;
    if let Some(f) = r.take("speedup_ratio") {
        synthesis.speedup_ratio = f.number()?;
    }
    if let Some(f) = r.take("prefix_len_multiplier") {
        synthesis.prefix_len_multiplier = f.number()?;
    }
    if let Some(f) = r.take("prefix_root_multiplier") {
        synthesis.prefix_root_multiplier = f.count()?;
    }
    if let Some(f) = r.take("prompt_len_multiplier") {
        synthesis.prompt_len_multiplier = f.number()?;
    }
    if let Some(f) = r.take("output_len_multiplier") {
        synthesis.output_len_multiplier = f.number()?;
    }
    if let Some(f) = r.take("max_isl") {
        synthesis.max_isl = Some(f.count()?);
    }
    if let Some(f) = r.take("max_osl") {
        synthesis.max_osl = Some(f.count()?);
    }
    if let Some(f) = r.take("allow_dataset_wrap") {
        trace.allow_dataset_wrap = f.boolean()?;
    }
    r.finish(&[])
}

/// `isl`/`osl`: a number, or `{mean, stddev}`.
fn read_lengths(
    r: &mut MapReader<'_>,
    config: &mut BenchmarkConfig,
) -> Result<(), ConfigFileError> {
    if let Some(f) = r.take("isl") {
        let (mean, stddev) = read_distribution(&f)?;
        config.input.isl_mean = mean;
        config.input.isl_stddev = stddev;
    }
    if let Some(f) = r.take("osl") {
        let (mean, stddev) = read_distribution(&f)?;
        config.input.osl_mean = Some(mean);
        config.input.osl_stddev = stddev;
    }
    Ok(())
}

fn read_distribution(field: &Field<'_>) -> Result<(u32, f64), ConfigFileError> {
    if let Value::Map(_) = field.node.value {
        let mut r = field.map()?;
        let mean = r.take("mean");
        let stddev = r.take("stddev").map(|f| f.number()).transpose()?;
        // A lognormal, multimodal or empirical distribution is refused by its key.
        r.finish(&["median", "peaks", "points"])?;
        let mean = mean.ok_or_else(|| field.error("missing `mean`"))?.count()?;
        Ok((mean, stddev.unwrap_or(0.0)))
    } else {
        Ok((field.count()?, 0.0))
    }
}

/// `phases:` (one phase, or a list with a warmup and a profiling phase), or the
/// `warmup:`/`profiling:` shorthands.
fn read_phases(r: &mut MapReader<'_>, config: &mut BenchmarkConfig) -> Result<(), ConfigFileError> {
    let shorthand = (r.take("warmup"), r.take("profiling"));
    let phases = r.take("phases");
    let (warmup, profiling) = match (phases, shorthand) {
        (Some(phases), (Some(other), _) | (_, Some(other))) => {
            return Err(other.error(&format!(
                "give phases either in `{}` or as `warmup`/`profiling`, not both",
                phases.path
            )))
        }
        (Some(phases), (None, None)) => split_phases(&phases)?,
        (None, shorthand) => shorthand,
    };
    if let Some(profiling) = profiling {
        read_profiling_phase(&profiling, &mut config.load)?;
    }
    if let Some(warmup) = warmup {
        read_warmup_phase(&warmup, &mut config.load.warmup)?;
    }
    Ok(())
}

type Phases<'a> = (Option<Field<'a>>, Option<Field<'a>>);

/// The warmup and the profiling phase of `phases:`.
fn split_phases<'a>(phases: &Field<'a>) -> Result<Phases<'a>, ConfigFileError> {
    let (mut warmup, mut profiling): Phases<'a> = (None, None);
    for phase in items(phases) {
        let slot = if is_warmup(&phase)? {
            &mut warmup
        } else {
            &mut profiling
        };
        if slot.is_some() {
            return Err(phase.error(
                "more than one warmup or profiling phase is not available in aiperf-rs \
                 (one warmup phase, excluded from results, and one profiling phase)",
            ));
        }
        *slot = Some(phase);
    }
    Ok((warmup, profiling))
}

fn is_warmup(phase: &Field<'_>) -> Result<bool, ConfigFileError> {
    let Value::Map(entries) = &phase.node.value else {
        return Err(phase.error("expected a phase (a mapping with `type`)"));
    };
    let value_of = |name: &str| {
        entries
            .iter()
            .find(|e| super::reader::snake_case(&e.key) == name)
            .map(|e| &e.value.value)
    };
    let excluded = matches!(value_of("exclude_from_results"),
        Some(Value::Scalar { text, .. }) if text.eq_ignore_ascii_case("true"));
    let named_warmup = matches!(value_of("name"),
        Some(Value::Scalar { text, .. }) if text == "warmup");
    Ok(excluded || named_warmup)
}

fn ramp(field: &Field<'_>) -> Result<f64, ConfigFileError> {
    if let Value::Map(_) = field.node.value {
        let mut r = field.map()?;
        let duration = r
            .take("duration")
            .ok_or_else(|| field.error("missing `duration`"))?
            .seconds()?;
        r.finish(&["strategy"])?;
        Ok(duration)
    } else {
        field.seconds()
    }
}

fn read_profiling_phase(phase: &Field<'_>, load: &mut LoadConfig) -> Result<(), ConfigFileError> {
    let mut r = phase.map()?;
    r.take("name");
    if let Some(f) = r.take("exclude_from_results") {
        if f.boolean()? {
            return Err(f.error("the profiling phase cannot be excluded from the results"));
        }
    }
    let rate = r.take("rate").map(|f| f.number()).transpose()?;
    let kind = r.take("type");
    let kind_name = match &kind {
        Some(f) => f.string()?.replace('-', "_"),
        None if rate.is_some() => "poisson".to_owned(),
        None => "concurrency".to_owned(),
    };
    if let Some(f) = r.take("requests") {
        load.request_count = Some(f.count()?);
    }
    if let Some(f) = r.take("duration") {
        load.benchmark_duration = Some(f.seconds()?);
    }
    if let Some(f) = r.take("sessions") {
        load.num_sessions = Some(f.count()?);
    }
    if let Some(f) = r.take("concurrency") {
        load.concurrency = Some(f.count()?);
    }
    if let Some(f) = r.take("concurrency_ramp") {
        load.concurrency_ramp_duration = Some(ramp(&f)?);
    }
    if let Some(f) = r.take("prefill_concurrency") {
        load.prefill_concurrency = Some(f.count()?);
    }
    if let Some(f) = r.take("prefill_ramp") {
        load.prefill_concurrency_ramp_duration = Some(ramp(&f)?);
    }
    if let Some(f) = r.take("grace_period") {
        load.benchmark_grace_period = Some(f.seconds()?);
    }
    if let Some(f) = r.take("cancellation") {
        let mut c = f.map()?;
        if let Some(f) = c.take("rate") {
            load.request_cancellation_rate = Some(f.number()?);
        }
        if let Some(f) = c.take("delay") {
            load.request_cancellation_delay = Some(f.seconds()?);
        }
        c.finish(&[])?;
    }
    let needs_rate = |load: &mut LoadConfig, pattern: Option<ArrivalPattern>| {
        load.request_rate = rate;
        load.arrival_pattern = pattern;
    };
    match kind_name.as_str() {
        "concurrency" => {
            if rate.is_some() {
                return Err(phase.error(
                    "a concurrency phase takes no `rate`; use type poisson, constant or gamma",
                ));
            }
        }
        "poisson" => needs_rate(load, Some(ArrivalPattern::Poisson)),
        "constant" => needs_rate(load, Some(ArrivalPattern::Constant)),
        "gamma" => {
            needs_rate(load, Some(ArrivalPattern::Gamma));
            if let Some(f) = r.take("smoothness") {
                load.arrival_smoothness = Some(f.number()?);
            }
        }
        "user_centric" => {
            let users = r
                .take("users")
                .ok_or_else(|| phase.error("a user_centric phase needs `users`"))?
                .count()?;
            let rate = rate.ok_or_else(|| phase.error("a user_centric phase needs `rate`"))?;
            load.user_centric = Some(UserCentricConfig {
                rate,
                num_users: users,
            });
            load.num_users = Some(users);
        }
        "fixed_schedule" => {
            load.fixed_schedule.enabled = Some(true);
            if let Some(f) = r.take("auto_offset") {
                load.fixed_schedule.auto_offset = f.boolean()?;
            }
            if let Some(f) = r.take("start_offset") {
                load.fixed_schedule.start_offset_ms = Some(f.count()?);
            }
            if let Some(f) = r.take("end_offset") {
                load.fixed_schedule.end_offset_ms = Some(f.count()?);
            }
        }
        other => {
            let f = kind.unwrap_or_else(|| phase.clone());
            return Err(f.error(&format!(
                "unknown phase type {other:?}; expected concurrency, poisson, constant, gamma, \
                 user_centric or fixed_schedule"
            )));
        }
    }
    r.take("rate_ramp")
        .map(|f| ramp(&f).map(|secs| load.request_rate_ramp_duration = Some(secs)))
        .transpose()?;
    r.finish(REFUSED_PHASE_KEYS)
}

fn read_warmup_phase(phase: &Field<'_>, warmup: &mut WarmupConfig) -> Result<(), ConfigFileError> {
    let mut r = phase.map()?;
    r.take("name");
    r.take("exclude_from_results");
    let rate = r.take("rate").map(|f| f.number()).transpose()?;
    if let Some(f) = r.take("type") {
        warmup.arrival_pattern = match f.string()?.as_str() {
            "concurrency" => None,
            "poisson" => Some(ArrivalPattern::Poisson),
            "constant" => Some(ArrivalPattern::Constant),
            other => {
                return Err(f.error(&format!(
                    "a warmup phase of type {other:?} is not available in aiperf-rs; \
                     expected concurrency, poisson or constant"
                )))
            }
        };
    }
    warmup.request_rate = rate;
    if let Some(f) = r.take("requests") {
        warmup.request_count = Some(f.count()?);
    }
    if let Some(f) = r.take("duration") {
        warmup.duration = Some(f.seconds()?);
    }
    if let Some(f) = r.take("sessions") {
        warmup.num_sessions = Some(f.count()?);
    }
    if let Some(f) = r.take("concurrency") {
        warmup.concurrency = Some(f.count()?);
    }
    if let Some(f) = r.take("prefill_concurrency") {
        warmup.prefill_concurrency = Some(f.count()?);
    }
    if let Some(f) = r.take("grace_period") {
        warmup.grace_period = Some(f.seconds()?);
    }
    if let Some(f) = r.take("concurrency_ramp") {
        warmup.concurrency_ramp_duration = Some(ramp(&f)?);
    }
    if let Some(f) = r.take("rate_ramp") {
        warmup.request_rate_ramp_duration = Some(ramp(&f)?);
    }
    let mut refused = REFUSED_PHASE_KEYS.to_vec();
    refused.extend([
        "auto_offset",
        "cancellation",
        "end_offset",
        "prefill_ramp",
        "smoothness",
        "start_offset",
        "users",
    ]);
    r.finish(&refused)
}

fn read_artifacts(field: &Field<'_>, parts: &mut BenchmarkParts) -> Result<(), ConfigFileError> {
    let mut r = field.map()?;
    let output = &mut parts.config.output;
    if let Some(f) = r.take("dir") {
        output.artifact_dir = Some(f.string()?.into());
    }
    if let Some(f) = r.take("prefix") {
        output.export_prefix = Some(f.string()?);
    }
    if let Some(f) = r.take("slice_duration") {
        let secs = f.seconds()?;
        if secs <= 0.0 {
            return Err(f.error("must be greater than 0 seconds"));
        }
        parts.records.slice_duration = Some(saturating_secs(secs));
    }
    if let Some(f) = r.take("summary") {
        check_formats(&f, &["json", "csv"])?;
    }
    let records = match r.take("records") {
        Some(f) => check_formats(&f, &["jsonl"])?,
        None => true,
    };
    let raw = r
        .take("raw")
        .map(|f| f.boolean())
        .transpose()?
        .unwrap_or(false);
    output.export_level = if raw {
        ExportLevel::Raw
    } else if records {
        ExportLevel::Records
    } else {
        ExportLevel::Summary
    };
    if let Some(f) = r.take("trace") {
        parts.records.export_http_trace = f.boolean()?;
    }
    r.finish(&[
        "auto_plot",
        "export_outputs_json",
        "plot_required",
        "show_trace_timing",
        "user_files",
    ])
}

/// A list of formats (each one of `allowed`) or `false`; whether any is on.
fn check_formats(field: &Field<'_>, allowed: &[&str]) -> Result<bool, ConfigFileError> {
    if let Value::Scalar { .. } = field.node.value {
        if !field.boolean()? {
            return Ok(false);
        }
        return Err(field.error("expected a list of formats or false"));
    }
    let formats = field.strings()?;
    if let Some(bad) = formats.iter().find(|f| !allowed.contains(&f.as_str())) {
        return Err(field.error(&format!(
            "format {bad:?} is not available; expected {}",
            allowed.join(" or ")
        )));
    }
    Ok(!formats.is_empty())
}
