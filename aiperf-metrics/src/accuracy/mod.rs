//! Accuracy mode: grading each reply against its question's answer, after the request,
//! on the sink's processing task, and the per-task and overall accuracy of a run.
//!
//! A [`MetricsSink`](crate::MetricsSink) given an [`AnswerSheet`]
//! ([`MetricsSink::grade_answers`](crate::MetricsSink::grade_answers)) grades every
//! profiling record whose conversation the sheet knows: the grade goes into the record's
//! `profile_export.jsonl` line and `accuracy_export.jsonl`, and the summary gets an
//! [`AccuracySummary`].

use std::collections::{BTreeMap, HashMap};

use aiperf_core::config::AccuracyGrader;
use serde::{Deserialize, Serialize};

mod choice;
mod gsm8k;
mod math;
mod report;

pub use report::{
    accuracy_csv, accuracy_json, render_accuracy_console, AccuracyJsonlWriter, ACCURACY_CSV_FILE,
    ACCURACY_JSONL_FILE,
};

/// How one reply was graded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grade {
    /// The reply gave the expected answer.
    pub correct: bool,
    /// The reply did not use the answer format the prompt asked for, and a fallback
    /// extraction was used (a correct unparsed reply still counts as correct).
    pub unparsed: bool,
    /// The answer read from the reply.
    pub extracted: String,
    /// The expected answer, as compared.
    pub expected: String,
    /// Why the grader decided as it did (in `accuracy_export.jsonl`, not in
    /// `profile_export.jsonl`).
    #[serde(skip)]
    pub explanation: String,
}

/// A graded reply and the task of its question: the `accuracy` object of a
/// `profile_export.jsonl` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskGrade {
    /// The question's task.
    pub task: String,
    /// The grade.
    #[serde(flatten)]
    pub grade: Grade,
}

/// Grades `reply` against `expected` with `grader`.
///
/// `code_execution` never runs model code: configuration validation refuses it
/// ([`aiperf_core::config::CODE_EXECUTION_REFUSED`]), and here it grades nothing correct.
pub fn grade(grader: AccuracyGrader, reply: &str, expected: &str) -> Grade {
    match grader {
        AccuracyGrader::ExactMatch => exact_match(reply, expected),
        AccuracyGrader::MultipleChoice => choice::multiple_choice(reply, expected),
        AccuracyGrader::MmluPro => choice::mmlu_pro(reply, expected),
        AccuracyGrader::LightevalGpqa => choice::gpqa(reply, expected),
        AccuracyGrader::Math | AccuracyGrader::LightevalExpr => math::grade(reply, expected),
        // MATH-500's gold is a whole solution: its last boxed expression is the answer.
        AccuracyGrader::LightevalLatex => {
            math::grade(reply, math::last_boxed(expected).unwrap_or(expected))
        }
        AccuracyGrader::LightevalGsm8k => gsm8k::grade(reply, expected),
        AccuracyGrader::CodeExecution => Grade {
            correct: false,
            unparsed: true,
            extracted: String::new(),
            expected: String::new(),
            explanation: aiperf_core::config::CODE_EXECUTION_REFUSED.to_owned(),
        },
    }
}

/// `exact_match` (DeepEval's `exact_match_score`): the stripped reply equals the
/// stripped answer, case and all; an empty reply is unparsed.
fn exact_match(reply: &str, expected: &str) -> Grade {
    let (pred, gold) = (reply.trim(), expected.trim());
    let correct = !pred.is_empty() && pred == gold;
    Grade {
        correct,
        unparsed: pred.is_empty() && !gold.is_empty(),
        extracted: pred.to_owned(),
        expected: gold.to_owned(),
        explanation: format!("strict equality of '{pred}' and '{gold}': match={correct}"),
    }
}

/// What one question expects: its task (subject, category) and answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerKey {
    /// The task the question belongs to, e.g. `abstract_algebra`.
    pub task: String,
    /// The expected answer, in the form the grader compares.
    pub answer: String,
}

/// The answers of a run's questions, by conversation (session) id, and the grader that
/// scores the replies.
#[derive(Debug, Clone)]
pub struct AnswerSheet {
    /// How replies are graded.
    pub grader: AccuracyGrader,
    /// Log every grade (`--accuracy-verbose`).
    pub verbose: bool,
    /// Answer keys by the session id of their conversation.
    pub keys: HashMap<String, AnswerKey>,
}

/// Correct, unparsed and total counts of one task or of the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    total: u64,
    correct: u64,
    unparsed: u64,
}

impl Counts {
    fn add(&mut self, grade: &Grade) {
        self.total += 1;
        self.correct += u64::from(grade.correct);
        self.unparsed += u64::from(grade.unparsed);
    }
}

