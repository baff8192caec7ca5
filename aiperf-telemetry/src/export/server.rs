//! Server-metrics exports (SPEC §7.2): `server_metrics_export.json`, `.csv` and `.jsonl`.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{csv_field, csv_number, iso_time, number};
use crate::collector::{ServerEndpoint, TelemetryReport};
use crate::prometheus::{format_value, MetricFamily, MetricType};
use crate::scraper::EndpointScrapes;
use crate::stats::{GaugeStats, PERCENTILES};
use crate::summary::{HistogramSummary, SeriesStats, SeriesSummary};
use crate::wall::WallClock;

/// The `schema_version` of `server_metrics_export.json`.
pub const SCHEMA_VERSION: &str = "1.0";
/// The Python AIPerf version whose files these match.
pub const AIPERF_COMPAT_VERSION: &str = "0.11.0";

/// A unit guessed from the metric name's suffix (SPEC §7.2; optional).
pub fn infer_unit(name: &str) -> Option<&'static str> {
    let name = name.strip_suffix("_total").unwrap_or(name);
    [
        ("_seconds", "seconds"),
        ("_milliseconds", "milliseconds"),
        ("_ms", "milliseconds"),
        ("_bytes", "bytes"),
        ("_tokens", "tokens"),
        ("_requests", "requests"),
        ("_perc", "ratio"),
        ("_ratio", "ratio"),
        ("_percent", "percent"),
    ]
    .into_iter()
    .find(|(suffix, _)| name.ends_with(suffix))
    .map(|(_, unit)| unit)
}

/// Whether a family is informational: OpenMetrics `info`, or a gauge/untyped `*_info`
/// (constant labels, value 1), which SPEC §7.2 keeps in an info section of its own.
fn is_info(name: &str, kind: MetricType) -> bool {
    kind == MetricType::Info || name.ends_with("_info")
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

fn per_second(v: f64, seconds: f64) -> Option<f64> {
    (seconds > 0.0).then(|| v / seconds)
}

/// `(column, value)` of a gauge: avg, min, max, std (sample, ddof = 1, as SPEC §7.2 has it;
/// 0 for a single sample), p1…p99.
fn gauge_stats(g: &GaugeStats) -> Vec<(String, Option<f64>)> {
    let mut out = vec![
        ("avg".to_string(), Some(g.avg)),
        ("min".to_string(), Some(g.min)),
        ("max".to_string(), Some(g.max)),
        ("std".to_string(), Some(g.std_sample.unwrap_or(0.0))),
    ];
    out.extend(
        PERCENTILES
            .iter()
            .map(|&p| (format!("p{p}"), g.percentile(p))),
    );
    out
}

/// `(column, value)` of a histogram: count, sum, avg, rates, estimated percentiles.
fn histogram_stats(h: &HistogramSummary, seconds: f64) -> Vec<(String, Option<f64>)> {
    let mut out = vec![
        ("count".to_string(), Some(h.count)),
        ("sum".to_string(), Some(h.sum)),
        ("avg".to_string(), h.avg),
        ("count_rate".to_string(), per_second(h.count, seconds)),
        ("sum_rate".to_string(), per_second(h.sum, seconds)),
    ];
    out.extend(PERCENTILES.iter().map(|&p| {
        let v = h.percentiles.iter().find(|(q, _)| *q == p).map(|(_, v)| *v);
        (format!("p{p}_estimate"), v)
    }));
    out
}

/// The statistics of one series as columns. Counters: `total` over the window and `rate`
/// = total / window length (SPEC §7.2).
fn stats(s: &SeriesSummary, seconds: f64) -> Vec<(String, Option<f64>)> {
    match &s.stats {
        SeriesStats::Gauge(g) => gauge_stats(g),
        SeriesStats::Counter(c) => vec![
            ("total".to_string(), Some(c.delta)),
            ("rate".to_string(), per_second(c.delta, seconds)),
        ],
        SeriesStats::Histogram(h) => histogram_stats(h, seconds),
    }
}

/// Per-bucket observation counts (not cumulative) over the window, keyed by `le`.
fn bucket_deltas(h: &HistogramSummary) -> Map<String, Value> {
    let mut below = 0.0;
    h.buckets
        .iter()
        .map(|&(le, cumulative)| {
            let n = (cumulative - below).max(0.0);
            below = cumulative;
            (format_value(le), number(n))
        })
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

/// The info series of an endpoint: families that are informational, from its last scrape.
fn info_families(e: &ServerEndpoint) -> Vec<&MetricFamily> {
    e.scrapes.scrapes.last().map_or_else(Vec::new, |s| {
        s.families
            .iter()
            .filter(|f| is_info(&f.name, f.kind))
            .collect()
    })
}

/// One metric of the JSON, gathered over endpoints before it is written.
struct MetricOut {
    name: String,
    kind: &'static str,
    help: String,
    series: Vec<Value>,
}

/// The series list of metric `name`, created on first use (first-appearance order).
fn metric_entry<'a>(
    metrics: &'a mut Vec<MetricOut>,
    name: &str,
    kind: &'static str,
    help: Option<&str>,
) -> &'a mut Vec<Value> {
    let i = match metrics.iter().position(|m| m.name == name) {
        Some(i) => i,
        None => {
            metrics.push(MetricOut {
                name: name.to_string(),
                kind,
                help: help.unwrap_or("").to_string(),
                series: Vec::new(),
            });
            metrics.len() - 1
        }
    };
    &mut metrics[i].series
}

