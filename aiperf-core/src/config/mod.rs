//! The benchmark configuration: what the CLI assembles and the engine runs.
//!
//! Every field has the default the Python AIPerf documents. [`BenchmarkConfig::validate`]
//! applies the cross-option rules (docs/cli-rules.md#validation-rules) and resolves
//! defaults that depend on other options (the stop condition, the arrival pattern),
//! returning a typed [`ConfigError`].

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod accuracy;
mod http;
mod input;
mod load;
mod validated;

pub use accuracy::{
    AccuracyBenchmark, AccuracyConfig, AccuracyGrader, CODE_EXECUTION_REFUSED, MAX_N_SHOTS,
};
pub use http::{check_header, check_urls, HeaderProblem};
pub use input::{
    parse_dataset_filters, AudioFormat, AudioOptions, CustomDatasetType, ImageFormat, ImageOptions,
    InputConfig, ModelSelectionStrategy, PromptCorpus, PromptOptions, PublicDataset,
    RandomCorpusStyle, RangeRatio, RankingsOptions, SeqDistPair, SequenceDistribution,
    SessionOptions, SpeedBenchVariant, TraceOptions, TraceSynthesis, TracelabJoin, VideoFormat,
    VideoOptions, VideoSynthType, DEFAULT_NUM_DATASET_ENTRIES, MIN_AUDIO_SECONDS,
    SPEED_BENCH_HUB_ID, SPEED_BENCH_HUB_SPLIT, SPEED_BENCH_VARIANTS, WEKA_HF,
};
pub use load::{
    parse_rate_series, ArrivalPattern, FixedScheduleConfig, LoadConfig, RateSeriesPoint, Shard,
    UserCentricConfig, WarmupConfig,
};
pub use validated::ValidatedConfig;

/// The whole benchmark configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkConfig {
    /// Where to send requests and how to format them.
    pub endpoint: EndpointConfig,
    /// What to send.
    pub input: InputConfig,
    /// When to send it, and when to stop.
    pub load: LoadConfig,
    /// Where results go.
    pub output: OutputConfig,
    /// Per-request SLOs (`tag` → threshold in the metric's display unit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goodput: Vec<(String, f64)>,
    /// Accuracy mode: a benchmark's questions are the prompts and the replies are graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<AccuracyConfig>,
}

/// Target server and request format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointConfig {
    /// Model names; the first is the primary model.
    pub models: Vec<String>,
    /// Base URLs (scheme included). Serialised without credentials, as API keys are not
    /// serialised at all.
    #[serde(serialize_with = "serialize_redacted_urls")]
    pub urls: Vec<String>,
    /// Endpoint type, e.g. `chat` or `completions`.
    pub endpoint_type: String,
    /// Path that replaces the endpoint type's default path.
    pub custom_endpoint: Option<String>,
    /// Ask for streamed responses.
    pub streaming: bool,
    /// Sent as `Authorization: Bearer …`. Never serialised.
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Extra headers for every request. Values are never serialised.
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
    /// Fields merged into every request body.
    pub extra_inputs: serde_json::Map<String, serde_json::Value>,
    /// Bound on each request (connect, send and the whole response).
    pub request_timeout: Duration,
    /// Send `max_tokens` instead of `max_completion_tokens` on chat.
    pub use_legacy_max_tokens: bool,
    /// Count tokens from the server's `usage` instead of the tokenizer.
    pub use_server_token_count: bool,
    /// Ask a streaming chat server for cumulative usage on every chunk
    /// (`stream_options.continuous_usage_stats`). Requires `use_server_token_count`,
    /// `streaming` and the `chat` endpoint type.
    #[serde(default)]
    pub per_chunk_usage: bool,
    /// The header that carries each conversation's id instead of `X-Correlation-ID`
    /// (e.g. `X-Session-ID` for a load balancer's session affinity).
    #[serde(default)]
    pub session_header: Option<String>,
    /// How request bodies are encoded (`--request-content-type`); `None` takes the
    /// endpoint type's own encoding. As in the Python AIPerf 0.13 the choice is checked,
    /// not converted: a type that uploads files only sends forms, the others only JSON
    /// (see [`check_request_content_type`](crate::endpoint::check_request_content_type)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_content_type: Option<crate::endpoint::RequestContentType>,
    /// For an asynchronous-job endpoint (`video_generation`): also download each finished
    /// job's result; the download's time counts in the request latency.
    #[serde(default)]
    pub download_video_content: bool,
    /// How long to wait between polls of an asynchronous job (the Python AIPerf's
    /// `AIPERF_HTTP_VIDEO_POLL_INTERVAL`), from 1 ms to 10 s.
    #[serde(default = "default_video_poll_interval")]
    pub video_poll_interval: Duration,
}

