//! The benchmark configuration: what the CLI assembles and the engine runs.
//!
//! Every field has the default the Python AIPerf documents. [`BenchmarkConfig::validate`]
//! applies the cross-option rules (SPEC §1.4) and resolves defaults that depend on other
//! options (the stop condition, the arrival pattern), returning a typed [`ConfigError`].

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod input;

pub use input::{
    AudioFormat, AudioOptions, CustomDatasetType, ImageFormat, ImageOptions, InputConfig,
    ModelSelectionStrategy, PromptOptions, PublicDataset, RankingsOptions, SeqDistPair,
    SequenceDistribution, SessionOptions, VideoFormat, VideoOptions, VideoSynthType,
    DEFAULT_NUM_DATASET_ENTRIES, MIN_AUDIO_SECONDS,
};

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
}

/// Target server and request format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointConfig {
    /// Model names; the first is the primary model.
    pub models: Vec<String>,
    /// Base URLs (scheme included).
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
        }
    }
}

/// How arrivals are spaced in request-rate mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalPattern {
    /// Exponential gaps (Poisson process).
    Poisson,
    /// Equal gaps of exactly 1/rate.
    Constant,
    /// Gamma gaps with shape `arrival_smoothness`.
    Gamma,
    /// No gaps: closed loop at the concurrency limit.
    ConcurrencyBurst,
}

impl ArrivalPattern {
    /// The name of the random stream that draws this pattern's gaps.
    pub fn seed_stream(&self) -> &'static str {
        match self {
            ArrivalPattern::Poisson | ArrivalPattern::Constant => "timing.request.poisson_interval",
            ArrivalPattern::Gamma => "timing.request.gamma_interval",
            ArrivalPattern::ConcurrencyBurst => "timing.request.concurrency_burst",
        }
    }

    /// The `--arrival-pattern` spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            ArrivalPattern::Poisson => "poisson",
            ArrivalPattern::Constant => "constant",
            ArrivalPattern::Gamma => "gamma",
            ArrivalPattern::ConcurrencyBurst => "concurrency_burst",
        }
    }
}

/// The load shape and stop conditions of the profiling phase (and its warmup).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadConfig {
    /// Maximum requests in flight (closed loop without a rate; a cap with one).
    pub concurrency: Option<usize>,
    /// Target requests per second (open loop).
    pub request_rate: Option<f64>,
    /// Gap distribution in rate mode.
    pub arrival_pattern: Option<ArrivalPattern>,
    /// Gamma shape for `ArrivalPattern::Gamma`.
    pub arrival_smoothness: Option<f64>,
    /// Stop after this many requests.
    pub request_count: Option<u64>,
    /// Stop sending after this many seconds.
    pub benchmark_duration: Option<f64>,
    /// Seconds to wait for in-flight requests after the duration (default 30).
    pub benchmark_grace_period: Option<f64>,
    /// Requests in the warmup phase.
    pub warmup_request_count: Option<u64>,
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
/// The default stop condition when none is given.
pub const DEFAULT_REQUEST_COUNT: u64 = 10;

/// A configuration that breaks a rule. The message names the flags involved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// No model name.
    #[error("no model given: pass at least one with --model")]
    NoModel,
    /// No URL.
    #[error("no URL given: pass at least one with --url")]
    NoUrl,
    /// A number out of its range.
    #[error("{flag} must be {rule}, got {value}")]
    OutOfRange {
        /// The flag.
        flag: &'static str,
        /// The rule it breaks, e.g. "greater than 0".
        rule: &'static str,
        /// The value given.
        value: String,
    },
    /// A flag that needs another.
    #[error("{flag} requires {needs}")]
    Requires {
        /// The flag given.
        flag: &'static str,
        /// What it needs.
        needs: &'static str,
    },
    /// A value that does not parse; `reason` names the offending part.
    #[error("invalid {flag}: {reason}")]
    Invalid {
        /// The flag.
        flag: &'static str,
        /// What is wrong, quoting the part of the value at fault.
        reason: String,
    },
    /// Two flags that cannot be combined.
    #[error("{first} cannot be combined with {second}")]
    Conflict {
        /// One flag.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
}

