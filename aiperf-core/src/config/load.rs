//! When to send and when to stop: the load shape of the profiling phase, its warmup,
//! trace replay, user-centric rate and simulated cancellation (docs/cli.md#load; modes,
//! defaults and rules in docs/cli-rules.md#timing-mode-rules and
//! docs/cli-rules.md#validation-rules).

use serde::{Deserialize, Serialize};

use super::{at_least_one, non_negative, out_of_range, positive, ConfigError};
use super::{DEFAULT_REQUEST_COUNT, DEFAULT_WARMUP_GRACE_PERIOD_SECS};

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

/// One control point of a request-rate series (`--request-rate-series`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSeriesPoint {
    /// Seconds from the start of the series (after the rate ramp, if any).
    pub time_s: f64,
    /// Requests per second at that time.
    pub qps: f64,
}

/// A request-rate series file as the Python AIPerf 0.13 reads it: a JSON array of
/// `{"time_s", "qps"}` points, or an object whose only key `points` holds that array.
/// The points are checked with the configuration.
///
/// ```
/// use aiperf_core::config::{parse_rate_series, RateSeriesPoint};
///
/// let points = parse_rate_series(r#"{"points": [{"time_s": 0, "qps": 2}, {"time_s": 10, "qps": 8}]}"#)
///     .unwrap();
/// assert_eq!(points[1], RateSeriesPoint { time_s: 10.0, qps: 8.0 });
/// ```
pub fn parse_rate_series(json: &str) -> Result<Vec<RateSeriesPoint>, ConfigError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum File {
        Points(Vec<RateSeriesPoint>),
        Object { points: Vec<RateSeriesPoint> },
    }
    match serde_json::from_str::<File>(json) {
        Ok(File::Points(points) | File::Object { points }) => Ok(points),
        Err(_) => Err(ConfigError::Invalid {
            field: "load.request_rate_series",
            reason: "expected a JSON array of {\"time_s\": seconds, \"qps\": rate} points, or \
                     {\"points\": [...]}"
                .into(),
        }),
    }
}

/// The load shape and stop conditions of the profiling phase (and its warmup).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadConfig {
    /// Maximum sessions in flight (closed loop without a rate; a cap with one).
    pub concurrency: Option<usize>,
    /// Raise the concurrency limit from 1 to `concurrency` over this many seconds.
    pub concurrency_ramp_duration: Option<f64>,
    /// Maximum requests sent but without a first token yet (streaming only).
    pub prefill_concurrency: Option<usize>,
    /// Raise the prefill limit from 1 to `prefill_concurrency` over this many seconds.
    pub prefill_concurrency_ramp_duration: Option<f64>,
    /// Target requests per second (open loop).
    pub request_rate: Option<f64>,
    /// Raise the rate linearly to `request_rate` over this many seconds.
    pub request_rate_ramp_duration: Option<f64>,
    /// A piecewise-linear request rate instead of `request_rate`: the rate starts at the
    /// first point's and follows the points (after the ramp, if any), then keeps the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_rate_series: Option<Vec<RateSeriesPoint>>,
    /// Stop sending once more than this fraction (0–1) of the profiling requests failed;
    /// checked from the `max(concurrency, 10)`-th record on, so one early failure cannot
    /// end the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_request_threshold: Option<f64>,
    /// Gap distribution in rate mode.
    pub arrival_pattern: Option<ArrivalPattern>,
    /// Gamma shape for `ArrivalPattern::Gamma`.
    pub arrival_smoothness: Option<f64>,
    /// Stop after this many requests (every turn counts).
    pub request_count: Option<u64>,
    /// Stop starting sessions after this many; started sessions finish all their turns.
    pub num_sessions: Option<u64>,
    /// Stop sending after this many seconds.
    pub benchmark_duration: Option<f64>,
    /// Seconds to wait for in-flight requests after the duration (default 30).
    pub benchmark_grace_period: Option<f64>,
    /// Replay trace timestamps.
    #[serde(default)]
    pub fixed_schedule: FixedScheduleConfig,
    /// N users sending turns at a fixed per-user gap.
    pub user_centric: Option<UserCentricConfig>,
    /// `--num-users` as given (it is only valid with `--user-centric-rate`).
    pub num_users: Option<usize>,
    /// Percent of profiling requests the client cancels on purpose.
    pub request_cancellation_rate: Option<f64>,
    /// Seconds after sending at which those requests are cancelled (default 0).
    pub request_cancellation_delay: Option<f64>,
    /// The warmup phase.
    #[serde(default)]
    pub warmup: WarmupConfig,
    /// Run one shard of the benchmark in this process (`--shard K/N`); `None`: all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
}