/// The Python AIPerf's default poll interval of asynchronous jobs: 0.1 s.
pub const DEFAULT_VIDEO_POLL_INTERVAL: Duration = Duration::from_millis(100);

fn default_video_poll_interval() -> Duration {
    DEFAULT_VIDEO_POLL_INTERVAL
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self {
            models: Vec::new(),
            urls: vec!["http://localhost:8000".into()],
            endpoint_type: "chat".into(),
            custom_endpoint: None,
            streaming: false,
            api_key: None,
            headers: Vec::new(),
            extra_inputs: serde_json::Map::new(),
            request_timeout: Duration::from_secs(21_600),
            use_legacy_max_tokens: false,
            use_server_token_count: false,
            per_chunk_usage: false,
            session_header: None,
            request_content_type: None,
            download_video_content: false,
            video_poll_interval: DEFAULT_VIDEO_POLL_INTERVAL,
        }
    }
}

impl EndpointConfig {
    /// Per-chunk usage needs the server's counts, a stream and the chat endpoint, the only
    /// one that asks for it (as in the Python AIPerf 0.13).
    fn check_per_chunk_usage(&self) -> Result<(), ConfigError> {
        if !self.per_chunk_usage {
            return Ok(());
        }
        let needs = if !self.use_server_token_count {
            "endpoint.use_server_token_count"
        } else if !self.streaming {
            "endpoint.streaming"
        } else if self.endpoint_type != "chat" {
            "endpoint.endpoint_type chat"
        } else {
            return Ok(());
        };
        Err(ConfigError::Requires {
            field: "endpoint.per_chunk_usage",
            needs,
        })
    }
}

/// How much is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportLevel {
    /// Summary JSON and CSV.
    Summary,
    /// Summary plus one JSONL line per request.
    #[default]
    Records,
    /// Records plus the raw request and response of each request.
    Raw,
}

/// Artifact locations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputConfig {
    /// `--artifact-dir`; `None` means `artifacts/<run name>`.
    pub artifact_dir: Option<PathBuf>,
    /// Base name of the export files.
    pub export_prefix: Option<String>,
    /// How much is written.
    pub export_level: ExportLevel,
}

/// The default grace period after `--benchmark-duration`, as documented upstream.
pub const DEFAULT_GRACE_PERIOD_SECS: f64 = 30.0;

/// Warned before a run when [`BenchmarkConfig::osl_without_length_control`] holds (the
/// Python AIPerf 0.13's words).
pub const OSL_WITHOUT_LENGTH_CONTROL: &str = "Using --osl without ignore_eos or min_tokens \
    in --extra-inputs. Output sequence length cannot be guaranteed unless the server honors \
    these parameters. Consider: --extra-inputs ignore_eos:true (generate until max_tokens) \
    or --extra-inputs min_tokens:<value> (set minimum output length).";
/// The warmup grace period unless given: wait for every warmup request.
pub const DEFAULT_WARMUP_GRACE_PERIOD_SECS: f64 = f64::INFINITY;
/// The default stop condition when none is given.
pub const DEFAULT_REQUEST_COUNT: u64 = 10;