impl BenchmarkConfig {
    /// Checks every cross-option rule and fills the defaults that depend on other options:
    /// the arrival pattern (`concurrency_burst` without a rate, `poisson` with one) and the
    /// stop condition (10 requests when none is given).
    pub fn validate(mut self) -> Result<Self, ConfigError> {
        if self.endpoint.models.iter().all(|m| m.trim().is_empty()) {
            return Err(ConfigError::NoModel);
        }
        if self.endpoint.urls.is_empty() {
            return Err(ConfigError::NoUrl);
        }
        positive(
            "--request-timeout-seconds",
            self.endpoint.request_timeout.as_secs_f64(),
        )?;
        let load = &mut self.load;
        if let Some(c) = load.concurrency {
            at_least_one("--concurrency", c as u64)?;
        }
        if let Some(n) = load.request_count {
            at_least_one("--request-count", n)?;
        }
        if let Some(n) = load.warmup_request_count {
            at_least_one("--warmup-request-count", n)?;
        }
        if let Some(rate) = load.request_rate {
            positive("--request-rate", rate)?;
        }
        if let Some(d) = load.benchmark_duration {
            positive("--benchmark-duration", d)?;
        }
        if let Some(g) = load.benchmark_grace_period {
            if load.benchmark_duration.is_none() {
                return Err(ConfigError::Requires {
                    flag: "--benchmark-grace-period",
                    needs: "--benchmark-duration",
                });
            }
            if g.is_nan() || g < 0.0 {
                return Err(out_of_range("--benchmark-grace-period", "0 or more", g));
            }
        }
        match (load.request_rate, load.arrival_pattern) {
            (Some(_), Some(ArrivalPattern::ConcurrencyBurst)) => {
                return Err(ConfigError::Conflict {
                    first: "--arrival-pattern concurrency_burst",
                    second: "--request-rate",
                })
            }
            (Some(_), None) => load.arrival_pattern = Some(ArrivalPattern::Poisson),
            (None, Some(p)) if p != ArrivalPattern::ConcurrencyBurst => {
                return Err(ConfigError::Requires {
                    flag: "--arrival-pattern",
                    needs: "--request-rate",
                })
            }
            (None, _) => load.arrival_pattern = Some(ArrivalPattern::ConcurrencyBurst),
            (Some(_), Some(_)) => {}
        }
        if let Some(s) = load.arrival_smoothness {
            if load.arrival_pattern != Some(ArrivalPattern::Gamma) {
                return Err(ConfigError::Requires {
                    flag: "--arrival-smoothness",
                    needs: "--arrival-pattern gamma",
                });
            }
            positive("--arrival-smoothness", s)?;
        }
        if load.request_count.is_none() && load.benchmark_duration.is_none() {
            load.request_count = Some(DEFAULT_REQUEST_COUNT);
        }
        self.input.validate()?;
        Ok(self)
    }

    /// The primary model (the first one).
    pub fn primary_model(&self) -> &str {
        self.endpoint
            .models
            .first()
            .map(String::as_str)
            .unwrap_or("")
    }

    /// The grace period after the duration elapses.
    pub fn grace_period(&self) -> Duration {
        let secs = self
            .load
            .benchmark_grace_period
            .unwrap_or(DEFAULT_GRACE_PERIOD_SECS);
        if secs.is_finite() {
            Duration::from_secs_f64(secs)
        } else {
            Duration::MAX
        }
    }
}

pub(crate) fn out_of_range(
    flag: &'static str,
    rule: &'static str,
    value: impl ToString,
) -> ConfigError {
    ConfigError::OutOfRange {
        flag,
        rule,
        value: value.to_string(),
    }
}

pub(crate) fn positive(flag: &'static str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(out_of_range(flag, "greater than 0", value))
    }
}

pub(crate) fn non_negative(flag: &'static str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(out_of_range(flag, "0 or more", value))
    }
}

pub(crate) fn at_least_one(flag: &'static str, value: u64) -> Result<(), ConfigError> {
    if value >= 1 {
        Ok(())
    } else {
        Err(out_of_range(flag, "at least 1", value))
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
                flag: "--benchmark-grace-period",
                needs: "--benchmark-duration"
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
                flag: "--arrival-smoothness",
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
            "--concurrency must be at least 1, got 0"
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