/// The grades of a run as they come in.
#[derive(Debug, Default)]
pub(crate) struct AccuracyTally {
    overall: Counts,
    tasks: BTreeMap<String, Counts>,
}

impl AccuracyTally {
    pub(crate) fn add(&mut self, task: &str, grade: &Grade) {
        self.overall.add(grade);
        self.tasks.entry(task.to_owned()).or_default().add(grade);
    }

    pub(crate) fn summarize(&self, grader: AccuracyGrader) -> AccuracySummary {
        AccuracySummary {
            grader,
            overall: TaskAccuracy::of(self.overall),
            tasks: self
                .tasks
                .iter()
                .map(|(task, counts)| (task.clone(), TaskAccuracy::of(*counts)))
                .collect(),
        }
    }
}

/// The accuracy of a run: overall and per task, each with a 95 % Wilson score interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccuracySummary {
    /// The grader that scored the replies.
    pub grader: AccuracyGrader,
    /// Every graded reply.
    pub overall: TaskAccuracy,
    /// By task, in name order.
    pub tasks: BTreeMap<String, TaskAccuracy>,
}

/// Accuracy over some graded replies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TaskAccuracy {
    /// Replies graded.
    pub total: u64,
    /// Replies graded correct.
    pub correct: u64,
    /// Replies that needed a fallback extraction.
    pub unparsed: u64,
    /// `correct / total` (0 when nothing was graded).
    pub accuracy: f64,
    /// Lower bound of the 95 % Wilson score interval of the accuracy.
    pub ci95_low: f64,
    /// Upper bound of the 95 % Wilson score interval of the accuracy.
    pub ci95_high: f64,
}

/// The two-sided 95 % normal quantile.
const Z95: f64 = 1.959_963_984_540_054;

impl TaskAccuracy {
    fn of(c: Counts) -> Self {
        let (low, high) = wilson(c.correct, c.total);
        Self {
            total: c.total,
            correct: c.correct,
            unparsed: c.unparsed,
            accuracy: if c.total == 0 {
                0.0
            } else {
                c.correct as f64 / c.total as f64
            },
            ci95_low: low,
            ci95_high: high,
        }
    }
}

/// The Wilson score interval of `k` successes in `n` trials at 95 %: unlike the normal
/// approximation it stays inside [0, 1] and is not empty at 0 or n successes, which
/// matters for the small per-task counts of a benchmark.
fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_match_is_strict() {
        assert!(grade(AccuracyGrader::ExactMatch, " A \n", "A").correct);
        assert!(!grade(AccuracyGrader::ExactMatch, "a", "A").correct);
        let g = grade(AccuracyGrader::ExactMatch, "  ", "A");
        assert_eq!((g.correct, g.unparsed), (false, true));
    }

    #[test]
    fn math_500_takes_the_boxed_answer_of_the_gold_solution() {
        let gold = "We get $x=\\frac{1}{3}$, so the answer is $\\boxed{\\frac13}$.";
        assert!(grade(AccuracyGrader::LightevalLatex, "\\boxed{1/3}", gold).correct);
        assert!(grade(AccuracyGrader::LightevalExpr, "\\boxed{204}", "204").correct);
    }

    #[test]
    fn the_wilson_interval_matches_its_textbook_values() {
        // 7 of 10: 0.3968 .. 0.8922 (Wilson 1927; Newcombe 1998, table I)
        let (low, high) = wilson(7, 10);
        assert_eq!(
            (format!("{low:.4}"), format!("{high:.4}")),
            ("0.3968".into(), "0.8922".into())
        );
        let (low, high) = wilson(0, 10);
        assert_eq!(format!("{low:.4}"), "0.0000");
        assert_eq!(format!("{high:.4}"), "0.2775");
        assert_eq!(wilson(0, 0), (0.0, 0.0));
    }

    #[test]
    fn the_tally_counts_per_task_and_overall() {
        let mut tally = AccuracyTally::default();
        let right = grade(AccuracyGrader::MultipleChoice, "B", " B");
        let wrong = grade(AccuracyGrader::MultipleChoice, "maybe C", " B");
        tally.add("physics", &right);
        tally.add("physics", &wrong);
        tally.add("anatomy", &right);
        let s = tally.summarize(AccuracyGrader::MultipleChoice);
        assert_eq!(
            (s.overall.total, s.overall.correct, s.overall.unparsed),
            (3, 2, 1)
        );
        assert_eq!(s.tasks.keys().collect::<Vec<_>>(), ["anatomy", "physics"]);
        assert_eq!(s.tasks["physics"].accuracy, 0.5);
    }
}
