//! The end-of-run console output as plain text, laid out like the Python AIPerf's Rich
//! tables (`profile_export_console.txt`): one table per console group (Effective,
//! Active, Usage, then the main "LLM Metrics" table), columns
//! `Metric | avg | min | max | p99 | p90 | p50 | std`, values `{:,.2f}` or `N/A`; then the
//! error summary table when requests failed, the command line, the benchmark duration,
//! warnings, and one line of ours with the schedule lag.

use std::io::{self, Write};

use crate::catalogue::{ConsoleGroup, MetricId};
use crate::summary::{MetricResult, Summary};

/// Headers longer than this are broken before the unit.
pub const WRAP_HEADER_AT: usize = 30;

/// `1234567.891` → `1,234,567.89`; non-finite or missing → `N/A`.
pub fn format_number(v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return "N/A".into();
    };
    let s = format!("{:.2}", v.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, "00"));
    let mut grouped = String::with_capacity(int.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let negative = v < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0');
    format!("{}{grouped}.{frac}", if negative { "-" } else { "" })
}

/// A text table in Rich's "heavy head" box style, every column right-aligned.
#[derive(Debug, Clone)]
pub struct TextTable {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<Vec<String>>>,
    left_aligned: Vec<bool>,
}

impl TextTable {
    /// A table with a centred `title` and the given column headers.
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Self {
            title: title.into(),
            headers: headers
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            rows: Vec::new(),
            left_aligned: vec![false; headers.len()],
        }
    }

    /// Left-aligns column `index`.
    #[must_use]
    pub fn left_align(mut self, index: usize) -> Self {
        if let Some(slot) = self.left_aligned.get_mut(index) {
            *slot = true;
        }
        self
    }

    /// Adds a row; each cell may hold several lines.
    pub fn row(&mut self, cells: Vec<Vec<String>>) {
        self.rows.push(cells);
    }

    /// Renders the table, lines ending with `\n`.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let len = |s: &str| s.chars().count();
        let widths: Vec<usize> = (0..n)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .flat_map(|cell| cell.iter().map(|l| len(l)))
                    .chain(std::iter::once(len(&self.headers[c])))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let total: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
        let pad = |s: &str, c: usize| {
            let fill = " ".repeat(widths[c].saturating_sub(len(s)));
            if self.left_aligned[c] {
                format!(" {s}{fill} ")
            } else {
                format!(" {fill}{s} ")
            }
        };
        let rule = |l: &str, h: &str, m: &str, r: &str| {
            let parts: Vec<String> = widths.iter().map(|w| h.repeat(w + 2)).collect();
            format!("{l}{}{r}\n", parts.join(m))
        };
        let mut out = String::new();
        let title_len = len(&self.title);
        let left = total.saturating_sub(title_len) / 2;
        let right = total.saturating_sub(title_len + left);
        out.push_str(&format!(
            "{}{}{}\n",
            " ".repeat(left),
            self.title,
            " ".repeat(right)
        ));
        out.push_str(&rule("┏", "━", "┳", "┓"));
        let header: Vec<String> = self
            .headers
            .iter()
            .enumerate()
            .map(|(c, h)| pad(h, c))
            .collect();
        out.push_str(&format!("┃{}┃\n", header.join("┃")));
        out.push_str(&rule("┡", "━", "╇", "┩"));
        for row in &self.rows {
            let height = row.iter().map(Vec::len).max().unwrap_or(1).max(1);
            for line in 0..height {
                let cells: Vec<String> = (0..n)
                    .map(|c| {
                        let text = row
                            .get(c)
                            .and_then(|cell| cell.get(line))
                            .map_or("", String::as_str);
                        pad(text, c)
                    })
                    .collect();
                out.push_str(&format!("│{}│\n", cells.join("│")));
            }
        }
        out.push_str(&rule("└", "─", "┴", "┘"));
        out
    }
}

fn label_lines(m: &MetricResult) -> Vec<String> {
    if m.unit.is_empty() {
        vec![m.header.to_string()]
    } else if m.header.chars().count() > WRAP_HEADER_AT {
        vec![m.header.to_string(), format!("({})", m.unit)]
    } else {
        vec![format!("{} ({})", m.header, m.unit)]
    }
}

/// The metrics table of one console group, or `None` when it has no rows.
pub fn metrics_table(summary: &Summary, group: ConsoleGroup) -> Option<TextTable> {
    let mut rows: Vec<&MetricResult> = summary
        .metrics
        .iter()
        .filter(|m| m.group == group)
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|m| m.order);
    let title = match group {
        ConsoleGroup::Default => format!("NVIDIA AIPerf | {}", summary.title()),
        ConsoleGroup::Effective => format!("NVIDIA AIPerf | {}: Effective", summary.title()),
        ConsoleGroup::Active => format!("NVIDIA AIPerf | {}: Active", summary.title()),
        ConsoleGroup::Usage => format!("NVIDIA AIPerf | {}: Usage", summary.title()),
        ConsoleGroup::HttpTrace => format!("NVIDIA AIPerf | {}: HTTP Trace", summary.title()),
        ConsoleGroup::Hidden => return None,
    };
    let mut table = TextTable::new(
        title,
        &["Metric", "avg", "min", "max", "p99", "p90", "p50", "std"],
    );
    for m in rows {
        let mut cells = vec![label_lines(m)];
        for v in [Some(m.avg), m.min, m.max, m.p99, m.p90, m.p50, m.std] {
            cells.push(vec![format_number(v)]);
        }
        table.row(cells);
    }
    Some(table)
}

