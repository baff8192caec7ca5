//! [`PhasePlan`]: the load shape and stop conditions of one phase, and how a
//! configuration becomes the warmup and profiling plans.

use std::time::Duration;

use crate::clock::saturating_secs;
use crate::config::{ArrivalPattern, BenchmarkConfig, RateSeriesPoint, Shard};
use crate::conversation::Conversation;
use crate::dataset::ConversationStream;
use crate::record::Phase;
use crate::schedule::{
    first_timestamp, ClosedLoop, FixedSchedule, RateScheduler, ScheduleError, Scheduler,
    UserCentricSchedule,
};
use crate::seed::derive_seed;

/// One phase of a run: its load shape and its stop conditions.
///
/// Start from [`PhasePlan::new`] and set the fields that apply.
pub struct PhasePlan {
    /// Warmup or profiling.
    pub phase: Phase,
    /// When each session starts.
    pub scheduler: Box<dyn Scheduler>,
    /// Maximum sessions in flight (`None`: unlimited, but one for a closed loop).
    pub concurrency: Option<usize>,
    /// Raise the concurrency limit from 1 to `concurrency` in even steps over this long.
    pub concurrency_ramp: Option<Duration>,
    /// Maximum requests sent but without a first body chunk yet (`None`: unlimited).
    pub prefill_concurrency: Option<usize>,
    /// Raise the prefill limit from 1 to `prefill_concurrency` over this long.
    pub prefill_ramp: Option<Duration>,
    /// Stop after this many requests (every turn counts).
    pub request_count: Option<u64>,
    /// Start no more sessions after this many; started ones send all their turns.
    pub session_count: Option<u64>,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
    /// After the duration, wait this long for in-flight requests, then cancel them.
    pub grace_period: Duration,
    /// Simulated client cancellation of some requests.
    pub cancellation: Option<Cancellation>,
    /// The shard of the run this process offers: it starts only the sessions the shard
    /// owns, numbered as the whole run numbers them. The limits above are already the
    /// shard's share.
    pub shard: Option<Shard>,
    /// How many sessions the whole run starts in this phase, when its limits say so: a
    /// shard's next phase draws its conversations from there on, as one process would.
    pub run_wide_sessions: Option<u64>,
}

/// `--request-cancellation-rate`/`-delay`: which requests the client aborts on purpose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cancellation {
    /// Probability that a request is cancelled, 0 to 1.
    pub probability: f64,
    /// How long after sending it is cancelled.
    pub delay: Duration,
    /// Seed of the draws.
    pub seed: u64,
}

impl std::fmt::Debug for PhasePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhasePlan")
            .field("phase", &self.phase)
            .field("concurrency", &self.concurrency)
            .field("prefill_concurrency", &self.prefill_concurrency)
            .field("request_count", &self.request_count)
            .field("session_count", &self.session_count)
            .field("duration", &self.duration)
            .field("grace_period", &self.grace_period)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

impl PhasePlan {
    /// A phase with `scheduler` and nothing else: no limits, no stop condition, an
    /// unbounded grace period.
    pub fn new(phase: Phase, scheduler: Box<dyn Scheduler>) -> Self {
        Self {
            phase,
            scheduler,
            concurrency: None,
            concurrency_ramp: None,
            prefill_concurrency: None,
            prefill_ramp: None,
            request_count: None,
            session_count: None,
            duration: None,
            grace_period: Duration::MAX,
            cancellation: None,
            shard: None,
            run_wide_sessions: None,
        }
    }

    /// This phase as shard `shard` offers it: its share of the concurrency, prefill,
    /// request and session limits. The run-wide session count is kept when the limits
    /// fix it: a session limit, or a request limit when every conversation is one turn.
    #[must_use]
    pub fn for_shard(self, shard: Shard, conversations: &[Conversation]) -> PhasePlan {
        let single_turn =
            !conversations.is_empty() && conversations.iter().all(|c| c.turns.len() == 1);
        self.shard_share(shard, single_turn)
    }

