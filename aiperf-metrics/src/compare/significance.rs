//! Two-sample tests on per-request values: Mann–Whitney U (is one distribution shifted
//! against the other?), Welch's t (do the means differ?) and a percentile bootstrap of the
//! difference of percentiles (p50, p90, p99), whose confidence interval decides whether a
//! percentile moved.
//!
//! Samples are "baseline" (`a`) and "candidate" (`b`); differences are `b − a`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use crate::stats::percentile_sorted;

/// Mann–Whitney U test, normal approximation with tie correction and continuity
/// correction (as scipy's `mannwhitneyu(..., method="asymptotic")`), two-sided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the baseline sample: how many (baseline, candidate) pairs have the baseline
    /// value larger, ties counting one half.
    pub u: f64,
    /// Standardised statistic, continuity-corrected (0 when every value is tied).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Mann–Whitney U of `a` against `b`; `None` when either sample is empty.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let n = n1 + n2;
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    // Ranks start at 1; a run of t tied values shares the mean of its ranks, and adds
    // t³ − t to the tie correction of the variance.
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < pooled.len() {
        // `total_cmp` equality, so that even a NaN forms a group and the loop advances.
        let first = pooled[start].0;
        let end = start + pooled[start..].partition_point(|p| p.0.total_cmp(&first).is_eq());
        let t = (end - start) as f64;
        let mean_rank = (start + 1 + end) as f64 / 2.0;
        let in_a = pooled[start..end].iter().filter(|p| p.1).count() as f64;
        rank_sum_a += mean_rank * in_a;
        tie_term += t * t * t - t;
        start = end;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance.is_nan() || variance <= 0.0 {
        // Every value is the same: no evidence of any difference.
        return Some(MannWhitney {
            u,
            z: 0.0,
            p_value: 1.0,
        });
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    let p_value = (2.0 * Normal::standard().sf(z)).min(1.0);
    Some(MannWhitney { u, z, p_value })
}

/// Welch's unequal-variances t-test of the means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Welch {
    /// `(mean(b) − mean(a)) / √(s²a/na + s²b/nb)`, sample variances (ddof 1).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value from Student's t with `df` degrees of freedom.
    pub p_value: f64,
}

/// Welch's t-test of `a` against `b`; `None` when either sample has fewer than two
/// values or both have no spread (the statistic is undefined).
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (mean_a, var_a) = mean_and_sample_variance(a)?;
    let (mean_b, var_b) = mean_and_sample_variance(b)?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (var_a / na, var_b / nb);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return None;
    }
    let t = (mean_b - mean_a) / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let p_value = StudentsT::new(0.0, 1.0, df)
        .ok()
        .map(|dist| (2.0 * dist.sf(t.abs())).min(1.0))?;
    Some(Welch { t, df, p_value })
}

fn mean_and_sample_variance(x: &[f64]) -> Option<(f64, f64)> {
    if x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let variance = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    Some((mean, variance))
}

/// The percentiles whose difference the bootstrap estimates.
pub const BOOTSTRAP_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// A confidence interval of `percentile(b) − percentile(a)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