/// Shard `index` of `count`: one of `count` processes that together offer exactly the
/// load one process would, each built from the same configuration and seed.
///
/// Sessions are numbered in the order one process would start them (closed loop: the
/// order slots free; open loop: the schedule's arrivals; a replay: the trace's sessions;
/// simulated users: the users). A shard starts the sessions whose number is `index`
/// modulo `count`, draws each one's conversation as the whole run would, and keeps its
/// share of every limit: concurrency slots, request and session counts, split with the
/// remainder going to the lowest shards. Arrivals keep their instants, so the shards'
/// union has the requested rate and pattern.
///
/// ```
/// use aiperf_core::config::Shard;
///
/// let shard = Shard::new(1, 4).unwrap();
/// assert_eq!(shard.share(10), 3); // sessions 1, 5, 9
/// assert!(shard.owns(5) && !shard.owns(6));
/// assert_eq!(shard.global_index(2), 9);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 0-based.
    pub index: u32,
    /// How many shards the benchmark has.
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`; `None` unless `index < count`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// This shard's part of `total` (slots, requests, sessions): the number of
    /// `0..total` that are `index` modulo `count`.
    pub fn share(self, total: u64) -> u64 {
        let (count, index) = (u64::from(self.count), u64::from(self.index));
        total / count + u64::from(index < total % count)
    }

    /// Whether the run-wide session `number` is this shard's.
    pub fn owns(self, number: u64) -> bool {
        number % u64::from(self.count) == u64::from(self.index)
    }

    /// The run-wide number of this shard's `local`-th session (0-based).
    pub fn global_index(self, local: u64) -> u64 {
        local * u64::from(self.count) + u64::from(self.index)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `--fixed-schedule` and its offsets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FixedScheduleConfig {
    /// `Some(true)`: `--fixed-schedule` (or a timestamped trace promoted it);
    /// `Some(false)`: `--no-fixed-schedule`; `None`: neither.
    pub enabled: Option<bool>,
    /// Time zero is the earliest timestamp.
    pub auto_offset: bool,
    /// Drop entries before this many ms; time zero is the offset.
    pub start_offset_ms: Option<u64>,
    /// Drop entries after this many ms.
    pub end_offset_ms: Option<u64>,
}

impl FixedScheduleConfig {
    /// True when the run replays timestamps.
    pub fn is_enabled(&self) -> bool {
        self.enabled == Some(true)
    }

    /// The first replay offset field given, if any.
    pub fn offset_field(&self) -> Option<&'static str> {
        if self.auto_offset {
            Some("load.fixed_schedule.auto_offset")
        } else if self.start_offset_ms.is_some() {
            Some("load.fixed_schedule.start_offset_ms")
        } else if self.end_offset_ms.is_some() {
            Some("load.fixed_schedule.end_offset_ms")
        } else {
            None
        }
    }
}

/// `--user-centric-rate QPS` with `--num-users N`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UserCentricConfig {
    /// Aggregate requests per second over all users.
    pub rate: f64,
    /// Simulated users.
    pub num_users: usize,
}

/// The warmup phase: enabled when any of its stop conditions is set. Unset options fall
/// back to the profiling values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WarmupConfig {
    /// Requests to send.
    pub request_count: Option<u64>,
    /// Seconds to send for.
    pub duration: Option<f64>,
    /// Sessions to start.
    pub num_sessions: Option<u64>,
    /// Concurrency (default: the profiling concurrency).
    pub concurrency: Option<usize>,
    /// Prefill concurrency (default: the profiling one).
    pub prefill_concurrency: Option<usize>,
    /// Open-loop rate (default: the profiling rate; closed loop without one).
    pub request_rate: Option<f64>,
    /// Arrival pattern with `request_rate` (default: the profiling pattern).
    pub arrival_pattern: Option<ArrivalPattern>,
    /// Seconds to wait for in-flight warmup requests after the duration (default ∞).
    pub grace_period: Option<f64>,
    /// Concurrency ramp (default: the profiling ramp).
    pub concurrency_ramp_duration: Option<f64>,
    /// Rate ramp (default: the profiling ramp).
    pub request_rate_ramp_duration: Option<f64>,
}

impl WarmupConfig {
    /// True when any warmup stop condition is set.
    pub fn is_enabled(&self) -> bool {
        self.request_count.is_some() || self.duration.is_some() || self.num_sessions.is_some()
    }

    /// The grace period, infinite unless given.
    pub fn grace_period_secs(&self) -> f64 {
        self.grace_period
            .unwrap_or(DEFAULT_WARMUP_GRACE_PERIOD_SECS)
    }
}

impl LoadConfig {
    /// The profiling phase's request rate at its start: `request_rate`, or the first
    /// point of `request_rate_series`; `None` without either (closed loop, user-centric).
    pub fn initial_request_rate(&self) -> Option<f64> {
        self.request_rate.or_else(|| {
            self.request_rate_series
                .as_ref()
                .and_then(|points| points.first())
                .map(|point| point.qps)
        })
    }

    /// Checks the load rules (docs/cli-rules.md#validation-rules) and resolves the arrival
    /// pattern and the default stop condition (10 requests; a fixed schedule defaults to
    /// the whole trace later).
    pub fn validate(&mut self) -> Result<(), ConfigError> {
        self.check_ranges()?;
        self.check_user_centric()?;
        self.check_fixed_schedule()?;
        self.resolve_arrival_pattern()?;
        self.check_ramps_and_prefill()?;
        self.check_cancellation()?;
        self.check_warmup()?;
        self.check_shard()?;
        if self.request_count.is_some() && self.num_sessions.is_some() {
            return Err(ConfigError::Conflict {
                first: "load.request_count",
                second: "load.num_sessions",
            });
        }
        let has_stop = self.request_count.is_some()
            || self.benchmark_duration.is_some()
            || self.num_sessions.is_some();
        if !has_stop && !self.fixed_schedule.is_enabled() {
            self.request_count = Some(DEFAULT_REQUEST_COUNT);
        }
        Ok(())
    }

    /// Every shard must get something to do: at least one concurrency slot in a closed
    /// loop and at least one of each counted limit.
    fn check_shard(&self) -> Result<(), ConfigError> {
        let Some(shard) = self.shard else {
            return Ok(());
        };
        if shard.count == 0 || shard.index >= shard.count {
            return Err(ConfigError::Invalid {
                field: "load.shard",
                reason: format!("shard {shard}: the index must be below the count"),
            });
        }
        let closed_loop = self.request_rate.is_none()
            && self.request_rate_series.is_none()
            && self.user_centric.is_none()
            && !self.fixed_schedule.is_enabled();
        // A closed loop has one slot when no concurrency is given.
        let slots = self
            .concurrency
            .or(closed_loop.then_some(1))
            .map(|c| c as u64);
        let count = u64::from(shard.count);
        let limits = [
            ("load.concurrency", slots),
            (
                "load.prefill_concurrency",
                self.prefill_concurrency.map(|c| c as u64),
            ),
            ("load.request_count", self.request_count),
            ("load.num_sessions", self.num_sessions),
            (
                "load.warmup.concurrency",
                self.warmup.concurrency.map(|c| c as u64),
            ),
            ("load.warmup.request_count", self.warmup.request_count),
            ("load.warmup.num_sessions", self.warmup.num_sessions),
        ];
        for (field, limit) in limits {
            if let Some(limit) = limit.filter(|limit| *limit < count) {
                return Err(ConfigError::Invalid {
                    field,
                    reason: format!(
                        "{limit} cannot be split over {count} shards: each shard needs at \
                         least one"
                    ),
                });
            }
        }
        Ok(())
    }

    fn check_ranges(&self) -> Result<(), ConfigError> {
        if let Some(c) = self.concurrency {
            at_least_one("load.concurrency", c as u64)?;
        }
        if let Some(n) = self.request_count {
            at_least_one("load.request_count", n)?;
        }
        if let Some(n) = self.num_sessions {
            at_least_one("load.num_sessions", n)?;
        }
        if let Some(rate) = self.request_rate {
            positive("load.request_rate", rate)?;
        }
        if let Some(points) = &self.request_rate_series {
            check_rate_series(points, self.request_rate.is_some())?;
        }
        if let Some(threshold) = self.failed_request_threshold {
            if !(0.0..=1.0).contains(&threshold) {
                return Err(out_of_range(
                    "load.failed_request_threshold",
                    "between 0 and 1",
                    threshold,
                ));
            }
        }
        if let Some(d) = self.benchmark_duration {
            positive("load.benchmark_duration", d)?;
        }
        if let Some(g) = self.benchmark_grace_period {
            if self.benchmark_duration.is_none() {
                return Err(ConfigError::Requires {
                    field: "load.benchmark_grace_period",
                    needs: "load.benchmark_duration",
                });
            }
            if g.is_nan() || g < 0.0 {
                return Err(out_of_range("load.benchmark_grace_period", "0 or more", g));
            }
        }
        Ok(())
    }

    fn check_user_centric(&self) -> Result<(), ConfigError> {
        match (&self.user_centric, self.num_users) {
            (None, Some(_)) => Err(ConfigError::Requires {
                field: "load.num_users",
                needs: "load.user_centric.rate",
            }),
            (Some(user), _) => {
                positive("load.user_centric.rate", user.rate)?;
                at_least_one("load.num_users", user.num_users as u64)?;
                if self.initial_request_rate().is_some() {
                    return Err(ConfigError::Conflict {
                        first: "load.user_centric.rate",
                        second: "load.request_rate",
                    });
                }
                if self.arrival_pattern.is_some() {
                    return Err(ConfigError::Conflict {
                        first: "load.user_centric.rate",
                        second: "load.arrival_pattern",
                    });
                }
                if self.fixed_schedule.is_enabled() {
                    return Err(ConfigError::Conflict {
                        first: "load.user_centric.rate",
                        second: "load.fixed_schedule.enabled",
                    });
                }
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }

    fn check_fixed_schedule(&self) -> Result<(), ConfigError> {
        if self.fixed_schedule.enabled == Some(false) {
            if let Some(field) = self.fixed_schedule.offset_field() {
                return Err(ConfigError::Conflict {
                    first: field,
                    second: "load.fixed_schedule.enabled=false",
                });
            }
        }
        let fixed = &self.fixed_schedule;
        if !fixed.is_enabled() {
            // Offsets without a schedule are checked with the input (a trace with
            // timestamps turns the schedule on once it is read).
            return Ok(());
        }
        if fixed.auto_offset && fixed.start_offset_ms.is_some() {
            return Err(ConfigError::Conflict {
                first: "load.fixed_schedule.auto_offset",
                second: "load.fixed_schedule.start_offset_ms",
            });
        }
        if let (Some(start), Some(end)) = (fixed.start_offset_ms, fixed.end_offset_ms) {
            if end < start {
                return Err(ConfigError::Rule(
                    "load.fixed_schedule.end_offset_ms must not be less than load.fixed_schedule.start_offset_ms",
                ));
            }
        }
        if self.initial_request_rate().is_some() {
            return Err(ConfigError::Rule(
                "load.request_rate cannot be combined with a fixed schedule (a trace with timestamps \
                 replays them); pass load.fixed_schedule.enabled=false to send the trace at a rate instead",
            ));
        }
        if self.request_rate_ramp_duration.is_some() {
            return Err(ConfigError::Conflict {
                first: "load.request_rate_ramp_duration",
                second: "load.fixed_schedule.enabled",
            });
        }
        Ok(())
    }

    fn resolve_arrival_pattern(&mut self) -> Result<(), ConfigError> {
        match (self.initial_request_rate(), self.arrival_pattern) {
            (Some(_), Some(ArrivalPattern::ConcurrencyBurst)) => {
                return Err(ConfigError::Conflict {
                    first: "load.arrival_pattern concurrency_burst",
                    second: "load.request_rate",
                })
            }
            (Some(_), None) => self.arrival_pattern = Some(ArrivalPattern::Poisson),
            (None, Some(p)) if p != ArrivalPattern::ConcurrencyBurst => {
                return Err(ConfigError::Requires {
                    field: "load.arrival_pattern",
                    needs: "load.request_rate",
                })
            }
            (None, None) if self.user_centric.is_none() => {
                self.arrival_pattern = Some(ArrivalPattern::ConcurrencyBurst);
            }
            _ => {}
        }
        if let Some(s) = self.arrival_smoothness {
            if self.arrival_pattern != Some(ArrivalPattern::Gamma) {
                return Err(ConfigError::Requires {
                    field: "load.arrival_smoothness",
                    needs: "load.arrival_pattern gamma",
                });
            }
            positive("load.arrival_smoothness", s)?;
        }
        Ok(())
    }

    fn check_ramps_and_prefill(&self) -> Result<(), ConfigError> {
        if let Some(ramp) = self.concurrency_ramp_duration {
            positive("load.concurrency_ramp_duration", ramp)?;
        }
        if let Some(ramp) = self.prefill_concurrency_ramp_duration {
            positive("load.prefill_concurrency_ramp_duration", ramp)?;
            if self.prefill_concurrency.is_none() {
                return Err(ConfigError::Requires {
                    field: "load.prefill_concurrency_ramp_duration",
                    needs: "load.prefill_concurrency",
                });
            }
        }
        if let Some(ramp) = self.request_rate_ramp_duration {
            positive("load.request_rate_ramp_duration", ramp)?;
            if self.initial_request_rate().is_none() && self.user_centric.is_none() {
                return Err(ConfigError::Requires {
                    field: "load.request_rate_ramp_duration",
                    needs: "load.request_rate or load.user_centric.rate",
                });
            }
        }
        if let Some(prefill) = self.prefill_concurrency {
            at_least_one("load.prefill_concurrency", prefill as u64)?;
            if let Some(concurrency) = self.concurrency {
                if prefill > concurrency {
                    return Err(ConfigError::Rule(
                        "load.prefill_concurrency must not exceed load.concurrency",
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_cancellation(&self) -> Result<(), ConfigError> {
        if let Some(rate) = self.request_cancellation_rate {
            if !(rate > 0.0 && rate <= 100.0) {
                return Err(out_of_range(
                    "load.request_cancellation_rate",
                    "greater than 0 and at most 100 (percent)",
                    rate,
                ));
            }
        }
        if let Some(delay) = self.request_cancellation_delay {
            if self.request_cancellation_rate.is_none() {
                return Err(ConfigError::Requires {
                    field: "load.request_cancellation_delay",
                    needs: "load.request_cancellation_rate",
                });
            }
            non_negative("load.request_cancellation_delay", delay)?;
        }
        Ok(())
    }

    fn check_warmup(&self) -> Result<(), ConfigError> {
        let warmup = &self.warmup;
        if let Some(n) = warmup.request_count {
            at_least_one("load.warmup.request_count", n)?;
        }
        if let Some(n) = warmup.num_sessions {
            at_least_one("load.warmup.num_sessions", n)?;
        }
        if warmup.request_count.is_some() && warmup.num_sessions.is_some() {
            return Err(ConfigError::Conflict {
                first: "load.warmup.request_count",
                second: "load.warmup.num_sessions",
            });
        }
        if let Some(d) = warmup.duration {
            positive("load.warmup.duration", d)?;
        }
        if let Some(c) = warmup.concurrency {
            at_least_one("load.warmup.concurrency", c as u64)?;
        }
        if let Some(rate) = warmup.request_rate {
            positive("load.warmup.request_rate", rate)?;
        }
        if let Some(prefill) = warmup.prefill_concurrency {
            at_least_one("load.warmup.prefill_concurrency", prefill as u64)?;
        }
        if let Some(g) = warmup.grace_period {
            if !warmup.is_enabled() {
                return Err(ConfigError::Requires {
                    field: "load.warmup.grace_period",
                    needs:
                        "a warmup stop condition (load.warmup.request_count, load.warmup.duration \
                            or load.warmup.num_sessions)",
                });
            }
            if g.is_nan() || g < 0.0 {
                return Err(out_of_range("load.warmup.grace_period", "0 or more", g));
            }
        }
        if warmup.arrival_pattern.is_some()
            && warmup.request_rate.is_none()
            && self.request_rate.is_none()
        {
            return Err(ConfigError::Requires {
                field: "load.warmup.arrival_pattern",
                needs: "load.warmup.request_rate or load.request_rate",
            });
        }
        Ok(())
    }
}

/// A series has at least two points, finite and in range, strictly later one after the
/// other (the Python AIPerf 0.13's rules), and replaces `request_rate`.
fn check_rate_series(points: &[RateSeriesPoint], has_rate: bool) -> Result<(), ConfigError> {
    const FIELD: &str = "load.request_rate_series";
    if has_rate {
        return Err(ConfigError::Conflict {
            first: FIELD,
            second: "load.request_rate",
        });
    }
    if points.len() < 2 {
        return Err(ConfigError::Rule(
            "load.request_rate_series needs at least two points",
        ));
    }
    for point in points {
        if !(point.time_s.is_finite() && point.time_s >= 0.0) {
            return Err(out_of_range(FIELD, "time_s of 0 or more", point.time_s));
        }
        positive(FIELD, point.qps)?;
    }
    if points
        .windows(2)
        .any(|pair| pair[1].time_s <= pair[0].time_s)
    {
        return Err(ConfigError::Rule(
            "load.request_rate_series time_s values must be strictly increasing",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::{BenchmarkConfig, UserCentricConfig};

    fn base() -> BenchmarkConfig {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        config
    }

    fn error_of(change: impl FnOnce(&mut BenchmarkConfig)) -> String {
        let mut config = base();
        change(&mut config);
        match config.validate() {
            Ok(_) => "valid".into(),
            Err(error) => error.to_string(),
        }
    }

    fn user_centric(config: &mut BenchmarkConfig) {
        config.load.user_centric = Some(UserCentricConfig {
            rate: 5.0,
            num_users: 4,
        });
        config.load.num_users = Some(4);
    }

    fn fixed(config: &mut BenchmarkConfig) {
        config.load.fixed_schedule.enabled = Some(true);
        config.input.input_file = Some("trace.jsonl".into());
    }

    /// Every load rule of docs/cli-rules.md#validation-rules, with the message a user sees.
    #[test]
    fn each_rule_rejects_with_a_message_naming_the_flags() {
        type Change = Box<dyn FnOnce(&mut BenchmarkConfig)>;
        let cases: Vec<(&str, Change, &str)> = vec![
            (
                "user-centric with a request rate",
                Box::new(|c| {
                    user_centric(c);
                    c.load.request_rate = Some(1.0);
                }),
                "load.user_centric.rate cannot be combined with load.request_rate",
            ),
            (
                "user-centric with an arrival pattern",
                Box::new(|c| {
                    user_centric(c);
                    c.load.arrival_pattern = Some(super::ArrivalPattern::Constant);
                }),
                "load.user_centric.rate cannot be combined with load.arrival_pattern",
            ),
            (
                "num-users alone",
                Box::new(|c| c.load.num_users = Some(3)),
                "load.num_users requires load.user_centric.rate",
            ),
            (
                "user-centric without users",
                Box::new(|c| {
                    c.load.user_centric = Some(UserCentricConfig {
                        rate: 5.0,
                        num_users: 0,
                    });
                }),
                "load.num_users must be at least 1, got 0",
            ),
            (
                "user-centric with a fixed schedule",
                Box::new(|c| {
                    user_centric(c);
                    fixed(c);
                }),
                "load.user_centric.rate cannot be combined with load.fixed_schedule.enabled",
            ),
            (
                "warmup grace without warmup",
                Box::new(|c| c.load.warmup.grace_period = Some(1.0)),
                "load.warmup.grace_period requires a warmup stop condition (load.warmup.request_count, \
                 load.warmup.duration or load.warmup.num_sessions)",
            ),
            (
                "prefill without streaming",
                Box::new(|c| c.load.prefill_concurrency = Some(1)),
                "load.prefill_concurrency requires endpoint.streaming",
            ),
            (
                "warmup prefill without streaming",
                Box::new(|c| {
                    c.load.warmup.request_count = Some(1);
                    c.load.warmup.prefill_concurrency = Some(1);
                }),
                "load.warmup.prefill_concurrency requires endpoint.streaming",
            ),
            (
                "prefill above concurrency",
                Box::new(|c| {
                    c.endpoint.streaming = true;
                    c.load.concurrency = Some(2);
                    c.load.prefill_concurrency = Some(3);
                }),
                "load.prefill_concurrency must not exceed load.concurrency",
            ),
            (
                "prefill ramp without prefill",
                Box::new(|c| c.load.prefill_concurrency_ramp_duration = Some(1.0)),
                "load.prefill_concurrency_ramp_duration requires load.prefill_concurrency",
            ),
            (
                "sampling strategy with a fixed schedule",
                Box::new(|c| {
                    fixed(c);
                    c.input.sampling_strategy = Some(crate::SamplingStrategy::Random);
                }),
                "input.sampling_strategy cannot be combined with load.fixed_schedule.enabled",
            ),
            (
                "request count with sessions",
                Box::new(|c| {
                    c.load.request_count = Some(5);
                    c.load.num_sessions = Some(5);
                }),
                "load.request_count cannot be combined with load.num_sessions",
            ),
            (
                "warmup count with warmup sessions",
                Box::new(|c| {
                    c.load.warmup.request_count = Some(5);
                    c.load.warmup.num_sessions = Some(5);
                }),
                "load.warmup.request_count cannot be combined with load.warmup.num_sessions",
            ),
            (
                "cancellation delay without rate",
                Box::new(|c| c.load.request_cancellation_delay = Some(1.0)),
                "load.request_cancellation_delay requires load.request_cancellation_rate",
            ),
            (
                "cancellation rate above 100",
                Box::new(|c| c.load.request_cancellation_rate = Some(150.0)),
                "load.request_cancellation_rate must be greater than 0 and at most 100 (percent), \
                 got 150",
            ),
            (
                "offset without a fixed schedule",
                Box::new(|c| c.load.fixed_schedule.start_offset_ms = Some(5)),
                "load.fixed_schedule.start_offset_ms requires load.fixed_schedule.enabled (or a trace with \
                 timestamps)",
            ),
            (
                "auto offset with a start offset",
                Box::new(|c| {
                    fixed(c);
                    c.load.fixed_schedule.auto_offset = true;
                    c.load.fixed_schedule.start_offset_ms = Some(5);
                }),
                "load.fixed_schedule.auto_offset cannot be combined with \
                 load.fixed_schedule.start_offset_ms",
            ),
            (
                "end before start",
                Box::new(|c| {
                    fixed(c);
                    c.load.fixed_schedule.start_offset_ms = Some(50);
                    c.load.fixed_schedule.end_offset_ms = Some(10);
                }),
                "load.fixed_schedule.end_offset_ms must not be less than load.fixed_schedule.start_offset_ms",
            ),
            (
                "rate ramp in concurrency mode",
                Box::new(|c| c.load.request_rate_ramp_duration = Some(2.0)),
                "load.request_rate_ramp_duration requires load.request_rate or load.user_centric.rate",
            ),
            (
                "rate ramp with a fixed schedule",
                Box::new(|c| {
                    fixed(c);
                    c.load.request_rate_ramp_duration = Some(2.0);
                }),
                "load.request_rate_ramp_duration cannot be combined with load.fixed_schedule.enabled",
            ),
            (
                "a timestamped trace at a rate",
                Box::new(|c| {
                    fixed(c);
                    c.load.request_rate = Some(2.0);
                }),
                "load.request_rate cannot be combined with a fixed schedule (a trace with \
                 timestamps replays them); pass load.fixed_schedule.enabled=false to send the trace at a rate \
                 instead",
            ),
            (
                "public dataset with a custom type",
                Box::new(|c| {
                    c.input.public_dataset = Some(crate::config::PublicDataset::Sharegpt);
                    c.input.custom_dataset_type =
                        Some(crate::config::CustomDatasetType::SingleTurn);
                    c.input.input_file = Some("x".into());
                }),
                "input.public_dataset cannot be combined with input.custom_dataset_type",
            ),
            (
                "custom type without a file",
                Box::new(|c| {
                    c.input.custom_dataset_type = Some(crate::config::CustomDatasetType::MultiTurn);
                }),
                "input.custom_dataset_type requires input.input_file",
            ),
            (
                "fixed schedule without a trace",
                Box::new(|c| c.load.fixed_schedule.enabled = Some(true)),
                "load.fixed_schedule.enabled requires input.input_file with timestamps",
            ),
        ];
        for (case, change, expected) in cases {
            assert_eq!(error_of(change), expected, "{case}");
        }
    }

    #[test]
    fn stop_conditions_resolve() {
        let config = base().validate().unwrap();
        assert_eq!(config.load.request_count, Some(10));

        let mut sessions = base();
        sessions.load.num_sessions = Some(3);
        let sessions = sessions.validate().unwrap();
        assert_eq!(
            sessions.load.request_count, None,
            "sessions are the stop condition"
        );

        let mut trace = base();
        fixed(&mut trace);
        let trace = trace.validate().unwrap();
        assert_eq!(
            trace.load.request_count, None,
            "a replay defaults to the whole trace, counted when it is loaded"
        );
    }

    #[test]
    fn warmup_is_enabled_by_any_stop_condition_and_waits_forever_by_default() {
        let mut config = base();
        assert!(!config.load.warmup.is_enabled());
        config.load.warmup.duration = Some(2.0);
        assert!(config.load.warmup.is_enabled());
        assert!(config.load.warmup.grace_period_secs().is_infinite());
        config.validate().unwrap();
    }
}