/// A configuration that breaks a rule. The message names the fields involved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// No model name.
    #[error("no model given: pass at least one with endpoint.models")]
    NoModel,
    /// No URL.
    #[error("no URL given: pass at least one with endpoint.urls")]
    NoUrl,
    /// A number out of its range.
    #[error("{field} must be {rule}, got {value}")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The rule it breaks, e.g. "greater than 0".
        rule: &'static str,
        /// The value given.
        value: String,
    },
    /// A field that needs another.
    #[error("{field} requires {needs}")]
    Requires {
        /// The field given.
        field: &'static str,
        /// What it needs.
        needs: &'static str,
    },
    /// A value that does not parse; `reason` names the offending part.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong, quoting the part of the value at fault.
        reason: String,
    },
    /// Two fields that cannot be combined.
    #[error("{first} cannot be combined with {second}")]
    Conflict {
        /// One field.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
    /// A URL that cannot be sent to.
    #[error("invalid {field} {url:?}: {problem}")]
    InvalidUrl {
        /// The field holding it.
        field: &'static str,
        /// The URL as given, credentials replaced by `***`.
        url: String,
        /// What is wrong.
        problem: crate::url::UrlProblem,
    },
    /// A header that cannot be sent; its value is never quoted.
    #[error("invalid {field} {name:?}: {problem}")]
    InvalidHeader {
        /// The field holding it.
        field: &'static str,
        /// The header's name.
        name: String,
        /// What is wrong.
        problem: HeaderProblem,
    },
    /// A secret sent as a header value (an API key) that cannot be one; never quoted.
    #[error("invalid {field}: {problem}")]
    InvalidSecret {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: HeaderProblem,
    },
    /// A rule that needs a sentence of its own.
    #[error("{0}")]
    Rule(&'static str),
}

impl BenchmarkConfig {
    /// Checks every cross-option rule and fills the defaults that depend on other options:
    /// the arrival pattern (`concurrency_burst` without a rate, `poisson` with one) and the
    /// stop condition (10 requests when none is given).
    pub fn validate(mut self) -> Result<ValidatedConfig, ConfigError> {
        if self.endpoint.models.iter().all(|m| m.trim().is_empty()) {
            return Err(ConfigError::NoModel);
        }
        if self.endpoint.urls.is_empty() {
            return Err(ConfigError::NoUrl);
        }
        http::check_endpoint(&self.endpoint)?;
        positive(
            "endpoint.request_timeout",
            self.endpoint.request_timeout.as_secs_f64(),
        )?;
        let poll = self.endpoint.video_poll_interval;
        if !(Duration::from_millis(1)..=Duration::from_secs(10)).contains(&poll) {
            return Err(out_of_range(
                "endpoint.video_poll_interval",
                "from 0.001 to 10 seconds",
                poll.as_secs_f64(),
            ));
        }
        let load = &self.load;
        let stop_given = load.request_count.is_some()
            || load.benchmark_duration.is_some()
            || load.num_sessions.is_some();
        self.load.validate()?;
        if self.load.shard.is_some() && self.input.random_seed.is_none() {
            // Each shard would draw its own seed, so its own dataset and schedule.
            return Err(ConfigError::Requires {
                field: "load.shard",
                needs: "input.random_seed (--random-seed), so that every shard builds the \
                        same dataset and schedule",
            });
        }
        self.check_cross_section_rules()?;
        self.input.validate()?;
        if let Some(accuracy) = &self.accuracy {
            accuracy.validate()?;
        }
        let request_count_defaulted = !stop_given && self.load.request_count.is_some();
        Ok(ValidatedConfig::new(self, request_count_defaulted))
    }

    /// How many distinct conversations a synthetic dataset holds, as the Python AIPerf 0.13
    /// sizes it: `--num-dataset-entries` when given, else the sessions the run starts
    /// (`--num-sessions`), else the requests it sends (`--request-count`), else
    /// [`DEFAULT_NUM_DATASET_ENTRIES`]. So a 1,000-request run sends 1,000 different
    /// prompts rather than 100 prompts ten times, which a server's prefix cache would
    /// answer faster than real traffic.
    ///
    /// One difference: Python keeps 100 entries when no stop condition is given at all,
    /// and this counts the 10 requests validation defaults to, so every request sent is
    /// still a different prompt.
    pub fn dataset_entries(&self) -> usize {
        let run_size = self.load.num_sessions.or(self.load.request_count);
        match (self.input.num_dataset_entries, run_size) {
            (Some(entries), _) => entries,
            (None, Some(count)) => usize::try_from(count).unwrap_or(usize::MAX),
            (None, None) => DEFAULT_NUM_DATASET_ENTRIES,
        }
    }

    /// `--osl` is set but `--extra-inputs` has no truthy `ignore_eos` or `min_tokens`, so
    /// most servers may stop before the requested output length:
    /// [`OSL_WITHOUT_LENGTH_CONTROL`] applies.
    pub fn osl_without_length_control(&self) -> bool {
        let truthy = |key: &str| match self.endpoint.extra_inputs.get(key) {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|n| n != 0.0),
            Some(serde_json::Value::String(s)) => !s.is_empty(),
            Some(serde_json::Value::Array(a)) => !a.is_empty(),
            Some(serde_json::Value::Object(o)) => !o.is_empty(),
        };
        self.input.osl_mean.is_some() && !truthy("ignore_eos") && !truthy("min_tokens")
    }

    /// Rules that tie the load to the endpoint or the input (docs/cli-rules.md#validation-rules).
    /// A `baseten_trace` turn sets `min_tokens`, `hash_ids` and `block_size` from the
    /// trace, over `--extra-inputs`: a user value for one of them would be dropped
    /// silently, so it is refused unless the trace's own field is turned off (as the
    /// Python AIPerf 0.13 does).
    fn check_baseten_body_fields(&self) -> Result<(), ConfigError> {
        let trace = &self.input.trace;
        let per_turn = [
            (
                "min_tokens",
                !trace.omit_min_tokens,
                "--no-force-min-tokens",
            ),
            ("hash_ids", !trace.omit_kv_hints, "--omit-kv-hints"),
            ("block_size", !trace.omit_kv_hints, "--omit-kv-hints"),
        ];
        for (key, set_per_turn, opt_out) in per_turn {
            if set_per_turn && self.endpoint.extra_inputs.contains_key(key) {
                return Err(ConfigError::Invalid {
                    field: "endpoint.extra_inputs",
                    reason: format!(
                        "{key} is set on every baseten_trace request from the trace; pass \
                         {opt_out} to send your value instead"
                    ),
                });
            }
        }
        Ok(())
    }

    fn check_cross_section_rules(&self) -> Result<(), ConfigError> {
        self.endpoint.check_per_chunk_usage()?;
        self.input
            .model_selection
            .check(self.endpoint.models.len())?;
        let load = &self.load;
        if !self.endpoint.streaming {
            if load.prefill_concurrency.is_some() {
                return Err(ConfigError::Requires {
                    field: "load.prefill_concurrency",
                    needs: "endpoint.streaming",
                });
            }
            if load.warmup.prefill_concurrency.is_some() {
                return Err(ConfigError::Requires {
                    field: "load.warmup.prefill_concurrency",
                    needs: "endpoint.streaming",
                });
            }
        }
        let input = &self.input;
        if load.fixed_schedule.is_enabled() && input.sampling_strategy.is_some() {
            return Err(ConfigError::Conflict {
                first: "input.sampling_strategy",
                second: "load.fixed_schedule.enabled",
            });
        }
        if input.public_dataset.is_some() && input.custom_dataset_type.is_some() {
            return Err(ConfigError::Conflict {
                first: "input.public_dataset",
                second: "input.custom_dataset_type",
            });
        }
        if input
            .custom_dataset_type
            .is_some_and(|t| t.needs_input_file())
            && input.input_file.is_none()
        {
            return Err(ConfigError::Requires {
                field: "input.custom_dataset_type",
                needs: "input.input_file",
            });
        }
        if input.custom_dataset_type == Some(CustomDatasetType::BasetenTrace) {
            self.check_baseten_body_fields()?;
        }
        let fixed = &load.fixed_schedule;
        if let Some(field) = fixed.offset_field() {
            if !fixed.is_enabled() && input.input_file.is_none() {
                return Err(ConfigError::Requires {
                    field,
                    needs: "load.fixed_schedule.enabled (or a trace with timestamps)",
                });
            }
        }
        if load.fixed_schedule.is_enabled()
            && input.input_file.is_none()
            && input.public_dataset.is_none()
        {
            return Err(ConfigError::Requires {
                field: "load.fixed_schedule.enabled",
                needs: "input.input_file with timestamps",
            });
        }
        Ok(())
    }

    /// Whether requests ask for a streamed response: streaming is configured and the
    /// endpoint `info` describes can stream.
    pub fn streams_with(&self, info: &crate::EndpointInfo) -> bool {
        self.endpoint.streaming && info.supports_streaming
    }

    /// The full URL each base URL's requests go to: the base URL joined to the custom
    /// endpoint path, or to the endpoint's own path for the streaming it gets.
    pub fn request_urls(&self, info: &crate::EndpointInfo) -> Vec<String> {
        let path = info.path(self.streams_with(info));
        self.endpoint
            .urls
            .iter()
            .map(|base| crate::url::build_url(base, self.endpoint.custom_endpoint.as_deref(), path))
            .collect()
    }

    /// The primary model (the first one).
    pub fn primary_model(&self) -> &str {
        self.endpoint.models.first().map_or("", String::as_str)
    }

    /// The grace period after the duration elapses (an infinite one is `Duration::MAX`).
    pub fn grace_period(&self) -> Duration {
        let secs = self
            .load
            .benchmark_grace_period
            .unwrap_or(DEFAULT_GRACE_PERIOD_SECS);
        if secs.is_finite() {
            crate::clock::saturating_secs(secs)
        } else {
            Duration::MAX
        }
    }
}