    /// See [`for_shard`](Self::for_shard); `single_turn`: every conversation is one turn.
    fn shard_share(self, shard: Shard, single_turn: bool) -> PhasePlan {
        let run_wide_sessions = self
            .session_count
            .or(self.request_count.filter(|_| single_turn));
        let share_slots = |slots: usize| shard.share(slots as u64) as usize;
        PhasePlan {
            concurrency: self.concurrency.map(share_slots),
            prefill_concurrency: self.prefill_concurrency.map(share_slots),
            request_count: self.request_count.map(|n| shard.share(n)),
            session_count: self.session_count.map(|n| shard.share(n)),
            shard: Some(shard),
            run_wide_sessions,
            ..self
        }
    }

    /// The phases a validated configuration asks for when the dataset does not matter
    /// (no fixed schedule, no user-centric rate); see [`PhasePlan::for_dataset`].
    pub fn from_config(config: &BenchmarkConfig) -> Result<Vec<PhasePlan>, ScheduleError> {
        Self::for_dataset(config, &[])
    }

    /// The phases a validated configuration asks for: warmup (when any warmup stop
    /// condition is set) then profiling. A fixed schedule replays `conversations`' first
    /// timestamps (index `i` of the schedule is `conversations[i]`, so pass the same list
    /// to the builder with sequential sampling); a user-centric rate sizes its users'
    /// lifetimes by their average turn count.
    pub fn for_dataset(
        config: &BenchmarkConfig,
        conversations: &[Conversation],
    ) -> Result<Vec<PhasePlan>, ScheduleError> {
        let single_turn =
            !conversations.is_empty() && conversations.iter().all(|c| c.turns.len() == 1);
        Self::plans(config, conversations, single_turn)
    }

    /// The phases a validated configuration asks for with a [`ConversationStream`]
    /// (see [`for_dataset`](Self::for_dataset)). A fixed schedule and a user-centric rate
    /// need the whole dataset (its timestamps, its average turn count): they are errors.
    pub fn for_stream(
        config: &BenchmarkConfig,
        stream: &ConversationStream,
    ) -> Result<Vec<PhasePlan>, ScheduleError> {
        let load = &config.load;
        if load.fixed_schedule.is_enabled() || load.user_centric.is_some() {
            return Err(ScheduleError(
                "a fixed schedule or a user-centric rate needs the dataset's conversations, \
                 not a stream of them"
                    .into(),
            ));
        }
        Self::plans(config, &[], stream.is_single_turn())
    }

    fn plans(
        config: &BenchmarkConfig,
        conversations: &[Conversation],
        single_turn: bool,
    ) -> Result<Vec<PhasePlan>, ScheduleError> {
        let seed = config.input.random_seed.unwrap_or_else(rand::random);
        let mut plans = Vec::new();
        if config.load.warmup.is_enabled() {
            plans.push(warmup_plan(config, seed)?);
        }
        plans.push(profiling_plan(config, conversations, seed)?);
        if let Some(shard) = config.load.shard {
            // A replay's default count is every turn of the trace; a shard's share is every
            // turn of its own sessions, which its schedule runs out at.
            let whole_trace = config.load.request_count.is_none();
            plans = plans
                .into_iter()
                .map(|plan| {
                    let replays_whole_trace = plan.phase == Phase::Profiling
                        && config.load.fixed_schedule.is_enabled()
                        && whole_trace;
                    let mut plan = plan.shard_share(shard, single_turn);
                    if replays_whole_trace {
                        plan.request_count = None;
                    }
                    plan
                })
                .collect();
        }
        Ok(plans)
    }
}

