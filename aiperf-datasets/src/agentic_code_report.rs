//! The reports `aiperf synthesize agentic-code` writes beside its trace: `quality.json`
//! (0.13's quality report: each synthesized distribution against the config's target,
//! and how sessions ended) and `report.html`, the same content as a page that needs
//! nothing but itself (tables and inline SVG histograms; 0.13's dashboard loads Plotly
//! from a CDN, so it is blank offline).
//!
//! ```
//! use aiperf_datasets::agentic_code::{synthesize_sessions, AgenticCodeConfig};
//! use aiperf_datasets::agentic_code_report::{quality_report, report_html};
//!
//! let config = AgenticCodeConfig::default();
//! let sessions = synthesize_sessions(&config, 20, 42)?;
//! let quality = quality_report(&sessions, &config);
//! assert_eq!(quality["session_end_stats"]["total_sessions"], 20);
//! assert!(report_html(&quality, &sessions, "default").starts_with("<!DOCTYPE html>"));
//! # Ok::<(), aiperf_datasets::agentic_code::AgenticCodeError>(())
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::agentic_code::{AgenticCodeConfig, AgenticCodeError, AgenticSession, SessionEnd};

/// The metrics of the report, in 0.13's order, with their titles.
const METRICS: [(&str, &str); 5] = [
    ("initial_context", "Initial context (tokens)"),
    ("generation_length", "Generation length (tokens)"),
    ("new_tokens_per_turn", "New tokens per turn"),
    ("inter_turn_delay_ms", "Inter-turn delay (ms)"),
    ("turns_per_session", "Turns per session"),
];

/// Bars of a report histogram.
const HISTOGRAM_BARS: usize = 30;

/// 0.13's `quality.json` of `sessions` synthesized from `config`: `config_summary`,
/// `observed_vs_target` (per metric: `target_mean`, `target_median`, `observed`
/// percentiles, `pct_error_mean`, `pct_error_median`), `session_stats` (turns per
/// session) and `session_end_stats`. Statistics are rounded to 2 decimals, as 0.13's.
pub fn quality_report(sessions: &[AgenticSession], config: &AgenticCodeConfig) -> Value {
    let samples = samples(sessions);
    let l1_l15 = (config.cache.layer1_tokens + config.cache.layer1_5_tokens) as f64;
    let targets: [(Option<f64>, Option<f64>); 5] = [
        (
            Some(l1_l15 + config.cache.layer2.mean),
            Some(l1_l15 + config.cache.layer2.median),
        ),
        (
            Some(config.generation_length.mean),
            Some(config.generation_length.median),
        ),
        (
            Some(config.new_tokens_per_turn.mean),
            Some(config.new_tokens_per_turn.median),
        ),
        (None, None),
        (None, None),
    ];
    let mut observed_vs_target = Map::new();
    for (((name, _), values), (target_mean, target_median)) in
        METRICS.iter().zip(&samples).zip(targets)
    {
        if values.is_empty() {
            continue;
        }
        let observed = percentile_stats(values);
        let error = |target: Option<f64>, key: &str| {
            target.map(|t| round2(pct_error(t, observed[key].as_f64().unwrap_or(0.0))))
        };
        observed_vs_target.insert(
            (*name).to_owned(),
            json!({
                "target_mean": target_mean,
                "target_median": target_median,
                "pct_error_mean": error(target_mean, "mean"),
                "pct_error_median": error(target_median, "median"),
                "observed": observed,
            }),
        );
    }
    let total = sessions.len();
    let ended = |why: SessionEnd| sessions.iter().filter(|s| s.end == why).count();
    let (retires, resets) = (ended(SessionEnd::ContextLimit), ended(SessionEnd::Reset));
    let fraction = |n: usize| (n as f64 / total.max(1) as f64 * 1e4).round() / 1e4;
    let utilization: Vec<f64> = sessions
        .iter()
        .filter_map(|s| s.turns.last())
        .map(|t| t.input_length as f64 / config.max_prompt_tokens as f64)
        .collect();
    json!({
        "config_summary": config_summary(config),
        "observed_vs_target": observed_vs_target,
        "session_stats": percentile_stats(&samples[4]),
        "session_end_stats": {
            "total_sessions": total,
            "forced_retires": retires,
            "probabilistic_resets": resets,
            "target_turn_completions": 0,
            "restart_splits": 0,
            "retire_fraction": fraction(retires),
            "reset_fraction": fraction(resets),
            "target_turn_fraction": 0.0,
            "restart_split_fraction": 0.0,
            "final_context_utilization": percentile_stats(&utilization),
        },
    })
}

