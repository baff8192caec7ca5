//! Per-series summaries of scrapes over a time window.
//!
//! Only samples stamped inside `[start, end]` count. Counters and histograms also use the
//! last sample before `start` as their baseline (without one, the first in-window sample).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::prometheus::{HistogramSeries, MetricType};
use crate::scraper::EndpointScrapes;
use crate::stats::{GaugeStats, PERCENTILES};

/// A closed time window `[start, end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First instant inside.
    pub start: Instant,
    /// Last instant inside.
    pub end: Instant,
}

impl Window {
    /// The window `[start, end]`.
    pub fn new(start: Instant, end: Instant) -> Self {
        Window { start, end }
    }

    /// Whether `at` lies inside.
    pub fn contains(&self, at: Instant) -> bool {
        at >= self.start && at <= self.end
    }

    /// `end − start` (zero when reversed).
    pub fn duration(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }
}

/// A counter over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterSummary {
    /// Increase over the window. After a reset (a drop) the new value counts as the increase
    /// since the restart, as Prometheus' `increase()` does.
    pub delta: f64,
    /// `delta` per second of the span between the first and last point used; `None` when
    /// they coincide.
    pub rate: Option<f64>,
    /// How many drops (restarts) were seen.
    pub resets: usize,
    /// The value the delta starts from (the baseline).
    pub first: f64,
    /// The last in-window value.
    pub last: f64,
    /// Time between the first and last point used.
    pub span: Duration,
}

/// A histogram over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSummary {
    /// Observations in the window (delta of `_count`, or of the `+Inf` bucket).
    pub count: f64,
    /// Delta of `_sum` (0 when the series has none).
    pub sum: f64,
    /// `sum / count`, when `count` > 0.
    pub avg: Option<f64>,
    /// `(upper bound, cumulative count delta)` sorted by bound.
    pub buckets: Vec<(f64, f64)>,
    /// How many resets were seen.
    pub resets: usize,
    /// Time between the first and last point used.
    pub span: Duration,
    /// `(percent, estimate)` for each of [`PERCENTILES`], by [`histogram_quantile`]; empty
    /// when no observation fell in the window.
    pub percentiles: Vec<(f64, f64)>,
}

impl HistogramSummary {
    /// The estimated quantile `q` (0–1) of the window's observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        histogram_quantile(q, &self.buckets)
    }

    /// `count` per second of `span`.
    pub fn count_rate(&self) -> Option<f64> {
        per_second(self.count, self.span)
    }

    /// `sum` per second of `span`.
    pub fn sum_rate(&self) -> Option<f64> {
        per_second(self.sum, self.span)
    }
}

/// The statistics of one series.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesStats {
    /// Counter: delta and rate.
    Counter(CounterSummary),
    /// Gauge or untyped: statistics of the in-window samples.
    Gauge(GaugeStats),
    /// Histogram: bucket deltas and estimated percentiles.
    Histogram(HistogramSummary),
}

/// One series (metric name + label set) over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSummary {
    /// The family name.
    pub name: String,
    /// The labels (without `le`), sorted by name.
    pub labels: Vec<(String, String)>,
    /// The family type.
    pub kind: MetricType,
    /// The family's `# HELP`.
    pub help: Option<String>,
    /// The numbers.
    pub stats: SeriesStats,
}

impl SeriesSummary {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// All series of one endpoint over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSummary {
    /// The endpoint's name (URL).
    pub name: String,
    /// The window summarised.
    pub window: Window,
    /// Series in order of first appearance; series with no in-window sample are left out.
    pub series: Vec<SeriesSummary>,
}

