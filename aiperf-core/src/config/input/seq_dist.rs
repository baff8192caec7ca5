//! `--seq-dist`: a weighted mix of (ISL, OSL) pairs, in the three syntaxes of
//! docs/cli-rules.md#sequence-distributions.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

const FLAG: &str = "input.sequence_distribution";

/// One (ISL, OSL) pair of a [`SequenceDistribution`] and its probability in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeqDistPair {
    /// Mean input length in tokens.
    pub isl: u32,
    /// Input length standard deviation (0: always `isl`).
    #[serde(default)]
    pub isl_stddev: f64,
    /// Mean output length in tokens.
    pub osl: u32,
    /// Output length standard deviation (0: always `osl`).
    #[serde(default)]
    pub osl_stddev: f64,
    /// Probability in percent; the pairs' probabilities sum to 100.
    pub prob: f64,
}

/// A weighted mix of (ISL, OSL) pairs; each synthetic turn samples one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceDistribution {
    /// The pairs, in the order given.
    pub pairs: Vec<SeqDistPair>,
}

impl SequenceDistribution {
    /// Parses the semicolon (`256,128:60;512|20,64|5:40`), bracket
    /// (`[(256,128):60,(512,64):40]`) or JSON (`{"pairs":[{"isl":…,"osl":…,"prob":…}]}`)
    /// syntax, then [checks](Self::check) the pairs.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let text = text.trim();
        let pairs = if text.starts_with('{') {
            let parsed: SequenceDistribution = serde_json::from_str(text)
                .map_err(|e| invalid(format!("JSON {text:?} is not {{\"pairs\": [{{\"isl\", \"osl\", \"prob\", \"isl_stddev\"?, \"osl_stddev\"?}}]}}: {e}")))?;
            parsed.pairs
        } else if let Some(inner) = text.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| invalid(format!("{text:?} opens with [ but does not end with ]")))?;
            bracket_entries(inner)?
                .into_iter()
                .map(|(pair, prob)| parse_entry(pair, prob, pair))
                .collect::<Result<_, _>>()?
        } else {
            text.split(';')
                .map(str::trim)
                .filter(|entry| !entry.is_empty())
                .map(|entry| {
                    let (pair, prob) = entry.rsplit_once(':').ok_or_else(|| {
                        invalid(format!(
                            "entry {entry:?} has no `:PROB` (expected ISL,OSL:PROB)"
                        ))
                    })?;
                    parse_entry(pair, prob, entry)
                })
                .collect::<Result<_, _>>()?
        };
        let distribution = Self { pairs };
        distribution.check()?;
        Ok(distribution)
    }

    /// The rules every distribution follows: at least one pair, lengths ≥ 1, stddevs and
    /// probabilities ≥ 0, probabilities summing to 100 (within 1e-6).
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.pairs.is_empty() {
            return Err(invalid("no ISL,OSL:PROB pair given".into()));
        }
        for p in &self.pairs {
            let name = format!("({},{}):{}", p.isl, p.osl, p.prob);
            if p.isl == 0 || p.osl == 0 {
                return Err(invalid(format!(
                    "pair {name}: ISL and OSL must be at least 1"
                )));
            }
            let finite_non_negative = |v: f64| v.is_finite() && v >= 0.0;
            if !(finite_non_negative(p.isl_stddev) && finite_non_negative(p.osl_stddev)) {
                return Err(invalid(format!("pair {name}: stddevs must be 0 or more")));
            }
            if !finite_non_negative(p.prob) {
                return Err(invalid(format!(
                    "pair {name}: probability must be 0 or more"
                )));
            }
        }
        let total: f64 = self.pairs.iter().map(|p| p.prob).sum();
        if (total - 100.0).abs() > 1e-6 {
            return Err(invalid(format!(
                "probabilities sum to {total}, they must sum to 100"
            )));
        }
        Ok(())
    }
}

fn invalid(reason: String) -> ConfigError {
    ConfigError::Invalid {
        field: FLAG,
        reason,
    }
}

/// Splits `(a,b):p,(c,d):q` into `[("a,b", "p"), ("c,d", "q")]`.
fn bracket_entries(inner: &str) -> Result<Vec<(&str, &str)>, ConfigError> {
    let mut entries = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let body = rest
            .strip_prefix('(')
            .ok_or_else(|| invalid(format!("{rest:?} does not start with `(ISL,OSL):PROB`")))?;
        let (pair, after) = body
            .split_once(')')
            .ok_or_else(|| invalid(format!("{rest:?} has no closing )")))?;
        let after = after
            .trim_start()
            .strip_prefix(':')
            .ok_or_else(|| invalid(format!("pair ({pair}) is not followed by `:PROB`")))?;
        let (prob, next) = after.split_once(',').unwrap_or((after, ""));
        entries.push((pair, prob));
        rest = next.trim();
    }
    Ok(entries)
}