fn metrics_json(metrics: Vec<MetricOut>) -> Map<String, Value> {
    metrics
        .into_iter()
        .map(|m| {
            let mut v = Map::new();
            v.insert("type".into(), m.kind.into());
            v.insert("description".into(), m.help.into());
            if let Some(unit) = infer_unit(&m.name) {
                v.insert("unit".into(), unit.into());
            }
            v.insert("series".into(), Value::Array(m.series));
            (m.name, Value::Object(v))
        })
        .collect()
}

/// `server_metrics_export.json` (schema 1.0, SPEC §7.2): the summary with per-endpoint
/// fetch timing, then every metric with its series' statistics over the window.
pub fn json(report: &TelemetryReport, benchmark_id: Option<&str>) -> Value {
    let seconds = report.window_seconds();
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
    let info: Map<String, Value> = report
        .server
        .iter()
        .map(|e| {
            (
                e.scrapes.name.clone(),
                endpoint_info(&e.scrapes, &report.clock),
            )
        })
        .collect();
    let mut metrics = Vec::new();
    for endpoint in &report.server {
        let url = endpoint.scrapes.name.as_str();
        for s in endpoint
            .summary
            .series
            .iter()
            .filter(|s| !is_info(&s.name, s.kind))
        {
            let mut series = Map::new();
            series.insert("endpoint_url".into(), url.into());
            if let Some(labels) = labels_json(&s.labels) {
                series.insert("labels".into(), labels);
            }
            let stats: Map<String, Value> = stats(s, seconds)
                .into_iter()
                .map(|(k, v)| (k, v.map_or(Value::Null, number)))
                .collect();
            series.insert("stats".into(), Value::Object(stats));
            if let SeriesStats::Histogram(h) = &s.stats {
                series.insert("buckets".into(), Value::Object(bucket_deltas(h)));
            }
            let kind = type_name(section(s));
            metric_entry(&mut metrics, &s.name, kind, s.help.as_deref())
                .push(Value::Object(series));
        }
        for family in info_families(endpoint) {
            for sample in &family.samples {
                let mut series = Map::new();
                series.insert("endpoint_url".into(), url.into());
                if let Some(labels) = labels_json(&sample.labels) {
                    series.insert("labels".into(), labels);
                }
                series.insert("value".into(), number(sample.value));
                metric_entry(&mut metrics, &family.name, "info", family.help.as_deref())
                    .push(Value::Object(series));
            }
        }
    }
    let (start, end) = report.window_wall_ns;
    json!({
        "schema_version": SCHEMA_VERSION,
        "aiperf_version": AIPERF_COMPAT_VERSION,
        "benchmark_id": benchmark_id,
        "summary": {
            "endpoints_configured": configured,
            "endpoints_successful": successful,
            "start_time": iso_time(start),
            "end_time": iso_time(end),
            "endpoint_info": info,
        },
        "metrics": metrics_json(metrics),
    })
}

/// One CSV row before the label columns are known.
struct CsvRow {
    endpoint: String,
    metric: String,
    labels: Vec<(String, String)>,
    stats: Vec<(String, Option<f64>)>,
}

fn write_section(out: &mut impl Write, rows: &[CsvRow]) -> io::Result<()> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    let label_keys: BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r.labels.iter().map(|(k, _)| k.as_str()))
        .collect();
    let mut header = vec!["Endpoint".to_string(), "Metric".to_string()];
    header.extend(label_keys.iter().map(|k| k.to_string()));
    header.extend(first.stats.iter().map(|(k, _)| k.clone()));
    let fields: Vec<String> = header.iter().map(|h| csv_field(h)).collect();
    write!(out, "{}\r\n", fields.join(","))?;
    for row in rows {
        let mut fields = vec![csv_field(&row.endpoint), csv_field(&row.metric)];
        for key in &label_keys {
            let v = row
                .labels
                .iter()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str());
            fields.push(csv_field(v));
        }
        fields.extend(row.stats.iter().map(|(_, v)| csv_number(*v)));
        write!(out, "{}\r\n", fields.join(","))?;
    }
    Ok(())
}

