//! The percentiles every aiperf-rs report uses, computed exactly as numpy does.
//!
//! Request metrics, server and GPU telemetry, trace analysis and plots all report
//! percentiles beside the Python AIPerf's, which computes them with numpy's default
//! `np.percentile` (method "linear"). This crate is the one place that definition lives,
//! so every report agrees with the others and with numpy to the last bit: for `n` sorted
//! values the `p`-th percentile sits at index `h = (n − 1) · p/100` and is interpolated
//! between the two closest ranks with numpy's `_lerp`. It has no dependencies, so the
//! lightest crate can use it.
//!
//! ```
//! use aiperf_stats::{percentile_sorted, PERCENTILES};
//!
//! let sorted = [1.0, 2.0, 3.0, 4.0];
//! assert_eq!(percentile_sorted(&sorted, 50.0), Some(2.5));
//! assert_eq!(percentile_sorted(&sorted, 90.0), Some(3.7));
//! assert_eq!(percentile_sorted(&[], 50.0), None);
//! assert_eq!(PERCENTILES[8], 99.0);
//! ```

/// The percentiles every distribution is reported at, in export order (the Python
/// AIPerf's `p1` … `p99`).
pub const PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// numpy's default (`linear`) percentile of ascending `sorted` values, `p` in percent
/// (clamped to 0–100); `None` when `sorted` is empty.
///
/// `sorted` must be in ascending order (NaN removed); the result is unspecified otherwise.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = (p / 100.0).clamp(0.0, 1.0) * last as f64;
    let below = h.floor();
    let lo = (below as usize).min(last);
    let hi = (lo + 1).min(last);
    Some(lerp(sorted[lo], sorted[hi], h - below))
}

/// numpy's `_lerp`: `a + (b − a)·t`, computed from the upper end when `t ≥ 0.5` so that
/// the result is monotonic and exact at `t = 1`.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np.percentile(VALUES, p)` printed by numpy 2.4.6, bit for bit.
    const VALUES: [f64; 10] = [0.1, 0.2, 0.7, 1.3, 2.9, 3.3, 10.01, 47.5, 99.9, 1e6 / 3.0];
    const NUMPY: [(f64, f64); 13] = [
        (0.0, 0.1),
        (1.0, 0.109),
        (5.0, 0.145_000_000_000_000_02),
        (10.0, 0.19),
        (25.0, 0.85),
        (33.3, 1.2982),
        (50.0, 3.099_999_999_999_999_6),
        (75.0, 38.1275),
        (90.0, 33_423.243_333_333_216),
        (95.0, 183_378.288_333_332_98),
        (99.0, 303_342.324_333_333_35),
        (99.9, 330_334.232_433_333_8),
        (100.0, 333_333.333_333_333_3),
    ];

    #[test]
    fn matches_numpy_bit_for_bit() {
        for (p, expected) in NUMPY {
            assert_eq!(percentile_sorted(&VALUES, p), Some(expected), "p{p}");
        }
    }

    #[test]
    fn small_and_out_of_range_inputs() {
        assert_eq!(percentile_sorted(&[4.0], 50.0), Some(4.0));
        assert_eq!(percentile_sorted(&[1.0, 2.0], 70.0), Some(1.7));
        assert_eq!(percentile_sorted(&[1.0, 2.0], 150.0), Some(2.0));
        assert_eq!(percentile_sorted(&[1.0, 2.0], -5.0), Some(1.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
    }
}
