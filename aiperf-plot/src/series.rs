//! The numbers behind the charts: histograms, percentiles per token position, throughput
//! over time, Pareto fronts. Pure functions, unit-tested on exact values.

use aiperf_stats::percentile_sorted;
use serde::Serialize;

use crate::artifacts::RequestRow;

/// A latency axis turns logarithmic when its values span more than this ratio (2 decades).
pub const LOG_SCALE_RATIO: f64 = 100.0;

/// Whether positive values spread over more than two decades, so that a log axis shows them
/// better than a linear one.
pub fn wants_log_scale(values: impl IntoIterator<Item = f64>) -> bool {
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    for value in values {
        min = min.min(value);
        max = max.max(value);
    }
    min > 0.0 && max / min > LOG_SCALE_RATIO
}

/// One bar of a histogram: `[low, high)` holds `count` values (the last bin includes high).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    /// Lower edge.
    pub low: f64,
    /// Upper edge.
    pub high: f64,
    /// Values in the bin.
    pub count: u64,
}

/// A histogram of `values` in `bins` equal-width bins, or equal-ratio bins when `log` (then
/// every value must be positive). Empty input gives no bins; equal values give one.
pub fn histogram(values: &[f64], bins: usize, log: bool) -> Vec<Bin> {
    let finite: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .collect();
    let (Some(min), Some(max)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) else {
        return Vec::new();
    };
    if min == max || bins == 0 {
        return vec![Bin {
            low: min,
            high: max,
            count: finite.len() as u64,
        }];
    }
    let scale = |v: f64| if log { v.log10() } else { v };
    let unscale = |v: f64| if log { 10f64.powf(v) } else { v };
    let (low, high) = (scale(min), scale(max));
    let width = (high - low) / bins as f64;
    let mut counts = vec![0u64; bins];
    for value in &finite {
        let index = (((scale(*value) - low) / width) as usize).min(bins - 1);
        counts[index] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| Bin {
            low: unscale(low + width * i as f64),
            high: if i + 1 == bins {
                max
            } else {
                unscale(low + width * (i + 1) as f64)
            },
            count,
        })
        .collect()
}

/// Inter-chunk latency at one position of the response (position 1 = the gap before the
/// second chunk).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PositionStats {
    /// Chunk position, from 1.
    pub position: usize,
    /// Requests that reached this position.
    pub count: usize,
    /// Mean gap, ms.
    pub mean: f64,
    /// Median gap, ms.
    pub p50: f64,
    /// 90th percentile gap, ms.
    pub p90: f64,
}

/// Inter-chunk latency statistics per position over successful requests, for the positions
/// that at least a tenth of the requests reached: further out, a handful of long answers
/// would make a noisy tail.
pub fn inter_chunk_by_position(rows: &[RequestRow]) -> Vec<PositionStats> {
    let lists: Vec<&[f64]> = rows
        .iter()
        .filter(|r| !r.failed && !r.inter_chunk_ms.is_empty())
        .map(|r| r.inter_chunk_ms.as_slice())
        .collect();
    let min_count = lists.len().div_ceil(10).max(1);
    let longest = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    let mut stats = Vec::new();
    for index in 0..longest {
        let mut gaps: Vec<f64> = lists.iter().filter_map(|l| l.get(index).copied()).collect();
        if gaps.len() < min_count {
            break;
        }
        gaps.sort_by(f64::total_cmp);
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        stats.push(PositionStats {
            position: index + 1,
            count: gaps.len(),
            mean,
            p50: percentile_sorted(&gaps, 50.0).unwrap_or(mean),
            p90: percentile_sorted(&gaps, 90.0).unwrap_or(mean),
        });
    }
    stats
}

/// Output tokens per second over time, from the records: each successful request's output
/// tokens count in the bin where it ended. Returns `(bin start in s since the first request
/// started, tokens/s)`; bins are a twentieth of the run, at least 0.1 s.
pub fn output_throughput_over_time(rows: &[RequestRow]) -> Vec<(f64, f64)> {
    let ended: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| !r.failed)
        .filter_map(|r| Some((r.end_ns?, r.osl?)))
        .collect();
    let Some(origin) = rows.iter().filter_map(|r| r.start_ns).min() else {
        return Vec::new();
    };
    let Some(last_end) = ended.iter().map(|(end, _)| *end).max() else {
        return Vec::new();
    };
    let span_s = last_end.saturating_sub(origin) as f64 / 1e9;
    let bin_s = (span_s / 20.0).max(0.1);
    let bins = ((span_s / bin_s).floor() as usize) + 1;
    let mut tokens = vec![0.0; bins];
    for (end, osl) in ended {
        let at = end.saturating_sub(origin) as f64 / 1e9;
        tokens[((at / bin_s) as usize).min(bins - 1)] += osl;
    }
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, sum)| (i as f64 * bin_s, sum / bin_s))
        .collect()
}

