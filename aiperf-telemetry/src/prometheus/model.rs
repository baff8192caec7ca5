//! The data model: metric families, their samples, and grouped views of histograms and
//! summaries.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// The type of a metric family, from its `# TYPE` line.
///
/// The five Prometheus 0.0.4 types plus the three OpenMetrics additions. OpenMetrics
/// `unknown` is the same thing as Prometheus `untyped` and parses to [`MetricType::Untyped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MetricType {
    /// A monotonically increasing value (samples `name`, `name_total`, `name_created`).
    Counter,
    /// A value that can go up and down (sample `name`).
    Gauge,
    /// Cumulative buckets plus sum and count (`_bucket` with `le`, `_sum`, `_count`,
    /// `_created`).
    Histogram,
    /// Quantiles plus sum and count (`name` with `quantile`, `_sum`, `_count`, `_created`).
    Summary,
    /// No `# TYPE` line, `untyped` or OpenMetrics `unknown` (sample `name`).
    #[default]
    Untyped,
    /// OpenMetrics info: constant labels with value 1 (`name_info`, or `name` itself).
    Info,
    /// OpenMetrics state set: one sample per state, value 0 or 1 (sample `name`).
    StateSet,
    /// OpenMetrics gauge histogram (`_bucket` with `le`, `_gcount`, `_gsum`).
    GaugeHistogram,
}

impl MetricType {
    /// Every type, in declaration order.
    pub const ALL: [MetricType; 8] = [
        MetricType::Counter,
        MetricType::Gauge,
        MetricType::Histogram,
        MetricType::Summary,
        MetricType::Untyped,
        MetricType::Info,
        MetricType::StateSet,
        MetricType::GaugeHistogram,
    ];

    /// The keyword written on a `# TYPE` line (`untyped` for [`MetricType::Untyped`]).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::Summary => "summary",
            MetricType::Untyped => "untyped",
            MetricType::Info => "info",
            MetricType::StateSet => "stateset",
            MetricType::GaugeHistogram => "gaugehistogram",
        }
    }

    /// The sample-name suffixes a family of this type owns; `""` is the bare family name.
    pub fn sample_suffixes(self) -> &'static [&'static str] {
        match self {
            MetricType::Counter => &["", "_total", "_created"],
            MetricType::Gauge | MetricType::Untyped | MetricType::StateSet => &[""],
            MetricType::Histogram => &["_bucket", "_sum", "_count", "_created"],
            MetricType::Summary => &["", "_sum", "_count", "_created"],
            MetricType::Info => &["", "_info"],
            MetricType::GaugeHistogram => &["_bucket", "_gsum", "_gcount"],
        }
    }

    /// Whether the family's samples form histograms (`_bucket` samples with `le`).
    pub fn is_histogram(self) -> bool {
        matches!(self, MetricType::Histogram | MetricType::GaugeHistogram)
    }
}

impl fmt::Display for MetricType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of [`MetricType::from_str`]: the keyword is not a known type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric type \"{0}\"")]
pub struct UnknownMetricType(pub String);

impl FromStr for MetricType {
    type Err = UnknownMetricType;

    /// Parse a `# TYPE` keyword (lower case, as the formats require; `unknown` is
    /// [`MetricType::Untyped`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            "untyped" | "unknown" => MetricType::Untyped,
            "info" => MetricType::Info,
            "stateset" => MetricType::StateSet,
            "gaugehistogram" => MetricType::GaugeHistogram,
            other => return Err(UnknownMetricType(other.to_string())),
        })
    }
}

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sample {
    /// The full sample name, suffix included (`x_bucket`, `x_total`, …).
    pub name: String,
    /// The labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The value (may be NaN or ±∞).
    pub value: f64,
    /// The timestamp in milliseconds since the Unix epoch, if the line had one
    /// (OpenMetrics timestamps, in seconds, are converted).
    pub timestamp_ms: Option<i64>,
}

impl Sample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A metric family: its `# HELP`, `# TYPE` and `# UNIT` metadata and its samples.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricFamily {
    /// The family name (for a histogram `x`, samples are `x_bucket`, `x_sum`, …).
    pub name: String,
    /// The `# HELP` text, unescaped.
    pub help: Option<String>,
    /// The type from `# TYPE` ([`MetricType::Untyped`] without one).
    pub kind: MetricType,
    /// The OpenMetrics `# UNIT`.
    pub unit: Option<String>,
    /// The samples in the order written.
    pub samples: Vec<Sample>,
}

