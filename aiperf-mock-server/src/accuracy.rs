//! Accuracy mode: chat and completions replies that answer benchmark questions right with
//! a configured probability, so a test knows the exact accuracy a client must report.
//!
//! The right answer of a request comes from its `x-mock-answer` header, else from the
//! answer file: the entry whose question text ends last in the prompt (few-shot examples
//! come before the question asked). Whether the reply is right is decided once per
//! `(seed, question)` by [`answers_correctly`]; a wrong reply carries [`wrong_answer`].
//! The reply text is the configured template with `{answer}` replaced.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::MockError;
use crate::faults::derive;
use crate::tokens::fnv1a;

/// Request header carrying the right answer of that request (it wins over the answer file).
pub const ANSWER_HEADER: &str = "x-mock-answer";

/// The placeholder of [`AccuracyConfig::reply_template`].
pub const ANSWER_PLACEHOLDER: &str = "{answer}";

/// Accuracy mode settings ([`crate::MockConfig::accuracy`]).
///
/// ```
/// use aiperf_mock_server::{AccuracyConfig, MockConfig};
/// let cfg = MockConfig {
///     accuracy: Some(AccuracyConfig { correct_probability: 0.5, ..AccuracyConfig::default() }),
///     random_seed: Some(7),
///     ..MockConfig::fast()
/// };
/// assert!(cfg.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AccuracyConfig {
    /// Probability (0–1) that a question is answered right (default 1).
    pub correct_probability: f64,
    /// JSONL file of `{"question": "<text found in the prompt>", "answer": "B"}` lines
    /// (`answer` may be a JSON number).
    pub answers_file: Option<PathBuf>,
    /// The reply text, `{answer}` standing for the answer given (default `{answer}`, a bare
    /// letter or number; e.g. `#### {answer}` for GSM8K, `\boxed{{answer}}` for MATH).
    pub reply_template: String,
}

impl Default for AccuracyConfig {
    fn default() -> Self {
        Self {
            correct_probability: 1.0,
            answers_file: None,
            reply_template: ANSWER_PLACEHOLDER.to_owned(),
        }
    }
}

impl AccuracyConfig {
    pub(crate) fn validate(&self) -> Result<(), MockError> {
        let p = self.correct_probability;
        if !p.is_finite() || !(0.0..=1.0).contains(&p) {
            return Err(MockError::InvalidConfig(format!(
                "--accuracy-probability must be within 0..=1, got {p}"
            )));
        }
        if !self.reply_template.contains(ANSWER_PLACEHOLDER) {
            return Err(MockError::InvalidConfig(format!(
                "--accuracy-reply-template must contain {ANSWER_PLACEHOLDER}, got {:?}",
                self.reply_template
            )));
        }
        Ok(())
    }
}

/// Whether the question `question` is answered right under `seed`: one uniform draw from a
/// hash of `(seed, question text)` is below `probability`. `question` is the answer file's
/// question text, or the whole prompt when the answer came from [`ANSWER_HEADER`].
pub fn answers_correctly(seed: u64, question: &str, probability: f64) -> bool {
    let u = (derive(seed, fnv1a(question.as_bytes()), 0xACC) >> 11) as f64 / (1u64 << 53) as f64;
    u < probability
}

/// A wrong answer for `right`, always different from it: the next letter (within A–D for
/// A–D, else within A–J) for a single letter, the number plus one for a number, else the
/// text "none of these".
pub fn wrong_answer(right: &str) -> String {
    const LETTERS: &str = "ABCDEFGHIJ";
    let right = right.trim();
    if let Some(i) = LETTERS.find(right).filter(|_| right.len() == 1) {
        let span = if i < 4 { 4 } else { LETTERS.len() };
        return LETTERS[(i + 1) % span..][..1].to_owned();
    }
    if let Ok(n) = right.parse::<i64>() {
        return n.saturating_add(1).to_string();
    }
    match right.parse::<f64>() {
        Ok(x) if x.is_finite() => (x + 1.0).to_string(),
        _ => "none of these".to_owned(),
    }
}

/// The reply accuracy mode sends: `template` with `{answer}` replaced by `right` when
/// [`answers_correctly`] says so, else by [`wrong_answer`].
pub fn accuracy_reply(
    seed: u64,
    question: &str,
    right: &str,
    probability: f64,
    template: &str,
) -> String {
    let given = if answers_correctly(seed, question, probability) {
        right.trim().to_owned()
    } else {
        wrong_answer(right)
    };
    template.replace(ANSWER_PLACEHOLDER, &given)
}

