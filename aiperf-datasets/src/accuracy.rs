//! Accuracy benchmarks: each benchmark's Hugging Face dataset (as data), how its rows
//! become prompts (the Python AIPerf 0.13's formats, few-shot examples included) and the
//! answer each question expects.
//!
//! Rows are JSON objects (`serde_json::Map`). [`read_rows`] is where they come from: for
//! now a local JSONL file, or a folder holding `<split>.jsonl` (or
//! `<config>/<split>.jsonl`), given with `--input-file`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use aiperf_core::config::{AccuracyBenchmark, AccuracyConfig};
use aiperf_core::{Conversation, Turn};
use rand::seq::SliceRandom;
use serde_json::{json, Map, Value};

use crate::derive_rng;

/// One dataset row.
pub type Row = Map<String, Value>;

/// A Hugging Face dataset split a benchmark reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubSource {
    /// Repository id, e.g. `lighteval/mmlu`.
    pub id: &'static str,
    /// Configuration (subset), if the dataset has several.
    pub config: Option<&'static str>,
    /// Split, e.g. `test`.
    pub split: &'static str,
}

/// Where a benchmark's questions and few-shot examples come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchmarkSource {
    /// The questions asked.
    pub questions: HubSource,
    /// The worked examples put before them, if the benchmark uses any.
    pub few_shots: Option<HubSource>,
}

const fn hub(id: &'static str, config: Option<&'static str>, split: &'static str) -> HubSource {
    HubSource { id, config, split }
}

/// The datasets of `benchmark`, as the Python AIPerf 0.13 loads them.
pub fn benchmark_source(benchmark: AccuracyBenchmark) -> BenchmarkSource {
    use AccuracyBenchmark as B;
    let (questions, few_shots) = match benchmark {
        B::Mmlu => (
            hub("lighteval/mmlu", None, "test"),
            Some(hub("lighteval/mmlu", None, "dev")),
        ),
        B::MmluPro => (
            hub("TIGER-Lab/MMLU-Pro", None, "test"),
            Some(hub("TIGER-Lab/MMLU-Pro", None, "validation")),
        ),
        // few-shots are the first problems of the same split, as upstream
        B::Aime => (hub("Maxwell-Jia/AIME_2024", None, "train"), None),
        B::Hellaswag => (
            hub("Rowan/hellaswag", None, "validation"),
            Some(hub("Rowan/hellaswag", None, "train")),
        ),
        B::Bigbench => (hub("lukaemon/bbh", None, "test"), None),
        B::Aime24 => (
            hub("HuggingFaceH4/aime_2024", Some("default"), "train"),
            None,
        ),
        B::Aime25 => (hub("yentinglin/aime_2025", None, "train"), None),
        B::Math500 => (hub("HuggingFaceH4/MATH-500", None, "test"), None),
        B::Gsm8k => (hub("openai/gsm8k", Some("main"), "test"), None),
        B::GpqaDiamond => (hub("Idavidrein/gpqa", Some("gpqa_diamond"), "train"), None),
        B::LcbCodegeneration => (
            hub("livecodebench/code_generation_lite", None, "test"),
            None,
        ),
    };
    BenchmarkSource {
        questions,
        few_shots,
    }
}

/// Why a benchmark's questions cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum AccuracyError {
    /// A rows file cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A row lacks a field or has the wrong type there.
    #[error("{path}:{line}: {field}: {message}")]
    Row {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// No file holds the split a benchmark needs.
    #[error(
        "{benchmark} needs the '{split}' split of {id}: put {split}.jsonl in {dir} (or point \
         --input-file at a folder holding it)"
    )]
    MissingSplit {
        /// The benchmark.
        benchmark: &'static str,
        /// The dataset.
        id: &'static str,
        /// The split.
        split: &'static str,
        /// Where it was looked for.
        dir: String,
    },
    /// The benchmark's dataset cannot be found or read on the Hugging Face hub.
    #[cfg(feature = "hub")]
    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),
    /// `--accuracy-tasks` names a task no question has.
    #[error("{benchmark} has no task '{task}'; the rows hold: {known}")]
    UnknownTask {
        /// The benchmark.
        benchmark: &'static str,
        /// The task asked for.
        task: String,
        /// The tasks the rows hold.
        known: String,
    },
    /// More few-shot examples than the benchmark allows.
    #[error("{benchmark} takes at most {max} few-shot examples, got {n}")]
    TooManyShots {
        /// The benchmark.
        benchmark: &'static str,
        /// Its bound.
        max: u32,
        /// What was asked.
        n: u32,
    },
    /// Nothing to ask.
    #[error("{0} has no questions in the given rows")]
    NoQuestions(&'static str),
}

/// A row and where it was read (for `path:line: field: message` errors).
#[derive(Debug, Clone)]
pub struct SourcedRow {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The row.
    pub row: Row,
}

impl SourcedRow {
    fn error(&self, field: &str, message: impl Into<String>) -> AccuracyError {
        AccuracyError::Row {
            path: self.path.clone(),
            line: self.line,
            field: field.to_owned(),
            message: message.into(),
        }
    }