fn serialize_redacted_urls<S: serde::Serializer>(
    urls: &[String],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(urls.iter().map(|url| crate::url::redact_credentials(url)))
}

pub(crate) fn out_of_range(
    field: &'static str,
    rule: &'static str,
    value: impl ToString,
) -> ConfigError {
    ConfigError::OutOfRange {
        field,
        rule,
        value: value.to_string(),
    }
}

pub(crate) fn positive(field: &'static str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(out_of_range(field, "greater than 0", value))
    }
}

pub(crate) fn non_negative(field: &'static str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(out_of_range(field, "0 or more", value))
    }
}

pub(crate) fn at_least_one(field: &'static str, value: u64) -> Result<(), ConfigError> {
    if value >= 1 {
        Ok(())
    } else {
        Err(out_of_range(field, "at least 1", value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> BenchmarkConfig {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        config
    }

    #[test]
    fn defaults_resolve_to_ten_requests_in_burst_mode() {
        let config = base().validate().unwrap();
        assert_eq!(config.load.request_count, Some(10));
        assert_eq!(
            config.load.arrival_pattern,
            Some(ArrivalPattern::ConcurrencyBurst)
        );
        assert_eq!(config.grace_period(), Duration::from_secs(30));
    }

    #[test]
    fn osl_needs_a_truthy_ignore_eos_or_min_tokens() {
        let with = |extra: serde_json::Value| {
            let mut config = base();
            config.input.osl_mean = Some(32);
            config.endpoint.extra_inputs = extra.as_object().cloned().unwrap_or_default();
            config.osl_without_length_control()
        };
        assert!(
            !base().osl_without_length_control(),
            "no input.osl_mean, nothing to warn"
        );
        assert!(with(serde_json::json!({})));
        assert!(with(serde_json::json!({"temperature": 0})));
        assert!(with(
            serde_json::json!({"ignore_eos": false, "min_tokens": 0})
        ));
        assert!(with(serde_json::json!({"ignore_eos": ""})));
        assert!(!with(serde_json::json!({"ignore_eos": true})));
        assert!(!with(serde_json::json!({"ignore_eos": "true"})));
        assert!(!with(serde_json::json!({"min_tokens": 32})));
    }

    #[test]
    fn extra_inputs_a_baseten_trace_sets_per_turn_are_refused_unless_turned_off() {
        let validate = |extra: serde_json::Value, omit_kv_hints: bool, omit_min_tokens: bool| {
            let mut config = base();
            config.input.input_file = Some("trace.parquet".into());
            config.input.custom_dataset_type = Some(CustomDatasetType::BasetenTrace);
            config.input.trace.omit_kv_hints = omit_kv_hints;
            config.input.trace.omit_min_tokens = omit_min_tokens;
            config.endpoint.extra_inputs = extra.as_object().cloned().unwrap_or_default();
            config.validate().map(|_| ()).map_err(|e| e.to_string())
        };
        let refused = |key: &str, flag: &str| {
            Err(format!(
                "invalid endpoint.extra_inputs: {key} is set on every baseten_trace request \
                 from the trace; pass {flag} to send your value instead"
            ))
        };
        let min_tokens = serde_json::json!({"min_tokens": 4});
        assert_eq!(
            validate(min_tokens.clone(), false, false),
            refused("min_tokens", "--no-force-min-tokens")
        );
        assert_eq!(validate(min_tokens, false, true), Ok(()));
        let hints = serde_json::json!({"block_size": 32});
        assert_eq!(
            validate(hints.clone(), false, true),
            refused("block_size", "--omit-kv-hints")
        );
        assert_eq!(validate(hints, true, false), Ok(()));
        assert_eq!(
            validate(serde_json::json!({"temperature": 0}), false, false),
            Ok(())
        );
    }

    #[test]
    fn the_dataset_holds_one_entry_per_request_or_session_unless_told() {
        let entries = |change: fn(&mut BenchmarkConfig)| {
            let mut config = base();
            change(&mut config);
            config.dataset_entries()
        };
        assert_eq!(entries(|_| {}), DEFAULT_NUM_DATASET_ENTRIES);
        assert_eq!(entries(|c| c.load.request_count = Some(1000)), 1000);
        assert_eq!(entries(|c| c.load.num_sessions = Some(30)), 30);
        // Sessions name the conversations; requests count their turns.
        assert_eq!(
            entries(|c| {
                c.load.request_count = Some(1000);
                c.load.num_sessions = Some(30);
            }),
            30
        );
        assert_eq!(
            entries(|c| {
                c.load.request_count = Some(1000);
                c.input.num_dataset_entries = Some(5);
            }),
            5
        );
        // Validation's default stop condition (10 requests) sizes it too.
        assert_eq!(base().validate().unwrap().dataset_entries(), 10);
    }

    #[test]
    fn a_rate_defaults_to_poisson() {
        let mut config = base();
        config.load.request_rate = Some(5.0);
        let config = config.validate().unwrap();
        assert_eq!(config.load.arrival_pattern, Some(ArrivalPattern::Poisson));
    }

    #[test]
    fn grace_without_duration_is_rejected() {
        let mut config = base();
        config.load.benchmark_grace_period = Some(5.0);
        assert_eq!(
            config.validate(),
            Err(ConfigError::Requires {
                field: "load.benchmark_grace_period",
                needs: "load.benchmark_duration"
            })
        );
    }

    #[test]
    fn smoothness_needs_gamma() {
        let mut config = base();
        config.load.request_rate = Some(5.0);
        config.load.arrival_smoothness = Some(2.0);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::Requires {
                field: "load.arrival_smoothness",
                ..
            })
        ));
    }

    #[test]
    fn burst_pattern_with_a_rate_conflicts() {
        let mut config = base();
        config.load.request_rate = Some(5.0);
        config.load.arrival_pattern = Some(ArrivalPattern::ConcurrencyBurst);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::Conflict { .. })
        ));
    }

    #[test]
    fn zero_concurrency_is_out_of_range() {
        let mut config = base();
        config.load.concurrency = Some(0);
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "load.concurrency must be at least 1, got 0"
        );
    }

    #[test]
    fn secrets_are_not_serialised() {
        let mut config = base();
        config.endpoint.api_key = Some("sk-secret".into());
        config.endpoint.headers = vec![("Authorization".into(), "Bearer x".into())];
        let json = serde_json::to_string(&config).unwrap();
        assert!(!json.contains("sk-secret") && !json.contains("Bearer"));
    }
}
