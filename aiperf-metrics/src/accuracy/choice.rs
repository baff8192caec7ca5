//! Letter answers: which option a reply chose, as the Python AIPerf 0.13 reads it (the
//! TIGER-AI-Lab MMLU-Pro cascade, lighteval's first-line rule for MMLU).

use std::sync::LazyLock;

use regex::Regex;

use super::Grade;

/// How an extracted letter was found: the cascade's tiers, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// "the answer is (X)", the format the prompts ask for.
    AnswerIs,
    /// "Answer: X".
    AnswerColon,
    /// The last letter standing alone.
    LastLone,
}

static ANSWER_IS: LazyLock<Regex> = LazyLock::new(|| re(r"answer is \(?([A-J])\)?"));
static ANSWER_COLON: LazyLock<Regex> = LazyLock::new(|| re(r"[aA]nswer:\s*([A-J])"));
static LONE_LETTER: LazyLock<Regex> = LazyLock::new(|| re(r"\b[A-J]\b"));

#[allow(clippy::expect_used)] // constant patterns, checked by every test
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid constant pattern")
}

/// The chosen letter among `letters` (a prefix of `ABCDEFGHIJ`) and how it was found.
/// Tier 1 takes the last "answer is (X)" (a reasoning trace may change its mind); tier 2
/// the last "Answer: X"; tier 3 the last letter standing alone (not inside a word).
fn extract_letter(text: &str, letters: &str) -> Option<(char, Tier)> {
    let in_range = |m: &str| m.chars().next().filter(|c| letters.contains(*c));
    let last = |re: &Regex| {
        re.captures_iter(text)
            .filter_map(|c| in_range(c.get(1)?.as_str()))
            .last()
    };
    if let Some(letter) = last(&ANSWER_IS) {
        return Some((letter, Tier::AnswerIs));
    }
    if let Some(letter) = last(&ANSWER_COLON) {
        return Some((letter, Tier::AnswerColon));
    }
    LONE_LETTER
        .find_iter(text)
        .filter_map(|m| in_range(m.as_str()))
        .last()
        .map(|letter| (letter, Tier::LastLone))
}

