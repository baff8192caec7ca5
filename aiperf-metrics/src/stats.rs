//! Summary statistics exactly as the Python AIPerf computes them.
//!
//! * Percentiles follow numpy's default `np.percentile` ("linear"), from [`aiperf_stats`],
//!   the one definition every report shares. (statrs' percentile uses another definition
//!   and is never used for reported numbers.)
//! * `std` is the population standard deviation (ddof = 0, numpy's default).
//! * Memory stays bounded: a [`Distribution`] keeps every value exactly up to
//!   [`EXACT_LIMIT`] values, then folds them into a merging [`TDigest`] (compression 500,
//!   as upstream uses for inter-chunk latency). `count`, `sum`, `avg`, `min`, `max` and
//!   `std` stay exact in both modes; only percentiles become estimates (relative rank
//!   error well below 0.1 % at compression 500).

use std::cmp::Ordering;

pub use aiperf_stats::{percentile_sorted, PERCENTILES};

/// Values a [`Distribution`] keeps exactly before switching to a t-digest (8 MiB of f64).
pub const EXACT_LIMIT: usize = 1 << 20;

/// The t-digest compression used when a distribution outgrows [`EXACT_LIMIT`].
pub const DIGEST_COMPRESSION: f64 = 500.0;

/// Sorts `values` (NaN removed) and computes every statistic. `None` when no finite value
/// is left.
pub fn compute_stats(values: &mut Vec<f64>) -> Option<Stats> {
    values.retain(|v| !v.is_nan());
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let avg = sum / n;
    let var = values.iter().map(|v| (v - avg) * (v - avg)).sum::<f64>() / n;
    let mut percentiles = [0.0; 9];
    for (slot, p) in percentiles.iter_mut().zip(PERCENTILES) {
        *slot = percentile_sorted(values, p).unwrap_or(f64::NAN);
    }
    Some(Stats {
        count: values.len() as u64,
        sum,
        avg,
        min: values[0],
        max: values[values.len() - 1],
        std: var.sqrt(),
        percentiles,
    })
}

/// Statistics of one distribution, in the metric's display unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Number of values.
    pub count: u64,
    /// Sum of the values.
    pub sum: f64,
    /// Arithmetic mean.
    pub avg: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Population standard deviation (ddof = 0).
    pub std: f64,
    /// p1, p5, p10, p25, p50, p75, p90, p95, p99 (see [`PERCENTILES`]).
    pub percentiles: [f64; 9],
}

impl Stats {
    /// The median.
    pub fn p50(&self) -> f64 {
        let [_, _, _, _, p50, _, _, _, _] = self.percentiles;
        p50
    }

    /// The 99th percentile.
    pub fn p99(&self) -> f64 {
        let [_, _, _, _, _, _, _, _, p99] = self.percentiles;
        p99
    }

    /// The percentile `p` if it is one of [`PERCENTILES`].
    pub fn percentile(&self, p: f64) -> Option<f64> {
        PERCENTILES
            .iter()
            .position(|x| (*x - p).abs() < 1e-9)
            .map(|i| self.percentiles[i])
    }
}