impl Interval {
    /// True when zero lies outside the interval: the percentile moved.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// Percentile-bootstrap confidence intervals (level `1 − alpha`) of the difference of
/// each of [`BOOTSTRAP_PERCENTILES`], from `resamples` rounds that each resample both
/// samples (with replacement, same sizes), drawn with a
/// ChaCha8 generator seeded with `seed`: the same inputs and seed give the same intervals.
/// `None` when either sample is empty or `resamples` is zero.
pub fn bootstrap_percentile_diffs(
    a: &[f64],
    b: &[f64],
    alpha: f64,
    resamples: usize,
    seed: u64,
) -> Option<[Interval; 3]> {
    if a.is_empty() || b.is_empty() || resamples == 0 {
        return None;
    }
    let sorted_a = sorted(a);
    let sorted_b = sorted(b);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut diffs: [Vec<f64>; 3] = std::array::from_fn(|_| Vec::with_capacity(resamples));
    for _ in 0..resamples {
        let pa = resample_percentiles(&sorted_a, &mut rng);
        let pb = resample_percentiles(&sorted_b, &mut rng);
        for (slot, (x, y)) in diffs.iter_mut().zip(pa.iter().zip(&pb)) {
            slot.push(y - x);
        }
    }
    let bounds = |d: &mut Vec<f64>| {
        d.sort_unstable_by(f64::total_cmp);
        Interval {
            low: percentile_sorted(d, 100.0 * alpha / 2.0).unwrap_or(f64::NAN),
            high: percentile_sorted(d, 100.0 * (1.0 - alpha / 2.0)).unwrap_or(f64::NAN),
        }
    };
    Some(diffs.map(|mut d| bounds(&mut d)))
}

fn sorted(x: &[f64]) -> Vec<f64> {
    let mut v = x.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// The [`BOOTSTRAP_PERCENTILES`] of one resample (n draws with replacement) of `sorted`,
/// without drawing it. How many of a range's draws land in its left half is binomial, so
/// halving ranges down to the single values that hold the wanted order statistics samples
/// exactly the distribution of the resample's order statistics, with O(log n) binomial
/// draws per statistic instead of n uniform draws and a count per value.
fn resample_percentiles(sorted: &[f64], rng: &mut ChaCha8Rng) -> [f64; 3] {
    let n = sorted.len();
    // numpy-linear percentile: the value at fractional rank h = q·(n − 1), interpolated
    // between the order statistics ⌊h⌋ and ⌊h⌋ + 1 (0-based); these six ascend.
    let ranks = BOOTSTRAP_PERCENTILES.map(|p| p / 100.0 * (n - 1) as f64);
    let wanted: [u64; 6] = std::array::from_fn(|i| {
        let below = ranks[i / 2].floor() as usize;
        (below + i % 2).min(n - 1) as u64
    });
    let mut values = [0.0; 6];
    descend(sorted, n as u64, 0, &wanted, &mut values, rng);
    std::array::from_fn(|i| {
        let h = ranks[i];
        let (lo, hi) = (values[2 * i], values[2 * i + 1]);
        lo + (hi - lo) * (h - h.floor())
    })
}

/// Fills `out[i]` with order statistic `wanted[i]` (ascending, counted over the whole
/// resample) for a range of the sorted sample that received `draws` draws, the first of
/// them being order statistic `first`.
fn descend(
    range: &[f64],
    draws: u64,
    first: u64,
    wanted: &[u64],
    out: &mut [f64],
    rng: &mut ChaCha8Rng,
) {
    if wanted.is_empty() {
        return;
    }
    if let [value] = range {
        out.fill(*value);
        return;
    }
    let (left, right) = range.split_at(range.len() / 2);
    let share = left.len() as f64 / range.len() as f64;
    // `share` lies strictly between 0 and 1, so the binomial always exists.
    let left_draws = Binomial::new(draws, share).map_or(0, |b| b.sample(rng));
    let split = wanted.partition_point(|&k| k < first + left_draws);
    let (wanted_left, wanted_right) = wanted.split_at(split);
    let (out_left, out_right) = out.split_at_mut(split);
    descend(left, left_draws, first, wanted_left, out_left, rng);
    descend(
        right,
        draws - left_draws,
        first + left_draws,
        wanted_right,
        out_right,
        rng,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Order statistic k (1-based) of a resample of five values is at most the j-th
    /// sorted value exactly when at least k of the five draws fall among the first j
    /// values: P = P(Binomial(5, j/5) ≥ k). The halving sampler must reproduce these
    /// probabilities for every k and j at once (100,000 resamples, within 0.005).
    #[test]
    fn resampled_order_statistics_follow_the_exact_distribution() {
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let trials = 100_000;
        let mut at_most = [[0u32; 5]; 5];
        for _ in 0..trials {
            let mut order = [0.0; 5];
            descend(&sorted, 5, 0, &[0, 1, 2, 3, 4], &mut order, &mut rng);
            for (k, value) in order.iter().enumerate() {
                for (j, bound) in sorted.iter().enumerate() {
                    at_most[k][j] += u32::from(value <= bound);
                }
            }
        }
        let choose =
            |n: i32, k: i32| (1..=k).fold(1.0, |c, i| c * f64::from(n + 1 - i) / f64::from(i));
        for k in 1..=5 {
            for j in 1..=5 {
                let p = f64::from(j) / 5.0;
                let exact: f64 = (k..=5)
                    .map(|m| choose(5, m) * p.powi(m) * (1.0 - p).powi(5 - m))
                    .sum();
                let observed =
                    f64::from(at_most[k as usize - 1][j as usize - 1]) / f64::from(trials);
                assert!(
                    (observed - exact).abs() < 0.005,
                    "k={k} j={j}: {observed} vs {exact}"
                );
            }
        }
    }

    /// Percentiles of a resample lie within the sample and in order.
    #[test]
    fn resampled_percentiles_are_ordered_and_inside_the_sample() {
        let sorted: Vec<f64> = (0..101).map(f64::from).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let [p50, p90, p99] = resample_percentiles(&sorted, &mut rng);
            assert!(0.0 <= p50 && p50 <= p90 && p90 <= p99 && p99 <= 100.0);
        }
    }
}
