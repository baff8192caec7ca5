//! Writing families back out as canonical text.

use std::fmt::Write as _;

use super::model::MetricFamily;

/// Write families as canonical Prometheus text: for each family `# HELP` (if any),
/// `# TYPE` (always; `untyped` for untyped families), `# UNIT` (if any), then its samples,
/// one per line, labels in their order, values as [`format_value`] writes them and
/// timestamps in integer milliseconds.
///
/// [`parse`](super::parse) gives the same families back when every sample belongs to its
/// family under the parser's rules (for a histogram `x`: `x_bucket` with an `le` label,
/// `x_sum`, `x_count`, `x_created`; see [`MetricType::sample_suffixes`]), family names are
/// distinct, and help texts neither start with a blank nor end with `\r` (the format cannot
/// express those). NaN stays NaN but loses its sign and payload.
///
/// [`MetricType::sample_suffixes`]: super::MetricType::sample_suffixes
///
/// ```
/// use aiperf_telemetry::prometheus::{parse, render};
///
/// let text = "# HELP up Is it up?\n# TYPE up gauge\nup{job=\"a\"} 1\n";
/// assert_eq!(render(&parse(text).expect("valid")), text);
/// ```
pub fn render(families: &[MetricFamily]) -> String {
    let mut out = String::new();
    for f in families {
        if let Some(help) = &f.help {
            let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(help));
        }
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        if let Some(unit) = &f.unit {
            let _ = writeln!(out, "# UNIT {} {}", f.name, unit);
        }
        for s in &f.samples {
            out.push_str(&s.name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(k);
                    out.push_str("=\"");
                    escape_label_value(&mut out, v);
                    out.push('"');
                }
                out.push('}');
            }
            out.push(' ');
            out.push_str(&format_value(s.value));
            if let Some(ts) = s.timestamp_ms {
                let _ = write!(out, " {ts}");
            }
            out.push('\n');
        }
    }
    out
}

/// A sample value as the text format writes it: `NaN`, `+Inf`, `-Inf`, integers without a
/// fraction (`3`), anything else in the shortest form that reads back exactly (`0.25`,
/// `1e-7`).
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v}")
    } else {
        format!("{v:?}")
    }
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label_value(out: &mut String, v: &str) {
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}
