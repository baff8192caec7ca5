//! Server-metrics exports (docs/telemetry.md#server-metrics-exports):
//! `server_metrics_export.json`, `.csv` and `.jsonl`.

use std::io::{self, Write};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{csv_field, endpoint_key, iso_time, number};
use crate::collector::{ServerEndpoint, TelemetryReport};
use crate::prometheus::{format_value, MetricFamily, MetricType};
use crate::scraper::EndpointScrapes;
use crate::stats::{GaugeStats, PERCENTILES};
use crate::summary::{HistogramSummary, SeriesStats, SeriesSummary};
use crate::wall::WallClock;

/// The `schema_version` of `server_metrics_export.json` (the Python AIPerf 0.13's).
pub const SCHEMA_VERSION: &str = "1.1";
/// The `schema_version` in the comment header of `server_metrics_export.csv` (the Python
/// AIPerf 0.13 still writes 1.0 there).
pub const CSV_SCHEMA_VERSION: &str = "1.0";
/// The Python AIPerf version whose files these match.
pub const AIPERF_COMPAT_VERSION: &str = "0.13.0";

/// The name a family is exported under: counters lose a `_total` suffix, as the Python
/// AIPerf 0.13 names them (its Prometheus parser folds `x_total` into the family `x`);
/// gauges, histograms and untyped families keep theirs.
pub fn display_name(name: &str, kind: MetricType) -> &str {
    match kind {
        MetricType::Counter => name.strip_suffix("_total").unwrap_or(name),
        _ => name,
    }
}

/// Whether an exported name is a metadata family the exports leave out, as the Python
/// AIPerf 0.13 does: `*_created` (creation timestamps) and `*_uptime`, `*_uptime_*`.
pub fn is_metadata(display_name: &str) -> bool {
    display_name.ends_with("_created")
        || display_name.ends_with("_uptime")
        || display_name.contains("_uptime_")
}

/// The unit of a series in the exports; see [`crate::units::infer_unit`].
pub fn infer_unit(display_name: &str, help: Option<&str>) -> Option<&'static str> {
    crate::units::infer_unit(display_name, help)
}

/// The section a series belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Gauge,
    Counter,
    Histogram,
    Unknown,
}

fn section(s: &SeriesSummary) -> Section {
    match (&s.stats, s.kind) {
        (SeriesStats::Counter(_), _) => Section::Counter,
        (SeriesStats::Histogram(_), _) => Section::Histogram,
        (SeriesStats::Gauge(_), MetricType::Gauge) => Section::Gauge,
        (SeriesStats::Gauge(_), _) => Section::Unknown,
    }
}

fn type_name(section: Section) -> &'static str {
    match section {
        Section::Gauge => "gauge",
        Section::Counter => "counter",
        Section::Histogram => "histogram",
        Section::Unknown => "unknown",
    }
}

/// A value of the exports: an integer (histogram counts, bucket counts), a float, or
/// missing. The CSV writes integers without decimals and floats with four, as the Python
/// AIPerf 0.13 does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stat {
    Int(u64),
    Float(f64),
    Missing,
}

impl Stat {
    fn float(v: Option<f64>) -> Stat {
        v.map_or(Stat::Missing, Stat::Float)
    }

    fn int(v: f64) -> Stat {
        // Counts are whole and non-negative; anything else is not a count.
        if v.is_finite() && v >= 0.0 {
            Stat::Int(v.round() as u64)
        } else {
            Stat::Missing
        }
    }

    fn json(self) -> Value {
        match self {
            Stat::Int(n) => Value::from(n),
            Stat::Float(v) => number(v),
            Stat::Missing => Value::Null,
        }
    }

    fn csv(self) -> String {
        match self {
            Stat::Int(n) => n.to_string(),
            Stat::Float(v) if v.is_finite() => format!("{v:.4}"),
            Stat::Float(_) | Stat::Missing => String::new(),
        }
    }
}

/// The statistic columns of each section, in the CSV's order.
const GAUGE_KEYS: [&str; 13] = [
    "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
];
const COUNTER_KEYS: [&str; 6] = [
    "total", "rate", "rate_avg", "rate_min", "rate_max", "rate_std",
];
const HISTOGRAM_KEYS: [&str; 14] = [
    "count",
    "count_rate",
    "sum",
    "sum_rate",
    "avg",
    "p1_estimate",
    "p5_estimate",
    "p10_estimate",
    "p25_estimate",
    "p50_estimate",
    "p75_estimate",
    "p90_estimate",
    "p95_estimate",
    "p99_estimate",
];

