//! Two-sample tests on per-request values: Mann–Whitney U (is one distribution shifted
//! against the other?), Welch's t (do the means differ?) and a percentile bootstrap of the
//! difference of percentiles (p50, p90, p99), whose confidence interval decides whether a
//! percentile moved.
//!
//! Samples are "baseline" (`a`) and "candidate" (`b`); differences are `b − a`.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
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
        let end = start + pooled[start..].partition_point(|p| p.0 == pooled[start].0);
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
/// each of [`BOOTSTRAP_PERCENTILES`], from `resamples` paired resamples drawn with a
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
    let mut counts = Vec::new();
    for _ in 0..resamples {
        let pa = resample_percentiles(&sorted_a, &mut rng, &mut counts);
        let pb = resample_percentiles(&sorted_b, &mut rng, &mut counts);
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

/// The [`BOOTSTRAP_PERCENTILES`] of one resample (with replacement, same size) of
/// `sorted`, without sorting the resample: drawing indices into the sorted sample and
/// counting how often each was drawn gives the resample's order statistics by a
/// cumulative walk, O(n) instead of O(n log n) per resample.
fn resample_percentiles(sorted: &[f64], rng: &mut ChaCha8Rng, counts: &mut Vec<u32>) -> [f64; 3] {
    let n = sorted.len();
    counts.clear();
    counts.resize(n, 0);
    for _ in 0..n {
        counts[rng.random_range(0..n)] += 1;
    }
    // numpy-linear percentile: the value at fractional rank h = q·(n − 1).
    let ranks = BOOTSTRAP_PERCENTILES.map(|p| p / 100.0 * (n - 1) as f64);
    let wanted: Vec<usize> = ranks
        .iter()
        .flat_map(|h| [h.floor() as usize, (h.floor() as usize + 1).min(n - 1)])
        .collect();
    let mut values = vec![0.0; wanted.len()];
    let mut seen = 0usize;
    let mut next = 0usize;
    for (value, &count) in sorted.iter().zip(counts.iter()) {
        seen += count as usize;
        // Order statistics k < seen are this value.
        for (slot, &k) in values.iter_mut().zip(&wanted) {
            if k < seen && k >= next {
                *slot = *value;
            }
        }
        next = seen;
    }
    std::array::from_fn(|i| {
        let h = ranks[i];
        let (lo, hi) = (values[2 * i], values[2 * i + 1]);
        lo + (hi - lo) * (h - h.floor())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counting walk gives the same percentiles as drawing the resample explicitly,
    /// sorting it and taking numpy-linear percentiles.
    #[test]
    fn counting_walk_matches_a_sorted_resample() {
        let sample: Vec<f64> = (0..37).map(|i| f64::from((i * 7919) % 101) / 3.0).collect();
        let sorted = sorted(&sample);
        let mut walk_rng = ChaCha8Rng::seed_from_u64(7);
        let mut naive_rng = ChaCha8Rng::seed_from_u64(7);
        let mut counts = Vec::new();
        for _ in 0..50 {
            let walked = resample_percentiles(&sorted, &mut walk_rng, &mut counts);
            let mut resample: Vec<f64> = (0..sorted.len())
                .map(|_| sorted[naive_rng.random_range(0..sorted.len())])
                .collect();
            resample.sort_unstable_by(f64::total_cmp);
            for (value, p) in walked.iter().zip(BOOTSTRAP_PERCENTILES) {
                let expected = percentile_sorted(&resample, p).unwrap();
                assert!(
                    (value - expected).abs() < 1e-12,
                    "p{p}: {value} vs {expected}"
                );
            }
        }
    }
}