    fn text(&self, field: &str) -> Result<String, AccuracyError> {
        match self.row.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            Some(_) => Err(self.error(field, "expected a string")),
            None => Err(self.error(field, "missing")),
        }
    }

    fn opt_text(&self, field: &str) -> Option<String> {
        self.text(field).ok()
    }

    fn texts(&self, field: &str) -> Result<Vec<String>, AccuracyError> {
        let Some(Value::Array(items)) = self.row.get(field) else {
            return Err(self.error(field, "expected a list of strings"));
        };
        items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(self.error(field, "expected a list of strings")),
            })
            .collect()
    }
}

/// The rows of `source` in a local copy (`--input-file`: a JSONL file, or a folder
/// holding `<split>.jsonl` or `<config>/<split>.jsonl`); `Ok(None)` when there is no file
/// for it.
pub fn read_rows(
    input: &Path,
    source: &HubSource,
) -> Result<Option<Vec<SourcedRow>>, AccuracyError> {
    let candidates: Vec<PathBuf> = if input.is_file() {
        vec![input.to_path_buf()]
    } else {
        let mut dirs = vec![input.to_path_buf()];
        if let Some(config) = source.config {
            dirs.insert(0, input.join(config));
        }
        dirs.iter()
            .map(|d| d.join(format!("{}.jsonl", source.split)))
            .collect()
    };
    let Some(path) = candidates.into_iter().find(|p| p.is_file()) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path).map_err(|source| AccuracyError::Io {
        path: path.clone(),
        source,
    })?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row = serde_json::from_str::<Row>(line).map_err(|e| AccuracyError::Row {
            path: path.clone(),
            line: i + 1,
            field: "(line)".to_owned(),
            message: format!("not a JSON object: {e}"),
        })?;
        rows.push(SourcedRow {
            path: path.clone(),
            line: i + 1,
            row,
        });
    }
    Ok(Some(rows))
}

/// One question of a benchmark, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Its task (subject, category, subtask).
    pub task: String,
    /// The flat prompt (completions endpoints).
    pub prompt: String,
    /// The chat messages (chat endpoints), few-shot turns included.
    pub messages: Vec<Value>,
    /// The answer the grader compares the reply with.
    pub answer: String,
    /// The reply budget (the benchmark's generation size).
    pub max_tokens: u32,
    /// Stop sequences sent with the request, if any.
    pub stop: Vec<String>,
}

/// Where a benchmark's rows come from.
#[derive(Clone, Copy)]
pub enum RowSource<'a> {
    /// A local copy ([`read_rows`]): what `--input-file` names.
    Local(&'a Path),
    /// The Hugging Face hub: the local hub cache, else a download into it
    /// ([`crate::hub::resolve`]).
    #[cfg(feature = "hub")]
    Hub {
        /// Cache, token and offline mode.
        options: &'a crate::hub::HubOptions,
        /// What downloads go through.
        transport: &'a dyn aiperf_core::Transport,
    },
}

impl std::fmt::Debug for RowSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowSource::Local(path) => f.debug_tuple("Local").field(path).finish(),
            #[cfg(feature = "hub")]
            RowSource::Hub { options, .. } => {
                f.debug_struct("Hub").field("options", options).finish()
            }
        }
    }
}

impl RowSource<'_> {
    /// The rows of `split`; `Ok(None)` when a local copy has no file for it.
    async fn rows(&self, split: &HubSource) -> Result<Option<Vec<SourcedRow>>, AccuracyError> {
        match self {
            RowSource::Local(path) => read_rows(path, split),
            #[cfg(feature = "hub")]
            RowSource::Hub { options, transport } => {
                let dataset = crate::hub::HubDataset {
                    id: split.id.to_owned(),
                    config: split.config.map(str::to_owned),
                    split: split.split.to_owned(),
                    revision: None,
                };
                let files = crate::hub::resolve(&dataset, options, *transport).await?;
                let mut rows = Vec::new();
                for file in files {
                    for (i, row) in
                        crate::hub::read_rows(std::slice::from_ref(&file), None).enumerate()
                    {
                        rows.push(SourcedRow {
                            path: file.clone(),
                            line: i + 1,
                            row: row?,
                        });
                    }
                }
                Ok(Some(rows))
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            RowSource::Local(path) => path.display().to_string(),
            #[cfg(feature = "hub")]
            RowSource::Hub { .. } => "the Hugging Face cache".to_owned(),
        }
    }
}

/// The questions of `config`'s benchmark from the rows `from` holds.
pub async fn load_questions(
    config: &AccuracyConfig,
    from: RowSource<'_>,
    seed: u64,
) -> Result<Vec<Question>, AccuracyError> {
    let benchmark = config.benchmark;
    let source = benchmark_source(benchmark);
    let missing = |s: &HubSource| AccuracyError::MissingSplit {
        benchmark: benchmark.as_str(),
        id: s.id,
        split: s.split,
        dir: from.describe(),
    };
    let questions = from
        .rows(&source.questions)
        .await?
        .ok_or_else(|| missing(&source.questions))?;
    let n_shots = config.n_shots.unwrap_or(benchmark.default_n_shots());
    let few_shots = match source.few_shots {
        Some(s) if n_shots > 0 => from.rows(&s).await?.ok_or_else(|| missing(&s))?,
        _ => Vec::new(),
    };
    build_questions(config, &questions, &few_shots, seed)
}

