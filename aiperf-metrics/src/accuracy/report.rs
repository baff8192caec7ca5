//! The accuracy artifacts, named as the Python AIPerf 0.13 names them:
//! `accuracy_results.csv` (per task and overall), `accuracy_export.jsonl` (one graded
//! reply per line), the console table, and the `accuracy` section of
//! `profile_export_aiperf.json`.

use std::path::Path;

use aiperf_core::RequestRecord;
use serde::Serialize;

use super::{AccuracySummary, AnswerKey, Grade, TaskAccuracy};
use crate::export::console::TextTable;
use crate::export::jsonl::FLUSH_EVERY;
use crate::export::line_file::LineFile;
use crate::MetricsError;

/// The per-task summary file, in the artifact directory.
pub const ACCURACY_CSV_FILE: &str = "accuracy_results.csv";
/// The per-reply file, in the artifact directory (`<prefix>_accuracy.jsonl` when the
/// summary files have a custom prefix).
pub const ACCURACY_JSONL_FILE: &str = "accuracy_export.jsonl";

/// `accuracy_results.csv`: 0.13's columns (`task,correct,total,unparsed,accuracy`, the
/// `OVERALL` row first, accuracy to four decimals) followed by the bounds of the 95 %
/// Wilson interval.
pub fn accuracy_csv(summary: &AccuracySummary) -> String {
    let mut out = String::from("task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n");
    let rows = std::iter::once(("OVERALL", &summary.overall))
        .chain(summary.tasks.iter().map(|(task, a)| (task.as_str(), a)));
    for (task, a) in rows {
        out.push_str(&format!(
            "{},{},{},{},{:.4},{:.4},{:.4}\n",
            csv_field(task),
            a.correct,
            a.total,
            a.unparsed,
            a.accuracy,
            a.ci95_low,
            a.ci95_high
        ));
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The `accuracy` section of `profile_export_aiperf.json`.
pub fn accuracy_json(summary: &AccuracySummary) -> serde_json::Value {
    serde_json::json!({
        "grader": summary.grader.as_str(),
        "confidence_interval": "wilson_95",
        "overall": summary.overall,
        "tasks": summary.tasks,
    })
}

/// "Accuracy Benchmark Results": a row per task, then OVERALL, accuracy in percent with
/// its 95 % interval; with a warning when no reply could be parsed (almost always a
/// server or endpoint problem rather than the model's accuracy).
pub fn render_accuracy_console(summary: &AccuracySummary) -> String {
    let mut table = TextTable::new(
        format!("Accuracy Benchmark Results ({})", summary.grader),
        &["Task", "Correct", "Total", "Unparsed", "Accuracy", "95% CI"],
    )
    .left_align(0);
    let cells = |task: &str, a: &TaskAccuracy| {
        vec![
            vec![task.to_owned()],
            vec![a.correct.to_string()],
            vec![a.total.to_string()],
            vec![a.unparsed.to_string()],
            vec![format!("{:.2}%", a.accuracy * 100.0)],
            vec![format!(
                "{:.2}-{:.2}%",
                a.ci95_low * 100.0,
                a.ci95_high * 100.0
            )],
        ]
    };
    for (task, a) in &summary.tasks {
        table.row(cells(task, a));
    }
    table.row(cells("OVERALL", &summary.overall));
    let mut out = table.render();
    let o = &summary.overall;
    if o.total > 0 && o.unparsed >= o.total {
        out.push_str(
            "Warning: every reply was unparsed: the grader found no answer in any of them. \
             Check that the server returns real completions for this benchmark before \
             trusting these numbers.\n",
        );
    }
    out
}

/// One line of `accuracy_export.jsonl` (0.13's field names).
#[derive(Serialize)]
struct GradedLine<'a> {
    session_num: u64,
    conversation_id: &'a str,
    x_request_id: &'a str,
    benchmark_phase: &'static str,
    timestamp_ns: u64,
    task: &'a str,
    grader_name: &'static str,
    passed: bool,
    unparsed: bool,
    confidence: f64,
    expected: &'a str,
    actual: &'a str,
    explanation: &'a str,
    model_output: &'a str,
    model_thinking: Option<&'a str>,
}

/// Writes `accuracy_export.jsonl`, a line per graded profiling reply.
#[derive(Debug)]
pub struct AccuracyJsonlWriter {
    file: LineFile,
    grader: &'static str,
}

impl AccuracyJsonlWriter {
    /// Creates (or truncates) `path` for replies graded by `grader`.
    pub fn create(
        path: &Path,
        grader: aiperf_core::config::AccuracyGrader,
    ) -> Result<Self, MetricsError> {
        Ok(Self {
            file: LineFile::create(path, FLUSH_EVERY)?,
            grader: grader.as_str(),
        })
    }

    /// Appends the grade of `record`'s reply (`output` and `thinking` are its text and
    /// reasoning).
    pub(crate) fn write(
        &mut self,
        record: &RequestRecord,
        key: &AnswerKey,
        grade: &Grade,
        output: &str,
        thinking: &str,
    ) -> Result<(), MetricsError> {
        let line = GradedLine {
            session_num: record.credit.id,
            conversation_id: &record.credit.conversation.session_id,
            x_request_id: &record.credit.request_id,
            benchmark_phase: "profiling",
            timestamp_ns: record.clock.wall_of_perf(record.end_ns),
            task: &key.task,
            grader_name: self.grader,
            passed: grade.correct,
            unparsed: grade.unparsed,
            confidence: if grade.correct { 1.0 } else { 0.0 },
            expected: &grade.expected,
            actual: &grade.extracted,
            explanation: &grade.explanation,
            model_output: output,
            model_thinking: (!thinking.is_empty()).then_some(thinking),
        };
        self.file.append(serde_json::to_string(&line)?.as_bytes())
    }

    /// Flushes and closes the file.
    pub(crate) fn finish(self) -> Result<(), MetricsError> {
        self.file.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use aiperf_core::config::AccuracyGrader;

    use super::*;

    fn summary() -> AccuracySummary {
        let a = |correct, total| TaskAccuracy {
            total,
            correct,
            unparsed: 1,
            accuracy: correct as f64 / total as f64,
            ci95_low: 0.25,
            ci95_high: 0.875,
        };
        AccuracySummary {
            grader: AccuracyGrader::MultipleChoice,
            overall: a(3, 4),
            tasks: BTreeMap::from([("a,b".to_owned(), a(1, 2)), ("c".to_owned(), a(2, 2))]),
        }
    }

    #[test]
    fn the_csv_has_0_13s_columns_then_the_interval() {
        assert_eq!(
            accuracy_csv(&summary()),
            "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n\
             OVERALL,3,4,1,0.7500,0.2500,0.8750\n\
             \"a,b\",1,2,1,0.5000,0.2500,0.8750\n\
             c,2,2,1,1.0000,0.2500,0.8750\n"
        );
    }

    #[test]
    fn the_console_table_ends_with_overall() {
        let text = render_accuracy_console(&summary());
        assert!(text.contains("Accuracy Benchmark Results (multiple_choice)"));
        let overall = text.lines().position(|l| l.contains("OVERALL")).unwrap();
        let task = text.lines().position(|l| l.contains("a,b")).unwrap();
        assert!(task < overall);
        assert!(text.contains("75.00%") && text.contains("25.00-87.50%"));
        assert!(!text.contains("Warning"));
    }
}