impl EndpointSummary {
    /// The series of family `name` whose labels include every `(key, value)` of `labels`.
    pub fn find(&self, name: &str, labels: &[(&str, &str)]) -> Option<&SeriesSummary> {
        self.series
            .iter()
            .find(|s| s.name == name && labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
    }
}

fn per_second(delta: f64, span: Duration) -> Option<f64> {
    let secs = span.as_secs_f64();
    (secs > 0.0).then(|| delta / secs)
}

/// Split time-ordered `points` into the baseline (last before the window) and the
/// in-window ones; the chain starts at the baseline, else at the first in-window point.
fn chain<T>(points: &[(Instant, T)], window: Window) -> Vec<&(Instant, T)> {
    let baseline = points.iter().rev().find(|(at, _)| *at < window.start);
    let mut out: Vec<&(Instant, T)> = baseline.into_iter().collect();
    out.extend(points.iter().filter(|(at, _)| window.contains(*at)));
    if out.len() == usize::from(baseline.is_some()) {
        return Vec::new(); // nothing inside the window
    }
    out
}

/// A counter's delta over `window` from time-ordered `(instant, value)` points (non-finite
/// values ignored); `None` without an in-window point.
pub fn counter_summary(points: &[(Instant, f64)], window: Window) -> Option<CounterSummary> {
    let finite: Vec<(Instant, f64)> = points
        .iter()
        .copied()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let chain = chain(&finite, window);
    let (first, last) = (chain.first()?, chain.last()?);
    let mut delta = 0.0;
    let mut resets = 0;
    for pair in chain.windows(2) {
        let (prev, cur) = (pair[0].1, pair[1].1);
        if cur >= prev {
            delta += cur - prev;
        } else {
            resets += 1;
            delta += cur;
        }
    }
    let span = last.0.saturating_duration_since(first.0);
    Some(CounterSummary {
        delta,
        rate: per_second(delta, span),
        resets,
        first: first.1,
        last: last.1,
        span,
    })
}

/// Statistics of the gauge values stamped inside `window`.
pub fn gauge_summary(points: &[(Instant, f64)], window: Window) -> Option<GaugeStats> {
    let values: Vec<f64> = points
        .iter()
        .filter(|(at, _)| window.contains(*at))
        .map(|(_, v)| *v)
        .collect();
    GaugeStats::from_values(&values)
}

fn hist_count(h: &HistogramSeries) -> f64 {
    h.count
        .or_else(|| h.buckets.last().map(|b| b.1))
        .unwrap_or(0.0)
}

fn add_bucket(acc: &mut Vec<(f64, f64)>, le: f64, n: f64) {
    match acc.iter_mut().find(|(b, _)| *b == le) {
        Some(slot) => slot.1 += n,
        None => acc.push((le, n)),
    }
}

/// A histogram's bucket deltas over `window` from time-ordered points; `None` without an
/// in-window point. A drop of the count, of any bucket, or a change of the bucket bounds is
/// a reset: the newer values then count whole.
pub fn histogram_summary(
    points: &[(Instant, HistogramSeries)],
    window: Window,
) -> Option<HistogramSummary> {
    let chain = chain(points, window);
    let (first, last) = (chain.first()?, chain.last()?);
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    let (mut count, mut sum, mut resets) = (0.0, 0.0, 0);
    for pair in chain.windows(2) {
        let (prev, cur) = (&pair[0].1, &pair[1].1);
        let same_bounds = prev.buckets.len() == cur.buckets.len()
            && prev
                .buckets
                .iter()
                .zip(&cur.buckets)
                .all(|(a, b)| a.0 == b.0);
        let reset = !same_bounds
            || hist_count(cur) < hist_count(prev)
            || prev
                .buckets
                .iter()
                .zip(&cur.buckets)
                .any(|(a, b)| b.1 < a.1);
        if reset {
            resets += 1;
            count += hist_count(cur);
            sum += cur.sum.unwrap_or(0.0);
            for &(le, n) in &cur.buckets {
                add_bucket(&mut buckets, le, n);
            }
        } else {
            count += hist_count(cur) - hist_count(prev);
            sum += cur.sum.unwrap_or(0.0) - prev.sum.unwrap_or(0.0);
            for (a, b) in prev.buckets.iter().zip(&cur.buckets) {
                add_bucket(&mut buckets, b.0, b.1 - a.1);
            }
        }
    }
    if chain.len() == 1 {
        for &(le, _) in &first.1.buckets {
            add_bucket(&mut buckets, le, 0.0);
        }
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let percentiles = PERCENTILES
        .iter()
        .filter_map(|&p| histogram_quantile(p / 100.0, &buckets).map(|v| (p, v)))
        .collect();
    Some(HistogramSummary {
        count,
        sum,
        avg: (count > 0.0).then(|| sum / count),
        buckets,
        resets,
        span: last.0.saturating_duration_since(first.0),
        percentiles,
    })
}

/// Estimate quantile `q` (0–1) from cumulative `(upper bound, count)` buckets sorted by
/// bound, as Prometheus' `histogram_quantile` does: find the bucket holding rank
/// `q × total`, interpolate linearly inside it (the lowest bucket starts at 0 when its
/// bound is positive); a rank in the `+Inf` bucket gives the highest finite bound.
/// `None` when there are no observations, no `+Inf` bucket, or `q` is outside 0–1.
pub fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    if !(0.0..=1.0).contains(&q) || buckets.len() < 2 {
        return None;
    }
    let &(last_bound, total) = buckets.last()?;
    if last_bound != f64::INFINITY || total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let i = buckets.iter().position(|&(_, c)| c >= rank)?;
    let (upper, count) = buckets[i];
    if upper == f64::INFINITY {
        return Some(buckets[buckets.len() - 2].0);
    }
    let (lower, below) = match i {
        0 if upper <= 0.0 => return Some(upper),
        0 => (0.0, 0.0),
        _ => buckets[i - 1],
    };
    let in_bucket = count - below;
    if in_bucket <= 0.0 {
        return Some(upper);
    }
    Some(lower + (upper - lower) * (rank - below) / in_bucket)
}

enum Points {
    Scalar(Vec<(Instant, f64)>),
    Histogram(Vec<(Instant, HistogramSeries)>),
}

struct Series {
    name: String,
    labels: Vec<(String, String)>,
    kind: MetricType,
    help: Option<String>,
    points: Points,
}

fn sorted_labels(labels: &[(String, String)]) -> Vec<(String, String)> {
    let mut labels = labels.to_vec();
    labels.sort();
    labels
}

/// Summarise every counter, gauge, untyped and histogram series of `endpoint` over
/// `window`. Summary, info and state-set families are left out.
pub fn summarize(endpoint: &EndpointScrapes, window: Window) -> EndpointSummary {
    let mut series: Vec<Series> = Vec::new();
    let mut index: HashMap<(String, Vec<(String, String)>), usize> = HashMap::new();
    let mut slot = |series: &mut Vec<Series>,
                    name: &str,
                    labels: Vec<(String, String)>,
                    kind: MetricType,
                    help: &Option<String>|
     -> usize {
        let key = (name.to_string(), labels);
        if let Some(&i) = index.get(&key) {
            return i;
        }
        let points = if kind.is_histogram() {
            Points::Histogram(Vec::new())
        } else {
            Points::Scalar(Vec::new())
        };
        series.push(Series {
            name: key.0.clone(),
            labels: key.1.clone(),
            kind,
            help: help.clone(),
            points,
        });
        index.insert(key, series.len() - 1);
        series.len() - 1
    };

    for scrape in endpoint.scrapes.iter().filter(|s| s.at <= window.end) {
        for family in &scrape.families {
            match family.kind {
                MetricType::Counter | MetricType::Gauge | MetricType::Untyped => {
                    let wanted: &[&str] = if family.kind == MetricType::Counter {
                        &["", "_total"]
                    } else {
                        &[""]
                    };
                    for sample in &family.samples {
                        if !family
                            .suffix_of(&sample.name)
                            .is_some_and(|s| wanted.contains(&s))
                        {
                            continue;
                        }
                        let labels = sorted_labels(&sample.labels);
                        let i = slot(&mut series, &family.name, labels, family.kind, &family.help);
                        if let Some(Points::Scalar(points)) =
                            series.get_mut(i).map(|s| &mut s.points)
                        {
                            points.push((scrape.at, sample.value));
                        }
                    }
                }
                MetricType::Histogram | MetricType::GaugeHistogram => {
                    for h in family.histograms() {
                        let labels = sorted_labels(&h.labels);
                        let i = slot(&mut series, &family.name, labels, family.kind, &family.help);
                        if let Some(Points::Histogram(points)) =
                            series.get_mut(i).map(|s| &mut s.points)
                        {
                            points.push((scrape.at, h));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    // A counter or histogram series that a scrape before the window did not have was
    // created later, from zero (Prometheus semantics; e.g. a `finished_reason` label seen
    // first mid-run): its baseline is 0 at that scrape, so its first increments count.
    // The Python AIPerf 0.13 starts such a series at its first sample instead.
    let baseline_at = endpoint
        .scrapes
        .iter()
        .rev()
        .map(|scrape| scrape.at)
        .find(|at| *at < window.start);
    if let Some(at) = baseline_at {
        for s in &mut series {
            match &mut s.points {
                Points::Scalar(points) if s.kind == MetricType::Counter => {
                    if points.first().is_some_and(|(first, _)| *first > at) {
                        points.insert(0, (at, 0.0));
                    }
                }
                Points::Histogram(points) => {
                    if let Some((_, h)) = points.first().filter(|(first, _)| *first > at) {
                        let zero = HistogramSeries {
                            labels: h.labels.clone(),
                            buckets: h.buckets.iter().map(|(le, _)| (*le, 0.0)).collect(),
                            sum: h.sum.map(|_| 0.0),
                            count: h.count.map(|_| 0.0),
                        };
                        points.insert(0, (at, zero));
                    }
                }
                Points::Scalar(_) => {}
            }
        }
    }

    let series = series
        .into_iter()
        .filter_map(|s| {
            let stats = match (&s.points, s.kind) {
                (Points::Scalar(p), MetricType::Counter) => {
                    SeriesStats::Counter(counter_summary(p, window)?)
                }
                (Points::Scalar(p), _) => SeriesStats::Gauge(gauge_summary(p, window)?),
                (Points::Histogram(p), _) => SeriesStats::Histogram(histogram_summary(p, window)?),
            };
            Some(SeriesSummary {
                name: s.name,
                labels: s.labels,
                kind: s.kind,
                help: s.help,
                stats,
            })
        })
        .collect();
    EndpointSummary {
        name: endpoint.name.clone(),
        window,
        series,
    }
}

/// Like [`summarize`], but counters and histograms also take samples up to `grace` after
/// the window's end, while gauges keep the exact window. The scrape that follows the end of
/// the profiling phase holds the increments of the window's last interval; without the grace
/// they would be lost. The returned summary's window is `window`.
pub fn summarize_with_grace(
    endpoint: &EndpointScrapes,
    window: Window,
    grace: Duration,
) -> EndpointSummary {
    let strict = summarize(endpoint, window);
    if grace.is_zero() {
        return strict;
    }
    let wide = summarize(endpoint, Window::new(window.start, window.end + grace));
    let series = wide
        .series
        .into_iter()
        .filter_map(|s| match s.stats {
            SeriesStats::Gauge(_) => strict
                .series
                .iter()
                .find(|g| g.name == s.name && g.labels == s.labels)
                .cloned(),
            SeriesStats::Counter(_) | SeriesStats::Histogram(_) => Some(s),
        })
        .collect();
    EndpointSummary {
        name: strict.name,
        window,
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn counter_baseline_window_and_resets() {
        let t = Instant::now();
        let points = vec![
            (at(t, 0), 5.0),
            (at(t, 100), 10.0), // baseline
            (at(t, 200), 15.0),
            (at(t, 300), 3.0), // restart: +3
            (at(t, 400), 8.0),
            (at(t, 600), 100.0), // after the window
        ];
        let w = Window::new(at(t, 150), at(t, 450));
        let c = counter_summary(&points, w).unwrap();
        assert_eq!(c.delta, 5.0 + 3.0 + 5.0);
        assert_eq!(c.resets, 1);
        assert_eq!((c.first, c.last), (10.0, 8.0));
        assert_eq!(c.span, Duration::from_millis(300));
        assert!((c.rate.unwrap() - 13.0 / 0.3).abs() < 1e-9);

        // Without a baseline the first in-window sample is the start.
        let w = Window::new(t, at(t, 100));
        assert_eq!(counter_summary(&points, w).unwrap().delta, 5.0);
        // Nothing inside: no summary.
        assert!(counter_summary(&points, Window::new(at(t, 450), at(t, 550))).is_none());
    }

    #[test]
    fn a_counter_series_that_appears_mid_window_starts_from_zero() {
        use crate::prometheus::parse;
        use crate::scraper::Scrape;
        let t = Instant::now();
        let scrape = |ms: u64, text: &str| Scrape {
            sent_at: at(t, ms),
            at: at(t, ms),
            families: parse(text).unwrap(),
        };
        let typed = "# TYPE r counter\n";
        let endpoint = EndpointScrapes {
            name: "e".into(),
            scrapes: vec![
                scrape(0, typed),
                scrape(200, &format!("{typed}r_total{{reason=\"stop\"}} 3\n")),
                scrape(300, &format!("{typed}r_total{{reason=\"stop\"}} 5\n")),
            ],
            ..EndpointScrapes::default()
        };
        let summary = summarize(&endpoint, Window::new(at(t, 100), at(t, 300)));
        let series = summary.find("r", &[("reason", "stop")]).unwrap();
        let SeriesStats::Counter(c) = &series.stats else {
            panic!("{series:?}")
        };
        assert_eq!(
            (c.delta, c.first, c.span),
            (5.0, 0.0, Duration::from_millis(300))
        );
        // Without a scrape before the window there is no baseline to start from zero.
        let summary = summarize(&endpoint, Window::new(t, at(t, 300)));
        let SeriesStats::Counter(c) = &summary.find("r", &[]).unwrap().stats else {
            panic!()
        };
        assert_eq!(c.delta, 2.0);
    }

    #[test]
    fn gauge_only_in_window() {
        let t = Instant::now();
        let points: Vec<_> = (0..10).map(|i| (at(t, i * 10), i as f64)).collect();
        let g = gauge_summary(&points, Window::new(at(t, 20), at(t, 50))).unwrap();
        assert_eq!((g.count, g.min, g.max, g.avg), (4, 2.0, 5.0, 3.5));
    }

    #[test]
    fn quantile_interpolates_within_buckets() {
        let b = [(0.1, 10.0), (0.5, 30.0), (1.0, 40.0), (f64::INFINITY, 40.0)];
        // rank 20 → bucket (0.1, 0.5]: 0.1 + 0.4 × 10/20
        assert!((histogram_quantile(0.5, &b).unwrap() - 0.3).abs() < 1e-12);
        // rank 4 → first bucket from 0: 0.1 × 4/10
        assert!((histogram_quantile(0.1, &b).unwrap() - 0.04).abs() < 1e-12);
        // rank 39.6 → (0.5, 1.0]: 0.5 + 0.5 × 9.6/10
        assert!((histogram_quantile(0.99, &b).unwrap() - 0.98).abs() < 1e-12);
        let inf = [(1.0, 1.0), (f64::INFINITY, 10.0)];
        assert_eq!(histogram_quantile(0.9, &inf), Some(1.0));
        assert_eq!(
            histogram_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 0.0)]),
            None
        );
        assert_eq!(histogram_quantile(1.5, &b), None);
    }

    #[test]
    fn histogram_deltas_with_reset() {
        let t = Instant::now();
        let h = |a: f64, b: f64, sum: f64| HistogramSeries {
            labels: vec![],
            buckets: vec![(1.0, a), (f64::INFINITY, b)],
            sum: Some(sum),
            count: Some(b),
        };
        let points = vec![
            (at(t, 0), h(5.0, 6.0, 3.0)), // baseline
            (at(t, 100), h(7.0, 10.0, 8.0)),
            (at(t, 200), h(1.0, 1.0, 0.5)), // reset
        ];
        let s = histogram_summary(&points, Window::new(at(t, 50), at(t, 250))).unwrap();
        assert_eq!(s.resets, 1);
        assert_eq!(s.count, 4.0 + 1.0);
        assert_eq!(s.sum, 5.0 + 0.5);
        assert_eq!(s.buckets, vec![(1.0, 3.0), (f64::INFINITY, 5.0)]);
        assert_eq!(s.avg, Some(5.5 / 5.0));
        // rank 2.5 of 5 in (0, 1]: 2.5/3
        assert!((s.quantile(0.5).unwrap() - 2.5 / 3.0).abs() < 1e-12);
    }
}