/// The questions of `config`'s benchmark from its question rows and few-shot rows.
pub fn build_questions(
    config: &AccuracyConfig,
    rows: &[SourcedRow],
    few_shot_rows: &[SourcedRow],
    seed: u64,
) -> Result<Vec<Question>, AccuracyError> {
    use AccuracyBenchmark as B;
    let benchmark = config.benchmark;
    let n_shots = config.n_shots.unwrap_or(benchmark.default_n_shots());
    let cot = config.enable_cot.unwrap_or(benchmark.default_enable_cot());
    let max = match benchmark {
        B::Aime => 8,
        B::Hellaswag => 15,
        B::Bigbench => 3,
        _ => aiperf_core::config::MAX_N_SHOTS,
    };
    if n_shots > max {
        return Err(AccuracyError::TooManyShots {
            benchmark: benchmark.as_str(),
            max,
            n: n_shots,
        });
    }
    let n = n_shots as usize;
    let questions = match benchmark {
        B::Mmlu => mmlu(rows, few_shot_rows, n, cot, seed)?,
        B::MmluPro => mmlu_pro(rows, few_shot_rows, n, cot)?,
        B::Aime => aime(rows, n, cot)?,
        B::Hellaswag => hellaswag(rows, few_shot_rows, n)?,
        B::Bigbench => bigbench(rows, n)?,
        B::Aime24 | B::Aime25 => bare(rows, benchmark.as_str(), "problem", "answer", 32768)?,
        B::Math500 => math_500(rows)?,
        B::Gsm8k => gsm8k(rows)?,
        B::GpqaDiamond => gpqa(rows)?,
        B::LcbCodegeneration => Vec::new(),
    };
    let questions = keep_tasks(questions, &config.tasks, benchmark.as_str())?;
    if questions.is_empty() {
        return Err(AccuracyError::NoQuestions(benchmark.as_str()));
    }
    Ok(questions)
}

/// Only the questions of `tasks` (all of them when empty or `all`).
fn keep_tasks(
    questions: Vec<Question>,
    tasks: &[String],
    benchmark: &'static str,
) -> Result<Vec<Question>, AccuracyError> {
    if tasks.is_empty() || tasks.iter().any(|t| t == "all") {
        return Ok(questions);
    }
    let mut known: Vec<&str> = questions.iter().map(|q| q.task.as_str()).collect();
    known.sort_unstable();
    known.dedup();
    let wanted = |t: &str| tasks.iter().any(|w| w.eq_ignore_ascii_case(t));
    if let Some(unknown) = tasks
        .iter()
        .find(|t| !known.iter().any(|k| k.eq_ignore_ascii_case(t)))
    {
        return Err(AccuracyError::UnknownTask {
            benchmark,
            task: unknown.clone(),
            known: known.join(", "),
        });
    }
    Ok(questions.into_iter().filter(|q| wanted(&q.task)).collect())
}

fn user(content: &str) -> Value {
    json!({"role": "user", "content": content})
}

fn single(task: String, prompt: String, answer: String, max_tokens: u32) -> Question {
    Question {
        task,
        messages: vec![user(&prompt)],
        prompt,
        answer,
        max_tokens,
        stop: Vec::new(),
    }
}

const LETTERS: &str = "ABCDEFGHIJ";

fn letter(i: usize) -> char {
    LETTERS.as_bytes().get(i).map_or('?', |b| char::from(*b))
}

/// An MMLU row's gold index: `answer` as an index or a letter.
fn gold_index(row: &SourcedRow, choices: usize) -> Result<usize, AccuracyError> {
    let index = match row.row.get("answer") {
        Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        Some(Value::String(s)) => LETTERS.find(s.trim()).filter(|_| s.trim().len() == 1),
        _ => None,
    };
    index.filter(|i| *i < choices).ok_or_else(|| {
        row.error(
            "answer",
            format!("expected an index below {choices} or a letter"),
        )
    })
}

/// The MMLU subject of a row (lighteval/mmlu's `subject` column), else `mmlu`.
fn subject(row: &SourcedRow) -> String {
    row.opt_text("subject")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "mmlu".to_owned())
}

struct MmluShot {
    query: String,
    answer: String,
}