/// Indices of the points no other point beats on both axes, sorted by x. `higher_x_better`
/// and `higher_y_better` say which way each axis improves (throughput up, latency down).
pub fn pareto_front(
    points: &[(f64, f64)],
    higher_x_better: bool,
    higher_y_better: bool,
) -> Vec<usize> {
    let better_or_equal = |a: f64, b: f64, higher: bool| if higher { a >= b } else { a <= b };
    let mut front: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let (x, y) = points[i];
            !points.iter().enumerate().any(|(j, &(ox, oy))| {
                j != i
                    && better_or_equal(ox, x, higher_x_better)
                    && better_or_equal(oy, y, higher_y_better)
                    && (ox, oy) != (x, y)
            })
        })
        .collect();
    front.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0));
    front
}

/// At most `max` of `points`, evenly strided, so that a chart of a 100,000-request run stays a
/// readable (and small) file. Returns the points kept and the stride.
pub fn thin<T: Clone>(points: &[T], max: usize) -> (Vec<T>, usize) {
    let stride = points.len().div_ceil(max.max(1)).max(1);
    (points.iter().step_by(stride).cloned().collect(), stride)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scale_only_beyond_two_decades_of_positive_values() {
        assert!(!wants_log_scale([1.0, 100.0]));
        assert!(wants_log_scale([1.0, 100.5]));
        assert!(!wants_log_scale([0.0, 1000.0]));
    }

    #[test]
    fn linear_histogram_counts_every_value_once() {
        let bins = histogram(&[0.0, 1.0, 2.0, 3.0, 4.0], 2, false);
        assert_eq!(
            bins,
            [
                Bin {
                    low: 0.0,
                    high: 2.0,
                    count: 2
                },
                Bin {
                    low: 2.0,
                    high: 4.0,
                    count: 3
                },
            ]
        );
    }

    #[test]
    fn log_histogram_has_equal_ratio_bins() {
        let bins = histogram(&[1.0, 5.0, 10.0, 50.0, 100.0], 2, true);
        assert_eq!(bins.len(), 2);
        assert!((bins[0].high - 10.0).abs() < 1e-9);
        assert_eq!((bins[0].count, bins[1].count), (2, 3));
        assert_eq!(histogram(&[3.0, 3.0], 10, false).len(), 1);
    }

    #[test]
    fn inter_chunk_statistics_per_position_stop_where_few_requests_reach() {
        let row = |gaps: &[f64]| RequestRow {
            inter_chunk_ms: gaps.to_vec(),
            ..RequestRow::default()
        };
        let mut rows: Vec<RequestRow> = (0..9).map(|_| row(&[1.0, 2.0])).collect();
        rows.push(row(&[3.0, 4.0, 9.0, 9.0]));
        let stats = inter_chunk_by_position(&rows);
        // Position 3 is reached by 1 request of 10: exactly a tenth, kept; 4 likewise.
        assert_eq!(stats.len(), 4);
        assert_eq!(stats[0].count, 10);
        assert!((stats[0].mean - 1.2).abs() < 1e-12);
        assert_eq!(stats[0].p50, 1.0);
        assert!((stats[0].p90 - 1.2).abs() < 1e-12);
        assert_eq!(stats[2].count, 1);

        rows.extend((0..10).map(|_| row(&[1.0])));
        assert_eq!(inter_chunk_by_position(&rows).len(), 2);
    }

    #[test]
    fn throughput_over_time_counts_tokens_where_requests_end() {
        let row = |start_s: f64, end_s: f64, osl: f64| RequestRow {
            start_ns: Some((start_s * 1e9) as u64),
            end_ns: Some((end_s * 1e9) as u64),
            osl: Some(osl),
            ..RequestRow::default()
        };
        // A 4 s run: bins of 0.2 s.
        let rows = [row(0.0, 1.0, 10.0), row(0.0, 1.1, 20.0), row(1.0, 4.0, 8.0)];
        let series = output_throughput_over_time(&rows);
        assert_eq!(series.len(), 21);
        assert!((series[5].0 - 1.0).abs() < 1e-9);
        assert!((series[5].1 - 150.0).abs() < 1e-9, "{:?}", series[5]);
        assert!((series[20].1 - 40.0).abs() < 1e-9);
        let total: f64 = series.iter().map(|(_, rate)| rate * 0.2).sum();
        assert!((total - 38.0).abs() < 1e-9);
    }

    #[test]
    fn pareto_front_keeps_the_undominated_points_in_x_order() {
        // x latency (lower better), y throughput (higher better).
        let points = [
            (100.0, 50.0),
            (50.0, 40.0),
            (120.0, 45.0),
            (200.0, 90.0),
            (60.0, 40.0),
        ];
        assert_eq!(pareto_front(&points, false, true), [1, 0, 3]);
        // Both higher-better.
        assert_eq!(
            pareto_front(&[(1.0, 3.0), (2.0, 2.0), (1.0, 1.0)], true, true),
            [0, 1]
        );
    }

    #[test]
    fn thinning_keeps_every_nth_point() {
        let (kept, stride) = thin(&[1, 2, 3, 4, 5], 2);
        assert_eq!((kept, stride), (vec![1, 4], 3));
        assert_eq!(thin(&[1, 2], 10), (vec![1, 2], 1));
    }
}
