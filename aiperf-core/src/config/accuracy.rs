//! Accuracy mode (`--accuracy-*`): which benchmark's questions are sent and how the
//! replies are graded, beside the usual latency metrics of the same run.

use serde::{Deserialize, Serialize};

use super::{out_of_range, ConfigError};

/// The most few-shot examples a prompt may carry (the Python AIPerf 0.13's bound).
pub const MAX_N_SHOTS: u32 = 32;

/// Accuracy mode: the questions of `benchmark` are the run's prompts and every reply is
/// graded after its request completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyConfig {
    /// `--accuracy-benchmark`.
    pub benchmark: AccuracyBenchmark,
    /// `--accuracy-tasks`: the subjects or subtasks to ask; empty (or `all`) asks every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// `--accuracy-n-shots`: worked examples before each question; `None` takes the
    /// benchmark's default.
    #[serde(default)]
    pub n_shots: Option<u32>,
    /// `--accuracy-enable-cot`: ask for step-by-step reasoning; `None` takes the
    /// benchmark's default.
    #[serde(default)]
    pub enable_cot: Option<bool>,
    /// `--accuracy-grader`: `None` takes the benchmark's grader.
    #[serde(default)]
    pub grader: Option<AccuracyGrader>,
    /// `--accuracy-system-prompt`: replaces the benchmark's system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// `--accuracy-verbose`: log every graded reply.
    #[serde(default)]
    pub verbose: bool,
}

impl AccuracyConfig {
    /// Checks the few-shot bound and refuses what cannot run safely here.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(n) = self.n_shots.filter(|n| *n > MAX_N_SHOTS) {
            return Err(out_of_range("accuracy.n_shots", "from 0 to 32", n));
        }
        let grader = self.grader.unwrap_or(self.benchmark.default_grader());
        if self.benchmark == AccuracyBenchmark::LcbCodegeneration
            || grader == AccuracyGrader::CodeExecution
        {
            return Err(ConfigError::Invalid {
                field: "accuracy",
                reason: CODE_EXECUTION_REFUSED.to_owned(),
            });
        }
        Ok(())
    }

    /// The grader that scores the replies: the one asked for, else the benchmark's.
    pub fn effective_grader(&self) -> AccuracyGrader {
        self.grader.unwrap_or(self.benchmark.default_grader())
    }
}

/// Why `lcb_codegeneration` and the `code_execution` grader do not run.
pub const CODE_EXECUTION_REFUSED: &str =
    "lcb_codegeneration and the code_execution grader run the model's Python code, and \
     aiperf-rs refuses to: time and memory limits on a child process do not keep that code \
     away from the network and your files; grade LiveCodeBench with the Python AIPerf in a \
     container instead";

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every value, in the Python AIPerf 0.13's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The name the flag takes.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        let names: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                        format!("unknown value '{s}': expected one of {}", names.join(", "))
                    })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum! {
    /// The accuracy benchmarks of the Python AIPerf 0.13.
    AccuracyBenchmark {
        /// MMLU, 57 subjects, four options.
        Mmlu = "mmlu",
        /// MMLU-Pro, 14 categories, up to ten options, chain of thought.
        MmluPro = "mmlu_pro",
        /// AIME 2024 in the DeepEval recipe's format (`Maxwell-Jia/AIME_2024`).
        Aime = "aime",
        /// HellaSwag sentence completion.
        Hellaswag = "hellaswag",
        /// BigBench-Hard.
        Bigbench = "bigbench",
        /// AIME 2024, zero-shot (`HuggingFaceH4/aime_2024`).
        Aime24 = "aime24",
        /// AIME 2025, zero-shot (`yentinglin/aime_2025`).
        Aime25 = "aime25",
        /// MATH-500.
        Math500 = "math_500",
        /// GSM8K grade-school maths.
        Gsm8k = "gsm8k",
        /// GPQA Diamond.
        GpqaDiamond = "gpqa_diamond",
        /// LiveCodeBench code generation (refused: see [`CODE_EXECUTION_REFUSED`]).
        LcbCodegeneration = "lcb_codegeneration",
    }
}