/// MMLU (lighteval's `mmlu_prompt`): instruction, examples, `Question: …\nA. …\nAnswer:`;
/// the gold is the choice label with its leading space (` B`).
fn mmlu(
    rows: &[SourcedRow],
    dev: &[SourcedRow],
    n: usize,
    cot: bool,
    seed: u64,
) -> Result<Vec<Question>, AccuracyError> {
    let query = |row: &SourcedRow, cot: bool| -> Result<(String, usize), AccuracyError> {
        let choices = row.texts("choices")?;
        let gold = gold_index(row, choices.len())?;
        let listed: String = choices
            .iter()
            .enumerate()
            .map(|(i, c)| format!("\n{}. {c}", letter(i)))
            .collect();
        let primer = if cot {
            "\nLet's think step by step."
        } else {
            ""
        };
        Ok((
            format!(
                "Question: {}{listed}{primer}\nAnswer:",
                row.text("question")?
            ),
            gold,
        ))
    };
    let mut out = Vec::with_capacity(rows.len());
    let mut shots_by_subject: HashMap<String, Vec<MmluShot>> = HashMap::new();
    for row in rows {
        let subject = subject(row);
        if !shots_by_subject.contains_key(&subject) {
            let pool: Vec<&SourcedRow> =
                dev.iter().filter(|r| self::subject(r) == subject).collect();
            let mut shots = Vec::new();
            for r in balanced_sample(&pool, n, seed, &subject)? {
                let (q, gold) = query(r, false)?;
                shots.push(MmluShot {
                    query: q,
                    answer: format!(" {}", letter(gold)),
                });
            }
            shots_by_subject.insert(subject.clone(), shots);
        }
        let shots = &shots_by_subject[&subject];
        let mut instruction = format!(
            "The following are multiple choice questions (with answers) about {}.",
            subject.replace('_', " ")
        );
        if cot {
            instruction.push_str(
                " Think step by step and then output the answer in the format of \"The answer \
                 is (X)\" at the end.",
            );
        }
        instruction.push_str("\n\n");
        let (main, gold) = query(row, cot)?;
        let mut prompt = instruction.clone();
        let mut messages = Vec::new();
        for (i, shot) in shots.iter().enumerate() {
            prompt.push_str(&format!("{}{}\n\n", shot.query, shot.answer));
            let content = if i == 0 {
                format!("{instruction}{}", shot.query)
            } else {
                shot.query.clone()
            };
            messages.push(user(&content));
            messages.push(json!({"role": "assistant", "content": shot.answer}));
        }
        prompt.push_str(&main);
        messages.push(user(&if shots.is_empty() {
            format!("{instruction}{main}")
        } else {
            main
        }));
        out.push(Question {
            task: subject,
            prompt,
            messages,
            answer: format!(" {}", letter(gold)),
            max_tokens: if cot { 4000 } else { 5 },
            stop: if cot {
                Vec::new()
            } else {
                vec!["\n".to_owned()]
            },
        });
    }
    Ok(out)
}

/// lighteval's balanced few-shot choice: examples grouped by their gold answer, drawn in
/// turn from the groups so the labels vary. The draws come from the run's seed (0.13
/// draws from Python's `random.Random(0)`, which is not reproduced here).
fn balanced_sample<'a>(
    pool: &[&'a SourcedRow],
    n: usize,
    seed: u64,
    subject: &str,
) -> Result<Vec<&'a SourcedRow>, AccuracyError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut groups: BTreeMap<String, Vec<&SourcedRow>> = BTreeMap::new();
    for row in pool {
        let choices = row.texts("choices")?;
        let gold = gold_index(row, choices.len())?;
        groups.entry(choices[gold].clone()).or_default().push(row);
    }
    let mut rng = derive_rng(seed, &format!("accuracy.few_shot.{subject}"));
    let mut groups: Vec<Vec<&SourcedRow>> = groups.into_values().collect();
    groups.shuffle(&mut rng);
    for g in &mut groups {
        g.shuffle(&mut rng);
    }
    let mut out = Vec::with_capacity(n);
    while out.len() < n && groups.iter().any(|g| !g.is_empty()) {
        for g in &mut groups {
            if out.len() < n {
                out.extend(g.pop());
            }
        }
    }
    Ok(out)
}

/// MMLU-Pro (TIGER-AI-Lab's `evaluate_from_api.py`): per-category instruction, the first
/// `n` validation examples of the category with their reasoning, `N/A` options dropped.
fn mmlu_pro(
    rows: &[SourcedRow],
    validation: &[SourcedRow],
    n: usize,
    cot: bool,
) -> Result<Vec<Question>, AccuracyError> {
    let example = |row: &SourcedRow, answer: &str| -> Result<String, AccuracyError> {
        let mut s = format!("Question: {}\nOptions: ", row.text("question")?);
        let options = row.texts("options")?;
        for (i, opt) in options.iter().filter(|o| *o != "N/A").enumerate() {
            s.push_str(&format!("{}. {opt}\n", letter(i)));
        }
        let answer = if answer.is_empty() {
            "Let's think step by step."
        } else {
            answer
        };
        let answer = answer.strip_prefix("A: ").unwrap_or(answer);
        s.push_str(&format!("Answer: {answer}\n\n"));
        Ok(s)
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let category = row.text("category")?;
        let mut prompt = format!(
            "The following are multiple choice questions (with answers) about {category}.{}\n\n",
            if cot {
                " Think step by step and then output the answer in the format of \"The answer \
                 is (X)\" at the end."
            } else {
                ""
            }
        );
        for shot in validation
            .iter()
            .filter(|r| r.opt_text("category").as_deref() == Some(&category))
            .take(n)
        {
            let answer = if cot {
                shot.text("cot_content")?
            } else {
                shot.text("answer")?
            };
            prompt.push_str(&example(shot, &answer)?);
        }
        if cot {
            prompt.push_str(&example(row, "")?);
        } else {
            let mut s = format!("Question: {}\nOptions: ", row.text("question")?);
            for (i, opt) in row
                .texts("options")?
                .iter()
                .filter(|o| *o != "N/A")
                .enumerate()
            {
                s.push_str(&format!("{}. {opt}\n", letter(i)));
            }
            s.push_str("Answer: \n\n");
            prompt.push_str(&s);
        }
        out.push(single(category, prompt, row.text("answer")?, 4000));
    }
    Ok(out)
}