/// `(key, value)` of a gauge: avg, min, max, std (sample, ddof = 1; 0 for a single
/// sample), p1…p99.
fn gauge_stats(g: &GaugeStats) -> Vec<(String, Stat)> {
    let mut out = vec![
        ("avg".to_string(), Stat::Float(g.avg)),
        ("min".to_string(), Stat::Float(g.min)),
        ("max".to_string(), Stat::Float(g.max)),
        ("std".to_string(), Stat::Float(g.std_sample.unwrap_or(0.0))),
    ];
    out.extend(
        PERCENTILES
            .iter()
            .map(|&p| (format!("p{p}"), Stat::float(g.percentile(p)))),
    );
    out
}

/// `(key, value)` of a histogram in the JSON's order: count, sum, avg, rates (per second of
/// the span from the baseline scrape to the last one), estimated percentiles. A window
/// without observations has only its count, as in the Python AIPerf 0.13.
fn histogram_stats(h: &HistogramSummary) -> Vec<(String, Stat)> {
    let mut out = vec![("count".to_string(), Stat::int(h.count))];
    if h.count <= 0.0 {
        return out;
    }
    out.extend([
        ("sum".to_string(), Stat::Float(h.sum)),
        ("avg".to_string(), Stat::float(h.avg)),
        ("count_rate".to_string(), Stat::float(h.count_rate())),
        ("sum_rate".to_string(), Stat::float(h.sum_rate())),
    ]);
    out.extend(PERCENTILES.iter().map(|&p| {
        let v = h.percentiles.iter().find(|(q, _)| *q == p).map(|(_, v)| *v);
        (format!("p{p}_estimate"), Stat::float(v))
    }));
    out
}

/// The statistics of one series. Counters: `total` over the window and `rate` = total per
/// second of the span from the baseline scrape to the last one (0 over an empty span), as
/// the Python AIPerf 0.13 computes them.
fn stats(s: &SeriesSummary) -> Vec<(String, Stat)> {
    match &s.stats {
        SeriesStats::Gauge(g) => gauge_stats(g),
        SeriesStats::Counter(c) => vec![
            ("total".to_string(), Stat::Float(c.delta)),
            ("rate".to_string(), Stat::Float(c.rate.unwrap_or(0.0))),
        ],
        SeriesStats::Histogram(h) => histogram_stats(h),
    }
}

/// The window's bucket counts keyed by `le`: cumulative, as Prometheus buckets are (the
/// delta of each cumulative bucket over the window), as the Python AIPerf 0.13 has them.
fn bucket_deltas(h: &HistogramSummary) -> Vec<(String, Stat)> {
    h.buckets
        .iter()
        .map(|&(le, cumulative)| (format_value(le), Stat::int(cumulative)))
        .collect()
}

fn labels_json(labels: &[(String, String)]) -> Option<Value> {
    (!labels.is_empty()).then(|| {
        Value::Object(
            labels
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    })
}

/// Labels as the Python tool orders series by: the repr of the label dict (sorted keys),
/// empty without labels.
fn labels_sort_key(labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&(String, String)> = labels.iter().collect();
    sorted.sort();
    let items: Vec<String> = sorted
        .iter()
        .map(|(k, v)| format!("'{k}': '{v}'"))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// The fetch and update timing of one endpoint (`summary.endpoint_info`).
fn endpoint_info(e: &EndpointScrapes, clock: &WallClock) -> Value {
    let scrapes = &e.scrapes;
    let (Some(first), Some(last)) = (scrapes.first(), scrapes.last()) else {
        return json!({ "total_fetches": 0 });
    };
    let latency_ms: f64 = scrapes
        .iter()
        .map(|s| s.at.saturating_duration_since(s.sent_at).as_secs_f64() * 1e3)
        .sum::<f64>()
        / scrapes.len() as f64;
    // An update is a scrape whose content differs from the one before (the first counts).
    let updates: Vec<u64> = scrapes
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || scrapes[i - 1].families != s.families)
        .map(|(_, s)| clock.wall_ns(s.at))
        .collect();
    let mut intervals_ms: Vec<f64> = updates
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]) as f64 / 1e6)
        .collect();
    intervals_ms.sort_by(f64::total_cmp);
    let first_update = updates.first().copied().unwrap_or(0);
    let last_update = updates.last().copied().unwrap_or(0);
    let avg_interval = (!intervals_ms.is_empty())
        .then(|| intervals_ms.iter().sum::<f64>() / intervals_ms.len() as f64);
    json!({
        "total_fetches": scrapes.len(),
        "first_fetch_ns": clock.wall_ns(first.at),
        "last_fetch_ns": clock.wall_ns(last.at),
        "avg_fetch_latency_ms": number(latency_ms),
        "unique_updates": updates.len(),
        "first_update_ns": first_update,
        "last_update_ns": last_update,
        "duration_seconds": number(last_update.saturating_sub(first_update) as f64 / 1e9),
        "avg_update_interval_ms": avg_interval.map_or(Value::Null, number),
        "median_update_interval_ms": crate::stats::percentile_sorted(&intervals_ms, 50.0)
            .map_or(Value::Null, number),
    })
}