/// The error summary table, or `None` on a clean run.
pub fn error_table(summary: &Summary) -> Option<TextTable> {
    if summary.errors.is_empty() {
        return None;
    }
    let mut table = TextTable::new(
        "NVIDIA AIPerf | Error Summary",
        &["Code", "Type", "Message", "Count"],
    )
    .left_align(1)
    .left_align(2);
    for e in &summary.errors {
        let message: String = e
            .error
            .message
            .chars()
            .take(200)
            .collect::<String>()
            .replace(['\n', '\r'], " ");
        table.row(vec![
            vec![e.error.code.map_or_else(|| "N/A".into(), |c| c.to_string())],
            vec![e.error.kind.clone().unwrap_or_else(|| "N/A".into())],
            vec![message],
            vec![e.count.to_string()],
        ]);
    }
    Some(table)
}

/// What happened to requests still in flight when the run ended early.
fn cancelled_line(summary: &Summary) -> String {
    let n = summary.cancelled_in_flight;
    let requests = if n == 1 {
        "request was"
    } else {
        "requests were"
    };
    if summary.grace_period_expired {
        format!(
            "Cancelled In Flight: {n} {requests} still waiting for the server when the grace period after the benchmark duration ended; they are in no metric (a longer --benchmark-grace-period lets them finish)\n"
        )
    } else {
        format!(
            "Cancelled In Flight: {n} {requests} in flight when the run was cancelled; they are in no metric\n"
        )
    }
}

/// The whole console output.
pub fn render_console(summary: &Summary) -> String {
    let mut out = String::new();
    for group in [
        ConsoleGroup::Effective,
        ConsoleGroup::Active,
        ConsoleGroup::Usage,
        ConsoleGroup::Default,
    ] {
        if let Some(t) = metrics_table(summary, group) {
            out.push_str(&t.render());
        }
    }
    if let Some(t) = error_table(summary) {
        out.push_str(&t.render());
    }
    if let Some(accuracy) = &summary.accuracy {
        out.push_str(&crate::accuracy::render_accuracy_console(accuracy));
    }
    if let Some(command) = &summary.cli_command {
        out.push_str(&format!("CLI Command: {command}\n"));
    }
    if let Some(d) = summary.benchmark_duration_secs() {
        out.push_str(&format!(
            "Benchmark Duration: {} sec\n",
            format_number(Some(d)).replace(',', "")
        ));
    }
    if let Some(n) = summary
        .metric(MetricId::UsageDiscrepancyCount.tag())
        .map(|m| m.avg)
        .filter(|n| *n > 0.0)
    {
        out.push_str(&format!(
            "Token Count Discrepancy Warning: {n:.0} requests differ by more than {}% between client and server token counts (consider --use-server-token-count or the matching --tokenizer)\n",
            crate::record_metrics::USAGE_PCT_DIFF_THRESHOLD
        ));
    }
    if let Some(n) = summary
        .metric(MetricId::OslMismatchCount.tag())
        .map(|m| m.avg)
        .filter(|n| *n > 0.0)
    {
        out.push_str(&format!(
            "OSL Mismatch Warning: {n:.0} requests produced an output length far from the requested max tokens (try --extra-inputs ignore_eos:true, --extra-inputs min_tokens:<n>, or --use-server-token-count)\n"
        ));
    }
    if summary.lacks_cache_reporting() {
        out.push_str(crate::CACHE_REPORTING_HINT);
        out.push('\n');
    }
    if summary.cancelled_in_flight > 0 {
        out.push_str(&cancelled_line(summary));
    }
    if summary.connection_retries > 0 {
        out.push_str(&format!(
            "Connection Retries: {} requests were sent again on a fresh connection after the server closed a reused keep-alive connection before answering\n",
            summary.connection_retries
        ));
    }
    if let Some(lag) = &summary.schedule_lag {
        out.push_str(&format!(
            "Schedule Lag: p50 {} ms, p99 {} ms, max {} ms; {} of {} requests sent more than 1 ms late\n",
            format_number(Some(lag.p50_ms)),
            format_number(Some(lag.p99_ms)),
            format_number(Some(lag.max_ms)),
            lag.late_count,
            lag.count
        ));
    }
    out
}

/// Writes [`render_console`] to `out`.
pub fn write_console(summary: &Summary, out: &mut impl Write) -> io::Result<()> {
    out.write_all(render_console(summary).as_bytes())
}