/// Values appended in blocks of at most [`Blocks::BLOCK`], so that appending never moves
/// what is stored. A doubling `Vec` copied every value at each doubling and touched twice
/// the memory it kept: with the page faults, ~7 % of the record processor's samples in a
/// non-streaming run. The first block grows as a `Vec` does, so a distribution of a few
/// values holds a few values.
#[derive(Debug, Clone)]
struct Blocks<T> {
    blocks: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy> Blocks<T> {
    /// Values per block (64 KiB of f64).
    const BLOCK: usize = 8192;

    fn new() -> Self {
        Self {
            blocks: Vec::new(),
            len: 0,
        }
    }

    fn push(&mut self, value: T) {
        match self.blocks.last_mut() {
            Some(block) if block.len() < Self::BLOCK => block.push(value),
            last => {
                let mut block = if last.is_some() {
                    Vec::with_capacity(Self::BLOCK)
                } else {
                    Vec::new()
                };
                block.push(value);
                self.blocks.push(block);
            }
        }
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn last_mut(&mut self) -> Option<&mut T> {
        self.blocks.last_mut().and_then(|block| block.last_mut())
    }

    fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.blocks.iter().flatten().copied()
    }

    /// The values in one `Vec`, in the order they came.
    fn to_vec(&self) -> Vec<T> {
        let mut all = Vec::with_capacity(self.len);
        for block in &self.blocks {
            all.extend_from_slice(block);
        }
        all
    }
}

/// A growing set of values with bounded memory: exact up to a limit, a t-digest beyond.
#[derive(Debug, Clone)]
pub struct Distribution {
    exact: Blocks<f64>,
    digest: Option<TDigest>,
    limit: usize,
    count: u64,
    sum: f64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

impl Default for Distribution {
    fn default() -> Self {
        Self::with_limit(EXACT_LIMIT)
    }
}

impl Distribution {
    /// An empty distribution that stays exact for [`EXACT_LIMIT`] values.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty distribution that stays exact for `limit` values.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            exact: Blocks::new(),
            digest: None,
            limit,
            count: 0,
            sum: 0.0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds one value (NaN is ignored).
    pub fn push(&mut self, value: f64) {
        if value.is_nan() {
            return;
        }
        self.count += 1;
        self.sum += value;
        let delta = value - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (value - self.mean);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if let Some(digest) = &mut self.digest {
            digest.add(value, 1.0);
        } else {
            self.exact.push(value);
            if self.exact.len() > self.limit {
                let mut digest = TDigest::new(DIGEST_COMPRESSION);
                for v in self.exact.iter() {
                    digest.add(v, 1.0);
                }
                self.exact = Blocks::new();
                self.digest = Some(digest);
            }
        }
    }

    /// Number of values added.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// True once the values were folded into a t-digest (percentiles are estimates).
    pub fn is_approximate(&self) -> bool {
        self.digest.is_some()
    }

    /// The statistics; `None` when empty. Exact mode reproduces numpy bit for bit in the
    /// percentiles; `std` and `avg` come from the values themselves (two-pass) while exact.
    pub fn stats(&self) -> Option<Stats> {
        if self.count == 0 {
            return None;
        }
        match &self.digest {
            None => compute_stats(&mut self.exact.to_vec()),
            Some(digest) => {
                let n = self.count as f64;
                let mut percentiles = [0.0; 9];
                for (slot, p) in percentiles.iter_mut().zip(PERCENTILES) {
                    *slot = digest
                        .quantile_rank(p / 100.0, self.min, self.max)
                        .unwrap_or(f64::NAN);
                }
                Some(Stats {
                    count: self.count,
                    sum: self.sum,
                    avg: self.sum / n,
                    min: self.min,
                    max: self.max,
                    std: (self.m2 / n).max(0.0).sqrt(),
                    percentiles,
                })
            }
        }
    }
}

/// A merging t-digest (Dunning & Ertl), the sketch upstream uses for inter-chunk latency.
///
/// Centroids near the tails stay small (scale function `k₁`), so extreme percentiles stay
/// accurate while memory is O(compression).
#[derive(Debug, Clone)]
pub struct TDigest {
    compression: f64,
    centroids: Vec<(f64, f64)>,
    buffer: Vec<(f64, f64)>,
    total: f64,
}

impl TDigest {
    /// An empty digest with the given compression (δ).
    pub fn new(compression: f64) -> Self {
        Self {
            compression: compression.max(10.0),
            centroids: Vec::new(),
            buffer: Vec::new(),
            total: 0.0,
        }
    }

    /// Adds `value` with `weight`.
    pub fn add(&mut self, value: f64, weight: f64) {
        if value.is_nan() || weight.is_nan() || weight <= 0.0 {
            return;
        }
        self.buffer.push((value, weight));
        self.total += weight;
        if self.buffer.len() >= (self.compression as usize) * 8 {
            self.compress();
        }
    }

    /// Total weight added.
    pub fn total_weight(&self) -> f64 {
        self.total
    }

    fn k(&self, q: f64) -> f64 {
        self.compression / (2.0 * std::f64::consts::PI) * (2.0 * q.clamp(0.0, 1.0) - 1.0).asin()
    }

