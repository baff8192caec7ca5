//! `--random-range-ratio`: input and output lengths drawn uniformly from a window around
//! their means (the vLLM `bench serve` style of the Python AIPerf 0.13).

use serde::{Deserialize, Serialize};

use super::super::ConfigError;

/// The half-widths of the ISL and OSL windows, as fractions of the means, each in [0, 1).
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
    /// Parses `0.3` (both lengths) or `{"input": 0.3, "output": 0.5}`.
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
        ratio.check()?;
        Ok(ratio)
    }

    /// Checks that both ratios are in [0, 1).
    pub fn check(&self) -> Result<(), ConfigError> {
        for (which, ratio) in [("input", self.input), ("output", self.output)] {
            if !(ratio.is_finite() && (0.0..1.0).contains(&ratio)) {
                return Err(ConfigError::Invalid {
                    field: FIELD,
                    reason: format!(
                        "the {which} ratio must be at least 0 and below 1, got {ratio}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The input length window `[floor(mean·(1−r)), ceil(mean·(1+r))]`, at least 1 token
    /// (the Python AIPerf lets the low end reach 0, an empty prompt).
    pub fn input_bounds(&self, mean: u32) -> (u32, u32) {
        window(mean, self.input)
    }

    /// The output length window `[floor(mean·(1−r)), ceil(mean·(1+r))]`, at least 1.
    pub fn output_bounds(&self, mean: u32) -> (u32, u32) {
        window(mean, self.output)
    }
}

fn window(mean: u32, ratio: f64) -> (u32, u32) {
    let mean = f64::from(mean);
    let low = (mean * (1.0 - ratio)).floor().max(1.0);
    let high = (mean * (1.0 + ratio)).ceil().max(1.0);
    // Both are whole numbers of at most twice a u32.
    (low as u32, high.min(f64::from(u32::MAX)) as u32)
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
        assert_eq!(ratio.input_bounds(100), (75, 125));
        assert_eq!(ratio.output_bounds(10), (5, 15));
        assert_eq!(ratio.input_bounds(3), (2, 4), "floor and ceil");
        assert_eq!(
            RangeRatio {
                input: 0.9,
                output: 0.0
            }
            .input_bounds(1),
            (1, 2)
        );
    }

    #[test]
    fn bad_ratios_are_refused() {
        for text in [
            "1",
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
            "invalid input.random_range_ratio: the input ratio must be at least 0 and below 1, got 1.5"
        );
    }
}