named_enum! {
    /// The graders of the Python AIPerf 0.13.
    AccuracyGrader {
        /// The stripped reply equals the stripped answer, byte for byte.
        ExactMatch = "exact_match",
        /// Mathematical equivalence after answer normalisation.
        Math = "math",
        /// The chosen letter A-D.
        MultipleChoice = "multiple_choice",
        /// Runs generated code (refused: see [`CODE_EXECUTION_REFUSED`]).
        CodeExecution = "code_execution",
        /// Maths with a bare expression as the answer (AIME 24/25).
        LightevalExpr = "lighteval_expr",
        /// Maths with a LaTeX solution holding a `\boxed{}` answer (MATH-500).
        LightevalLatex = "lighteval_latex",
        /// The letter after `Answer:` (GPQA Diamond).
        LightevalGpqa = "lighteval_gpqa",
        /// The number after `####`, else the last number (GSM8K).
        LightevalGsm8k = "lighteval_gsm8k",
        /// The chosen letter A-J through the MMLU-Pro cascade.
        MmluPro = "mmlu_pro",
    }
}

impl AccuracyBenchmark {
    /// The grader the benchmark is scored with unless `--accuracy-grader` says otherwise.
    pub fn default_grader(self) -> AccuracyGrader {
        match self {
            Self::Mmlu => AccuracyGrader::MultipleChoice,
            Self::MmluPro => AccuracyGrader::MmluPro,
            Self::Aime => AccuracyGrader::Math,
            Self::Hellaswag | Self::Bigbench => AccuracyGrader::ExactMatch,
            Self::Aime24 | Self::Aime25 => AccuracyGrader::LightevalExpr,
            Self::Math500 => AccuracyGrader::LightevalLatex,
            Self::Gsm8k => AccuracyGrader::LightevalGsm8k,
            Self::GpqaDiamond => AccuracyGrader::LightevalGpqa,
            Self::LcbCodegeneration => AccuracyGrader::CodeExecution,
        }
    }

    /// Few-shot examples per prompt unless `--accuracy-n-shots` says otherwise.
    pub fn default_n_shots(self) -> u32 {
        match self {
            Self::Mmlu | Self::MmluPro => 5,
            Self::Aime => 8,
            Self::Hellaswag => 10,
            Self::Bigbench => 3,
            _ => 0,
        }
    }

    /// Whether prompts ask for step-by-step reasoning unless `--accuracy-enable-cot`
    /// says otherwise.
    pub fn default_enable_cot(self) -> bool {
        matches!(self, Self::MmluPro | Self::Aime | Self::Bigbench)
    }

    /// The system prompt sent unless `--accuracy-system-prompt` replaces it.
    pub fn default_system_prompt(self) -> Option<&'static str> {
        (self == Self::Aime)
            .then_some("Please reason step by step, and put your final answer within \\boxed{}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(benchmark: AccuracyBenchmark) -> AccuracyConfig {
        AccuracyConfig {
            benchmark,
            tasks: Vec::new(),
            n_shots: None,
            enable_cot: None,
            grader: None,
            system_prompt: None,
            verbose: false,
        }
    }

    #[test]
    fn names_parse_back_and_unknown_names_list_the_choices() {
        for b in AccuracyBenchmark::ALL {
            assert_eq!(b.as_str().parse::<AccuracyBenchmark>(), Ok(*b));
        }
        assert_eq!(AccuracyBenchmark::ALL.len(), 11);
        assert_eq!(AccuracyGrader::ALL.len(), 9);
        let err = "mmlu2".parse::<AccuracyBenchmark>().unwrap_err();
        assert!(err.starts_with("unknown value 'mmlu2': expected one of mmlu, mmlu_pro, aime,"));
    }

    #[test]
    fn code_execution_is_refused_with_the_reason() {
        let err = config(AccuracyBenchmark::LcbCodegeneration)
            .validate()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("invalid accuracy: {CODE_EXECUTION_REFUSED}")
        );
        let mut mmlu = config(AccuracyBenchmark::Mmlu);
        mmlu.grader = Some(AccuracyGrader::CodeExecution);
        assert!(mmlu.validate().is_err());
        mmlu.grader = None;
        mmlu.n_shots = Some(33);
        assert_eq!(
            mmlu.validate().unwrap_err().to_string(),
            "accuracy.n_shots must be from 0 to 32, got 33"
        );
        mmlu.n_shots = Some(32);
        assert!(mmlu.validate().is_ok());
    }
}
