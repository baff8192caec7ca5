//! `aiperf analyze-trace`: prefix-cache statistics of a mooncake-style trace, printed as
//! the Python AIPerf's "Trace Statistics" table and, with `--output-file`, written as its
//! JSON report.

use std::path::Path;

use anyhow::Context;

use aiperf_datasets::{analyze_trace_file, AnalysisStats, DistributionStats};

use crate::args::AnalyzeTraceArgs;

/// Runs the subcommand: analyse, print, and write the report when asked.
pub(crate) fn run(args: &AnalyzeTraceArgs) -> anyhow::Result<()> {
    let stats = analyze_trace_file(args.input_file()?, args.block_size)?;
    print!("{}", render_report(&stats));
    if let Some(output) = &args.output_file {
        write_report(&stats, output)?;
        println!("Analysis report saved to {}", output.display());
    }
    Ok(())
}

/// Writes `stats` as pretty JSON (two-space indent, like the Python tool), creating
/// missing parent folders.
fn write_report(stats: &AnalysisStats, output: &Path) -> anyhow::Result<()> {
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create folder {}", parent.display()))?;
    }
    let json = serde_json::to_string_pretty(stats)?;
    std::fs::write(output, json)
        .with_context(|| format!("cannot write the report to {}", output.display()))
}

/// The console text: summary lines, then the statistics table, then a blank line.
pub(crate) fn render_report(stats: &AnalysisStats) -> String {
    let mut out = String::new();
    out.push_str("Trace Analysis Report\n");
    let summary = [
        ("Total requests:", stats.total_requests),
        ("Unique prefixes:", stats.unique_prefixes),
        ("Prefix groups:", stats.num_prefix_groups),
    ];
    for (label, value) in summary {
        out.push_str(&format!("{label:<18}{}\n", thousands(&value.to_string())));
    }
    out.push('\n');
    let rows = [
        ("Input Length", stats.isl_stats),
        ("Context Length", stats.context_length_stats),
        ("Unique Prompt Length", stats.unique_prompt_length_stats),
        ("Output Length", stats.osl_stats),
        ("Theoretical Hit Rates", stats.hit_rate_stats),
    ];
    out.push_str(&render_table("Trace Statistics", &rows));
    out.push('\n');
    out
}

const HEADERS: [&str; 8] = [
    "Metric", "Mean", "Std Dev", "Min", "P25", "Median", "P75", "Max",
];

/// A table drawn like Rich's default box (heavy head, right-justified cells, one space of
/// padding), titled and centred like Rich's table title.
fn render_table(title: &str, rows: &[(&str, Option<DistributionStats>)]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, stats)| {
            let mut row = vec![(*name).to_owned()];
            match stats {
                Some(s) => row.extend(
                    [s.mean, s.std_dev, s.min, s.p25, s.median, s.p75, s.max]
                        .iter()
                        .map(|v| two_decimals(*v)),
                ),
                None => row.extend(std::iter::repeat_n("N/A".to_owned(), 7)),
            }
            row
        })
        .collect();
    let widths: Vec<usize> = (0..HEADERS.len())
        .map(|column| {
            cells
                .iter()
                .map(|row| row[column].chars().count())
                .chain([HEADERS[column].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let total_width = widths.iter().map(|w| w + 3).sum::<usize>() + 1;

    let rule = |left: &str, middle: &str, right: &str, fill: &str| {
        let parts: Vec<String> = widths.iter().map(|w| fill.repeat(w + 2)).collect();
        format!("{left}{}{right}\n", parts.join(middle))
    };
    let line = |bar: &str, row: &[String]| {
        let parts: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!(" {cell:>w$} "))
            .collect();
        format!("{bar}{}{bar}\n", parts.join(bar))
    };

    let mut out = String::new();
    let title_width = title.chars().count();
    let left = total_width.saturating_sub(title_width) / 2;
    let right = total_width.saturating_sub(title_width + left);
    out.push_str(&format!(
        "{}{title}{}\n",
        " ".repeat(left),
        " ".repeat(right)
    ));
    out.push_str(&rule("┏", "┳", "┓", "━"));
    let headers: Vec<String> = HEADERS.iter().map(|h| (*h).to_owned()).collect();
    out.push_str(&line("┃", &headers));
    out.push_str(&rule("┡", "╇", "┩", "━"));
    for row in &cells {
        out.push_str(&line("│", row));
    }
    out.push_str(&rule("└", "┴", "┘", "─"));
    out
}

/// Python's `f"{value:,.2f}"`.
fn two_decimals(value: f64) -> String {
    let text = format!("{value:.2}");
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if fraction.is_empty() {
        format!("{sign}{}", thousands(whole))
    } else {
        format!("{sign}{}.{fraction}", thousands(whole))
    }
}

/// Inserts `,` every three digits from the right of a string of digits.
fn thousands(digits: &str) -> String {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits.to_owned(); // inf, NaN
    }
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_number_format() {
        assert_eq!(two_decimals(15325.476584022039), "15,325.48");
        assert_eq!(two_decimals(191378.0), "191,378.00");
        assert_eq!(two_decimals(0.9666), "0.97");
        assert_eq!(two_decimals(-1234567.0), "-1,234,567.00");
        assert_eq!(two_decimals(999.999), "1,000.00");
        assert_eq!(thousands("43924"), "43,924");
        assert_eq!(thousands("408"), "408");
    }
}
