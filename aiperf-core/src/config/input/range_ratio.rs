//! `--random-range-ratio`: input and output lengths drawn uniformly from a window around
//! their means, shaped by the [`RandomCorpusStyle`] (vLLM's `bench serve` or SGLang's
//! `benchmark.serving`, as in the Python AIPerf 0.13).

use serde::{Deserialize, Serialize};

use super::super::ConfigError;
use super::RandomCorpusStyle;

/// The ISL and OSL window ratios: fractions of the means, each in [0, 1) for the vLLM
/// style and [0, 1] for the SGLang style.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RangeRatio {
    /// Ratio of the input length window.
    pub input: f64,
    /// Ratio of the output length window.
    pub output: f64,
}

const FIELD: &str = "input.random_range_ratio";

/// The JSON spelling `{"input": r, "output": r}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RatioPair {
    input: f64,
    output: f64,
}

impl RangeRatio {
    /// Parses `0.3` (both lengths) or `{"input": 0.3, "output": 0.5}`, each in [0, 1]
    /// (which style allows 1 is checked by [`RangeRatio::check`]).
    ///
    /// ```
    /// use aiperf_core::config::RangeRatio;
    ///
    /// assert_eq!(RangeRatio::parse("0.3").unwrap(), RangeRatio { input: 0.3, output: 0.3 });
    /// let both = RangeRatio::parse(r#"{"input": 0.1, "output": 0.5}"#).unwrap();
    /// assert_eq!(both, RangeRatio { input: 0.1, output: 0.5 });
    /// ```
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let invalid = |reason: String| ConfigError::Invalid {
            field: FIELD,
            reason,
        };
        let text = text.trim();
        if let Ok(ratio) = text.parse::<f64>() {
            return Self::checked(ratio, ratio);
        }
        let pair: RatioPair = serde_json::from_str(text).map_err(|e| {
            invalid(format!(
                "{text:?} is neither a number nor a JSON object with \"input\" and \
                 \"output\": {e}"
            ))
        })?;
        Self::checked(pair.input, pair.output)
    }

    fn checked(input: f64, output: f64) -> Result<Self, ConfigError> {
        let ratio = Self { input, output };
        ratio.check_each("at most 1", |r| r <= 1.0)?;
        Ok(ratio)
    }

    /// Checks that both ratios are in [0, 1) (vLLM style) or [0, 1] (SGLang style, where 1
    /// fixes the length at the mean).
    pub fn check(&self, style: RandomCorpusStyle) -> Result<(), ConfigError> {
        match style {
            RandomCorpusStyle::Vllm => self.check_each(
                "below 1 (with input.prompt.random_corpus_style vllm)",
                |r| r < 1.0,
            ),
            RandomCorpusStyle::Sglang => self.check_each("at most 1", |r| r <= 1.0),
        }
    }

    fn check_each(&self, limit: &str, within: impl Fn(f64) -> bool) -> Result<(), ConfigError> {
        for (which, ratio) in [("input", self.input), ("output", self.output)] {
            if !(ratio.is_finite() && ratio >= 0.0 && within(ratio)) {
                return Err(ConfigError::Invalid {
                    field: FIELD,
                    reason: format!(
                        "the {which} ratio must be at least 0 and {limit}, got {ratio}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The input length window for a mean of `mean` tokens, at least 1 token (the Python
    /// AIPerf lets the vLLM window's low end reach 0, an empty prompt). The caller takes
    /// the tokenizer's special tokens off: off `mean` for the vLLM style, off each drawn
    /// length for the SGLang style.
    pub fn input_bounds(&self, mean: u32, style: RandomCorpusStyle) -> (u32, u32) {
        window(mean, self.input, style)
    }

    /// The output length window for a mean of `mean` tokens, at least 1.
    pub fn output_bounds(&self, mean: u32, style: RandomCorpusStyle) -> (u32, u32) {
        window(mean, self.output, style)
    }
}

/// vLLM: `[floor(m·(1−r)), ceil(m·(1+r))]`; SGLang: `[max(1, int(m·r)), m]`.
fn window(mean: u32, ratio: f64, style: RandomCorpusStyle) -> (u32, u32) {
    let m = f64::from(mean);
    let (low, high) = match style {
        RandomCorpusStyle::Vllm => ((m * (1.0 - ratio)).floor(), (m * (1.0 + ratio)).ceil()),
        RandomCorpusStyle::Sglang => ((m * ratio).trunc(), m),
    };
    // Both are whole numbers of at most twice a u32.
    (
        low.max(1.0) as u32,
        high.max(1.0).min(f64::from(u32::MAX)) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_the_vllm_formula() {
        let ratio = RangeRatio {
            input: 0.25,
            output: 0.5,
        };
        let vllm = RandomCorpusStyle::Vllm;
        assert_eq!(ratio.input_bounds(100, vllm), (75, 125));
        assert_eq!(ratio.output_bounds(10, vllm), (5, 15));
        assert_eq!(ratio.input_bounds(3, vllm), (2, 4), "floor and ceil");
        assert_eq!(
            RangeRatio {
                input: 0.9,
                output: 0.0
            }
            .input_bounds(1, vllm),
            (1, 2)
        );
    }

    #[test]
    fn windows_follow_the_sglang_formula() {
        let sglang = RandomCorpusStyle::Sglang;
        let ratio = RangeRatio {
            input: 0.25,
            output: 0.5,
        };
        assert_eq!(ratio.input_bounds(550, sglang), (137, 550), "int(137.5)");
        assert_eq!(ratio.output_bounds(11, sglang), (5, 11), "int(5.5)");
        let zero = RangeRatio {
            input: 0.0,
            output: 0.0,
        };
        assert_eq!(zero.input_bounds(100, sglang), (1, 100), "at least 1");
        let one = RangeRatio {
            input: 1.0,
            output: 1.0,
        };
        assert_eq!(
            one.input_bounds(100, sglang),
            (100, 100),
            "fixed at the mean"
        );
        one.check(sglang).unwrap();
        assert_eq!(
            one.check(RandomCorpusStyle::Vllm).unwrap_err().to_string(),
            "invalid input.random_range_ratio: the input ratio must be at least 0 and below 1 \
             (with input.prompt.random_corpus_style vllm), got 1"
        );
    }

    #[test]
    fn bad_ratios_are_refused() {
        for text in [
            "1.01",
            "-0.1",
            "nan",
            "{\"input\": 0.1}",
            "{\"input\": 0.1, \"output\": 0.2, \"x\": 1}",
            "abc",
        ] {
            assert!(RangeRatio::parse(text).is_err(), "{text}");
        }
        assert_eq!(
            RangeRatio::parse("1.5").unwrap_err().to_string(),
            "invalid input.random_range_ratio: the input ratio must be at least 0 and at most 1, got 1.5"
        );
    }
}