fn warmup_plan(config: &BenchmarkConfig, seed: u64) -> Result<PhasePlan, ScheduleError> {
    let load = &config.load;
    let warmup = &load.warmup;
    let concurrency = warmup.concurrency.or(load.concurrency);
    let rate = warmup.request_rate.or(load.request_rate);
    let pattern = warmup
        .arrival_pattern
        .or(load.arrival_pattern)
        .filter(|p| *p != ArrivalPattern::ConcurrencyBurst)
        .unwrap_or(ArrivalPattern::Poisson);
    let rate_ramp = warmup
        .request_rate_ramp_duration
        .or(load.request_rate_ramp_duration);
    let (scheduler, concurrency) = rate_or_closed_loop(
        rate,
        pattern,
        load.arrival_smoothness,
        rate_ramp,
        None,
        concurrency,
        derive_seed(seed, "timing.warmup.interval"),
    )?;
    Ok(PhasePlan {
        concurrency,
        concurrency_ramp: secs(
            warmup
                .concurrency_ramp_duration
                .or(load.concurrency_ramp_duration),
        ),
        prefill_concurrency: warmup.prefill_concurrency.or(load.prefill_concurrency),
        prefill_ramp: secs(load.prefill_concurrency_ramp_duration),
        request_count: warmup.request_count,
        session_count: warmup.num_sessions,
        duration: secs(warmup.duration),
        grace_period: secs_or_forever(warmup.grace_period_secs()),
        ..PhasePlan::new(Phase::Warmup, scheduler)
    })
}

fn profiling_plan(
    config: &BenchmarkConfig,
    conversations: &[Conversation],
    seed: u64,
) -> Result<PhasePlan, ScheduleError> {
    let load = &config.load;
    let (scheduler, concurrency): (Box<dyn Scheduler>, Option<usize>) =
        if load.fixed_schedule.is_enabled() {
            let fixed = &load.fixed_schedule;
            let zero = if let Some(start) = fixed.start_offset_ms {
                start as f64
            } else if fixed.auto_offset {
                conversations
                    .iter()
                    .filter_map(first_timestamp)
                    .fold(f64::INFINITY, f64::min)
                    .min(f64::MAX)
            } else {
                0.0
            };
            if conversations.is_empty() {
                return Err(ScheduleError(
                    "a fixed schedule needs the trace's conversations".into(),
                ));
            }
            (
                Box::new(FixedSchedule::new(conversations, zero)?),
                load.concurrency,
            )
        } else if let Some(user) = load.user_centric {
            let turns = average_turns(conversations);
            let schedule = UserCentricSchedule::new(user.rate, user.num_users, turns)?;
            (Box::new(schedule), load.concurrency)
        } else {
            rate_or_closed_loop(
                load.initial_request_rate(),
                load.arrival_pattern.unwrap_or(ArrivalPattern::Poisson),
                load.arrival_smoothness,
                load.request_rate_ramp_duration,
                load.request_rate_series.as_deref(),
                load.concurrency,
                derive_seed(
                    seed,
                    load.arrival_pattern
                        .unwrap_or(ArrivalPattern::Poisson)
                        .seed_stream(),
                ),
            )?
        };
    let request_count = match load.request_count {
        Some(count) => Some(count),
        None if load.fixed_schedule.is_enabled() && load.benchmark_duration.is_none() => {
            Some(conversations.iter().map(|c| c.turns.len() as u64).sum())
        }
        None => None,
    };
    Ok(PhasePlan {
        concurrency,
        concurrency_ramp: secs(load.concurrency_ramp_duration),
        prefill_concurrency: load.prefill_concurrency,
        prefill_ramp: secs(load.prefill_concurrency_ramp_duration),
        request_count,
        session_count: load.num_sessions,
        duration: secs(load.benchmark_duration),
        grace_period: config.grace_period(),
        cancellation: load.request_cancellation_rate.map(|percent| Cancellation {
            probability: percent / 100.0,
            delay: saturating_secs(load.request_cancellation_delay.unwrap_or(0.0)),
            seed: derive_seed(seed, "timing.request.cancellation"),
        }),
        ..PhasePlan::new(Phase::Profiling, scheduler)
    })
}

