//! The token schedule: token `k` is due at `start + TTFT + ITL_1 + … + ITL_k`.
//!
//! The schedule is absolute, so a late wake-up never delays later tokens (no drift).

use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::LogNormal;

/// Log-normal multiplicative jitter with mean 1 and the given coefficient of variation.
#[derive(Debug, Clone)]
pub(crate) struct Jitter {
    rng: ChaCha8Rng,
    dist: LogNormal<f64>,
}

impl Jitter {
    /// `None` when `cv` is zero (no jitter) or invalid.
    pub(crate) fn new(cv: f64, seed: u64) -> Option<Self> {
        if !(cv.is_finite() && cv > 0.0) {
            return None;
        }
        let sigma2 = (1.0 + cv * cv).ln();
        let dist = LogNormal::new(-sigma2 / 2.0, sigma2.sqrt()).ok()?;
        Some(Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            dist,
        })
    }

    pub(crate) fn factor(&mut self) -> f64 {
        self.rng.sample(self.dist)
    }

    pub(crate) fn apply(&mut self, d: Duration) -> Duration {
        d.mul_f64(self.factor())
    }
}

/// When each token of one response is due.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// Instant of token 0 (start + TTFT), moved later by stalls.
    first: Instant,
    itl: Duration,
    jitter: Option<Jitter>,
    /// Token index and offset from `first` of the last computed token (jittered case).
    cursor: (u32, Duration),
}

impl Schedule {
    pub(crate) fn new(
        start: Instant,
        ttft: Duration,
        itl: Duration,
        itl_jitter: Option<Jitter>,
    ) -> Self {
        Self {
            first: start + ttft,
            itl,
            jitter: itl_jitter,
            cursor: (0, Duration::ZERO),
        }
    }

    /// Due instant of token `k`. With jitter, `k` must not decrease between calls.
    pub(crate) fn due(&mut self, k: u32) -> Instant {
        match &mut self.jitter {
            None => self.first + self.itl * k,
            Some(j) => {
                let (mut at, mut off) = self.cursor;
                while at < k {
                    off += j.apply(self.itl);
                    at += 1;
                }
                self.cursor = (at, off);
                self.first + off
            }
        }
    }

    /// Move every later token by `d` (a stall).
    pub(crate) fn shift(&mut self, d: Duration) {
        self.first += d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_schedule() {
        let t0 = Instant::now();
        let mut s = Schedule::new(
            t0,
            Duration::from_millis(50),
            Duration::from_millis(10),
            None,
        );
        assert_eq!(s.due(0) - t0, Duration::from_millis(50));
        assert_eq!(s.due(20) - t0, Duration::from_millis(250));
        s.shift(Duration::from_millis(5));
        assert_eq!(s.due(1) - t0, Duration::from_millis(65));
    }

    #[test]
    fn jitter_has_mean_one_and_is_seeded() {
        let mut a = Jitter::new(0.5, 3).unwrap();
        let mut b = Jitter::new(0.5, 3).unwrap();
        let xs: Vec<f64> = (0..20_000).map(|_| a.factor()).collect();
        let ys: Vec<f64> = (0..20_000).map(|_| b.factor()).collect();
        assert_eq!(xs, ys);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((mean - 1.0).abs() < 0.03, "mean {mean}");
        assert!((var.sqrt() - 0.5).abs() < 0.05, "cv {}", var.sqrt());
        assert!(Jitter::new(0.0, 1).is_none());
    }

    #[test]
    fn jittered_schedule_is_monotonic() {
        let t0 = Instant::now();
        let mut s = Schedule::new(
            t0,
            Duration::from_millis(5),
            Duration::from_millis(2),
            Jitter::new(0.3, 9),
        );
        let mut last = s.due(0);
        for k in 1..100 {
            let d = s.due(k);
            assert!(d > last);
            last = d;
        }
    }
}