/// AIME in the trt-llm recipe's DeepEval template: the first `n` problems as examples.
fn aime(rows: &[SourcedRow], n: usize, cot: bool) -> Result<Vec<Question>, AccuracyError> {
    let mut shots = String::new();
    if n > 0 {
        shots.push_str(
            "The following are problems from the American Invitational Mathematics \
             Examination (AIME) 2024. AIME is a prestigious high school mathematics \
             competition known for its challenging mathematical problems.\n\n",
        );
        for row in rows.iter().take(n) {
            shots.push_str(&format!("**Problem**: {}\n", row.text("Problem")?));
            if cot {
                shots.push_str(&format!(
                    "**Solution**: {}\n",
                    row.opt_text("Solution").unwrap_or_default()
                ));
            }
            shots.push_str(&format!("**Answer**: {}\n\n", row.text("Answer")?));
        }
    }
    let suffix = if cot {
        "Let's think step-by-step."
    } else {
        "No explanation needed. Just return a number."
    };
    rows.iter()
        .map(|row| {
            let prompt = format!(
                "{shots}**Problem**: {}\n**Answer**: \n\n{suffix}",
                row.text("Problem")?
            );
            Ok(single(
                "aime".to_owned(),
                prompt,
                row.text("Answer")?,
                32768,
            ))
        })
        .collect()
}

/// A bare problem as the whole prompt (AIME 24/25).
fn bare(
    rows: &[SourcedRow],
    task: &str,
    problem: &str,
    answer: &str,
    max_tokens: u32,
) -> Result<Vec<Question>, AccuracyError> {
    rows.iter()
        .map(|row| {
            Ok(single(
                task.to_owned(),
                row.text(problem)?,
                row.text(answer)?,
                max_tokens,
            ))
        })
        .collect()
}

/// MATH-500: the bare problem; the gold is the whole solution (its `\boxed{}` answer is
/// read at grading); the task is the row's subject.
fn math_500(rows: &[SourcedRow]) -> Result<Vec<Question>, AccuracyError> {
    rows.iter()
        .map(|row| {
            let task = row
                .opt_text("subject")
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "math_500".to_owned());
            Ok(single(
                task,
                row.text("problem")?,
                row.text("solution")?,
                32768,
            ))
        })
        .collect()
}

/// GSM8K (lighteval's `gsm8k`): `Question: …\nAnswer:`; the gold is the solution ending
/// in `#### <number>`.
fn gsm8k(rows: &[SourcedRow]) -> Result<Vec<Question>, AccuracyError> {
    rows.iter()
        .map(|row| {
            let prompt = format!("Question: {}\nAnswer:", row.text("question")?);
            Ok(single("gsm8k".to_owned(), prompt, row.text("answer")?, 256))
        })
        .collect()
}

/// GPQA Diamond (the simple-evals template): the right answer and three wrong ones in an
/// order fixed by the question's text (the same on every run and machine).
fn gpqa(rows: &[SourcedRow]) -> Result<Vec<Question>, AccuracyError> {
    rows.iter()
        .map(|row| {
            let question = row.text("Question")?;
            let mut options = [
                (true, row.text("Correct Answer")?),
                (false, row.text("Incorrect Answer 1")?),
                (false, row.text("Incorrect Answer 2")?),
                (false, row.text("Incorrect Answer 3")?),
            ];
            options.shuffle(&mut derive_rng(0, &format!("accuracy.gpqa.{question}")));
            let gold = options
                .iter()
                .position(|(right, _)| *right)
                .unwrap_or_default();
            let prompt = format!(
                "Answer the following multiple choice question. The last line of your response \
                 should be of the following format: 'Answer: $LETTER' (without quotes) where \
                 LETTER is one of ABCD. Think step by step before answering.\n\n{question}\n\n\
                 A) {}\nB) {}\nC) {}\nD) {}",
                options[0].1, options[1].1, options[2].1, options[3].1
            );
            Ok(single(
                "gpqa_diamond".to_owned(),
                prompt,
                letter(gold).to_string(),
                32768,
            ))
        })
        .collect()
}

