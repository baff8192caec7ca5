//! GSM8K (`lighteval_gsm8k`): the number after `####` in the gold solution against the
//! reply's `####` number, else its last number (flagged unparsed: a chat model rarely
//! writes `####`), compared as numbers so `24` and `24.0` agree.

use std::sync::LazyLock;

use regex::Regex;

use super::Grade;

const INVALID: &str = "[invalid]";

#[allow(clippy::expect_used)] // constant patterns, checked by every test
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid constant pattern")
}

static MARKED: LazyLock<Regex> = LazyLock::new(|| re(r"#### (\-?[0-9\.\,]+)"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"-?[0-9][0-9,]*(?:\.[0-9]+)?"));

/// lighteval's `gsm8k_normalizer`: the number after `#### `, without commas.
fn marked_number(text: &str) -> Option<String> {
    MARKED.captures(text).map(|c| c[1].trim().replace(',', ""))
}

pub(super) fn grade(reply: &str, expected: &str) -> Grade {
    let gold = marked_number(expected.trim()).unwrap_or_else(|| INVALID.to_owned());
    let reply = reply.trim();
    let (pred, fallback) = match marked_number(reply) {
        Some(n) => (n, false),
        None => match NUMBER.find_iter(reply).last() {
            Some(m) => (m.as_str().replace(',', ""), true),
            None => (INVALID.to_owned(), true),
        },
    };
    let parsed = pred != INVALID;
    let correct = parsed
        && gold != INVALID
        && match (gold.parse::<f64>(), pred.parse::<f64>()) {
            (Ok(g), Ok(p)) => (g - p).abs() <= 1e-6,
            _ => gold == pred,
        };
    let note = match (parsed, fallback) {
        (false, _) => " (no number in the reply)",
        (true, true) => " (no #### marker: the last number was taken)",
        (true, false) => "",
    };
    Grade {
        explanation: format!("expected '{gold}', extracted '{pred}'; match={correct}{note}"),
        correct,
        unparsed: fallback || !parsed,
        extracted: pred,
        expected: gold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLD: &str = "She pays 3 * 8 = 24 dollars.\n#### 1,024";

    #[test]
    fn the_marked_number_is_clean_and_the_last_number_a_fallback() {
        let g = grade("work... #### 1024", GOLD);
        assert_eq!(
            (g.correct, g.unparsed, g.expected.as_str()),
            (true, false, "1024")
        );
        let g = grade("So the answer is 1,024.0 dollars", GOLD);
        assert_eq!(
            (g.correct, g.unparsed, g.extracted.as_str()),
            (true, true, "1024.0")
        );
        let g = grade("It costs 1024 dollars, or 3 per day", GOLD);
        assert_eq!((g.correct, g.extracted.as_str()), (false, "3"));
        let g = grade("no idea", GOLD);
        assert_eq!(
            (g.correct, g.unparsed, g.extracted.as_str()),
            (false, true, "[invalid]")
        );
        assert!(!grade("#### 5", "no marker").correct);
    }
}
