//! GPU exports (docs/telemetry.md#gpu-exports): the per-scrape JSONL, the `telemetry_data`
//! object and the CSV table.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use super::{csv_field, csv_number, endpoint_key, iso_time, number};
use crate::collector::TelemetryReport;
use crate::gpu::{GpuIdentity, GpuMetricValue, GpuSummary, GPU_METRICS};
use crate::prometheus::{find_family, Sample};
use crate::scraper::Scrape;
use crate::stats::PERCENTILES;

/// `p1`, `p5`, … for [`PERCENTILES`].
fn percentile_key(p: f64) -> String {
    format!("p{p}")
}

/// `gpu_index` as a number when it is one (DCGM's `gpu` label), else as written.
fn index_value(index: &str) -> Value {
    index
        .parse::<u64>()
        .map_or_else(|_| Value::String(index.to_string()), Value::from)
}

/// One GPU's row of one scrape: identity labels and the metric values in display units.
struct GpuLine<'a> {
    key: &'a str,
    sample: &'a Sample,
    values: Map<String, Value>,
}

/// The GPUs of one scrape, in order of first appearance.
fn scrape_lines(scrape: &Scrape) -> Vec<GpuLine<'_>> {
    let mut lines: Vec<GpuLine<'_>> = Vec::new();
    for def in GPU_METRICS {
        let Some(family) = find_family(&scrape.families, def.source) else {
            continue;
        };
        for sample in &family.samples {
            if !matches!(family.suffix_of(&sample.name), Some("" | "_total")) {
                continue;
            }
            let Some(key) = sample.label("gpu").or_else(|| sample.label("UUID")) else {
                continue;
            };
            if !sample.value.is_finite() {
                continue;
            }
            let i = if let Some(i) = lines.iter().position(|l| l.key == key) {
                i
            } else {
                lines.push(GpuLine {
                    key,
                    sample,
                    values: Map::new(),
                });
                lines.len() - 1
            };
            lines[i]
                .values
                .insert(def.tag.to_string(), number(sample.value * def.scale));
        }
    }
    lines
}

