//! The [`Scheduler`] trait: when each request is meant to be sent.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

use crate::clock::{instant_after, saturating_secs};
use crate::config::{ArrivalPattern, RateSeriesPoint};
use crate::conversation::Turn;

mod fixed;
mod user_centric;

pub use fixed::{first_timestamp, replay_window, FixedSchedule};
pub use user_centric::UserCentricSchedule;

/// When the next session should start.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrival {
    /// Closed loop: as soon as a concurrency slot is free.
    WhenSlotFree,
    /// Open loop: at this offset from the phase start, whatever earlier requests are doing.
    At(Duration),
    /// Open loop with the session decided by the schedule (trace replay, simulated users).
    Planned(PlannedSession),
    /// The schedule has nothing more to send.
    Exhausted,
}

/// A session whose start and shape the schedule fixes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlannedSession {
    /// Offset from the phase start.
    pub at: Duration,
    /// Index of the conversation in the dataset; `None` lets the sampler choose.
    pub conversation: Option<usize>,
    /// Send at most this many turns (a simulated user that joined mid-conversation).
    pub max_turns: Option<usize>,
    /// The session's `X-Correlation-ID`; `None` draws a UUID.
    pub correlation_id: Option<String>,
}

/// Yields the arrival of every session of a phase, in order, and says when a session's
/// later turns are due.
pub trait Scheduler: Send {
    /// The next arrival.
    fn next_arrival(&mut self) -> Arrival;

    /// How a session's later turns are spaced. The default waits each turn's own think
    /// time after the previous reply.
    fn turn_pacing(&self) -> TurnPacing {
        TurnPacing::ThinkTime
    }
}

/// When a later turn of a session is due.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TurnPacing {
    /// The turn's think time (`delay_ms`, none when absent) after the previous reply.
    ThinkTime,
    /// This long after the previous turn was due, and never before the previous reply
    /// (simulated users, each turn one gap after the last).
    Gap(Duration),
    /// At the turn's trace timestamp minus `zero_ms` into the phase, or at once when that
    /// has passed; a turn without a timestamp waits its think time (trace replay).
    Timestamps {
        /// The trace time of the phase start, in ms.
        zero_ms: f64,
    },
}

impl TurnPacing {
    /// When `turn` is due, `now` being the instant its previous turn's reply ended, that
    /// turn having been due at `previous_due`, in a phase started at `phase_start`.
    pub fn due(
        self,
        turn: &Turn,
        previous_due: Instant,
        phase_start: Instant,
        now: Instant,
    ) -> Instant {
        let think_time =
            || instant_after(now, saturating_secs(turn.delay_ms.unwrap_or(0.0) / 1000.0));
        match self {
            TurnPacing::ThinkTime => think_time(),
            TurnPacing::Gap(gap) => instant_after(previous_due, gap).max(now),
            TurnPacing::Timestamps { zero_ms } => match turn.timestamp_ms {
                Some(timestamp) => {
                    let offset = saturating_secs((timestamp - zero_ms) / 1000.0);
                    instant_after(phase_start, offset).max(now)
                }
                None => think_time(),
            },
        }
    }
}

/// Closed loop: every request waits only for a free slot.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClosedLoop;

impl Scheduler for ClosedLoop {
    fn next_arrival(&mut self) -> Arrival {
        Arrival::WhenSlotFree
    }
}

/// Open loop at a target rate: arrival k is at the sum of k gaps drawn from the pattern.
///
/// Offsets are absolute from the phase start, so time spent issuing a request never
/// shifts later arrivals.
#[derive(Debug)]
pub struct RateScheduler {
    /// Gaps at a rate of one per second, divided by the current rate.
    unit_gaps: Gaps,
    rate: f64,
    ramp: Option<RateRamp>,
    /// The series that takes over from `rate` once the ramp ends.
    series: Option<Vec<RateSeriesPoint>>,
    rng: ChaCha8Rng,
    elapsed_secs: f64,
}