/// HellaSwag in DeepEval's template: one example per activity label (the first train row
/// of each), the context with lettered endings, and DeepEval's confinement line.
fn hellaswag(
    rows: &[SourcedRow],
    train: &[SourcedRow],
    n: usize,
) -> Result<Vec<Question>, AccuracyError> {
    let format = |row: &SourcedRow, answer: bool| -> Result<String, AccuracyError> {
        let mut s = row.text("ctx")?;
        for (i, ending) in row.texts("endings")?.iter().enumerate().take(4) {
            s.push_str(&format!("\n{}. {ending}", letter(i)));
        }
        s.push_str("\nAnswer:");
        if answer {
            s.push_str(&format!(" {}\n\n", hellaswag_gold(row)?));
        }
        Ok(s)
    };
    let mut seen = HashSet::new();
    let mut examples = String::new();
    for row in train.iter().filter(|_| n > 0) {
        if seen.len() < n && seen.insert(row.text("activity_label")?) {
            examples.push_str(&format(row, true)?);
        }
    }
    let mut out = Vec::new();
    for row in rows {
        if row.opt_text("label").is_none_or(|l| l.is_empty()) {
            continue;
        }
        let label = row.text("activity_label")?;
        let prompt = format!(
            "The following are multiple choice questions (with answers) are sentence \
             completion problems about {label}.\n\n{examples}{}\n\nOutput 'A', 'B', 'C', or \
             'D'. Full answer not needed.",
            format(row, false)?
        );
        out.push(single(label, prompt, hellaswag_gold(row)?.to_string(), 5));
    }
    Ok(out)
}

fn hellaswag_gold(row: &SourcedRow) -> Result<char, AccuracyError> {
    row.text("label")?
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|i| *i < 4)
        .map(letter)
        .ok_or_else(|| row.error("label", "expected 0, 1, 2 or 3"))
}

/// BigBench-Hard: the first `n` rows of each subtask as `Q:`/`A:` examples. DeepEval's
/// curated chain-of-thought prompt files are not shipped here, so examples come from the
/// rows themselves; the gold is the row's `target`.
fn bigbench(rows: &[SourcedRow], n: usize) -> Result<Vec<Question>, AccuracyError> {
    let task = |row: &SourcedRow| {
        row.opt_text("task")
            .unwrap_or_else(|| "bigbench".to_owned())
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let t = task(row);
        let mut prompt = String::new();
        for shot in rows.iter().filter(|r| task(r) == t).take(n) {
            prompt.push_str(&format!(
                "Q: {}\nA: {}\n\n",
                shot.text("input")?,
                shot.text("target")?
            ));
        }
        prompt.push_str(&format!("Q: {}\nA:", row.text("input")?));
        out.push(single(t, prompt, row.text("target")?, 1024));
    }
    Ok(out)
}

