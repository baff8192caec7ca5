//! Accuracy mode flags (`--accuracy-*`), with the Python AIPerf 0.13's names and defaults.

use aiperf_core::config::{AccuracyBenchmark, AccuracyConfig, AccuracyGrader};
use clap::Args;

/// Grade the replies to a benchmark's questions beside the latency metrics.
#[derive(Debug, Args)]
#[command(next_help_heading = "Accuracy")]
pub(crate) struct AccuracyArgs {
    /// Accuracy benchmark whose questions are sent and whose replies are graded; its rows
    /// come from --input-file (a JSONL file or a folder of <split>.jsonl files).
    #[arg(long = "accuracy-benchmark")]
    pub accuracy_benchmark: Option<AccuracyBenchmark>,

    /// Tasks (subjects, categories, subtasks) to ask, comma-separated or repeated.
    /// Default: every task.
    #[arg(long = "accuracy-tasks", value_delimiter = ',')]
    pub accuracy_tasks: Vec<String>,

    /// Few-shot examples per prompt, 0 to 32. Default: the benchmark's (mmlu 5,
    /// mmlu_pro 5, aime 8, hellaswag 10, bigbench 3, else 0).
    #[arg(long = "accuracy-n-shots")]
    pub accuracy_n_shots: Option<u32>,

    /// Ask for step-by-step reasoning. Default: the benchmark's (on for mmlu_pro, aime and
    /// bigbench).
    #[arg(
        long = "accuracy-enable-cot",
        overrides_with = "accuracy_no_enable_cot"
    )]
    pub accuracy_enable_cot: bool,

    /// Do not ask for step-by-step reasoning.
    #[arg(
        long = "accuracy-no-enable-cot",
        overrides_with = "accuracy_enable_cot"
    )]
    pub accuracy_no_enable_cot: bool,

    /// Grader instead of the benchmark's own.
    #[arg(long = "accuracy-grader")]
    pub accuracy_grader: Option<AccuracyGrader>,

    /// System prompt instead of the benchmark's (aime asks for a \boxed{} answer).
    #[arg(long = "accuracy-system-prompt")]
    pub accuracy_system_prompt: Option<String>,

    /// Log every graded reply (extracted answer, expected answer, why).
    #[arg(long = "accuracy-verbose")]
    pub accuracy_verbose: bool,
}

impl AccuracyArgs {
    /// The accuracy configuration, or `None` without a benchmark. Like 0.13, another
    /// `--accuracy-*` flag without `--accuracy-benchmark` is an error, not a silent no-op.
    pub(crate) fn to_config(&self) -> anyhow::Result<Option<AccuracyConfig>> {
        let enable_cot = match (self.accuracy_enable_cot, self.accuracy_no_enable_cot) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        let Some(benchmark) = self.accuracy_benchmark else {
            let set: Vec<&str> = [
                (!self.accuracy_tasks.is_empty(), "--accuracy-tasks"),
                (self.accuracy_n_shots.is_some(), "--accuracy-n-shots"),
                (enable_cot.is_some(), "--accuracy-enable-cot"),
                (self.accuracy_grader.is_some(), "--accuracy-grader"),
                (
                    self.accuracy_system_prompt.is_some(),
                    "--accuracy-system-prompt",
                ),
                (self.accuracy_verbose, "--accuracy-verbose"),
            ]
            .into_iter()
            .filter_map(|(given, flag)| given.then_some(flag))
            .collect();
            if set.is_empty() {
                return Ok(None);
            }
            anyhow::bail!(
                "{} set without --accuracy-benchmark, which accuracy mode needs",
                set.join(", ")
            );
        };
        Ok(Some(AccuracyConfig {
            benchmark,
            tasks: self.accuracy_tasks.clone(),
            n_shots: self.accuracy_n_shots,
            enable_cot,
            grader: self.accuracy_grader,
            system_prompt: self.accuracy_system_prompt.clone(),
            verbose: self.accuracy_verbose,
        }))
    }
}
