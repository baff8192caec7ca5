//! The [`Scheduler`] trait: when each request is meant to be sent.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

use crate::config::ArrivalPattern;

/// When the next request should go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Closed loop: as soon as a concurrency slot is free.
    WhenSlotFree,
    /// Open loop: at this offset from the phase start, whatever earlier requests are doing.
    At(Duration),
}

/// Yields the arrival of every request of a phase, in order.
pub trait Scheduler: Send {
    /// The next arrival.
    fn next_arrival(&mut self) -> Arrival;
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
    gaps: Gaps,
    rng: ChaCha8Rng,
    elapsed_secs: f64,
}

#[derive(Debug)]
enum Gaps {
    Constant(f64),
    Exponential(Exp<f64>),
    Gamma(Gamma<f64>),
}

/// The rate or shape of a [`RateScheduler`] is not usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid arrival process: {0}")]
pub struct ScheduleError(String);

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
        let gaps = match pattern {
            ArrivalPattern::Constant => Gaps::Constant(1.0 / rate),
            ArrivalPattern::Poisson => {
                Gaps::Exponential(Exp::new(rate).map_err(|e| ScheduleError(e.to_string()))?)
            }
            ArrivalPattern::Gamma => {
                let shape = smoothness.unwrap_or(1.0);
                Gaps::Gamma(
                    Gamma::new(shape, 1.0 / (rate * shape))
                        .map_err(|e| ScheduleError(e.to_string()))?,
                )
            }
            ArrivalPattern::ConcurrencyBurst => {
                return Err(ScheduleError(
                    "concurrency_burst has no rate; use ClosedLoop".into(),
                ))
            }
        };
        Ok(Self {
            gaps,
            rng: ChaCha8Rng::seed_from_u64(seed),
            elapsed_secs: 0.0,
        })
    }
}

impl Scheduler for RateScheduler {
    fn next_arrival(&mut self) -> Arrival {
        let gap = match &self.gaps {
            Gaps::Constant(gap) => *gap,
            Gaps::Exponential(exp) => exp.sample(&mut self.rng),
            Gaps::Gamma(gamma) => gamma.sample(&mut self.rng),
        };
        self.elapsed_secs += gap;
        Arrival::At(Duration::from_secs_f64(self.elapsed_secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(s: &mut RateScheduler, n: usize) -> Vec<Duration> {
        (0..n)
            .map(|_| match s.next_arrival() {
                Arrival::At(at) => at,
                Arrival::WhenSlotFree => panic!("rate schedules are open loop"),
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
            let gaps: Vec<f64> = at.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
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
    fn zero_rate_is_rejected() {
        assert!(RateScheduler::new(0.0, ArrivalPattern::Poisson, None, 0).is_err());
    }
}