    /// Merges the buffer into the centroids.
    pub fn compress(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let mut all = std::mem::take(&mut self.centroids);
        all.append(&mut self.buffer);
        all.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal));
        let total: f64 = all.iter().map(|c| c.1).sum();
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(self.compression as usize * 2);
        let mut cum = 0.0;
        let mut iter = all.into_iter();
        let Some(mut current) = iter.next() else {
            return;
        };
        let mut k_low = self.k(0.0);
        for next in iter {
            let q_after = (cum + current.1 + next.1) / total;
            if self.k(q_after) - k_low <= 1.0 {
                let w = current.1 + next.1;
                current.0 += (next.0 - current.0) * next.1 / w;
                current.1 = w;
            } else {
                cum += current.1;
                k_low = self.k(cum / total);
                merged.push(current);
                current = next;
            }
        }
        merged.push(current);
        self.centroids = merged;
    }

    fn merged_centroids(&self) -> Vec<(f64, f64)> {
        let mut copy = self.clone();
        copy.compress();
        copy.centroids
    }

    /// The value at unweighted rank quantile `q` (numpy-linear convention: rank
    /// `q·(n − 1)`, each centroid centred at `cum + (w − 1)/2`), bounded by `min`/`max`.
    pub fn quantile_rank(&self, q: f64, min: f64, max: f64) -> Option<f64> {
        let centroids = self.merged_centroids();
        let n: f64 = centroids.iter().map(|c| c.1).sum();
        if centroids.is_empty() {
            return None;
        }
        let target = q.clamp(0.0, 1.0) * (n - 1.0);
        let centres = centres(&centroids, |cum, w| cum + (w - 1.0) / 2.0);
        Some(interpolate(&centres, target, (0.0, min), (n - 1.0, max)))
    }

    /// The value below which a fraction `q` of the total weight lies (weighted samples,
    /// each centroid centred at `cum + w/2`), bounded by `min`/`max`.
    pub fn quantile_weight(&self, q: f64, min: f64, max: f64) -> Option<f64> {
        let centroids = self.merged_centroids();
        let total: f64 = centroids.iter().map(|c| c.1).sum();
        if centroids.is_empty() || total <= 0.0 {
            return None;
        }
        let target = q.clamp(0.0, 1.0) * total;
        let centres = centres(&centroids, |cum, w| cum + w / 2.0);
        Some(interpolate(&centres, target, (0.0, min), (total, max)))
    }
}

fn centres(centroids: &[(f64, f64)], centre: impl Fn(f64, f64) -> f64) -> Vec<(f64, f64)> {
    let mut cum = 0.0;
    centroids
        .iter()
        .map(|&(mean, w)| {
            let at = centre(cum, w);
            cum += w;
            (at, mean)
        })
        .collect()
}

/// Piecewise-linear interpolation through `(rank, value)` points, with the given end points.
fn interpolate(points: &[(f64, f64)], target: f64, first: (f64, f64), last: (f64, f64)) -> f64 {
    let mut prev = first;
    for &point in points.iter().chain(std::iter::once(&last)) {
        if target <= point.0 {
            let span = point.0 - prev.0;
            if span <= 0.0 {
                return point.1;
            }
            let t = (target - prev.0) / span;
            return (prev.1 + (point.1 - prev.1) * t).clamp(first.1, last.1);
        }
        prev = point;
    }
    last.1
}

/// Statistics of a quantity weighted by time (see [`WeightedDistribution`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedStats {
    /// Time-weighted mean.
    pub avg: f64,
    /// Smallest value held for a positive time.
    pub min: f64,
    /// Largest value held for a positive time.
    pub max: f64,
    /// Time-weighted population standard deviation.
    pub std: f64,
    /// p50, p90, p95, p99: the smallest value held at least that fraction of the time.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Values each held for a duration (a weight); exact up to a limit, a t-digest beyond.
///
/// Percentiles use the inverted CDF (the smallest value whose cumulative weight reaches
/// `q · total`), so a step function of integers reports integers.
#[derive(Debug, Clone)]
pub struct WeightedDistribution {
    exact: Blocks<(f64, f64)>,
    digest: Option<TDigest>,
    limit: usize,
    total: f64,
    sum: f64,
    sum_sq: f64,
    min: f64,
    max: f64,
}