/// The observed values of each of [`METRICS`], in its order.
fn samples(sessions: &[AgenticSession]) -> [Vec<f64>; 5] {
    let mut samples: [Vec<f64>; 5] = Default::default();
    for session in sessions {
        samples[4].push(session.turns.len() as f64);
        for (index, turn) in session.turns.iter().enumerate() {
            if index == 0 {
                samples[0].push(turn.input_length as f64);
            } else {
                samples[2].push(turn.new_tokens as f64);
                samples[3].push(turn.delay_ms);
            }
            samples[1].push(f64::from(turn.output_length));
        }
    }
    samples
}

/// The config's key parameters, flat, under 0.13's names.
fn config_summary(config: &AgenticCodeConfig) -> Value {
    let cache = &config.cache;
    let l1_l15 = (cache.layer1_tokens + cache.layer1_5_tokens) as f64;
    let delay = &config.inter_turn_delay;
    let mut summary = json!({
        "initial_context_mean": l1_l15 + cache.layer2.mean,
        "initial_context_median": l1_l15 + cache.layer2.median,
        "layer1_tokens": cache.layer1_tokens,
        "layer1_5_tokens": cache.layer1_5_tokens,
        "layer2_mean": cache.layer2.mean,
        "layer2_median": cache.layer2.median,
        "num_groups": cache.layer1_5_groups.num_groups,
        "zipf_alpha": cache.layer1_5_groups.zipf_alpha,
        "new_tokens_per_turn_mean": config.new_tokens_per_turn.mean,
        "new_tokens_per_turn_median": config.new_tokens_per_turn.median,
        "generation_length_mean": config.generation_length.mean,
        "generation_length_median": config.generation_length.median,
        "max_prompt_tokens": config.max_prompt_tokens,
        "block_size": config.block_size,
        "inter_turn_delay_agentic_fraction": delay.agentic_fraction,
        "inter_turn_delay_agentic_mean_ms": delay.agentic_delay.mean,
        "inter_turn_delay_human_mean_ms": delay.human_delay.mean,
        "turn_mode_enabled": 0,
    });
    if let (Some(reset), Some(fields)) = (&config.reset, summary.as_object_mut()) {
        fields.insert(
            "reset_base_probability".into(),
            reset.base_probability.into(),
        );
        fields.insert("reset_context_scaling".into(), reset.context_scaling.into());
    }
    summary
}

