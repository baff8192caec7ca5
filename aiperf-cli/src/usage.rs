//! The library's errors in the words of the command line: where a library message names
//! a configuration field (`load.request_count`), the console names the flag that sets it
//! (`--request-count`).

use aiperf_endpoints::readiness::ReadinessError;
use aiperf_runner::{RunError, WorkloadError};

/// `error`'s message as `aiperf profile` prints it.
pub(crate) fn message(error: &RunError) -> String {
    let text = match error {
        RunError::Workload(WorkloadError::UserCentricNeedsSessions) => {
            "--user-centric-rate needs multi-turn conversations (--session-turns-mean 2 or \
             more); use --request-rate for single-turn workloads"
                .into()
        }
        RunError::Workload(WorkloadError::OffsetWithoutSchedule(flag)) => {
            format!("{flag} requires --fixed-schedule, or a trace whose entries have timestamps")
        }
        RunError::Workload(WorkloadError::EmptyReplayWindow) => {
            "no trace entry lies within --fixed-schedule-start-offset and \
             --fixed-schedule-end-offset"
                .into()
        }
        RunError::NotReady(ReadinessError::NotReady {
            base,
            timeout,
            problem,
        }) => format!(
            "{base} was not ready within {} s (--wait-for-model-timeout): {problem}",
            timeout.as_secs_f64()
        ),
        other => other.to_string(),
    };
    flag_words(&text)
}