/// The OpenMetrics `info` families of an endpoint, from its last scrape (the summary leaves
/// them out; gauges named `*_info` are ordinary series).
fn info_families(e: &ServerEndpoint) -> Vec<&MetricFamily> {
    e.scrapes.scrapes.last().map_or_else(Vec::new, |s| {
        s.families
            .iter()
            .filter(|f| f.kind == MetricType::Info)
            .collect()
    })
}

/// One metric of the JSON while it is gathered: its head (type, description, unit) and its
/// series with their sort keys (endpoint URL, labels).
type MetricOut = (Map<String, Value>, Vec<(String, String, Value)>);

/// One `*_info` series of the CSV's info section: metric, endpoint, description, labels.
type InfoRow = (String, String, String, Vec<(String, String)>);

/// One exported series, with everything both the JSON and the CSV need.
struct Row<'a> {
    /// The full endpoint URL.
    url: &'a str,
    /// The exported name ([`display_name`]).
    name: &'a str,
    section: Section,
    help: &'a str,
    unit: Option<&'static str>,
    labels: &'a [(String, String)],
    stats: Vec<(String, Stat)>,
    /// Histograms: the cumulative bucket counts over the window.
    buckets: Option<Vec<(String, Stat)>>,
}

/// Every exported series of the report (metadata families left out), in summary order.
fn rows(report: &TelemetryReport) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for endpoint in &report.server {
        for s in &endpoint.summary.series {
            let name = display_name(&s.name, s.kind);
            if is_metadata(name) {
                continue;
            }
            let help = s.help.as_deref().unwrap_or("");
            out.push(Row {
                url: endpoint.scrapes.name.as_str(),
                name,
                section: section(s),
                help,
                unit: infer_unit(name, Some(help)),
                labels: &s.labels,
                stats: stats(s),
                buckets: match &s.stats {
                    SeriesStats::Histogram(h) => Some(bucket_deltas(h)),
                    _ => None,
                },
            });
        }
    }
    out
}