/// `server_metrics_export.csv`: up to five sections — gauge, counter, histogram, unknown,
/// info — separated by a blank line (empty ones left out); labels expanded into columns
/// (the union of the section's label names, sorted), statistics as columns.
pub fn write_csv(report: &TelemetryReport, out: &mut impl Write) -> io::Result<()> {
    let seconds = report.window_seconds();
    let mut sections: Vec<Vec<CsvRow>> = (0..5).map(|_| Vec::new()).collect();
    for endpoint in &report.server {
        for s in endpoint
            .summary
            .series
            .iter()
            .filter(|s| !is_info(&s.name, s.kind))
        {
            let i = match section(s) {
                Section::Gauge => 0,
                Section::Counter => 1,
                Section::Histogram => 2,
                Section::Unknown => 3,
            };
            sections[i].push(CsvRow {
                endpoint: endpoint.scrapes.name.clone(),
                metric: s.name.clone(),
                labels: s.labels.clone(),
                stats: stats(s, seconds),
            });
        }
        for family in info_families(endpoint) {
            for sample in &family.samples {
                sections[4].push(CsvRow {
                    endpoint: endpoint.scrapes.name.clone(),
                    metric: family.name.clone(),
                    labels: sample.labels.clone(),
                    stats: vec![("value".to_string(), Some(sample.value))],
                });
            }
        }
    }
    let mut first = true;
    for rows in sections.iter().filter(|r| !r.is_empty()) {
        if !first {
            out.write_all(b"\r\n")?;
        }
        first = false;
        write_section(out, rows)?;
    }
    Ok(())
}

/// The samples of one family in one scrape, as the JSONL has them; `None` for summary
/// families (SPEC §7.2 ignores them) and families with nothing finite.
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
/// baseline and final scrapes included (SPEC §7.2).
pub fn write_jsonl(report: &TelemetryReport, out: &mut impl Write) -> io::Result<()> {
    let clock = &report.clock;
    for endpoint in &report.server {
        for scrape in &endpoint.scrapes.scrapes {
            let metrics: Map<String, Value> = scrape
                .families
                .iter()
                .filter_map(|f| family_jsonl(f).map(|v| (f.name.clone(), v)))
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
    fn csv_sections_hold_exact_window_statistics() {
        let mut out = Vec::new();
        write_csv(&report(), &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        let sections: Vec<&str> = csv.split("\r\n\r\n").collect();
        assert_eq!(sections.len(), 4, "{csv}");
        // Gauge: samples 2 and 4 → avg 3, sample std √2.
        assert!(sections[0].starts_with("Endpoint,Metric,avg,min,max,std,p1,"));
        assert!(sections[0].contains("http://h:8000/metrics,running,3.00,2.00,4.00,1.41,2.02,"));
        // Counter: 20 − 10 over 2 s; labels sorted into columns.
        assert_eq!(
            sections[1],
            "Endpoint,Metric,code,model,total,rate\r\nhttp://h:8000/metrics,req_total,200,m,10.00,5.00"
        );
        // Histogram: 6 observations, sum 4 × 0.05 + 2 × 0.5 = 1.2.
        let row = sections[2].lines().nth(1).unwrap();
        assert!(
            row.starts_with("http://h:8000/metrics,lat_seconds,6.00,1.20,0.20,3.00,0.60,"),
            "{row}"
        );
        assert_eq!(
            sections[3],
            "Endpoint,Metric,version,value\r\nhttp://h:8000/metrics,build_info,1.2,1.00\r\n"
        );
    }

    #[test]
    fn json_buckets_units_and_endpoint_info() {
        let json = json(&report(), None);
        let lat = &json["metrics"]["lat_seconds"];
        assert_eq!(lat["unit"], "seconds");
        assert_eq!(
            lat["series"][0]["buckets"],
            json!({"0.1": 4.0, "+Inf": 2.0})
        );
        assert_eq!(json["metrics"]["req_total"]["description"], "Requests.");
        assert_eq!(
            json["metrics"]["req_total"]["series"][0]["labels"],
            json!({"model": "m", "code": "200"})
        );
        assert_eq!(json["metrics"]["build_info"]["type"], "info");
        let info = &json["summary"]["endpoint_info"]["http://h:8000/metrics"];
        assert_eq!(info["total_fetches"], 4);
        assert_eq!(info["unique_updates"], 4);
        assert_eq!(info["first_fetch_ns"], 1_000_000_000_000u64);
        assert_eq!(info["median_update_interval_ms"], 1000.0);
        assert_eq!(json["summary"]["start_time"], iso_time(1_000_500_000_000));
    }

    #[test]
    fn units_from_suffixes() {
        assert_eq!(infer_unit("vllm:prompt_tokens_total"), Some("tokens"));
        assert_eq!(
            infer_unit("vllm:e2e_request_latency_seconds"),
            Some("seconds")
        );
        assert_eq!(infer_unit("vllm:gpu_cache_usage_perc"), Some("ratio"));
        assert_eq!(infer_unit("running"), None);
    }
}