/// `text` with every configuration field the flags set replaced by its flag.
pub(crate) fn flag_words(text: &str) -> String {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while let Some(c) = rest.chars().next() {
        let starts_a_word = !out.chars().next_back().is_some_and(is_name_char);
        if starts_a_word {
            // Longest first: `enabled=false` before `enabled`, `concurrency_ramp_duration`
            // is not `concurrency`.
            for (field, flag) in FIELDS_LONGEST_FIRST.iter() {
                if let Some(after) = rest.strip_prefix(field) {
                    if !after
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        out.push_str(flag);
                        rest = after;
                        continue 'scan;
                    }
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// [`FIELD_FLAGS`] ordered longest field first.
static FIELDS_LONGEST_FIRST: std::sync::LazyLock<Vec<(&str, &str)>> =
    std::sync::LazyLock::new(|| {
        let mut fields = FIELD_FLAGS.to_vec();
        fields.sort_by_key(|(field, _)| std::cmp::Reverse(field.len()));
        fields
    });

/// Each configuration field a `profile` flag sets, as the library's messages name it
/// (`telemetry.*`: the run specification's telemetry options).
const FIELD_FLAGS: [(&str, &str); 107] = [
    ("endpoint.api_key", "--api-key"),
    (
        "endpoint.download_video_content",
        "--download-video-content",
    ),
    (
        "endpoint.video_poll_interval",
        "AIPERF_HTTP_VIDEO_POLL_INTERVAL",
    ),
    ("endpoint.endpoint_type", "--endpoint-type"),
    ("endpoint.per_chunk_usage", "--per-chunk-usage"),
    ("endpoint.session_header", "--session-header"),
    (
        "endpoint.use_server_token_count",
        "--use-server-token-count",
    ),
    ("load.arrival_pattern", "--arrival-pattern"),
    ("load.arrival_smoothness", "--arrival-smoothness"),
    ("input.audio.depths", "--audio-depths"),
    ("input.audio.format", "--audio-format"),
    ("input.audio.length_mean", "--audio-length-mean"),
    ("input.audio.length_stddev", "--audio-length-stddev"),
    ("input.audio.num_channels", "--audio-num-channels"),
    ("input.audio.sample_rates_khz", "--audio-sample-rates"),
    ("load.benchmark_duration", "--benchmark-duration"),
    ("load.benchmark_grace_period", "--benchmark-grace-period"),
    ("load.concurrency", "--concurrency"),
    (
        "load.concurrency_ramp_duration",
        "--concurrency-ramp-duration",
    ),
    ("input.custom_dataset_type", "--custom-dataset-type"),
    (
        "load.failed_request_threshold",
        "--failed-request-threshold",
    ),
    ("input.sampling_strategy", "--dataset-sampling-strategy"),
    ("telemetry.gpu_urls", "--gpu-telemetry"),
    ("endpoint.headers", "--header"),
    ("endpoint.extra_inputs", "--extra-inputs"),
    ("load.fixed_schedule.enabled=false", "--no-fixed-schedule"),
    ("load.fixed_schedule.enabled", "--fixed-schedule"),
    (
        "load.fixed_schedule.auto_offset",
        "--fixed-schedule-auto-offset",
    ),
    (
        "load.fixed_schedule.end_offset_ms",
        "--fixed-schedule-end-offset",
    ),
    (
        "load.fixed_schedule.start_offset_ms",
        "--fixed-schedule-start-offset",
    ),
    ("input.image.height_mean", "--image-height-mean"),
    ("input.image.height_stddev", "--image-height-stddev"),
    ("input.image.width_mean", "--image-width-mean"),
    ("input.image.width_stddev", "--image-width-stddev"),
    ("input.input_file", "--input-file"),
    ("input.isl_mean", "--isl"),
    ("input.isl_block_size", "--isl-block-size"),
    ("input.isl_stddev", "--isl-stddev"),
    ("endpoint.models", "--model"),
    ("input.num_dataset_entries", "--num-dataset-entries"),
    ("load.num_sessions", "--num-sessions"),
    ("load.shard", "--shard"),
    ("load.num_users", "--num-users"),
    ("load.warmup.num_sessions", "--num-warmup-sessions"),
    ("input.osl_mean", "--osl"),
    ("input.osl_stddev", "--osl-stddev"),
    ("load.prefill_concurrency", "--prefill-concurrency"),
    (
        "load.prefill_concurrency_ramp_duration",
        "--prefill-concurrency-ramp-duration",
    ),
    ("input.prompt.batch_size", "--prompt-batch-size"),
    ("input.prompt.prefix_length", "--prompt-prefix-length"),
    ("input.prompt.prefix_pool_size", "--prompt-prefix-pool-size"),
    ("input.public_dataset", "--public-dataset"),
    ("input.rankings.passages_mean", "--rankings-passages-mean"),
    (
        "input.rankings.passage_tokens_mean",
        "--rankings-passages-prompt-token-mean",
    ),
    (
        "input.rankings.passage_tokens_stddev",
        "--rankings-passages-prompt-token-stddev",
    ),
    (
        "input.rankings.passages_stddev",
        "--rankings-passages-stddev",
    ),
    (
        "input.rankings.query_tokens_mean",
        "--rankings-query-prompt-token-mean",
    ),
    (
        "input.rankings.query_tokens_stddev",
        "--rankings-query-prompt-token-stddev",
    ),
    (
        "load.request_cancellation_delay",
        "--request-cancellation-delay",
    ),
    (
        "load.request_cancellation_rate",
        "--request-cancellation-rate",
    ),
    ("load.request_count", "--request-count"),
    ("load.request_rate", "--request-rate"),
    ("load.request_rate_series", "--request-rate-series"),
    (
        "load.request_rate_ramp_duration",
        "--request-rate-ramp-duration",
    ),
    ("endpoint.request_timeout", "--request-timeout-seconds"),
    ("input.sequence_distribution", "--seq-dist"),
    ("telemetry.server_urls", "--server-metrics"),
    ("input.session.delay_ratio", "--session-delay-ratio"),
    ("input.session.delay_mean_ms", "--session-turn-delay-mean"),
    (
        "input.session.delay_stddev_ms",
        "--session-turn-delay-stddev",
    ),
    (
        "input.prompt.shared_system_length",
        "--shared-system-prompt-length",
    ),
    ("endpoint.streaming", "--streaming"),
    ("endpoint.urls", "--url"),
    ("load.user_centric.rate", "--user-centric-rate"),
    (
        "input.prompt.user_context_length",
        "--user-context-prompt-length",
    ),
    ("input.video.duration", "--video-duration"),
    ("input.video.fps", "--video-fps"),
    ("input.video.height", "--video-height"),
    ("input.video.width", "--video-width"),
    ("load.warmup.arrival_pattern", "--warmup-arrival-pattern"),
    ("load.warmup.concurrency", "--warmup-concurrency"),
    ("load.warmup.duration", "--warmup-duration"),
    ("load.warmup.grace_period", "--warmup-grace-period"),
    (
        "load.warmup.prefill_concurrency",
        "--warmup-prefill-concurrency",
    ),
    ("load.warmup.request_count", "--warmup-request-count"),
    ("load.warmup.request_rate", "--warmup-request-rate"),
    ("input.prompt.system_prompt_file", "--system-prompt-file"),
    ("input.prompt.system_prompt", "--system-prompt"),
    ("input.tokenizer_revision", "--tokenizer-revision"),
    ("input.trace.ignore_delays", "--ignore-trace-delays"),
    ("input.trace.use_think_time_only", "--use-think-time-only"),
    (
        "input.trace.session_sample_ratio",
        "--trace-session-sample-ratio",
    ),
    ("input.trace.replay_speedup", "--replay-speedup"),
    ("input.trace.max_context_length", "--max-context-length"),
    (
        "input.trace.synthesis.speedup_ratio",
        "--synthesis-speedup-ratio",
    ),
    (
        "input.trace.synthesis.prefix_len_multiplier",
        "--synthesis-prefix-len-multiplier",
    ),
    (
        "input.trace.synthesis.prefix_root_multiplier",
        "--synthesis-prefix-root-multiplier",
    ),
    (
        "input.trace.synthesis.prompt_len_multiplier",
        "--synthesis-prompt-len-multiplier",
    ),
    (
        "input.trace.synthesis.output_len_multiplier",
        "--synthesis-output-len-multiplier",
    ),
    ("input.trace.synthesis.max_isl", "--synthesis-max-isl"),
    ("input.trace.synthesis.max_osl", "--synthesis-max-osl"),
    ("input.trace.synthesis", "--synthesis-*"),
    ("input.dataset_filters", "--dataset-filter"),
    ("input.random_range_ratio", "--random-range-ratio"),
    ("input.prompt.random_corpus_style", "--random-corpus-style"),
    ("input.prompt.corpus", "--prompt-corpus"),
    ("input.cache_bust", "--cache-bust"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_become_flags() {
        assert_eq!(
            flag_words("load.benchmark_grace_period requires load.benchmark_duration"),
            "--benchmark-grace-period requires --benchmark-duration"
        );
        assert_eq!(
            flag_words("load.concurrency_ramp_duration and load.concurrency."),
            "--concurrency-ramp-duration and --concurrency."
        );
        assert_eq!(
            flag_words("pass load.fixed_schedule.enabled=false or load.fixed_schedule.enabled"),
            "pass --no-fixed-schedule or --fixed-schedule"
        );
        // Not a field: left alone.
        assert_eq!(flag_words("myload.concurrency x"), "myload.concurrency x");
    }

    #[test]
    fn every_field_is_a_real_configuration_path() {
        let mut config = aiperf_core::BenchmarkConfig::default();
        // Optional sections are absent by default; give them a value to walk into.
        config.load.user_centric = Some(aiperf_core::config::UserCentricConfig {
            rate: 1.0,
            num_users: 1,
        });
        config.load.request_rate_series = Some(Vec::new());
        config.load.failed_request_threshold = Some(0.5);
        config.load.shard = aiperf_core::config::Shard::new(0, 2);
        let mut config = serde_json::to_value(config).unwrap();
        config["telemetry"] =
            serde_json::to_value(aiperf_runner::TelemetryOptions::default()).unwrap();
        // Secrets are never serialised, so they are not in the JSON; this pattern stops
        // compiling if they are renamed.
        let secrets = ["endpoint.api_key", "endpoint.headers"];
        let aiperf_core::config::EndpointConfig {
            api_key: _,
            headers: _,
            ..
        } = aiperf_core::config::EndpointConfig::default();
        for (field, flag) in FIELD_FLAGS {
            if secrets.contains(&field) {
                continue;
            }
            let path = field.trim_end_matches("=false");
            let mut value = &config;
            for key in path.split('.') {
                value = value
                    .get(key)
                    .unwrap_or_else(|| panic!("{flag}: {path} is not a configuration field"));
            }
        }
    }
}