/// `ISL[|SD],OSL[|SD]` and `PROB`; `entry` is quoted in errors.
fn parse_entry(pair: &str, prob: &str, entry: &str) -> Result<SeqDistPair, ConfigError> {
    let (isl, osl) = pair
        .split_once(',')
        .ok_or_else(|| invalid(format!("entry {entry:?}: {pair:?} is not ISL,OSL")))?;
    let (isl, isl_stddev) = length(isl, "ISL", entry)?;
    let (osl, osl_stddev) = length(osl, "OSL", entry)?;
    let prob = prob.trim();
    let prob = prob.parse::<f64>().map_err(|_| {
        invalid(format!(
            "entry {entry:?}: probability {prob:?} is not a number"
        ))
    })?;
    Ok(SeqDistPair {
        isl,
        isl_stddev,
        osl,
        osl_stddev,
        prob,
    })
}

/// `N` or `N|SD`.
fn length(text: &str, what: &str, entry: &str) -> Result<(u32, f64), ConfigError> {
    let (mean, stddev) = match text.split_once('|') {
        Some((mean, stddev)) => (mean.trim(), Some(stddev.trim())),
        None => (text.trim(), None),
    };
    let mean = mean.parse::<u32>().map_err(|_| {
        invalid(format!(
            "entry {entry:?}: {what} {mean:?} is not an integer"
        ))
    })?;
    let stddev = match stddev {
        Some(sd) => sd.parse::<f64>().map_err(|_| {
            invalid(format!(
                "entry {entry:?}: {what} stddev {sd:?} is not a number"
            ))
        })?,
        None => 0.0,
    };
    Ok((mean, stddev))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(isl: u32, isl_sd: f64, osl: u32, osl_sd: f64, prob: f64) -> SeqDistPair {
        SeqDistPair {
            isl,
            isl_stddev: isl_sd,
            osl,
            osl_stddev: osl_sd,
            prob,
        }
    }

    #[test]
    fn the_three_syntaxes_parse_to_the_same_pairs() {
        let expected = vec![
            pair(256, 10.0, 128, 5.0, 60.0),
            pair(512, 0.0, 64, 0.0, 40.0),
        ];
        let semicolon = SequenceDistribution::parse(" 256|10, 128|5 : 60 ; 512,64:40 ;").unwrap();
        let bracket = SequenceDistribution::parse("[(256|10,128|5):60, (512,64):40]").unwrap();
        let json = SequenceDistribution::parse(
            r#"{"pairs":[{"isl":256,"isl_stddev":10,"osl":128,"osl_stddev":5,"prob":60},
                         {"isl":512,"osl":64,"prob":40}]}"#,
        )
        .unwrap();
        assert_eq!(semicolon.pairs, expected);
        assert_eq!(bracket.pairs, expected);
        assert_eq!(json.pairs, expected);
    }

    #[test]
    fn decimal_probabilities_are_accepted() {
        let d = SequenceDistribution::parse("10,10:33.3;20,20:66.7").unwrap();
        assert_eq!(d.pairs[1].prob, 66.7);
    }

    #[test]
    fn errors_name_the_offending_part() {
        let err = |text| SequenceDistribution::parse(text).unwrap_err().to_string();
        assert_eq!(
            err("abc,12:50;10,10:50"),
            r#"invalid input.sequence_distribution: entry "abc,12:50": ISL "abc" is not an integer"#
        );
        assert_eq!(
            err("10,10:50;10,x|2:50"),
            r#"invalid input.sequence_distribution: entry "10,x|2:50": OSL "x" is not an integer"#
        );
        assert_eq!(
            err("10,10|a:100"),
            r#"invalid input.sequence_distribution: entry "10,10|a:100": OSL stddev "a" is not a number"#
        );
        assert_eq!(
            err("10,10"),
            r#"invalid input.sequence_distribution: entry "10,10" has no `:PROB` (expected ISL,OSL:PROB)"#
        );
        assert_eq!(
            err("10,10:60;20,20:30"),
            "invalid input.sequence_distribution: probabilities sum to 90, they must sum to 100"
        );
        assert_eq!(
            err("[(10,10):100"),
            r#"invalid input.sequence_distribution: "[(10,10):100" opens with [ but does not end with ]"#
        );
        assert_eq!(
            err("[(10,10)100]"),
            "invalid input.sequence_distribution: pair (10,10) is not followed by `:PROB`"
        );
        assert_eq!(
            err("0,10:100"),
            "invalid input.sequence_distribution: pair (0,10):100: ISL and OSL must be at least 1"
        );
        assert!(err(r#"{"pairs":[{"isl":1}]}"#)
            .starts_with("invalid input.sequence_distribution: JSON"));
        assert_eq!(
            err(""),
            "invalid input.sequence_distribution: no ISL,OSL:PROB pair given"
        );
    }
}
