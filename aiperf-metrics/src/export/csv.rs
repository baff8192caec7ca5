//! `profile_export_aiperf.csv`, laid out like the Python AIPerf 0.13:
//! the distribution metrics (`Metric,avg,min,max,sum,p1,…,p99,std`) sorted by tag, one
//! blank row, then the single-value metrics (`Metric,Value`) sorted by tag. Every number
//! has two decimals; a missing statistic is an empty cell; lines end with `\r\n`.

use std::io::{self, Write};

use crate::summary::{MetricResult, Summary};

/// Header of the distribution table.
pub const STATS_HEADER: &str = "Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std";
/// Header of the single-value table.
pub const VALUES_HEADER: &str = "Metric,Value";

/// `Header (unit)`, the unit left out when it is `count` or `requests`.
pub fn label(m: &MetricResult) -> String {
    if m.unit.is_empty() || m.unit == "count" || m.unit == "requests" {
        m.header.to_string()
    } else {
        format!("{} ({})", m.header, m.unit)
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}"),
        _ => String::new(),
    }
}

/// Quotes a field the way Python's `csv` module does (minimal quoting).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes the CSV to `out`.
pub fn write_csv(summary: &Summary, out: &mut impl Write) -> io::Result<()> {
    // Every metric, the HTTP trace ones included: the Python AIPerf writes its 14
    // `HTTP …` rows whether or not the console shows them.
    let in_csv = || summary.metrics.iter();
    let mut dists: Vec<&MetricResult> = in_csv().filter(|m| m.has_distribution()).collect();
    let mut singles: Vec<&MetricResult> = in_csv().filter(|m| !m.has_distribution()).collect();
    dists.sort_by_key(|m| m.tag);
    singles.sort_by_key(|m| m.tag);
    if !dists.is_empty() {
        write!(out, "{STATS_HEADER}\r\n")?;
        for m in &dists {
            let cells = [
                Some(m.avg),
                m.min,
                m.max,
                m.sum,
                m.p1,
                m.p5,
                m.p10,
                m.p25,
                m.p50,
                m.p75,
                m.p90,
                m.p95,
                m.p99,
                m.std,
            ]
            .map(num);
            write!(out, "{},{}\r\n", field(&label(m)), cells.join(","))?;
        }
    }
    if !singles.is_empty() {
        if !dists.is_empty() {
            write!(out, "\r\n")?;
        }
        write!(out, "{VALUES_HEADER}\r\n")?;
        for m in &singles {
            write!(out, "{},{}\r\n", field(&label(m)), num(Some(m.avg)))?;
        }
    }
    let additions = &summary.additions;
    for m in &additions.metrics {
        write!(out, "{} ({}),{:.2}\r\n", m.header, m.unit, m.value)?;
    }
    out.write_all(additions.csv_appendix.as_bytes())?;
    if let Some(accuracy) = &summary.accuracy {
        // the rows of accuracy_results.csv, as a section of its own
        write!(out, "\r\n")?;
        for line in crate::accuracy::accuracy_csv(accuracy).lines() {
            write!(out, "{line}\r\n")?;
        }
    }
    Ok(())
}

/// The CSV as a string.
pub fn to_csv_string(summary: &Summary) -> String {
    let mut out = Vec::new();
    // writing to a Vec cannot fail
    let _ = write_csv(summary, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}