impl Default for WeightedDistribution {
    fn default() -> Self {
        Self::with_limit(EXACT_LIMIT / 4)
    }
}

impl WeightedDistribution {
    /// Empty, exact for `limit` samples.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            exact: Blocks::new(),
            digest: None,
            limit,
            total: 0.0,
            sum: 0.0,
            sum_sq: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds `value` held for `weight` (ignored unless both are finite and weight > 0).
    /// `extremes` widens min/max without adding weight (end points of a linear segment).
    pub fn push(&mut self, value: f64, weight: f64, extremes: (f64, f64)) {
        if !value.is_finite() || !weight.is_finite() || weight <= 0.0 {
            return;
        }
        self.total += weight;
        self.sum += value * weight;
        self.sum_sq += value * value * weight;
        self.min = self.min.min(value).min(extremes.0);
        self.max = self.max.max(value).max(extremes.1);
        if let Some(digest) = &mut self.digest {
            digest.add(value, weight);
        } else if let Some(last) = self.exact.last_mut().filter(|last| last.0 == value) {
            // A step function holds its value over many segments (a non-streaming run's
            // decode rates are 0 throughout): one sample with their summed weight has the
            // same statistics, in a fraction of the memory.
            last.1 += weight;
        } else {
            self.exact.push((value, weight));
            if self.exact.len() > self.limit {
                let mut digest = TDigest::new(DIGEST_COMPRESSION);
                for (v, w) in self.exact.iter() {
                    digest.add(v, w);
                }
                self.exact = Blocks::new();
                self.digest = Some(digest);
            }
        }
    }

