//! Gauge statistics: mean, extremes, standard deviation and numpy-linear percentiles.

pub use aiperf_stats::{percentile_sorted, PERCENTILES};

/// Statistics of a set of gauge samples.
///
/// Percentiles use numpy's default (linear interpolation between closest ranks:
/// `h = (n − 1)·q`). `std` is the population standard deviation (ddof = 0, as the
/// per-request metrics use); `std_sample` is the sample one (ddof = 1, as the Python
/// AIPerf reports for server-metric gauges), `None` with fewer than two samples.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeStats {
    /// Number of samples.
    pub count: usize,
    /// Arithmetic mean.
    pub avg: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Sum of the samples.
    pub sum: f64,
    /// Population standard deviation (ddof = 0).
    pub std: f64,
    /// Sample standard deviation (ddof = 1); `None` for a single sample.
    pub std_sample: Option<f64>,
    /// `(percent, value)` for each of [`PERCENTILES`].
    pub percentiles: Vec<(f64, f64)>,
}

impl GaugeStats {
    /// Statistics of `values`, ignoring NaN and infinite ones; `None` when no finite value
    /// remains.
    pub fn from_values(values: &[f64]) -> Option<GaugeStats> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let sum: f64 = sorted.iter().sum();
        let avg = sum / n as f64;
        let squares: f64 = sorted.iter().map(|v| (v - avg) * (v - avg)).sum();
        let std = (squares / n as f64).sqrt();
        let std_sample = (n > 1).then(|| (squares / (n - 1) as f64).sqrt());
        let percentiles = PERCENTILES
            .iter()
            .map(|&p| (p, percentile_sorted(&sorted, p).unwrap_or(f64::NAN)))
            .collect();
        Some(GaugeStats {
            count: n,
            avg,
            min: sorted[0],
            max: sorted[n - 1],
            sum,
            std,
            std_sample,
            percentiles,
        })
    }

    /// The percentile `p` (in percent, one of [`PERCENTILES`]), if reported.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (*q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }

    /// The median (p50).
    pub fn p50(&self) -> f64 {
        self.percentile(50.0).unwrap_or(f64::NAN)
    }

    /// The 90th percentile.
    pub fn p90(&self) -> f64 {
        self.percentile(90.0).unwrap_or(f64::NAN)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> f64 {
        self.percentile(99.0).unwrap_or(f64::NAN)
    }

    /// Every value multiplied by `factor` (a unit conversion; `factor` ≥ 0).
    #[must_use]
    pub fn scaled(&self, factor: f64) -> GaugeStats {
        GaugeStats {
            count: self.count,
            avg: self.avg * factor,
            min: self.min * factor,
            max: self.max * factor,
            sum: self.sum * factor,
            std: self.std * factor,
            std_sample: self.std_sample.map(|s| s * factor),
            percentiles: self
                .percentiles
                .iter()
                .map(|(p, v)| (*p, v * factor))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_percentiles_and_std() {
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = GaugeStats::from_values(&values).unwrap();
        assert!((s.percentile(99.0).unwrap() - 990.01).abs() < 1e-9);
        assert!((s.percentile(50.0).unwrap() - 500.5).abs() < 1e-9);

        let s = GaugeStats::from_values(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.count, 8);
        assert_eq!((s.avg, s.min, s.max), (5.0, 2.0, 9.0));
        assert!((s.std - 2.0).abs() < 1e-12, "population std");
        assert!((s.std_sample.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // h = 7 × 0.9 = 6.3 → 7 + 0.3 × (9 − 7)
        assert!((s.percentile(90.0).unwrap() - 7.6).abs() < 1e-12);
        assert!((s.percentile(1.0).unwrap() - 2.14).abs() < 1e-12);
    }

    #[test]
    fn non_finite_values_are_ignored() {
        assert!(GaugeStats::from_values(&[f64::NAN]).is_none());
        let s = GaugeStats::from_values(&[3.0, f64::INFINITY, f64::NAN]).unwrap();
        assert_eq!((s.count, s.avg, s.std, s.std_sample), (1, 3.0, 0.0, None));
        assert_eq!(s.percentile(99.0), Some(3.0));
        let scaled = s.scaled(2.0);
        assert_eq!((scaled.avg, scaled.percentile(50.0)), (6.0, Some(6.0)));
    }
}