/// Open loop at `rate` (ramped, then following `series`, when given; capped by
/// `concurrency` if set), else closed loop at `concurrency` (default 1).
fn rate_or_closed_loop(
    rate: Option<f64>,
    pattern: ArrivalPattern,
    smoothness: Option<f64>,
    ramp: Option<f64>,
    series: Option<&[RateSeriesPoint]>,
    concurrency: Option<usize>,
    seed: u64,
) -> Result<(Box<dyn Scheduler>, Option<usize>), ScheduleError> {
    Ok(match rate {
        Some(rate) => {
            let mut scheduler = RateScheduler::new(rate, pattern, smoothness, seed)?;
            if let Some(ramp) = secs(ramp) {
                scheduler = scheduler.with_ramp(ramp);
            }
            if let Some(points) = series {
                scheduler = scheduler.with_series(points.to_vec());
            }
            (Box::new(scheduler), concurrency)
        }
        None => (Box::new(ClosedLoop), Some(concurrency.unwrap_or(1))),
    })
}

/// The dataset's average turn count, rounded (2 for an empty dataset: the minimum a
/// user-centric run allows).
fn average_turns(conversations: &[Conversation]) -> usize {
    if conversations.is_empty() {
        return 2;
    }
    let total: usize = conversations.iter().map(|c| c.turns.len()).sum();
    (total as f64 / conversations.len() as f64).round().max(1.0) as usize
}

fn secs(value: Option<f64>) -> Option<Duration> {
    value
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(saturating_secs)
}

