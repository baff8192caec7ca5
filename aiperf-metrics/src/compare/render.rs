//! The comparison as text: a console table, Markdown for a pull-request comment, and the
//! JSON of `compare.json`.

use serde::Serialize;

use super::diff::{Change, CompareStat, Comparison, MetricComparison, StatComparison};
use super::gate::GateOutcome;
use crate::export::console::{format_number, TextTable};

/// The console output: one row per metric and statistic, the notes on how significance
/// was decided, then the regression checks (if any).
pub fn console(comparison: &Comparison, gates: &[GateOutcome]) -> String {
    let mut table = TextTable::new(
        "NVIDIA AIPerf | Compare (candidate vs baseline)",
        &[
            "Metric",
            "Stat",
            "Baseline",
            "Candidate",
            "Δ",
            "Δ %",
            "Test",
            "Verdict",
        ],
    )
    .left_align(0)
    .left_align(1)
    .left_align(6)
    .left_align(7);
    for metric in &comparison.metrics {
        for (i, stat) in metric.stats.iter().enumerate() {
            let label = if i == 0 {
                metric_label(metric)
            } else {
                Vec::new()
            };
            let cells = [stat.stat.as_str().to_owned()]
                .into_iter()
                .chain(stat_cells(metric, stat))
                .map(|cell| vec![cell]);
            table.row(std::iter::once(label).chain(cells).collect());
        }
    }
    let mut out = table.render();
    for note in notes(comparison) {
        out.push_str(&note);
        out.push('\n');
    }
    if !gates.is_empty() {
        let mut checks = TextTable::new(
            "Regression checks",
            &["Gate", "Worse by", "Significant", "Result"],
        )
        .left_align(0)
        .left_align(3);
        for outcome in gates {
            checks.row(gate_cells(outcome).map(|cell| vec![cell]).to_vec());
        }
        out.push_str(&checks.render());
        out.push_str(&gate_verdict(gates));
        out.push('\n');
    }
    out
}

/// Markdown for a pull-request comment: a headline, the table, notes and checks.
pub fn markdown(comparison: &Comparison, gates: &[GateOutcome]) -> String {
    let mut out = String::from("## aiperf compare\n\n");
    out.push_str(&format!(
        "Baseline: `{}` · Candidate: `{}`\n\n",
        comparison.baseline.display(),
        comparison.candidate.display()
    ));
    out.push_str(&headline(comparison));
    out.push_str("\n\n| Metric | Stat | Baseline | Candidate | Δ | Δ % | Test | Verdict |\n");
    out.push_str("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n");
    for metric in &comparison.metrics {
        for (i, stat) in metric.stats.iter().enumerate() {
            let label = if i == 0 {
                markdown_label(metric)
            } else {
                String::new()
            };
            let mut cells = vec![label, stat.stat.as_str().to_owned()];
            cells.extend(stat_cells(metric, stat));
            if stat.significant == Some(true) && stat.change == Some(Change::Worse) {
                if let Some(verdict) = cells.last_mut() {
                    *verdict = format!("**{verdict}**");
                }
            }
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    out.push('\n');
    for note in notes(comparison) {
        out.push_str(&format!("{note}\n"));
    }
    if !gates.is_empty() {
        out.push_str("\n### Regression checks\n\n| Gate | Worse by | Significant | Result |\n");
        out.push_str("| --- | ---: | --- | --- |\n");
        for outcome in gates {
            let [gate, worse, significant, result] = gate_cells(outcome);
            out.push_str(&format!(
                "| `{gate}` | {worse} | {significant} | {result} |\n"
            ));
        }
        out.push_str(&format!("\n{}\n", gate_verdict(gates)));
    }
    out
}

/// `compare.json`: the comparison and the regression checks, pretty-printed.
pub fn json(comparison: &Comparison, gates: &[GateOutcome]) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Report<'a> {
        #[serde(flatten)]
        comparison: &'a Comparison,
        regression_checks: &'a [GateOutcome],
    }
    serde_json::to_string_pretty(&Report {
        comparison,
        regression_checks: gates,
    })
}

/// Header, unit and (when tested) the Mann–Whitney p-value of the whole distribution.
fn metric_label(metric: &MetricComparison) -> Vec<String> {
    let mut lines = vec![metric.header.clone()];
    if !metric.unit.is_empty() {
        lines.push(format!("({})", metric.unit));
    }
    if let Some(mw) = metric.mann_whitney {
        lines.push(format!("Mann-Whitney p {}", p_value(mw.p_value)));
    }
    lines
}

/// `Header (unit)<br>Mann-Whitney p …`: one table cell.
fn markdown_label(metric: &MetricComparison) -> String {
    let mut lines = metric_label(metric);
    if lines.len() > 1 && !metric.unit.is_empty() {
        let unit = lines.remove(1);
        lines[0] = format!("{} {unit}", lines[0]);
    }
    lines.join("<br>")
}