/// `server_metrics_export.json` (schema 1.1, as the Python AIPerf 0.13 writes it): the
/// summary (endpoints, window, per-endpoint fetch timing, `phase_time_ranges`), then
/// every metric by name (sorted) with its series (sorted by endpoint, then labels), each
/// with its statistics over the profiling window. A metric without a known unit has no
/// `unit` key. OpenMetrics `info` families (which the Python tool cannot read) follow as
/// type `info` with their values.
pub fn json(report: &TelemetryReport, benchmark_id: Option<&str>) -> Value {
    let configured: Vec<&str> = report
        .server
        .iter()
        .map(|e| e.scrapes.name.as_str())
        .collect();
    let successful: Vec<&str> = report
        .server
        .iter()
        .filter(|e| !e.scrapes.scrapes.is_empty())
        .map(|e| e.scrapes.name.as_str())
        .collect();
    let mut info: Vec<(String, Value)> = report
        .server
        .iter()
        .map(|e| {
            (
                e.scrapes.name.clone(),
                endpoint_info(&e.scrapes, &report.clock),
            )
        })
        .collect();
    info.sort_by(|a, b| a.0.cmp(&b.0));

    // name → (type, description, unit, [(sort key, series)])
    let mut metrics: std::collections::BTreeMap<&str, MetricOut> =
        std::collections::BTreeMap::new();
    for row in rows(report) {
        let mut series = Map::new();
        series.insert("endpoint_url".into(), row.url.into());
        if let Some(labels) = labels_json(row.labels) {
            series.insert("labels".into(), labels);
        }
        let stats: Map<String, Value> = row.stats.into_iter().map(|(k, v)| (k, v.json())).collect();
        series.insert("stats".into(), Value::Object(stats));
        if let Some(buckets) = row.buckets {
            let buckets: Map<String, Value> =
                buckets.into_iter().map(|(k, v)| (k, v.json())).collect();
            series.insert("buckets".into(), Value::Object(buckets));
        }
        let entry = metrics.entry(row.name).or_insert_with(|| {
            let mut head = Map::new();
            head.insert("type".into(), type_name(row.section).into());
            head.insert("description".into(), row.help.into());
            if let Some(unit) = row.unit {
                head.insert("unit".into(), unit.into());
            }
            (head, Vec::new())
        });
        entry.1.push((
            row.url.to_string(),
            labels_sort_key(row.labels),
            Value::Object(series),
        ));
    }
    let mut metrics_out: Map<String, Value> = metrics
        .into_iter()
        .map(|(name, (mut head, mut series))| {
            series.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
            head.insert(
                "series".into(),
                Value::Array(series.into_iter().map(|(_, _, v)| v).collect()),
            );
            (name.to_string(), Value::Object(head))
        })
        .collect();
    for endpoint in &report.server {
        for family in info_families(endpoint) {
            let entry = metrics_out.entry(family.name.clone()).or_insert_with(|| {
                json!({
                    "type": "info",
                    "description": family.help.as_deref().unwrap_or(""),
                    "series": [],
                })
            });
            for sample in &family.samples {
                let mut series = Map::new();
                series.insert("endpoint_url".into(), endpoint.scrapes.name.as_str().into());
                if let Some(labels) = labels_json(&sample.labels) {
                    series.insert("labels".into(), labels);
                }
                series.insert("value".into(), number(sample.value));
                if let Some(list) = entry.get_mut("series").and_then(Value::as_array_mut) {
                    list.push(Value::Object(series));
                }
            }
        }
    }
    let (start, end) = report.window_wall_ns;
    let mut summary = Map::new();
    summary.insert("endpoints_configured".into(), json!(configured));
    summary.insert("endpoints_successful".into(), json!(successful));
    summary.insert("start_time".into(), iso_time(start).into());
    summary.insert("end_time".into(), iso_time(end).into());
    if !info.is_empty() {
        summary.insert(
            "endpoint_info".into(),
            Value::Object(info.into_iter().collect()),
        );
    }
    let mut ranges = Map::new();
    if start < end {
        ranges.insert(
            "profiling".into(),
            json!({ "start_ns": start, "end_ns": end }),
        );
    }
    summary.insert("phase_time_ranges".into(), Value::Object(ranges));
    let mut out = Map::new();
    out.insert("schema_version".into(), SCHEMA_VERSION.into());
    out.insert("aiperf_version".into(), AIPERF_COMPAT_VERSION.into());
    if let Some(id) = benchmark_id {
        out.insert("benchmark_id".into(), id.into());
    }
    out.insert("summary".into(), Value::Object(summary));
    out.insert("metrics_phase".into(), "profiling".into());
    out.insert("metrics".into(), Value::Object(metrics_out));
    Value::Object(out)
}