/// One histogram series of a family: the samples sharing one label set (apart from `le`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistogramSeries {
    /// The labels without `le`, in the order of the series' first sample.
    pub labels: Vec<(String, String)>,
    /// `(upper bound, cumulative count)` sorted by bound; the last bound is usually `+Inf`.
    pub buckets: Vec<(f64, f64)>,
    /// `_sum` (or `_gsum`), if present.
    pub sum: Option<f64>,
    /// `_count` (or `_gcount`), if present.
    pub count: Option<f64>,
}

/// One summary series of a family: the samples sharing one label set (apart from
/// `quantile`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SummarySeries {
    /// The labels without `quantile`, in the order of the series' first sample.
    pub labels: Vec<(String, String)>,
    /// `(quantile, value)` sorted by quantile.
    pub quantiles: Vec<(f64, f64)>,
    /// `_sum`, if present.
    pub sum: Option<f64>,
    /// `_count`, if present.
    pub count: Option<f64>,
}

/// Group samples by their label set without `skip`, keeping first-appearance order.
/// Label order does not matter for grouping.
fn group<'a, T: Default>(
    samples: &'a [Sample],
    skip: &str,
    mut new: impl FnMut(Vec<(String, String)>) -> T,
    mut add: impl FnMut(&mut T, &'a Sample),
) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    let mut index: HashMap<Vec<(&'a str, &'a str)>, usize> = HashMap::new();
    for s in samples {
        let mut key: Vec<(&str, &str)> = s
            .labels
            .iter()
            .filter(|(k, _)| k != skip)
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        key.sort_unstable();
        let i = if let Some(&i) = index.get(&key) {
            i
        } else {
            let labels = s
                .labels
                .iter()
                .filter(|(k, _)| k != skip)
                .cloned()
                .collect();
            out.push(new(labels));
            index.insert(key, out.len() - 1);
            out.len() - 1
        };
        if let Some(t) = out.get_mut(i) {
            add(t, s);
        }
    }
    out
}

/// Parse an `le` or `quantile` label value (`+Inf`, `NaN`, exponent floats, …).
pub(crate) fn parse_bound(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok()
}

impl MetricFamily {
    /// A family with no samples.
    pub fn new(name: impl Into<String>, kind: MetricType) -> Self {
        MetricFamily {
            name: name.into(),
            kind,
            ..MetricFamily::default()
        }
    }

    /// The suffix of `sample_name` after the family name (`"_bucket"`, `""`, …), if the
    /// sample name starts with the family name.
    pub fn suffix_of<'a>(&self, sample_name: &'a str) -> Option<&'a str> {
        sample_name.strip_prefix(self.name.as_str())
    }

    /// The histogram series of a histogram or gauge-histogram family, one per label set, in
    /// order of first appearance; empty for other types. Buckets whose `le` does not parse
    /// are left out (the parser rejects them anyway).
    pub fn histograms(&self) -> Vec<HistogramSeries> {
        if !self.kind.is_histogram() {
            return Vec::new();
        }
        let mut out = group(
            &self.samples,
            "le",
            |labels| HistogramSeries {
                labels,
                ..HistogramSeries::default()
            },
            |h: &mut HistogramSeries, s| match self.suffix_of(&s.name) {
                Some("_bucket") => {
                    if let Some(le) = s.label("le").and_then(parse_bound) {
                        h.buckets.push((le, s.value));
                    }
                }
                Some("_sum" | "_gsum") => h.sum = Some(s.value),
                Some("_count" | "_gcount") => h.count = Some(s.value),
                _ => {}
            },
        );
        // `_created` samples start a series of their own only if no other sample has their
        // labels; drop series that hold nothing.
        out.retain(|h| !h.buckets.is_empty() || h.sum.is_some() || h.count.is_some());
        for h in &mut out {
            h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out
    }

    /// The summary series of a summary family, one per label set, in order of first
    /// appearance; empty for other types.
    pub fn summaries(&self) -> Vec<SummarySeries> {
        if self.kind != MetricType::Summary {
            return Vec::new();
        }
        let mut out = group(
            &self.samples,
            "quantile",
            |labels| SummarySeries {
                labels,
                ..SummarySeries::default()
            },
            |q: &mut SummarySeries, s| match self.suffix_of(&s.name) {
                Some("") => {
                    if let Some(p) = s.label("quantile").and_then(parse_bound) {
                        q.quantiles.push((p, s.value));
                    }
                }
                Some("_sum") => q.sum = Some(s.value),
                Some("_count") => q.count = Some(s.value),
                _ => {}
            },
        );
        out.retain(|q| !q.quantiles.is_empty() || q.sum.is_some() || q.count.is_some());
        for q in &mut out {
            q.quantiles.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out
    }
}

/// The family called `name` in `families`, if any.
pub fn find_family<'a>(families: &'a [MetricFamily], name: &str) -> Option<&'a MetricFamily> {
    families.iter().find(|f| f.name == name)
}