#[derive(Debug)]
enum Gaps {
    Constant,
    Exponential(Exp<f64>),
    Gamma(Gamma<f64>),
}

/// A linear rise to the target rate, updated in steps as the Python AIPerf does.
#[derive(Debug, Clone, Copy)]
struct RateRamp {
    start_rate: f64,
    duration_secs: f64,
}

impl RateRamp {
    /// How often the ramped rate changes.
    const STEP_SECS: f64 = 0.1;

    /// The rate in force `elapsed` seconds into the phase.
    fn rate_at(&self, elapsed: f64, target: f64) -> f64 {
        if elapsed >= self.duration_secs {
            return target;
        }
        let stepped = (elapsed / Self::STEP_SECS).floor() * Self::STEP_SECS;
        self.start_rate + (target - self.start_rate) * stepped / self.duration_secs
    }
}

/// A schedule that cannot be built: a rate or shape that is not usable, a trace entry
/// without a timestamp.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid schedule: {0}")]
pub struct ScheduleError(pub(crate) String);

impl RateScheduler {
    /// Arrivals at `rate` per second spaced by `pattern`; `smoothness` is the gamma shape
    /// (1 = Poisson, below 1 burstier, above 1 smoother).
    pub fn new(
        rate: f64,
        pattern: ArrivalPattern,
        smoothness: Option<f64>,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ScheduleError(format!("rate must be > 0, got {rate}")));
        }
        let unit_gaps = match pattern {
            ArrivalPattern::Constant => Gaps::Constant,
            ArrivalPattern::Poisson => {
                Gaps::Exponential(Exp::new(1.0).map_err(|e| ScheduleError(e.to_string()))?)
            }
            ArrivalPattern::Gamma => {
                let shape = smoothness.unwrap_or(1.0);
                Gaps::Gamma(
                    Gamma::new(shape, 1.0 / shape).map_err(|e| ScheduleError(e.to_string()))?,
                )
            }
            ArrivalPattern::ConcurrencyBurst => {
                return Err(ScheduleError(
                    "concurrency_burst has no rate; use ClosedLoop".into(),
                ))
            }
        };
        Ok(Self {
            unit_gaps,
            rate,
            ramp: None,
            series: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
            elapsed_secs: 0.0,
        })
    }

    /// Starts at `rate × 0.1 / ramp` and rises linearly to the rate over `ramp`, in
    /// 0.1 s steps (`--request-rate-ramp-duration`). A ramp shorter than one step is none.
    #[must_use]
    pub fn with_ramp(mut self, ramp: Duration) -> Self {
        let duration_secs = ramp.as_secs_f64();
        self.ramp = (duration_secs > RateRamp::STEP_SECS).then(|| RateRamp {
            start_rate: self.rate * RateRamp::STEP_SECS / duration_secs,
            duration_secs,
        });
        self
    }

    /// After the ramp (if any), follows `points` (`--request-rate-series`): the rate is
    /// interpolated linearly between them and updated in the ramp's 0.1 s steps, as the
    /// Python AIPerf does; before the first point it is the first's, after the last the
    /// last's. The scheduler's own rate should be the first point's (the ramp's target).
    #[must_use]
    pub fn with_series(mut self, points: Vec<RateSeriesPoint>) -> Self {
        self.series = (!points.is_empty()).then_some(points);
        self
    }

    /// The rate in force `elapsed` seconds into the phase.
    fn rate_at(&self, elapsed: f64) -> f64 {
        let ramp_secs = self.ramp.map_or(0.0, |ramp| ramp.duration_secs);
        match (&self.ramp, &self.series) {
            (Some(ramp), _) if elapsed < ramp_secs => ramp.rate_at(elapsed, self.rate),
            (_, Some(points)) => {
                let stepped =
                    ((elapsed - ramp_secs) / RateRamp::STEP_SECS).floor() * RateRamp::STEP_SECS;
                series_rate_at(points, stepped, self.rate)
            }
            _ => self.rate,
        }
    }

    /// The gap to the next arrival at the rate in force now.
    fn next_gap(&mut self) -> f64 {
        let rate = self.rate_at(self.elapsed_secs);
        let unit = match &self.unit_gaps {
            Gaps::Constant => 1.0,
            Gaps::Exponential(exp) => exp.sample(&mut self.rng),
            Gaps::Gamma(gamma) => gamma.sample(&mut self.rng),
        };
        unit / rate
    }
}