/// Count, mean, population standard deviation and percentiles (linear interpolation,
/// as numpy's) of `values`, rounded to 2 decimals; all zero when there are none.
fn percentile_stats(values: &[f64]) -> Value {
    if values.is_empty() {
        return json!({"count": 0, "mean": 0.0, "std": 0.0, "median": 0.0, "p05": 0.0,
                      "p25": 0.0, "p75": 0.0, "p95": 0.0, "p99": 0.0});
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    let std = (sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    let at = |q: f64| {
        let rank = q / 100.0 * (n - 1.0);
        let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
        round2(sorted[low] + (sorted[high] - sorted[low]) * (rank - rank.floor()))
    };
    json!({
        "count": sorted.len(),
        "mean": round2(mean),
        "std": round2(std),
        "median": at(50.0),
        "p05": at(5.0),
        "p25": at(25.0),
        "p75": at(75.0),
        "p95": at(95.0),
        "p99": at(99.0),
    })
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// How far `observed` is from `target`, in percent of it (0 for a zero target).
fn pct_error(target: f64, observed: f64) -> f64 {
    if target == 0.0 {
        0.0
    } else {
        (observed - target).abs() / target * 100.0
    }
}

/// `report.html`: the quality report `quality` of `sessions` (config `config_name`) as
/// one self-contained page: the target-against-observed table, how sessions ended, and
/// a histogram of each metric.
pub fn report_html(quality: &Value, sessions: &[AgenticSession], config_name: &str) -> String {
    let mut page = String::new();
    let turns: usize = sessions.iter().map(|s| s.turns.len()).sum();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Agentic code dataset report</title><style>\
         body{{font-family:sans-serif;margin:2em;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0}}\
         th,td{{border:1px solid #ccc;padding:4px 8px;text-align:right}}\
         th:first-child,td:first-child{{text-align:left}}\
         .plots{{display:flex;flex-wrap:wrap;gap:1em}}\
         figure{{margin:0}}figcaption{{font-size:90%}}\
         </style></head><body>\n<h1>Agentic code dataset report</h1>\n\
         <p>Config <b>{}</b>: {} sessions, {turns} turns.</p>\n",
        escape(config_name),
        sessions.len()
    );
    page.push_str(
        "<h2>Target vs observed</h2>\n<table><tr><th>Metric</th><th>Target mean</th>\
         <th>Target median</th><th>Mean</th><th>Median</th><th>p05</th><th>p25</th>\
         <th>p75</th><th>p95</th><th>p99</th><th>Error on mean</th></tr>\n",
    );
    let cell = |v: &Value| match v.as_f64() {
        Some(x) => format!("{x:.2}"),
        None => "-".to_owned(),
    };
    for (name, title) in METRICS {
        let Some(metric) = quality["observed_vs_target"].get(name) else {
            continue;
        };
        let observed = &metric["observed"];
        let _ = write!(page, "<tr><td>{title}</td>");
        for value in [&metric["target_mean"], &metric["target_median"]]
            .into_iter()
            .chain(
                ["mean", "median", "p05", "p25", "p75", "p95", "p99"]
                    .iter()
                    .map(|k| &observed[*k]),
            )
        {
            let _ = write!(page, "<td>{}</td>", cell(value));
        }
        let error = match metric["pct_error_mean"].as_f64() {
            Some(e) => format!("{e:.2} %"),
            None => "-".to_owned(),
        };
        let _ = writeln!(page, "<td>{error}</td></tr>");
    }
    page.push_str("</table>\n<h2>How sessions ended</h2>\n<table>\n");
    let end = &quality["session_end_stats"];
    for (key, title) in [
        ("total_sessions", "Sessions"),
        ("forced_retires", "Context limit reached"),
        ("probabilistic_resets", "Reset"),
    ] {
        let _ = writeln!(page, "<tr><td>{title}</td><td>{}</td></tr>", end[key]);
    }
    let _ = writeln!(
        page,
        "<tr><td>Final context use (median)</td><td>{}</td></tr>\n</table>",
        cell(&end["final_context_utilization"]["median"])
    );
    page.push_str("<h2>Distributions</h2>\n<div class=\"plots\">\n");
    for ((_, title), values) in METRICS.iter().zip(samples(sessions)) {
        if !values.is_empty() {
            page.push_str(&histogram_svg(title, &values));
        }
    }
    page.push_str("</div>\n</body></html>\n");
    page
}

/// A histogram of `values` as an inline SVG figure titled `title`.
fn histogram_svg(title: &str, values: &[f64]) -> String {
    let (width, height) = (360.0, 160.0);
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = (high - low).max(f64::EPSILON);
    let mut counts = [0usize; HISTOGRAM_BARS];
    for value in values {
        let bar = (((value - low) / span) * HISTOGRAM_BARS as f64) as usize;
        counts[bar.min(HISTOGRAM_BARS - 1)] += 1;
    }
    let tallest = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let bar_width = width / HISTOGRAM_BARS as f64;
    let mut svg = format!(
        "<figure><svg width=\"{width}\" \
         height=\"{height}\" role=\"img\">"
    );
    for (bar, count) in counts.iter().enumerate() {
        let h = *count as f64 / tallest * (height - 10.0);
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#76b900\">\
             <title>{count}</title></rect>",
            bar as f64 * bar_width,
            height - h,
            bar_width - 1.0,
        );
    }
    let _ = writeln!(
        svg,
        "</svg><figcaption>{} ({} values, {low:.0} to {high:.0})</figcaption></figure>",
        escape(title),
        values.len()
    );
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes `quality.json` ([`quality_report`]) and `report.html` ([`report_html`]) into
/// `dir`; returns their paths.
pub fn write_reports(
    dir: &Path,
    sessions: &[AgenticSession],
    config: &AgenticCodeConfig,
    config_name: &str,
) -> Result<[PathBuf; 2], AgenticCodeError> {
    let quality = quality_report(sessions, config);
    let quality_path = dir.join("quality.json");
    let text = serde_json::to_string_pretty(&quality).map_err(|e| AgenticCodeError::Config {
        path: quality_path.display().to_string(),
        message: e.to_string(),
    })?;
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|source| AgenticCodeError::Io {
            path: path.to_owned(),
            source,
        })
    };
    write(&quality_path, &text)?;
    let report_path = dir.join("report.html");
    write(&report_path, &report_html(&quality, sessions, config_name))?;
    Ok([quality_path, report_path])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentic_code::{AgenticTurn, Lognormal};

    fn session(end: SessionEnd, turns: &[(u64, u64, u32, f64)]) -> AgenticSession {
        AgenticSession {
            session_id: "s".into(),
            group_id: 0,
            turns: turns
                .iter()
                .map(
                    |&(input_length, new_tokens, output_length, delay_ms)| AgenticTurn {
                        input_length,
                        new_tokens,
                        output_length,
                        delay_ms,
                        hash_ids: Vec::new(),
                    },
                )
                .collect(),
            end,
        }
    }

    fn fixture() -> (Vec<AgenticSession>, AgenticCodeConfig) {
        let mut config = AgenticCodeConfig::default();
        config.cache.layer1_tokens = 500;
        config.cache.layer1_5_tokens = 0;
        config.cache.layer2 = Lognormal::new(1500.0, 1000.0);
        config.generation_length = Lognormal::new(100.0, 80.0);
        config.new_tokens_per_turn = Lognormal::new(200.0, 100.0);
        config.max_prompt_tokens = 5000;
        let sessions = vec![
            session(
                SessionEnd::ContextLimit,
                &[(1000, 1000, 100, 0.0), (1500, 400, 50, 2000.0)],
            ),
            session(SessionEnd::Reset, &[(3000, 3000, 200, 0.0)]),
            session(
                SessionEnd::Reset,
                &[
                    (2000, 2000, 300, 0.0),
                    (2400, 100, 20, 500.0),
                    (2500, 80, 10, 1500.0),
                ],
            ),
        ];
        (sessions, config)
    }

    #[test]
    fn the_quality_report_has_0_13_s_numbers() {
        // Expected values are numpy's (0.13's percentile_stats) on the same samples.
        let (sessions, config) = fixture();
        let quality = quality_report(&sessions, &config);
        let metrics = &quality["observed_vs_target"];
        assert_eq!(
            metrics["initial_context"],
            json!({"target_mean": 2000.0, "target_median": 1500.0, "pct_error_mean": 0.0,
                   "pct_error_median": 33.33,
                   "observed": {"count": 3, "mean": 2000.0, "std": 816.5, "median": 2000.0,
                                "p05": 1100.0, "p25": 1500.0, "p75": 2500.0, "p95": 2900.0,
                                "p99": 2980.0}})
        );
        assert_eq!(
            metrics["generation_length"]["observed"],
            json!({"count": 6, "mean": 113.33, "std": 104.83, "median": 75.0, "p05": 12.5,
                   "p25": 27.5, "p75": 175.0, "p95": 275.0, "p99": 295.0})
        );
        assert_eq!(metrics["generation_length"]["pct_error_mean"], 13.33);
        assert_eq!(
            metrics["new_tokens_per_turn"]["observed"],
            json!({"count": 3, "mean": 193.33, "std": 146.36, "median": 100.0, "p05": 82.0,
                   "p25": 90.0, "p75": 250.0, "p95": 370.0, "p99": 394.0})
        );
        assert_eq!(
            metrics["inter_turn_delay_ms"],
            json!({"target_mean": null, "target_median": null, "pct_error_mean": null,
                   "pct_error_median": null,
                   "observed": {"count": 3, "mean": 1333.33, "std": 623.61, "median": 1500.0,
                                "p05": 600.0, "p25": 1000.0, "p75": 1750.0, "p95": 1950.0,
                                "p99": 1990.0}})
        );
        assert_eq!(
            quality["session_stats"],
            json!({"count": 3, "mean": 2.0, "std": 0.82, "median": 2.0, "p05": 1.1,
                   "p25": 1.5, "p75": 2.5, "p95": 2.9, "p99": 2.98})
        );
        let end = &quality["session_end_stats"];
        assert_eq!(
            (
                &end["forced_retires"],
                &end["probabilistic_resets"],
                &end["retire_fraction"],
                &end["reset_fraction"]
            ),
            (&json!(1), &json!(2), &json!(0.3333), &json!(0.6667))
        );
        assert_eq!(end["final_context_utilization"]["median"], 0.5);
        assert_eq!(quality["config_summary"]["initial_context_mean"], 2000.0);
    }

    #[test]
    fn the_report_page_needs_nothing_but_itself() {
        let (sessions, config) = fixture();
        let quality = quality_report(&sessions, &config);
        let page = report_html(&quality, &sessions, "my <config>");
        for reference in ["http:", "https:", "//", "src=", "href=", "@import", "url("] {
            assert!(!page.contains(reference), "{reference} in the page");
        }
        assert!(page.contains("Config <b>my &lt;config&gt;</b>: 3 sessions, 6 turns."));
        assert!(page.contains(
            "<tr><td>Initial context (tokens)</td><td>2000.00</td><td>1500.00</td>\
             <td>2000.00</td><td>2000.00</td><td>1100.00</td><td>1500.00</td><td>2500.00</td>\
             <td>2900.00</td><td>2980.00</td><td>0.00 %</td></tr>"
        ));
        assert!(page.contains("<tr><td>Context limit reached</td><td>1</td></tr>"));
        assert_eq!(page.matches("<figure><svg").count(), 5);
        assert!(page.ends_with("</html>\n"));
    }
}
