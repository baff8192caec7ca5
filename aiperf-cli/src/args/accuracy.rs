//! Accuracy mode flags (`--accuracy-*`), with the Python AIPerf 0.13's names and defaults.

use aiperf_core::config::{AccuracyBenchmark, AccuracyConfig, AccuracyGrader};
use clap::Args;

/// Grade the replies to a benchmark's questions beside the latency metrics.
#[derive(Debug, Args)]
#[command(next_help_heading = "Accuracy")]
pub(crate) struct AccuracyArgs {
    /// Accuracy benchmark whose questions are sent and whose replies are graded; its rows
    /// come from --input-file (a JSONL file or a folder of <split>.jsonl files).
    #[arg(id = "accuracy_benchmark", long = "accuracy-benchmark")]
    pub benchmark: Option<AccuracyBenchmark>,

    /// Tasks (subjects, categories, subtasks) to ask, comma-separated or repeated.
    /// Default: every task.
    #[arg(id = "accuracy_tasks", long = "accuracy-tasks", value_delimiter = ',')]
    pub tasks: Vec<String>,

    /// Few-shot examples per prompt, 0 to 32. Default: the benchmark's (mmlu 5,
    /// mmlu_pro 5, aime 8, hellaswag 10, bigbench 3, else 0).
    #[arg(id = "accuracy_n_shots", long = "accuracy-n-shots")]
    pub n_shots: Option<u32>,

    /// Ask for step-by-step reasoning. Default: the benchmark's (on for mmlu_pro, aime and
    /// bigbench).
    #[arg(
        id = "accuracy_enable_cot",
        long = "accuracy-enable-cot",
        overrides_with = "accuracy_no_enable_cot"
    )]
    pub enable_cot: bool,

    /// Do not ask for step-by-step reasoning.
    #[arg(
        id = "accuracy_no_enable_cot",
        long = "accuracy-no-enable-cot",
        overrides_with = "accuracy_enable_cot"
    )]
    pub no_enable_cot: bool,

    /// Grader instead of the benchmark's own.
    #[arg(id = "accuracy_grader", long = "accuracy-grader")]
    pub grader: Option<AccuracyGrader>,

    /// System prompt instead of the benchmark's (aime asks for a \boxed{} answer).
    #[arg(id = "accuracy_system_prompt", long = "accuracy-system-prompt")]
    pub system_prompt: Option<String>,

    /// Log every graded reply (extracted answer, expected answer, why).
    #[arg(id = "accuracy_verbose", long = "accuracy-verbose")]
    pub verbose: bool,
}

impl AccuracyArgs {
    /// The accuracy configuration, or `None` without a benchmark. Like 0.13, another
    /// `--accuracy-*` flag without `--accuracy-benchmark` is an error, not a silent no-op.
    pub(crate) fn to_config(&self) -> anyhow::Result<Option<AccuracyConfig>> {
        let enable_cot = match (self.enable_cot, self.no_enable_cot) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        let Some(benchmark) = self.benchmark else {
            let set: Vec<&str> = [
                (!self.tasks.is_empty(), "--accuracy-tasks"),
                (self.n_shots.is_some(), "--accuracy-n-shots"),
                (enable_cot.is_some(), "--accuracy-enable-cot"),
                (self.grader.is_some(), "--accuracy-grader"),
                (self.system_prompt.is_some(), "--accuracy-system-prompt"),
                (self.verbose, "--accuracy-verbose"),
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
            tasks: self.tasks.clone(),
            n_shots: self.n_shots,
            enable_cot,
            grader: self.grader,
            system_prompt: self.system_prompt.clone(),
            verbose: self.verbose,
        }))
    }
}