fn first_line(text: &str) -> &str {
    text.split('\n').next().unwrap_or_default().trim()
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first A-D letter of `line` with no word character on either side ("B.", "**B**",
/// "(B)").
fn first_lone_abcd(line: &str) -> Option<char> {
    let chars: Vec<char> = line.chars().collect();
    chars.iter().enumerate().find_map(|(i, &c)| {
        let alone = ('A'..='D').contains(&c)
            && (i == 0 || !is_word_char(chars[i - 1]))
            && chars.get(i + 1).is_none_or(|n| !is_word_char(*n));
        alone.then_some(c)
    })
}

fn letter_grade(extracted: String, unparsed: bool, expected: &str, how: &str) -> Grade {
    let expected = expected.trim().to_owned();
    let correct = !extracted.is_empty() && extracted == expected;
    Grade {
        explanation: format!("{how} '{extracted}'; expected '{expected}'; match={correct}"),
        correct,
        unparsed,
        extracted,
        expected,
    }
}

/// `multiple_choice` (MMLU): a bare A-D first line is a clean answer (lighteval stops at
/// the first newline); then "the answer is (X)" anywhere; then, flagged unparsed,
/// "Answer: X", a lone letter on the first line, the last lone letter anywhere.
pub(super) fn multiple_choice(reply: &str, expected: &str) -> Grade {
    let line = first_line(reply);
    let (extracted, unparsed) = if matches!(line, "A" | "B" | "C" | "D") {
        (line.to_owned(), false)
    } else {
        match extract_letter(reply, "ABCD") {
            Some((letter, Tier::AnswerIs)) => (letter.to_string(), false),
            Some((letter, Tier::AnswerColon)) => (letter.to_string(), true),
            found => match (first_lone_abcd(line), found) {
                (Some(letter), _) | (None, Some((letter, _))) => (letter.to_string(), true),
                (None, None) => (line.to_owned(), true),
            },
        }
    };
    letter_grade(extracted, unparsed, expected, "extracted")
}

/// `mmlu_pro`: a single A-J letter as the first line is clean; else the cascade over the
/// whole reply, unparsed unless it found "the answer is (X)".
pub(super) fn mmlu_pro(reply: &str, expected: &str) -> Grade {
    let line = first_line(reply);
    let (extracted, unparsed) = if line.len() == 1 && "ABCDEFGHIJ".contains(line) {
        (line.to_owned(), false)
    } else {
        match extract_letter(reply, "ABCDEFGHIJ") {
            Some((letter, tier)) => (letter.to_string(), tier != Tier::AnswerIs),
            None => (String::new(), true),
        }
    };
    letter_grade(extracted, unparsed, expected, "extracted")
}

/// `lighteval_gpqa`: the letter of the last "Answer: X" line the prompt asks for is
/// clean; "the answer is (X)" or a last lone letter are accepted but flagged unparsed.
/// The expected answer is a letter A-D (any case, spaces around it ignored).
pub(super) fn gpqa(reply: &str, expected: &str) -> Grade {
    let expected_letter = expected.trim().to_uppercase();
    if !matches!(expected_letter.as_str(), "A" | "B" | "C" | "D") {
        return Grade {
            correct: false,
            unparsed: true,
            extracted: String::new(),
            expected: expected.trim().to_owned(),
            explanation: format!(
                "the expected answer '{}' is not a letter A-D",
                expected.trim()
            ),
        };
    }
    let (extracted, unparsed) = match extract_letter(reply, "ABCD") {
        Some((letter, Tier::AnswerColon)) => (letter.to_string(), false),
        Some((letter, _)) => (letter.to_string(), true),
        None => (String::new(), true),
    };
    letter_grade(extracted, unparsed, &expected_letter, "extracted")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mc(reply: &str) -> (String, bool) {
        let g = multiple_choice(reply, " B");
        (g.extracted, g.unparsed)
    }

    #[test]
    fn multiple_choice_reads_the_first_line_then_the_cascade() {
        assert_eq!(mc(" B\n\nQuestion: next"), ("B".into(), false));
        assert!(multiple_choice(" B\n\nQuestion:", " B").correct);
        // the options echoed in reasoning must not win over the stated answer
        assert_eq!(
            mc("A. 0, B. 4, C. 2, D. 6\nso the answer is (C)"),
            ("C".into(), false)
        );
        assert_eq!(mc("Thinking...\nAnswer: D"), ("D".into(), true));
        assert_eq!(mc("**B** is right"), ("B".into(), true));
        // "A" inside "ABC" is not a lone letter
        assert_eq!(mc("ABC then maybe C"), ("C".into(), true));
        assert_eq!(mc("no idea"), ("no idea".into(), true));
        let g = multiple_choice("", " A");
        assert!(!g.correct);
    }

    #[test]
    fn the_last_answer_is_wins_over_an_earlier_one() {
        let g = mmlu_pro(
            "maybe the answer is (A) ... actually the answer is (J).",
            "J",
        );
        assert_eq!(
            (g.extracted.as_str(), g.unparsed, g.correct),
            ("J", false, true)
        );
        let g = mmlu_pro("I pick FLAG then E", "E");
        assert_eq!((g.extracted.as_str(), g.unparsed), ("E", true));
        let g = mmlu_pro("H\nbecause", "H");
        assert_eq!((g.extracted.as_str(), g.unparsed), ("H", false));
    }

    #[test]
    fn gpqa_wants_the_answer_line() {
        let g = gpqa("Step 1...\nAnswer: C", " c ");
        assert_eq!(
            (g.correct, g.unparsed, g.expected.as_str()),
            (true, false, "C")
        );
        let g = gpqa("the answer is (B)", "B");
        assert_eq!((g.correct, g.unparsed), (true, true));
        let g = gpqa("Answer: A", "E");
        assert_eq!(
            (g.correct, g.unparsed, g.explanation.as_str()),
            (false, true, "the expected answer 'E' is not a letter A-D")
        );
    }
}