/// Accuracy mode as the server runs it: the settings and the loaded answer file.
#[derive(Debug)]
pub(crate) struct AccuracyMode {
    cfg: AccuracyConfig,
    /// `(question, answer)` in file order.
    answers: Vec<(String, String)>,
}

impl AccuracyMode {
    pub(crate) fn load(cfg: &AccuracyConfig) -> Result<Self, MockError> {
        let answers = match &cfg.answers_file {
            Some(path) => read_answers(path)?,
            None => Vec::new(),
        };
        Ok(Self {
            cfg: cfg.clone(),
            answers,
        })
    }

    /// The reply to `prompt`, or `None` when neither the header nor the answer file knows
    /// the question (the reply is then the usual corpus text).
    pub(crate) fn reply(&self, seed: u64, prompt: &str, header: Option<&str>) -> Option<String> {
        let (question, right) = match header.map(str::trim).filter(|h| !h.is_empty()) {
            Some(answer) => (prompt, answer),
            None => self.find(prompt)?,
        };
        let cfg = &self.cfg;
        Some(accuracy_reply(
            seed,
            question,
            right,
            cfg.correct_probability,
            &cfg.reply_template,
        ))
    }

    /// The answer file's question whose text ends last in `prompt` (the longest on a tie).
    fn find(&self, prompt: &str) -> Option<(&str, &str)> {
        self.answers
            .iter()
            .filter_map(|(q, a)| prompt.rfind(q.as_str()).map(|at| (at + q.len(), q, a)))
            .max_by_key(|(end, q, _)| (*end, q.len()))
            .map(|(_, q, a)| (q.as_str(), a.as_str()))
    }
}

fn read_answers(path: &Path) -> Result<Vec<(String, String)>, MockError> {
    let error = |line: usize, message: String| MockError::AnswerFile {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|source| MockError::AnswerFileRead {
        path: path.to_path_buf(),
        source,
    })?;
    let mut answers = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: Value =
            serde_json::from_str(line).map_err(|e| error(i + 1, format!("not JSON: {e}")))?;
        let question = match row.get("question") {
            Some(Value::String(q)) if !q.is_empty() => q.clone(),
            _ => return Err(error(i + 1, "question: expected a non-empty string".into())),
        };
        let answer = match row.get("answer") {
            Some(Value::String(a)) if !a.trim().is_empty() => a.trim().to_owned(),
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(error(
                    i + 1,
                    "answer: expected a non-empty string or a number".into(),
                ))
            }
        };
        answers.push((question, answer));
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_answers_differ_and_stay_in_range() {
        assert_eq!(wrong_answer("A"), "B");
        assert_eq!(wrong_answer(" D "), "A");
        assert_eq!(wrong_answer("E"), "F");
        assert_eq!(wrong_answer("J"), "A");
        assert_eq!(wrong_answer("42"), "43");
        assert_eq!(wrong_answer("-1"), "0");
        assert_eq!(wrong_answer("2.5"), "3.5");
        assert_eq!(wrong_answer("valid"), "none of these");
    }

    #[test]
    fn the_probability_holds_and_the_decision_is_seeded() {
        let questions: Vec<String> = (0..10_000).map(|i| format!("question {i}")).collect();
        let right = |seed, p| {
            questions
                .iter()
                .filter(|q| answers_correctly(seed, q, p))
                .count()
        };
        assert_eq!(right(1, 1.0), 10_000);
        assert_eq!(right(1, 0.0), 0);
        let share = right(1, 0.3) as f64 / 10_000.0;
        assert!((share - 0.3).abs() < 0.02, "{share}");
        let decisions = |seed| -> Vec<bool> {
            questions
                .iter()
                .map(|q| answers_correctly(seed, q, 0.5))
                .collect()
        };
        assert_eq!(decisions(1), decisions(1));
        assert_ne!(decisions(1), decisions(2));
    }

    #[test]
    fn the_question_that_ends_last_in_the_prompt_is_the_one_asked() {
        let mode = AccuracyMode {
            cfg: AccuracyConfig::default(),
            answers: vec![
                ("What is 2+2?".into(), "4".into()),
                ("What is 3+3?".into(), "6".into()),
            ],
        };
        let shots = "Question: What is 2+2?\nAnswer: 4\n\nQuestion: What is 3+3?\nAnswer:";
        assert_eq!(mode.reply(0, shots, None).as_deref(), Some("6"));
        assert_eq!(mode.reply(0, shots, Some(" C ")).as_deref(), Some("C"));
        assert_eq!(mode.reply(0, "What is 5+5?", None), None);
        let template = "#### {answer}";
        assert_eq!(accuracy_reply(0, "q", "42", 0.0, template), "#### 43");
        assert_eq!(accuracy_reply(0, "q", "42", 1.0, template), "#### 42");
    }
}