/// Baseline, candidate, Δ, Δ %, test, verdict.
fn stat_cells(metric: &MetricComparison, stat: &StatComparison) -> [String; 6] {
    let test = match (stat.stat, metric.welch, stat.interval) {
        (CompareStat::Avg, Some(welch), _) => format!("t-test p {}", p_value(welch.p_value)),
        (_, _, Some(ci)) => format!("CI [{}, {}]", signed(ci.low), signed(ci.high)),
        (CompareStat::Avg, None, _) if metric.samples.is_some() => "no spread".to_owned(),
        (_, _, None) if metric.mann_whitney.is_some() => "Mann-Whitney (few samples)".to_owned(),
        _ => "—".to_owned(),
    };
    [
        format_number(Some(stat.baseline)),
        format_number(Some(stat.candidate)),
        signed(stat.difference),
        stat.percent
            .map_or_else(|| "—".to_owned(), |p| format!("{} %", signed(p))),
        test,
        verdict(stat),
    ]
}

/// `worse`, `worse (n.s.)` (not significant), `worse (untested)` (no per-request data),
/// `same`, or for metrics without a direction `changed` / `n.s.` / `—`.
fn verdict(stat: &StatComparison) -> String {
    match (stat.change, stat.significant) {
        (Some(Change::Same), _) => "same".into(),
        (Some(change), significant) => {
            let word = if change == Change::Worse {
                "worse"
            } else {
                "better"
            };
            match significant {
                Some(true) => word.into(),
                Some(false) => format!("{word} (n.s.)"),
                None => format!("{word} (untested)"),
            }
        }
        (None, Some(true)) => "changed".into(),
        (None, Some(false)) => "n.s.".into(),
        (None, None) => "—".into(),
    }
}

fn headline(comparison: &Comparison) -> String {
    let count = |change: Change| {
        comparison
            .metrics
            .iter()
            .flat_map(|m| &m.stats)
            .filter(|s| s.change == Some(change) && s.significant == Some(true))
            .count()
    };
    if comparison.per_request_data {
        format!(
            "**{} statistic(s) significantly worse, {} significantly better** (α = {}) \
             across {} metrics.",
            count(Change::Worse),
            count(Change::Better),
            comparison.alpha,
            comparison.metrics.len()
        )
    } else {
        format!(
            "{} metrics compared on their summaries only (no significance tests).",
            comparison.metrics.len()
        )
    }
}

fn notes(comparison: &Comparison) -> Vec<String> {
    let level = (1.0 - comparison.alpha) * 100.0;
    let mut notes = vec![format!(
        "Significance at α = {}: avg by Welch's t-test, p50/p90/p99 by a {level} % bootstrap \
         confidence interval of the difference ({} resamples, seed {}); Mann-Whitney U tests \
         the whole distribution. n.s. = not significant. A bootstrap CI needs {} samples beyond \
         the percentile in each run (p99: 500); with fewer, Mann-Whitney decides.",
        comparison.alpha,
        comparison.resamples,
        comparison.seed,
        super::MIN_TAIL_SAMPLES
    )];
    let untested = comparison.metrics.iter().any(|m| m.samples.is_none());
    if comparison.per_request_data && untested {
        notes.push(
            "Untested: run-level metrics (one value per run) and inter_chunk_latency (its \
             values within a request are not independent samples) are compared on their \
             summaries only."
                .to_owned(),
        );
    }
    let lists = [
        ("Only in the baseline", &comparison.only_in_baseline),
        ("Only in the candidate", &comparison.only_in_candidate),
        ("Not compared, units differ", &comparison.unit_mismatches),
    ];
    for (label, tags) in lists {
        if !tags.is_empty() {
            notes.push(format!("{label}: {}.", tags.join(", ")));
        }
    }
    if !comparison.per_request_data {
        notes.push(format!(
            "No per-request records ({}) in both runs: significance is untested, and \
             --fail-on-regression decides on the percentage alone.",
            crate::artifacts::RECORDS_FILE
        ));
    }
    notes
}

fn gate_cells(outcome: &GateOutcome) -> [String; 4] {
    let worse = outcome
        .worse_by_percent
        .map_or_else(|| "—".to_owned(), |p| format!("{} %", signed(p)));
    let significant = match outcome.significant {
        Some(true) => "yes",
        Some(false) => "no",
        None => "untested (percentage alone decides)",
    };
    let result = if outcome.missing() {
        "NOT CHECKED (metric or statistic missing)"
    } else if outcome.regressed {
        "REGRESSED"
    } else {
        "ok"
    };
    [
        outcome.gate.to_string(),
        worse,
        significant.to_owned(),
        result.to_owned(),
    ]
}

fn gate_verdict(gates: &[GateOutcome]) -> String {
    let regressed = gates.iter().filter(|g| g.regressed).count();
    let missing = gates.iter().filter(|g| g.missing()).count();
    match (regressed, missing) {
        (0, 0) => "No regression beyond the limits.".to_owned(),
        (0, n) => format!("{n} regression check(s) could not be made."),
        (n, _) => format!("{n} regression check(s) failed."),
    }
}

/// `+1,234.50`, `-0.25`, `0.00`.
fn signed(v: f64) -> String {
    let text = format_number(Some(v));
    if v > 0.0 && v.is_finite() {
        format!("+{text}")
    } else {
        text
    }
}

fn p_value(p: f64) -> String {
    if p < 1e-4 {
        "< 0.0001".to_owned()
    } else {
        format!("= {p:.4}")
    }
}
