//! Sampling (ISL, OSL) pairs from a `--seq-dist` [`SequenceDistribution`]
//! (docs/cli-rules.md#sequence-distributions).

use aiperf_core::config::{SeqDistPair, SequenceDistribution};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, Normal};

/// Draws one (ISL, OSL) per turn: a pair by cumulative probability, then each length
/// from its normal when its stddev is above 0.
#[derive(Debug, Clone)]
pub struct SeqDistSampler {
    pairs: Vec<SeqDistPair>,
    /// Cumulative probabilities as fractions; the last is 1.
    cumulative: Vec<f64>,
}

impl SeqDistSampler {
    /// A sampler for a checked distribution.
    pub fn new(distribution: &SequenceDistribution) -> Self {
        let total: f64 = distribution.pairs.iter().map(|p| p.prob).sum();
        let mut running = 0.0;
        let cumulative = distribution
            .pairs
            .iter()
            .map(|p| {
                running += p.prob / total;
                running
            })
            .collect();
        Self {
            pairs: distribution.pairs.clone(),
            cumulative,
        }
    }

    /// The index of the pair a uniform draw `u` in `[0, 1)` lands on: the first whose
    /// cumulative probability exceeds `u` (a right-sided binary search).
    pub fn pick(&self, u: f64) -> usize {
        self.cumulative
            .partition_point(|c| *c <= u)
            .min(self.pairs.len().saturating_sub(1))
    }

    /// One (ISL, OSL) draw.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> (u32, u32) {
        let pair = &self.pairs[self.pick(rng.random::<f64>())];
        (
            draw_length(pair.isl, pair.isl_stddev, rng),
            draw_length(pair.osl, pair.osl_stddev, rng),
        )
    }
}

/// `mean` when `stddev` is 0, else `max(1, ceil(x))` for a normal draw `x >= 0`
/// (negative draws are redrawn; after many misses the mean stands in).
fn draw_length<R: Rng + ?Sized>(mean: u32, stddev: f64, rng: &mut R) -> u32 {
    let Ok(normal) = Normal::new(f64::from(mean), stddev) else {
        return mean;
    };
    if stddev <= 0.0 {
        return mean;
    }
    (0..100)
        .map(|_| normal.sample(rng))
        .find(|x| *x >= 0.0)
        .map_or(mean, |x| x.ceil().clamp(1.0, f64::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn sampler(text: &str) -> SeqDistSampler {
        SeqDistSampler::new(&SequenceDistribution::parse(text).unwrap())
    }

    #[test]
    fn pick_is_right_sided() {
        let s = sampler("1,1:25;2,2:25;3,3:50");
        assert_eq!(s.pick(0.0), 0);
        assert_eq!(s.pick(0.2499), 0);
        assert_eq!(s.pick(0.25), 1);
        assert_eq!(s.pick(0.5), 2);
        assert_eq!(s.pick(0.9999), 2);
    }

    #[test]
    fn frequencies_follow_the_probabilities() {
        let s = sampler("100,10:20;200,20:30;300,30:50");
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut counts = [0usize; 3];
        let n = 20_000;
        for _ in 0..n {
            let (isl, osl) = s.sample(&mut rng);
            assert_eq!(isl, osl * 10);
            counts[(isl / 100 - 1) as usize] += 1;
        }
        for (count, expected) in counts.iter().zip([0.2, 0.3, 0.5]) {
            let share = *count as f64 / f64::from(n);
            assert!((share - expected).abs() < 0.015, "{counts:?}");
        }
    }

    #[test]
    fn stddev_spreads_lengths_and_keeps_them_at_least_one() {
        let s = sampler("5|50,1000|100:100");
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let draws: Vec<_> = (0..2000).map(|_| s.sample(&mut rng)).collect();
        assert!(draws.iter().all(|(isl, osl)| *isl >= 1 && *osl >= 1));
        let mean_osl = draws.iter().map(|d| f64::from(d.1)).sum::<f64>() / 2000.0;
        assert!((mean_osl - 1000.5).abs() < 10.0, "{mean_osl}");
        let distinct: std::collections::HashSet<_> = draws.iter().map(|d| d.0).collect();
        assert!(distinct.len() > 20);
    }
}