/// The label columns of a CSV section, ordered as the Python AIPerf 0.13 orders them to keep
/// rows dense: labels that occur together form families (joined through each series' sorted
/// label names); families go by their smallest label, and within one, labels of a single
/// series come first, labels shared by several series after (each group sorted).
fn label_columns(label_sets: &[Vec<&str>]) -> Vec<String> {
    // Union-find over label names: the root of `x`.
    fn find(parent: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while parent[r] != r {
            r = parent[r];
        }
        r
    }
    let sets: Vec<&Vec<&str>> = label_sets.iter().filter(|s| !s.is_empty()).collect();
    let mut all: Vec<&str> = sets.iter().flat_map(|s| s.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    let mut parent: Vec<usize> = (0..all.len()).collect();
    let index = |l: &str| all.binary_search(&l).unwrap_or(0);
    for set in &sets {
        let mut names: Vec<&str> = (*set).clone();
        names.sort_unstable();
        for pair in names.windows(2) {
            let (a, b) = (
                find(&mut parent, index(pair[0])),
                find(&mut parent, index(pair[1])),
            );
            parent[b] = a;
        }
    }
    let mut families: Vec<Vec<&str>> = Vec::new();
    let mut roots: Vec<usize> = Vec::new();
    for (i, label) in all.iter().enumerate() {
        let root = find(&mut parent, i);
        if let Some(f) = roots.iter().position(|&r| r == root) {
            families[f].push(label);
        } else {
            roots.push(root);
            families.push(vec![label]);
        }
    }
    // `all` is sorted, so each family is sorted and its first label is its smallest.
    families.sort_by(|a, b| a[0].cmp(b[0]));
    let shared = |l: &str| sets.iter().filter(|s| s.contains(&l)).count() > 1;
    let mut out = Vec::new();
    for family in families {
        out.extend(
            family
                .iter()
                .filter(|l| !shared(l))
                .map(std::string::ToString::to_string),
        );
        out.extend(
            family
                .iter()
                .filter(|l| shared(l))
                .map(std::string::ToString::to_string),
        );
    }
    out
}

fn csv_line(out: &mut impl Write, fields: &[String]) -> io::Result<()> {
    let fields: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    write!(out, "{}\r\n", fields.join(","))
}

/// One section of the CSV: header `Endpoint,Type,Metric,Unit`, the statistics, the label
/// columns, `Description` (and `buckets` for histograms); rows clustered by which label
/// columns they fill, then by metric, endpoint and labels.
fn write_section(out: &mut impl Write, section: Section, rows: &[&Row<'_>]) -> io::Result<()> {
    let keys: &[&str] = match section {
        Section::Gauge | Section::Unknown => &GAUGE_KEYS,
        Section::Counter => &COUNTER_KEYS,
        Section::Histogram => &HISTOGRAM_KEYS,
    };
    let is_info = |r: &Row<'_>| r.name.ends_with("_info");
    let label_sets: Vec<Vec<&str>> = rows
        .iter()
        .filter(|r| !is_info(r))
        .map(|r| r.labels.iter().map(|(k, _)| k.as_str()).collect())
        .collect();
    let columns = label_columns(&label_sets);
    let mut header: Vec<String> = ["Endpoint", "Type", "Metric", "Unit"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    header.extend(keys.iter().map(std::string::ToString::to_string));
    header.extend(columns.iter().cloned());
    header.push("Description".into());
    if section == Section::Histogram {
        header.push("buckets".into());
    }
    csv_line(out, &header)?;
    let mut sorted: Vec<(String, String, &Row<'_>)> = rows
        .iter()
        .map(|r| {
            let pattern: String = columns
                .iter()
                .map(|c| {
                    if r.labels.iter().any(|(k, _)| k == c) {
                        '1'
                    } else {
                        '0'
                    }
                })
                .collect();
            (pattern, endpoint_key(r.url), *r)
        })
        .collect();
    sorted.sort_by(|a, b| {
        (&a.0, a.2.name, &a.1, labels_sort_key(a.2.labels)).cmp(&(
            &b.0,
            b.2.name,
            &b.1,
            labels_sort_key(b.2.labels),
        ))
    });
    for (_, endpoint, row) in sorted {
        let mut fields = vec![
            endpoint,
            type_name(section).to_string(),
            row.name.to_string(),
            row.unit.unwrap_or("").to_string(),
        ];
        fields.extend(keys.iter().map(|k| {
            row.stats
                .iter()
                .find(|(key, _)| key == k)
                .map_or(String::new(), |(_, v)| v.csv())
        }));
        for column in &columns {
            let value = if is_info(row) {
                ""
            } else {
                row.labels
                    .iter()
                    .find(|(k, _)| k == column)
                    .map_or("", |(_, v)| v.as_str())
            };
            fields.push(value.to_string());
        }
        fields.push(row.help.to_string());
        if let Some(buckets) = &row.buckets {
            let text: Vec<String> = buckets
                .iter()
                .map(|(k, v)| format!("{k}={}", v.csv()))
                .collect();
            fields.push(text.join(";"));
        }
        csv_line(out, &fields)?;
    }
    Ok(())
}

/// `server_metrics_export.csv` as the Python AIPerf 0.13 writes it: a `#` comment header
/// (`\n` line ends), then up to four sections — gauge, counter, histogram, unknown —
/// separated by an empty line (empty ones left out), then the info section (gauges named
/// `*_info` and OpenMetrics info families) with one `Endpoint,Metric,Key,Value,Description`
/// row per label. Endpoints appear as `host:port[/path]` ([`endpoint_key`]); integers are
/// written bare, other numbers with four decimals; rows end in `\r\n`.
pub fn write_csv(
    report: &TelemetryReport,
    benchmark_id: Option<&str>,
    out: &mut impl Write,
) -> io::Result<()> {
    write!(
        out,
        "# AIPerf Server Metrics Export (CSV)\n# aiperf_version: {AIPERF_COMPAT_VERSION}\n\
         # schema_version: {CSV_SCHEMA_VERSION}\n# benchmark_id: {}\n\
         # Note: Same benchmark_id and version appear in JSON and Parquet exports\n#\n",
        benchmark_id.unwrap_or("None")
    )?;
    let all = rows(report);
    let mut first = true;
    for section in [
        Section::Gauge,
        Section::Counter,
        Section::Histogram,
        Section::Unknown,
    ] {
        let rows: Vec<&Row<'_>> = all
            .iter()
            .filter(|r| r.section == section)
            .filter(|r| !(section == Section::Gauge && r.name.ends_with("_info")))
            .collect();
        if rows.is_empty() {
            continue;
        }
        if !first {
            out.write_all(b"\r\n")?;
        }
        first = false;
        write_section(out, section, &rows)?;
    }
    // Info: (metric, endpoint, description, labels), sorted by metric then endpoint.
    let mut info: Vec<InfoRow> = all
        .iter()
        .filter(|r| r.section == Section::Gauge && r.name.ends_with("_info"))
        .map(|r| {
            (
                r.name.to_string(),
                endpoint_key(r.url),
                r.help.to_string(),
                r.labels.to_vec(),
            )
        })
        .collect();
    for endpoint in &report.server {
        for family in info_families(endpoint) {
            for sample in &family.samples {
                info.push((
                    family.name.clone(),
                    endpoint_key(&endpoint.scrapes.name),
                    family.help.clone().unwrap_or_default(),
                    sample.labels.clone(),
                ));
            }
        }
    }
    if info.is_empty() {
        return Ok(());
    }
    info.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    if !first {
        out.write_all(b"\r\n")?;
    }
    let header: Vec<String> = ["Endpoint", "Metric", "Key", "Value", "Description"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    csv_line(out, &header)?;
    for (metric, endpoint, help, mut labels) in info {
        labels.sort();
        for (key, value) in labels {
            csv_line(
                out,
                &[endpoint.clone(), metric.clone(), key, value, help.clone()],
            )?;
        }
    }
    Ok(())
}

/// The samples of one family in one scrape, as the JSONL has them; `None` for summary
/// families (ignored, docs/telemetry.md#server-metrics) and families with nothing finite.
fn family_jsonl(f: &MetricFamily) -> Option<Value> {
    let mut out = Vec::new();
    if f.kind.is_histogram() {
        for h in f.histograms() {
            let mut m = Map::new();
            if let Some(labels) = labels_json(&h.labels) {
                m.insert("labels".into(), labels);
            }
            let buckets: Map<String, Value> = h
                .buckets
                .iter()
                .map(|&(le, n)| (format_value(le), number(n)))
                .collect();
            m.insert("buckets".into(), Value::Object(buckets));
            m.insert("sum".into(), h.sum.map_or(Value::Null, number));
            m.insert("count".into(), h.count.map_or(Value::Null, number));
            out.push(Value::Object(m));
        }
    } else if f.kind != MetricType::Summary {
        for s in &f.samples {
            let primary = matches!(f.suffix_of(&s.name), Some("" | "_total" | "_info"));
            if !primary || !s.value.is_finite() {
                continue;
            }
            let mut m = Map::new();
            if let Some(labels) = labels_json(&s.labels) {
                m.insert("labels".into(), labels);
            }
            m.insert("value".into(), number(s.value));
            out.push(Value::Object(m));
        }
    }
    (!out.is_empty()).then_some(Value::Array(out))
}

/// `server_metrics_export.jsonl`: one line per scrape of every server endpoint, the
/// baseline and final scrapes included (docs/telemetry.md#server-metrics-exports).
pub fn write_jsonl(report: &TelemetryReport, out: &mut impl Write) -> io::Result<()> {
    let clock = &report.clock;
    for endpoint in &report.server {
        for scrape in &endpoint.scrapes.scrapes {
            let metrics: Map<String, Value> = scrape
                .families
                .iter()
                .filter(|f| !is_metadata(display_name(&f.name, f.kind)))
                .filter_map(|f| {
                    family_jsonl(f).map(|v| (display_name(&f.name, f.kind).to_string(), v))
                })
                .collect();
            let latency: Duration = scrape.at.saturating_duration_since(scrape.sent_at);
            let line = json!({
                "endpoint_url": endpoint.scrapes.name,
                "timestamp_ns": clock.wall_ns(scrape.at),
                "endpoint_latency_ns": u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX),
                "metrics": metrics,
                "request_sent_ns": clock.wall_ns(scrape.sent_at),
            });
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::prometheus::parse;
    use crate::scraper::Scrape;

    fn scrape(at: Instant, requests: f64, running: f64, fast: f64, slow: f64) -> Scrape {
        let text = format!(
            "# HELP req_total Requests.\n# TYPE req_total counter\n\
             req_total{{model=\"m\",code=\"200\"}} {requests}\n\
             # TYPE running gauge\nrunning {running}\n\
             # TYPE lat_seconds histogram\n\
             lat_seconds_bucket{{le=\"0.1\"}} {fast}\n\
             lat_seconds_bucket{{le=\"+Inf\"}} {}\n\
             lat_seconds_sum {}\nlat_seconds_count {}\n\
             # TYPE build_info gauge\nbuild_info{{version=\"1.2\"}} 1\n",
            fast + slow,
            fast * 0.05 + slow * 0.5,
            fast + slow
        );
        Scrape {
            sent_at: at,
            at,
            families: parse(&text).unwrap(),
        }
    }

    /// A 2-second window: baseline at 0 ms, samples at 1 s and 2 s, one after.
    fn report() -> TelemetryReport {
        let t = Instant::now();
        let s = |ms| t + Duration::from_millis(ms);
        let clock = WallClock::from_pair(t, 1_000_000_000_000);
        let endpoint = EndpointScrapes {
            name: "http://h:8000/metrics".into(),
            scrapes: vec![
                scrape(s(0), 10.0, 9.0, 0.0, 0.0),
                scrape(s(1000), 14.0, 2.0, 3.0, 1.0),
                scrape(s(2000), 20.0, 4.0, 4.0, 2.0),
                scrape(s(9000), 90.0, 9.0, 9.0, 9.0),
            ],
            ..EndpointScrapes::default()
        };
        let window = (
            1_000_000_000_000 + 500_000_000,
            1_000_000_000_000 + 2_500_000_000,
        );
        TelemetryReport::new(clock, window, Duration::ZERO, Vec::new(), vec![endpoint])
    }

    #[test]
    fn csv_matches_the_python_layout_exactly() {
        let mut out = Vec::new();
        write_csv(&report(), Some("b1"), &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        print!("{csv}");
        let expected = concat!(
            "# AIPerf Server Metrics Export (CSV)\n",
            "# aiperf_version: 0.13.0\n",
            "# schema_version: 1.0\n",
            "# benchmark_id: b1\n",
            "# Note: Same benchmark_id and version appear in JSON and Parquet exports\n",
            "#\n",
            // Gauges: the in-window samples 2 and 4 (not the baseline 9 before the window
            // nor the 9 after it): avg 3, sample std √2.
            "Endpoint,Type,Metric,Unit,avg,min,max,std,p1,p5,p10,p25,p50,p75,p90,p95,p99,Description\r\n",
            "h:8000,gauge,running,,3.0000,2.0000,4.0000,1.4142,2.0200,2.1000,2.2000,2.5000,3.0000,3.5000,3.8000,3.9000,3.9800,\r\n",
            "\r\n",
            // Counters lose `_total`; 20 − 10 over the 2 s from the baseline to the last scrape.
            "Endpoint,Type,Metric,Unit,total,rate,rate_avg,rate_min,rate_max,rate_std,code,model,Description\r\n",
            "h:8000,counter,req,,10.0000,5.0000,,,,,200,m,Requests.\r\n",
            "\r\n",
            // Histograms: 6 observations, sum 4 × 0.05 + 2 × 0.5 = 1.2, cumulative buckets.
            "Endpoint,Type,Metric,Unit,count,count_rate,sum,sum_rate,avg,p1_estimate,p5_estimate,p10_estimate,p25_estimate,p50_estimate,p75_estimate,p90_estimate,p95_estimate,p99_estimate,Description,buckets\r\n",
            "h:8000,histogram,lat_seconds,seconds,6,3.0000,1.2000,0.6000,0.2000,",
        );
        assert!(csv.starts_with(expected), "{csv}");
        assert!(
            csv.ends_with(concat!(
                ",,0.1=4;+Inf=6\r\n",
                "\r\n",
                "Endpoint,Metric,Key,Value,Description\r\n",
                "h:8000,build_info,version,1.2,\r\n",
            )),
            "{csv}"
        );
    }

    #[test]
    fn label_columns_group_families_exclusive_first() {
        let sets = vec![
            vec!["model", "engine"],
            vec!["model", "finished_reason"],
            vec!["gpu"],
            vec![],
        ];
        // One family {engine, finished_reason, model}: model is shared, so it goes last.
        assert_eq!(
            label_columns(&sets),
            ["engine", "finished_reason", "model", "gpu"]
        );
    }

    #[test]
    fn json_matches_the_python_structure() {
        let json = json(&report(), Some("b1"));
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "schema_version",
                "aiperf_version",
                "benchmark_id",
                "summary",
                "metrics_phase",
                "metrics"
            ]
        );
        assert_eq!(json["schema_version"], "1.1");
        assert_eq!(json["aiperf_version"], "0.13.0");
        assert_eq!(json["metrics_phase"], "profiling");
        let names: Vec<&str> = json["metrics"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, ["build_info", "lat_seconds", "req", "running"]);
        let lat = &json["metrics"]["lat_seconds"];
        assert_eq!(lat["unit"], "seconds");
        assert_eq!(lat["series"][0]["buckets"], json!({"0.1": 4, "+Inf": 6}));
        assert_eq!(lat["series"][0]["stats"]["count"], 6);
        assert_eq!(lat["series"][0]["stats"]["count_rate"], 3.0);
        let req = &json["metrics"]["req"];
        assert_eq!(req["type"], "counter");
        assert_eq!(req["description"], "Requests.");
        assert!(req.get("unit").is_none());
        assert_eq!(
            req["series"][0]["stats"],
            json!({"total": 10.0, "rate": 5.0})
        );
        assert_eq!(
            req["series"][0]["labels"],
            json!({"code": "200", "model": "m"})
        );
        assert_eq!(json["metrics"]["build_info"]["type"], "gauge");
        assert_eq!(json["metrics"]["running"]["series"][0]["stats"]["min"], 2.0);
        let info = &json["summary"]["endpoint_info"]["http://h:8000/metrics"];
        assert_eq!(info["total_fetches"], 4);
        assert_eq!(info["unique_updates"], 4);
        assert_eq!(info["first_fetch_ns"], 1_000_000_000_000u64);
        assert_eq!(info["median_update_interval_ms"], 1000.0);
        assert_eq!(json["summary"]["start_time"], iso_time(1_000_500_000_000));
        assert_eq!(
            json["summary"]["phase_time_ranges"],
            json!({"profiling": {"start_ns": 1_000_500_000_000u64, "end_ns": 1_002_500_000_000u64}})
        );
    }

    #[test]
    fn counters_lose_total_and_metadata_families_are_left_out() {
        assert_eq!(
            display_name("llamacpp:prompt_tokens_total", MetricType::Counter),
            "llamacpp:prompt_tokens"
        );
        // Only counters: a gauge keeps `_total`, a counter without it keeps its name.
        assert_eq!(display_name("x_total", MetricType::Gauge), "x_total");
        assert_eq!(display_name("x_total", MetricType::Untyped), "x_total");
        assert_eq!(
            display_name("llamacpp:n_tokens_max", MetricType::Counter),
            "llamacpp:n_tokens_max"
        );
        assert!(is_metadata("vllm:request_success_created"));
        assert!(is_metadata("process_uptime"));
        assert!(is_metadata("process_uptime_seconds"));
        assert!(!is_metadata("vllm:prompt_tokens"));
    }

    #[test]
    fn units_of_exported_names() {
        assert_eq!(infer_unit("vllm:prompt_tokens", None), Some("tokens"));
        assert_eq!(
            infer_unit(
                "llamacpp:prompt_tokens_seconds",
                Some("Average prompt throughput in tokens/s")
            ),
            Some("tokens/s")
        );
        assert_eq!(infer_unit("running", None), None);
    }
}