/// `gpu_telemetry_export.jsonl`: one line per GPU per scrape of every DCGM endpoint (the
/// baseline and final scrapes included), fields as docs/telemetry.md#gpu-exports names
/// them, absent ones left out.
pub fn write_jsonl(report: &TelemetryReport, out: &mut impl Write) -> io::Result<()> {
    for endpoint in &report.gpu {
        let url = &endpoint.scrapes.name;
        for scrape in &endpoint.scrapes.scrapes {
            for line in scrape_lines(scrape) {
                let mut row = Map::new();
                row.insert(
                    "timestamp_ns".into(),
                    report.clock.wall_ns(scrape.at).into(),
                );
                row.insert("dcgm_url".into(), url.as_str().into());
                row.insert("gpu_index".into(), index_value(line.key));
                for (field, label) in [
                    ("gpu_uuid", "UUID"),
                    ("gpu_model_name", "modelName"),
                    ("pci_bus_id", "pci_bus_id"),
                    ("device", "device"),
                    ("hostname", "Hostname"),
                    ("namespace", "namespace"),
                    ("pod_name", "pod"),
                ] {
                    if let Some(v) = line.sample.label(label) {
                        row.insert(field.into(), v.into());
                    }
                }
                row.insert("telemetry_data".into(), Value::Object(line.values));
                serde_json::to_writer(&mut *out, &row)?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

/// One metric's statistics as `telemetry_data` has them. A counter has one value, its
/// delta over the window, reported as `avg` (as aggregate metrics are).
fn metric_json(value: &GpuMetricValue, unit: &str) -> Value {
    let mut m = Map::new();
    match value {
        GpuMetricValue::Gauge(s) => {
            m.insert("avg".into(), number(s.avg));
            m.insert("min".into(), number(s.min));
            m.insert("max".into(), number(s.max));
            for &p in &PERCENTILES {
                m.insert(
                    percentile_key(p),
                    number(s.percentile(p).unwrap_or(f64::NAN)),
                );
            }
            m.insert("std".into(), number(s.std));
            m.insert("count".into(), s.count.into());
        }
        GpuMetricValue::Counter { delta } => {
            m.insert("avg".into(), number(*delta));
        }
    }
    m.insert("unit".into(), unit.into());
    Value::Object(m)
}

fn gpu_json(gpu: &GpuSummary) -> Value {
    let id = &gpu.identity;
    let metrics: Map<String, Value> = gpu
        .metrics
        .iter()
        .map(|m| (m.def.tag.to_string(), metric_json(&m.value, m.def.unit)))
        .collect();
    json!({
        "gpu_index": index_value(&id.index),
        "gpu_name": id.model_name,
        "gpu_uuid": id.uuid,
        "hostname": id.hostname,
        "metrics": metrics,
    })
}

/// The `telemetry_data` object of `profile_export_aiperf.json`
/// (docs/telemetry.md#gpu-exports): `summary` (endpoints configured and successful, window
/// start and end) and per endpoint, per GPU, each metric's statistics with its unit.
/// Endpoints that never answered appear only in `endpoints_configured`.
pub fn telemetry_data(report: &TelemetryReport) -> Value {
    let configured: Vec<&str> = report.gpu.iter().map(|e| e.scrapes.name.as_str()).collect();
    let successful: Vec<&str> = report
        .gpu
        .iter()
        .filter(|e| !e.scrapes.scrapes.is_empty())
        .map(|e| e.scrapes.name.as_str())
        .collect();
    let mut endpoints = Map::new();
    for endpoint in report.gpu.iter().filter(|e| !e.gpus.is_empty()) {
        let gpus: Map<String, Value> = endpoint
            .gpus
            .iter()
            .map(|g| (format!("gpu_{}", g.identity.index), gpu_json(g)))
            .collect();
        endpoints.insert(
            endpoint_key(&endpoint.scrapes.name),
            json!({ "gpus": gpus }),
        );
    }
    let (start, end) = report.window_wall_ns;
    json!({
        "summary": {
            "endpoints_configured": configured,
            "endpoints_successful": successful,
            "start_time": iso_time(start),
            "end_time": iso_time(end),
        },
        "endpoints": endpoints,
    })
}

/// Reads one optional identity column.
type Getter = fn(&GpuIdentity) -> Option<&str>;

/// The GPU table's header (docs/telemetry.md#gpu-exports), with the optional identity
/// columns when wanted.
fn csv_header(extra: &[(&str, Getter)]) -> Vec<String> {
    let mut header: Vec<String> = ["Endpoint", "GPU_Index", "GPU_Name", "GPU_UUID"]
        .map(String::from)
        .to_vec();
    header.extend(extra.iter().map(|(name, _)| name.to_string()));
    header.push("Metric".into());
    header.extend(
        [
            "avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95",
            "p99", "std",
        ]
        .map(String::from),
    );
    header
}

/// The GPU table of `profile_export_aiperf.csv` (docs/telemetry.md#gpu-exports) as rows of
/// fields: the header, then one row per endpoint × GPU × metric in the DCGM table's order;
/// `Metric` reads `GPU Power Usage (W)`; a counter fills `avg` (its delta) only.
/// `Hostname`, `Namespace` and `Pod Name` columns are added only when some GPU has them.
/// Empty without GPUs.
pub fn csv_rows(report: &TelemetryReport) -> Vec<Vec<String>> {
    let optional: [(&str, Getter); 3] = [
        ("Hostname", |id| id.hostname.as_deref()),
        ("Namespace", |id| id.namespace.as_deref()),
        ("Pod Name", |id| id.pod.as_deref()),
    ];
    let extra: Vec<(&str, Getter)> = optional
        .into_iter()
        .filter(|(_, get)| report.gpus().any(|g| get(&g.identity).is_some()))
        .collect();
    let mut rows = Vec::new();
    for endpoint in &report.gpu {
        let key = endpoint_key(&endpoint.scrapes.name);
        for gpu in &endpoint.gpus {
            let id = &gpu.identity;
            for metric in &gpu.metrics {
                let mut row = vec![
                    key.clone(),
                    id.index.clone(),
                    id.model_name.clone().unwrap_or_default(),
                    id.uuid.clone().unwrap_or_default(),
                ];
                row.extend(
                    extra
                        .iter()
                        .map(|(_, get)| get(id).unwrap_or("").to_string()),
                );
                row.push(format!("{} ({})", metric.def.display, metric.def.unit));
                match &metric.value {
                    GpuMetricValue::Gauge(s) => {
                        let mut cells = vec![Some(s.avg), Some(s.min), Some(s.max), Some(s.sum)];
                        cells.extend(PERCENTILES.iter().map(|&p| s.percentile(p)));
                        cells.push(Some(s.std));
                        row.extend(cells.into_iter().map(csv_number));
                    }
                    GpuMetricValue::Counter { delta } => {
                        row.push(csv_number(Some(*delta)));
                        row.extend(std::iter::repeat_n(String::new(), 13));
                    }
                }
                rows.push(row);
            }
        }
    }
    if rows.is_empty() {
        return rows;
    }
    rows.insert(0, csv_header(&extra));
    rows
}

/// [`csv_rows`] as text to append to `profile_export_aiperf.csv`: two empty rows, then the
/// table, lines ending `\r\n` as the main CSV's do. `None` without GPUs.
pub fn csv_section(report: &TelemetryReport) -> Option<String> {
    let rows = csv_rows(report);
    if rows.is_empty() {
        return None;
    }
    let mut text = String::from("\r\n\r\n");
    for row in rows {
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        text.push_str(&fields.join(","));
        text.push_str("\r\n");
    }
    Some(text)
}