fn secs_or_forever(value: f64) -> Duration {
    if value.is_finite() {
        saturating_secs(value)
    } else {
        Duration::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::UserCentricConfig;
    use crate::conversation::Turn;
    use crate::schedule::{Arrival, TurnPacing};

    fn config() -> BenchmarkConfig {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        config.input.random_seed = Some(1);
        config
    }

    fn trace(stamps: &[&[f64]]) -> Vec<Conversation> {
        stamps
            .iter()
            .map(|turns| Conversation {
                turns: turns
                    .iter()
                    .map(|ts| Turn {
                        timestamp_ms: Some(*ts),
                        ..Turn::text("x")
                    })
                    .collect(),
                ..Conversation::default()
            })
            .collect()
    }

    fn arrivals(plan: &mut PhasePlan) -> Vec<(u128, Option<usize>)> {
        std::iter::from_fn(|| match plan.scheduler.next_arrival() {
            Arrival::Planned(p) => Some((p.at.as_millis(), p.conversation)),
            _ => None,
        })
        .collect()
    }

    #[test]
    fn warmup_falls_back_to_the_profiling_load_and_waits_for_its_requests() {
        let mut c = config();
        c.load.concurrency = Some(8);
        c.load.warmup.duration = Some(2.0);
        c.load.warmup.num_sessions = None;
        let c = c.validate().unwrap();
        let plans = PhasePlan::from_config(&c).unwrap();
        assert_eq!(plans.len(), 2);
        let warmup = &plans[0];
        assert_eq!(warmup.phase, Phase::Warmup);
        assert_eq!(
            warmup.concurrency,
            Some(8),
            "--concurrency when no warmup value"
        );
        assert_eq!(warmup.duration, Some(Duration::from_secs(2)));
        assert_eq!(
            warmup.grace_period,
            Duration::MAX,
            "warmup grace is unbounded"
        );
        assert_eq!(warmup.cancellation, None);

        let mut c = config();
        c.load.concurrency = Some(8);
        c.load.warmup.num_sessions = Some(3);
        c.load.warmup.concurrency = Some(2);
        c.load.request_cancellation_rate = Some(10.0);
        let plans = PhasePlan::from_config(&c.validate().unwrap()).unwrap();
        assert_eq!(plans[0].session_count, Some(3));
        assert_eq!(plans[0].concurrency, Some(2));
        assert_eq!(plans[0].cancellation, None, "never in warmup");
        assert_eq!(plans[1].cancellation.map(|c| c.probability), Some(0.1));
    }

    #[test]
    fn a_replay_starts_at_time_zero_and_sends_every_turn_by_default() {
        let conversations = trace(&[&[1_500.0], &[1_000.0, 1_300.0], &[1_200.0]]);
        let mut c = config();
        c.load.fixed_schedule.enabled = Some(true);
        c.load.fixed_schedule.auto_offset = true;
        c.input.input_file = Some("t.jsonl".into());
        let c = c.validate().unwrap();
        let mut plans = PhasePlan::for_dataset(&c, &conversations).unwrap();
        let plan = &mut plans[0];
        assert_eq!(plan.request_count, Some(4), "every turn of the trace");
        assert_eq!(
            plan.scheduler.turn_pacing(),
            TurnPacing::Timestamps { zero_ms: 1_000.0 }
        );
        assert_eq!(
            arrivals(plan),
            [(0, Some(1)), (200, Some(2)), (500, Some(0))]
        );

        // Without auto-offset, time zero is 0 ms (or the start offset).
        let mut c = config();
        c.load.fixed_schedule.enabled = Some(true);
        c.load.fixed_schedule.start_offset_ms = Some(1_100);
        c.input.input_file = Some("t.jsonl".into());
        let mut plans = PhasePlan::for_dataset(&c.validate().unwrap(), &conversations).unwrap();
        assert_eq!(
            plans[0].scheduler.turn_pacing(),
            TurnPacing::Timestamps { zero_ms: 1_100.0 }
        );
        assert_eq!(
            arrivals(&mut plans[0])[0],
            (0, Some(1)),
            "earlier entries clamp to 0"
        );
    }

    #[test]
    fn simulated_users_pace_turns_by_users_over_rate() {
        let mut c = config();
        c.load.user_centric = Some(UserCentricConfig {
            rate: 4.0,
            num_users: 8,
        });
        c.load.num_users = Some(8);
        c.load.benchmark_duration = Some(10.0);
        let c = c.validate().unwrap();
        let conversations = trace(&[&[0.0, 0.0, 0.0]]);
        let plans = PhasePlan::for_dataset(&c, &conversations).unwrap();
        assert_eq!(
            plans[0].scheduler.turn_pacing(),
            TurnPacing::Gap(Duration::from_secs(2))
        );
        assert_eq!(plans[0].concurrency, None);
    }

    #[test]
    fn huge_durations_and_timestamps_do_not_panic() {
        let mut c = config();
        c.load.benchmark_duration = Some(1e300);
        c.load.benchmark_grace_period = Some(1e300);
        c.load.concurrency = Some(4);
        c.load.concurrency_ramp_duration = Some(1e300);
        c.load.request_cancellation_rate = Some(10.0);
        c.load.request_cancellation_delay = Some(1e300);
        let c = c.validate().unwrap();
        let plans = PhasePlan::from_config(&c).unwrap();
        assert_eq!(plans[0].duration, Some(Duration::MAX));
        assert_eq!(c.grace_period(), Duration::MAX);

        // A trace entry at 1e25 ms replays "never" rather than overflowing.
        let conversations = trace(&[&[0.0], &[1e25, 2e25]]);
        let mut schedule = FixedSchedule::new(&conversations, 0.0).unwrap();
        schedule.next_arrival();
        let Arrival::Planned(late) = schedule.next_arrival() else {
            panic!("a planned arrival")
        };
        assert_eq!(late.at, Duration::MAX);
        let start = std::time::Instant::now();
        let due = schedule
            .turn_pacing()
            .due(&conversations[1].turns[1], start, start, start);
        assert!(due > start + Duration::from_secs(1_000_000_000));
        let slow = Turn {
            delay_ms: Some(1e25),
            ..Turn::text("t")
        };
        assert!(TurnPacing::ThinkTime.due(&slow, start, start, start) > start);
    }
}