/// The conversation that asks `question`: the system prompt (the benchmark's, or
/// `--accuracy-system-prompt`) leads both the chat messages and the flat prompt; the
/// reply budget and stop sequences ride on the turn.
pub fn question_conversation(
    question: &Question,
    session_id: String,
    system_prompt: Option<&str>,
) -> Conversation {
    let mut messages = question.messages.clone();
    let text = match system_prompt {
        Some(system) => {
            messages.insert(0, json!({"role": "system", "content": system}));
            format!("{system}\n\n{}", question.prompt)
        }
        None => question.prompt.clone(),
    };
    let extra = (!question.stop.is_empty()).then(|| {
        let mut m = Map::new();
        m.insert("stop".to_owned(), json!(question.stop));
        m
    });
    Conversation {
        session_id,
        turns: vec![Turn {
            texts: vec![text],
            max_tokens: Some(question.max_tokens),
            raw_messages: Some(messages),
            extra,
            ..Turn::default()
        }],
        ..Conversation::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(lines: &[Value]) -> Vec<SourcedRow> {
        lines
            .iter()
            .enumerate()
            .map(|(i, v)| SourcedRow {
                path: PathBuf::from("rows.jsonl"),
                line: i + 1,
                row: v.as_object().cloned().unwrap_or_default(),
            })
            .collect()
    }

    fn config(benchmark: AccuracyBenchmark, n_shots: u32) -> AccuracyConfig {
        AccuracyConfig {
            benchmark,
            tasks: Vec::new(),
            n_shots: Some(n_shots),
            enable_cot: None,
            grader: None,
            system_prompt: None,
            verbose: false,
        }
    }

    fn mmlu_row(q: &str, answer: u64) -> Value {
        json!({"question": q, "subject": "anatomy", "choices": ["w", "x", "y", "z"], "answer": answer})
    }

    #[test]
    fn mmlu_prompts_match_lighteval_with_0_and_2_shots() {
        let test = rows(&[mmlu_row("Q?", 1)]);
        let dev = rows(&[mmlu_row("D1?", 0), mmlu_row("D2?", 2), mmlu_row("D3?", 2)]);
        let zero = build_questions(&config(AccuracyBenchmark::Mmlu, 0), &test, &dev, 7).unwrap();
        assert_eq!(
            zero[0].prompt,
            "The following are multiple choice questions (with answers) about anatomy.\n\n\
             Question: Q?\nA. w\nB. x\nC. y\nD. z\nAnswer:"
        );
        assert_eq!((zero[0].answer.as_str(), zero[0].max_tokens), (" B", 5));
        assert_eq!(zero[0].stop, ["\n"]);
        let two = build_questions(&config(AccuracyBenchmark::Mmlu, 2), &test, &dev, 7).unwrap();
        let again = build_questions(&config(AccuracyBenchmark::Mmlu, 2), &test, &dev, 7).unwrap();
        assert_eq!(two, again, "the same seed picks the same examples");
        let prompt = &two[0].prompt;
        // balanced: one example answered A (D1) and one answered C (D2 or D3)
        assert!(
            prompt.contains("Question: D1?\nA. w\nB. x\nC. y\nD. z\nAnswer: A\n\n"),
            "{prompt}"
        );
        assert_eq!(prompt.matches("Answer: C\n\n").count(), 1, "{prompt}");
        assert!(prompt.ends_with("Question: Q?\nA. w\nB. x\nC. y\nD. z\nAnswer:"));
        // chat: instruction on the first example, assistant turns carry the gold label
        assert_eq!(two[0].messages.len(), 5);
        assert_eq!(two[0].messages[1]["role"], "assistant");
        assert_eq!(
            two[0].messages[4]["content"],
            "Question: Q?\nA. w\nB. x\nC. y\nD. z\nAnswer:"
        );
    }

    #[test]
    fn gsm8k_and_gpqa_prompts() {
        let q = build_questions(
            &config(AccuracyBenchmark::Gsm8k, 0),
            &rows(&[json!({"question": "2+2?", "answer": "so\n#### 4"})]),
            &[],
            1,
        )
        .unwrap();
        assert_eq!(q[0].prompt, "Question: 2+2?\nAnswer:");
        assert_eq!((q[0].answer.as_str(), q[0].max_tokens), ("so\n#### 4", 256));
        let row = json!({"Question": "Pick", "Correct Answer": "right",
            "Incorrect Answer 1": "w1", "Incorrect Answer 2": "w2", "Incorrect Answer 3": "w3"});
        let a = build_questions(
            &config(AccuracyBenchmark::GpqaDiamond, 0),
            &rows(std::slice::from_ref(&row)),
            &[],
            1,
        )
        .unwrap();
        let b = build_questions(
            &config(AccuracyBenchmark::GpqaDiamond, 0),
            &rows(&[row]),
            &[],
            99,
        )
        .unwrap();
        assert_eq!(a, b, "the option order depends on the question only");
        let gold = a[0].answer.chars().next().unwrap();
        assert!(
            a[0].prompt.contains(&format!("{gold}) right")),
            "{}",
            a[0].prompt
        );
    }

    #[test]
    fn row_errors_name_file_line_and_field() {
        let err = build_questions(
            &config(AccuracyBenchmark::Gsm8k, 0),
            &rows(&[json!({"question": "q"})]),
            &[],
            1,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "rows.jsonl:1: answer: missing");
        let err = build_questions(
            &AccuracyConfig {
                tasks: vec!["nope".into()],
                ..config(AccuracyBenchmark::Gsm8k, 0)
            },
            &rows(&[json!({"question": "q", "answer": "#### 1"})]),
            &[],
            1,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "gsm8k has no task 'nope'; the rows hold: gsm8k"
        );
    }

    // The snapshots below are the Python AIPerf 0.13's prompts for the same rows (its
    // benchmark classes' prompt builders run on these rows), except BigBench-Hard's,
    // whose examples differ on purpose (see `bigbench`).

    #[test]
    fn mmlu_pro_prompts_with_0_and_the_default_5_shots() {
        let test = rows(&[
            json!({"question": "Which law?", "options": ["Ohm", "N/A", "Hooke", "Snell"],
            "answer": "C", "category": "physics"}),
        ]);
        let validation = rows(&[
            json!({"question": "Unit of force?", "options": ["newton", "joule", "N/A"], "answer": "A",
                "category": "physics", "cot_content": "A: Let's think step by step. Force is in newtons. The answer is (A)."}),
            json!({"question": "Speed of light?", "options": ["3e8 m/s", "1 m/s"], "answer": "A",
                "category": "physics", "cot_content": "A: It is about 3e8 m/s. The answer is (A)."}),
            json!({"question": "Other?", "options": ["x", "y"], "answer": "B", "category": "law",
                "cot_content": "A: y. The answer is (B)."}),
        ]);
        let instruction = "The following are multiple choice questions (with answers) about \
            physics. Think step by step and then output the answer in the format of \"The \
            answer is (X)\" at the end.\n\n";
        let asked = "Question: Which law?\nOptions: A. Ohm\nB. Hooke\nC. Snell\nAnswer: Let's \
            think step by step.\n\n";
        let zero = build_questions(
            &config(AccuracyBenchmark::MmluPro, 0),
            &test,
            &validation,
            1,
        )
        .unwrap();
        assert_eq!(zero[0].prompt, format!("{instruction}{asked}"));
        assert_eq!(zero[0].messages, [user(&zero[0].prompt)]);
        assert_eq!(
            (
                zero[0].task.as_str(),
                zero[0].answer.as_str(),
                zero[0].max_tokens
            ),
            ("physics", "C", 4000)
        );
        let default = AccuracyConfig {
            n_shots: None,
            ..config(AccuracyBenchmark::MmluPro, 0)
        };
        let five = build_questions(&default, &test, &validation, 1).unwrap();
        assert_eq!(
            five[0].prompt,
            format!(
                "{instruction}Question: Unit of force?\nOptions: A. newton\nB. joule\nAnswer: \
                 Let's think step by step. Force is in newtons. The answer is (A).\n\n\
                 Question: Speed of light?\nOptions: A. 3e8 m/s\nB. 1 m/s\nAnswer: It is about \
                 3e8 m/s. The answer is (A).\n\n{asked}"
            )
        );
    }

    #[test]
    fn aime_prompts_with_0_and_the_default_8_shots() {
        let problems = rows(&[
            json!({"Problem": "Find x if 2x = 10.", "Solution": "Divide by 2: x = 5.", "Answer": 5}),
            json!({"Problem": "Find y if y + 1 = 3.", "Solution": "Subtract 1: y = 2.", "Answer": 2}),
        ]);
        let zero = build_questions(&config(AccuracyBenchmark::Aime, 0), &problems, &[], 1).unwrap();
        assert_eq!(
            zero[1].prompt,
            "**Problem**: Find y if y + 1 = 3.\n**Answer**: \n\nLet's think step-by-step."
        );
        assert_eq!(
            (
                zero[1].task.as_str(),
                zero[1].answer.as_str(),
                zero[1].max_tokens
            ),
            ("aime", "2", 32768)
        );
        let default = AccuracyConfig {
            n_shots: None,
            ..config(AccuracyBenchmark::Aime, 0)
        };
        let eight = build_questions(&default, &problems, &[], 1).unwrap();
        assert_eq!(
            eight[1].prompt,
            "The following are problems from the American Invitational Mathematics Examination \
             (AIME) 2024. AIME is a prestigious high school mathematics competition known for \
             its challenging mathematical problems.\n\n\
             **Problem**: Find x if 2x = 10.\n**Solution**: Divide by 2: x = 5.\n**Answer**: 5\n\n\
             **Problem**: Find y if y + 1 = 3.\n**Solution**: Subtract 1: y = 2.\n**Answer**: 2\n\n\
             **Problem**: Find y if y + 1 = 3.\n**Answer**: \n\nLet's think step-by-step."
        );
        assert_eq!(eight[1].messages, [user(&eight[1].prompt)]);
    }

    #[test]
    fn aime24_aime25_and_math_500_send_the_bare_problem() {
        let problem = json!({"problem": "Compute 3+4.", "answer": "7"});
        for (benchmark, task) in [
            (AccuracyBenchmark::Aime24, "aime24"),
            (AccuracyBenchmark::Aime25, "aime25"),
        ] {
            // their default is 0 shots, the only count they take
            assert_eq!(benchmark.default_n_shots(), 0);
            let q = build_questions(
                &AccuracyConfig {
                    n_shots: None,
                    ..config(benchmark, 0)
                },
                &rows(std::slice::from_ref(&problem)),
                &[],
                1,
            )
            .unwrap();
            assert_eq!(q[0].prompt, "Compute 3+4.");
            assert_eq!(q[0].messages, [user("Compute 3+4.")]);
            assert_eq!((q[0].task.as_str(), q[0].answer.as_str()), (task, "7"));
        }
        assert_eq!(AccuracyBenchmark::Math500.default_n_shots(), 0);
        let q = build_questions(
            &config(AccuracyBenchmark::Math500, 0),
            &rows(&[json!({"problem": "What is $\\frac{1}{2}+\\frac{1}{2}$?",
                "solution": "It is $\\boxed{1}$.", "answer": "1", "subject": "Algebra"})]),
            &[],
            1,
        )
        .unwrap();
        assert_eq!(q[0].prompt, "What is $\\frac{1}{2}+\\frac{1}{2}$?");
        assert_eq!(q[0].messages, [user(&q[0].prompt)]);
        assert_eq!(
            (q[0].task.as_str(), q[0].answer.as_str(), q[0].max_tokens),
            ("Algebra", "It is $\\boxed{1}$.", 32768)
        );
    }

    #[test]
    fn bigbench_prompts_with_0_and_the_default_3_shots() {
        let subtask = rows(&[
            json!({"input": "not ( True ) is", "target": "False", "task": "boolean_expressions"}),
            json!({"input": "True and False is", "target": "False", "task": "boolean_expressions"}),
            json!({"input": "True or False is", "target": "True", "task": "boolean_expressions"}),
            json!({"input": "not not True is", "target": "True", "task": "boolean_expressions"}),
            json!({"input": "Is 7 odd?", "target": "yes", "task": "other"}),
        ]);
        let zero =
            build_questions(&config(AccuracyBenchmark::Bigbench, 0), &subtask, &[], 1).unwrap();
        assert_eq!(zero[3].prompt, "Q: not not True is\nA:");
        assert_eq!(
            (
                zero[3].task.as_str(),
                zero[3].answer.as_str(),
                zero[3].max_tokens
            ),
            ("boolean_expressions", "True", 1024)
        );
        let default = AccuracyConfig {
            n_shots: None,
            ..config(AccuracyBenchmark::Bigbench, 0)
        };
        let three = build_questions(&default, &subtask, &[], 1).unwrap();
        assert_eq!(
            three[3].prompt,
            "Q: not ( True ) is\nA: False\n\nQ: True and False is\nA: False\n\n\
             Q: True or False is\nA: True\n\nQ: not not True is\nA:"
        );
        // examples come from the question's own subtask only
        assert_eq!(three[4].prompt, "Q: Is 7 odd?\nA: yes\n\nQ: Is 7 odd?\nA:");
        assert_eq!(three[3].messages, [user(&three[3].prompt)]);
    }
}
