//! A configuration that passed validation and cannot be changed into one that did not.

use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{BenchmarkConfig, ConfigError};

/// A [`BenchmarkConfig`] that passed [`BenchmarkConfig::validate`]. It reads like the
/// configuration (it derefs to it) but cannot be changed in place: every change goes
/// through [`modified`](Self::modified) or a named adjustment, which validate the result
/// again, so a run can never start from a configuration that breaks a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedConfig {
    config: BenchmarkConfig,
    /// Validation chose the default stop condition (10 requests) because none was given;
    /// a replay of timestamps sends the whole trace instead.
    request_count_defaulted: bool,
}

impl ValidatedConfig {
    pub(super) fn new(config: BenchmarkConfig, request_count_defaulted: bool) -> Self {
        Self {
            config,
            request_count_defaulted,
        }
    }

    /// Whether no stop condition was given and validation put in the default request
    /// count (a dataset that should be sent once, such as accuracy questions, replaces it).
    pub fn request_count_defaulted(&self) -> bool {
        self.request_count_defaulted
    }

    /// The configuration, to change and validate again.
    pub fn into_inner(self) -> BenchmarkConfig {
        self.config
    }

    /// The configuration after `change`, validated again. Defaults that validation
    /// filled in stay filled in.
    pub fn modified(self, change: impl FnOnce(&mut BenchmarkConfig)) -> Result<Self, ConfigError> {
        let mut config = self.config;
        change(&mut config);
        config.validate()
    }

    /// A dataset with timestamps replays them: the fixed schedule is turned on, and the
    /// request count, unless it was given, becomes the whole trace rather than the
    /// default. Options that contradict a replay fail as for an explicit fixed schedule.
    pub fn replaying_timestamps(self) -> Result<Self, ConfigError> {
        let drop_count = self.request_count_defaulted;
        self.modified(|config| {
            config.load.fixed_schedule.enabled = Some(true);
            if drop_count {
                config.load.request_count = None;
            }
        })
    }

    /// A dataset whose sessions start other sessions (branches) is sent one whole
    /// session tree at a time: unless a stop condition was given, the run starts each of
    /// its `roots` once rather than stopping at the default request count, which would
    /// cut a tree short (the Python AIPerf 0.13's default for `dag_jsonl` files).
    pub fn sending_each_session_tree(self, roots: u64) -> Result<Self, ConfigError> {
        if !self.request_count_defaulted {
            return Ok(self);
        }
        self.modified(|config| {
            config.load.request_count = None;
            config.load.num_sessions = Some(roots.max(1));
        })
    }

    /// The configuration with `random_seed` set, drawing one when none was given, so
    /// that a run records the seed it used.
    #[must_use]
    pub fn with_seed_drawn(self, draw: impl FnOnce() -> u64) -> Self {
        if self.config.input.random_seed.is_some() {
            return self;
        }
        let mut config = self;
        // The seed takes part in no rule: setting it keeps the configuration valid.
        config.config.input.random_seed = Some(draw());
        config
    }
}

impl Deref for ValidatedConfig {
    type Target = BenchmarkConfig;

    fn deref(&self) -> &BenchmarkConfig {
        &self.config
    }
}

impl AsRef<BenchmarkConfig> for ValidatedConfig {
    fn as_ref(&self) -> &BenchmarkConfig {
        &self.config
    }
}

impl TryFrom<BenchmarkConfig> for ValidatedConfig {
    type Error = ConfigError;

    fn try_from(config: BenchmarkConfig) -> Result<Self, ConfigError> {
        config.validate()
    }
}

/// Written as the configuration it holds.
impl Serialize for ValidatedConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.config.serialize(serializer)
    }
}

/// Read as a configuration and validated: an invalid one fails to deserialize.
impl<'de> Deserialize<'de> for ValidatedConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BenchmarkConfig::deserialize(deserializer)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> ValidatedConfig {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        config.input.input_file = Some("trace.jsonl".into());
        config.validate().expect("a valid configuration")
    }

    #[test]
    fn a_change_is_validated_again() {
        let error = valid()
            .modified(|c| c.load.benchmark_grace_period = Some(3.0))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "load.benchmark_grace_period requires load.benchmark_duration"
        );
    }

    #[test]
    fn a_replay_sends_the_whole_trace_unless_a_count_was_given() {
        let config = valid();
        assert_eq!(config.load.request_count, Some(10));
        let replay = config.replaying_timestamps().unwrap();
        assert!(replay.load.fixed_schedule.is_enabled());
        assert_eq!(replay.load.request_count, None);

        let counted = valid()
            .modified(|c| c.load.request_count = Some(7))
            .unwrap();
        let replay = counted.replaying_timestamps().unwrap();
        assert_eq!(replay.load.request_count, Some(7));
    }

    #[test]
    fn deserializing_validates() {
        let json = serde_json::to_string(&valid()).unwrap();
        let back: ValidatedConfig = serde_json::from_str(&json).unwrap();
        // What validation filled in reads back as given.
        assert_eq!(back.into_inner(), valid().into_inner());
        let mut invalid = valid().into_inner();
        invalid.load.benchmark_grace_period = Some(3.0);
        let json = serde_json::to_string(&invalid).unwrap();
        let error = serde_json::from_str::<ValidatedConfig>(&json).unwrap_err();
        assert!(
            error.to_string().contains("load.benchmark_grace_period"),
            "{error}"
        );
    }
}