/// The rate of a series `t` seconds after it starts: linear between the points around
/// `t`, the first's before them, the last's after (`fallback` for no points).
fn series_rate_at(points: &[RateSeriesPoint], t: f64, fallback: f64) -> f64 {
    let after = points.partition_point(|point| point.time_s <= t);
    match (after.checked_sub(1).map(|i| points[i]), points.get(after)) {
        (Some(left), Some(right)) => {
            let progress = (t - left.time_s) / (right.time_s - left.time_s);
            left.qps + (right.qps - left.qps) * progress
        }
        (Some(last), None) => last.qps,
        (None, Some(first)) => first.qps,
        (None, None) => fallback,
    }
}

impl Scheduler for RateScheduler {
    fn next_arrival(&mut self) -> Arrival {
        self.elapsed_secs += self.next_gap();
        Arrival::At(saturating_secs(self.elapsed_secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_pacing_decides_when_a_later_turn_is_due() {
        let start = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        let reply_ended = start + ms(300);
        let previous_due = start + ms(100);
        let turn = Turn {
            delay_ms: Some(50.0),
            timestamp_ms: Some(1_700.0),
            ..Turn::text("t")
        };
        let untimed = Turn::text("u");
        let due =
            |pacing: TurnPacing, turn: &Turn| pacing.due(turn, previous_due, start, reply_ended);

        // Think time counts from the reply.
        assert_eq!(due(TurnPacing::ThinkTime, &turn), reply_ended + ms(50));
        assert_eq!(due(TurnPacing::ThinkTime, &untimed), reply_ended);
        // A gap counts from when the previous turn was due, never before the reply.
        assert_eq!(due(TurnPacing::Gap(ms(500)), &turn), start + ms(600));
        assert_eq!(due(TurnPacing::Gap(ms(100)), &turn), reply_ended);
        // Timestamps count from the phase start; a passed one is due at once, and a
        // turn without one waits its think time.
        let replay = TurnPacing::Timestamps { zero_ms: 1_000.0 };
        assert_eq!(due(replay, &turn), start + ms(700));
        let late = TurnPacing::Timestamps { zero_ms: 1_600.0 };
        assert_eq!(due(late, &turn), reply_ended);
        assert_eq!(due(replay, &untimed), reply_ended);
    }

    fn offsets(s: &mut RateScheduler, n: usize) -> Vec<Duration> {
        (0..n)
            .map(|_| match s.next_arrival() {
                Arrival::At(at) => at,
                other => panic!("rate schedules are open loop at offsets, got {other:?}"),
            })
            .collect()
    }

    #[test]
    fn constant_gaps_are_exact() {
        let mut s = RateScheduler::new(4.0, ArrivalPattern::Constant, None, 0).unwrap();
        let got = offsets(&mut s, 3);
        assert_eq!(
            got,
            [250, 500, 750].map(Duration::from_millis).to_vec(),
            "first arrival is one gap after the start"
        );
    }

    #[test]
    fn poisson_mean_rate_matches_and_is_seeded() {
        let mut a = RateScheduler::new(100.0, ArrivalPattern::Poisson, None, 42).unwrap();
        let mut b = RateScheduler::new(100.0, ArrivalPattern::Poisson, None, 42).unwrap();
        let got = offsets(&mut a, 20_000);
        assert_eq!(got, offsets(&mut b, 20_000));
        let achieved = 20_000.0 / got[got.len() - 1].as_secs_f64();
        assert!((achieved - 100.0).abs() < 3.0, "achieved {achieved}");
    }

    #[test]
    fn gamma_smoothness_narrows_the_gaps() {
        let spread = |shape: f64| {
            let mut s = RateScheduler::new(10.0, ArrivalPattern::Gamma, Some(shape), 3).unwrap();
            let at = offsets(&mut s, 5_000);
            let gaps: Vec<f64> = at
                .windows(2)
                .map(|w| w[1].checked_sub(w[0]).unwrap().as_secs_f64())
                .collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
            (mean, var.sqrt() / mean)
        };
        let (mean_smooth, cv_smooth) = spread(10.0);
        let (_, cv_bursty) = spread(0.5);
        assert!((mean_smooth - 0.1).abs() < 0.005);
        assert!(
            cv_smooth < 0.4 && cv_bursty > 1.2,
            "{cv_smooth} {cv_bursty}"
        );
    }

    #[test]
    fn a_series_is_followed_after_the_ramp_in_tenth_of_a_second_steps() {
        let point = |time_s, qps| RateSeriesPoint { time_s, qps };
        let scheduler = RateScheduler::new(10.0, ArrivalPattern::Constant, None, 1)
            .unwrap()
            .with_ramp(Duration::from_secs(1))
            .with_series(vec![point(1.0, 10.0), point(3.0, 30.0), point(4.0, 20.0)]);
        let rates: Vec<f64> = [0.0, 0.95, 1.0, 1.5, 2.0, 3.05, 4.05, 4.55, 5.05, 9.0]
            .iter()
            .map(|&t| (scheduler.rate_at(t) * 1e6).round() / 1e6)
            .collect();
        // The ramp (1 s) first, then the series from its own time 0: the first point's
        // rate until time_s 1, linear to 30 at 3, down to 20 at 4, then 20.
        assert_eq!(
            rates,
            [1.0, 9.1, 10.0, 10.0, 10.0, 20.0, 30.0, 25.0, 20.0, 20.0]
        );
    }

    #[test]
    fn a_ramp_rises_in_tenth_of_a_second_steps_to_the_rate() {
        // 100 req/s over 1 s: starts at 100 × 0.1 / 1 = 10 req/s.
        let mut s = RateScheduler::new(100.0, ArrivalPattern::Constant, None, 0)
            .unwrap()
            .with_ramp(Duration::from_secs(1));
        let at = offsets(&mut s, 400);
        let gaps: Vec<f64> = std::iter::once(at[0].as_secs_f64())
            .chain(
                at.windows(2)
                    .map(|w| w[1].checked_sub(w[0]).unwrap().as_secs_f64()),
            )
            .collect();
        assert!(
            (gaps[0] - 0.1).abs() < 1e-8,
            "first gap at 10 req/s: {}",
            gaps[0]
        );
        // At 0.1 s the rate is 10 + 90 × 0.1 = 19 req/s.
        assert!((gaps[1] - 1.0 / 19.0).abs() < 1e-8, "{}", gaps[1]);
        // The rate never falls and reaches 100 req/s after the ramp.
        // (Offsets are whole nanoseconds, hence the tolerance.)
        assert!(gaps.windows(2).all(|w| w[1] <= w[0] + 1e-8));
        let after: Vec<&f64> = at
            .iter()
            .zip(&gaps)
            .filter(|(t, _)| t.as_secs_f64() > 1.05)
            .map(|(_, g)| g)
            .collect();
        assert!(!after.is_empty() && after.iter().all(|g| (**g - 0.01).abs() < 1e-8));
    }

    #[test]
    fn zero_rate_is_rejected() {
        assert!(RateScheduler::new(0.0, ArrivalPattern::Poisson, None, 0).is_err());
    }
}