    /// The statistics; `None` when no weight was added.
    pub fn stats(&self) -> Option<WeightedStats> {
        if self.total <= 0.0 {
            return None;
        }
        let avg = self.sum / self.total;
        let var = (self.sum_sq / self.total - avg * avg).max(0.0);
        let quantile = |q: f64| -> f64 {
            if let Some(d) = &self.digest {
                d.quantile_weight(q, self.min, self.max).unwrap_or(f64::NAN)
            } else {
                let mut sorted = self.exact.to_vec();
                sorted.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                let target = q * self.total * (1.0 - 1e-12);
                let mut cum = 0.0;
                for (v, w) in &sorted {
                    cum += w;
                    if cum >= target {
                        return *v;
                    }
                }
                sorted.last().map_or(f64::NAN, |s| s.0)
            }
        };
        Some(WeightedStats {
            avg,
            min: self.min,
            max: self.max,
            std: var.sqrt(),
            p50: quantile(0.50),
            p90: quantile(0.90),
            p95: quantile(0.95),
            p99: quantile(0.99),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats_of(values: &[f64]) -> Stats {
        compute_stats(&mut values.to_vec()).unwrap()
    }

    #[test]
    fn a_held_value_is_one_sample_with_the_summed_weight() {
        let mut held = WeightedDistribution::default();
        for (v, w) in [(0.0, 3.0), (0.0, 4.0), (2.0, 1.0), (2.0, 1.0), (0.0, 1.0)] {
            held.push(v, w, (v, v));
        }
        assert!(held.exact.iter().eq([(0.0, 7.0), (2.0, 2.0), (0.0, 1.0)]));
        let stats = held.stats().unwrap();
        assert_eq!(stats.avg, 0.4);
        assert_eq!((stats.p50, stats.p90, stats.p99), (0.0, 2.0, 2.0));
    }

    #[test]
    fn values_spanning_blocks_keep_their_order_and_statistics() {
        let values: Vec<f64> = (0..20_000)
            .map(|i| f64::from((i * 7919) % 20_000))
            .collect();
        let mut blocks = Blocks::new();
        for &v in &values {
            blocks.push(v);
        }
        assert_eq!(blocks.len(), 20_000);
        assert_eq!(blocks.blocks.len(), 3);
        assert_eq!(blocks.to_vec(), values);
        assert!(blocks.iter().eq(values.iter().copied()));

        let mut distribution = Distribution::new();
        let mut weighted = WeightedDistribution::default();
        for &v in &values {
            distribution.push(v);
            weighted.push(v, 1.0, (v, v));
        }
        assert_eq!(distribution.stats(), Some(stats_of(&values)));
        let weighted = weighted.stats().unwrap();
        assert_eq!((weighted.p50, weighted.p99), (9_999.0, 19_799.0));
    }

    #[test]
    fn p99_of_one_to_a_thousand_matches_numpy() {
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = stats_of(&values);
        assert_eq!(s.percentile(99.0), Some(990.01));
        assert_eq!(s.percentile(50.0), Some(500.5));
        assert_eq!(s.percentile(1.0), Some(10.99));
        assert_eq!(s.percentile(25.0), Some(250.75));
        assert_eq!(s.percentile(90.0), Some(900.1));
        assert_eq!(s.count, 1000);
        assert_eq!(s.sum, 500500.0);
        assert_eq!(s.avg, 500.5);
        assert!((s.std - 288.6749902572095).abs() < 1e-9);
    }

    #[test]
    fn uneven_values_match_numpy_bit_for_bit() {
        // numpy 2.x: np.percentile(b, [1,5,10,25,50,75,90,95,99]), b.std(), b.mean()
        let s = stats_of(&[0.5, 2.25, 3.0, 7.125, 11.0, 13.5, 100.25]);
        assert_eq!(
            s.percentiles,
            [
                0.605,
                1.0250000000000001,
                1.5500000000000003,
                2.625,
                7.125,
                12.25,
                48.20000000000003,
                74.22499999999994,
                95.04499999999996
            ]
        );
        assert_eq!(s.std, 33.19334016986922);
        assert_eq!(s.avg, 19.660714285714285);
    }

    #[test]
    fn empty_and_nan_only_have_no_stats() {
        assert!(compute_stats(&mut vec![]).is_none());
        assert!(compute_stats(&mut vec![f64::NAN]).is_none());
        assert!(Distribution::new().stats().is_none());
    }

    #[test]
    fn single_value_has_zero_std() {
        let s = stats_of(&[7.5]);
        assert_eq!(s.percentiles, [7.5; 9]);
        assert_eq!(s.std, 0.0);
    }

    #[test]
    fn exact_distribution_equals_direct_computation() {
        let mut d = Distribution::new();
        let values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        for v in values {
            d.push(v);
        }
        assert!(!d.is_approximate());
        assert_eq!(d.stats(), Some(stats_of(&values)));
    }

    #[test]
    fn digest_percentiles_are_close_on_a_million_values() {
        let mut d = Distribution::with_limit(1000);
        let n = 200_000u64;
        let mut exact = Vec::with_capacity(n as usize);
        // a deterministic, skewed sequence
        for i in 0..n {
            let x = ((i * 7919) % n) as f64 / n as f64;
            let v = x * x * 100.0;
            d.push(v);
            exact.push(v);
        }
        assert!(d.is_approximate());
        let approx = d.stats().unwrap();
        let truth = stats_of(&exact);
        assert_eq!(approx.count, truth.count);
        assert!((approx.avg - truth.avg).abs() < 1e-9);
        assert!((approx.std - truth.std).abs() < 1e-9);
        assert_eq!(approx.min, truth.min);
        assert_eq!(approx.max, truth.max);
        for (a, t) in approx.percentiles.iter().zip(truth.percentiles) {
            // rank error: within 0.05 % of the range
            assert!((a - t).abs() < 0.05, "{a} vs {t}");
        }
    }

    #[test]
    fn weighted_percentiles_use_the_inverted_cdf() {
        let mut w = WeightedDistribution::default();
        w.push(0.0, 1.0, (0.0, 0.0));
        w.push(2.0, 3.0, (2.0, 2.0));
        w.push(4.0, 6.0, (4.0, 4.0));
        let s = w.stats().unwrap();
        assert!((s.avg - 3.0).abs() < 1e-12); // (0 + 6 + 24) / 10
        assert_eq!(s.min, 0.0);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.p50, 4.0); // cumulative weight 4 of 10 at value 2
        assert!((s.std - 1.8f64.sqrt()).abs() < 1e-12); // Σw(v−3)² / Σw = 18 / 10
    }
}
