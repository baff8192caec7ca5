//! Maths answers: extract the final answer (last `\boxed{}`, then "the answer is …", then
//! the last number), normalise both sides as the Hendrycks MATH / trt-llm recipe's
//! `strip_string` does, and compare: text, choice letters, lists, numbers (with percent
//! variants), brackets, `x = v` forms, and exact rationals (`\frac{a}{b}`, `a/b`,
//! decimals). The Python AIPerf falls back to sympy for symbolic equivalence
//! (`\sqrt{2}` against `2^{1/2}`); that last step has no equivalent here.

use std::sync::LazyLock;

use regex::Regex;

use super::Grade;

const BOXED: &str = "\\boxed{";
const NUMERIC_TOLERANCE: f64 = 1e-4;
const MAX_DEPTH: u32 = 5;

#[allow(clippy::expect_used)] // constant patterns, checked by every test
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid constant pattern")
}

static ANSWER_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)(?:final\s+answer|the\s+answer\s+is|answer\s*[:=]|answer\s+is)\s*[:=]?\s*")
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"-?\d+(?:\.\d+)?(?:/\d+)?"));
static LATEX_HINT: LazyLock<Regex> = LazyLock::new(|| re(r"[\\{}]"));

/// `math` (and, with the gold taken as given or from its last `\boxed{}`, the
/// `lighteval_expr` / `lighteval_latex` graders): unparsed when the reply had no
/// `\boxed{}` answer.
pub(super) fn grade(reply: &str, expected: &str) -> Grade {
    let (extracted, unparsed) = extract(reply);
    let pred = strip_string(&extracted);
    let gold = strip_string(expected);
    let correct = math_equal(&pred, &gold, 0);
    Grade {
        explanation: format!(
            "extracted '{extracted}' (normalised '{pred}'); expected '{}' (normalised \
             '{gold}'); match={correct}",
            expected.trim()
        ),
        correct,
        unparsed,
        extracted,
        expected: expected.trim().to_owned(),
    }
}

/// The answer inside the last `\boxed{…}` of `text` (braces balanced).
pub(super) fn last_boxed(text: &str) -> Option<&str> {
    let start = text.rfind(BOXED)? + BOXED.len();
    let mut depth = 0usize;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(&text[start..start + i]),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The reply's answer and whether it was found other than in a `\boxed{}`.
fn extract(reply: &str) -> (String, bool) {
    if reply.is_empty() {
        return (String::new(), true);
    }
    if let Some(boxed) = last_boxed(reply) {
        return (tidy_boxed(boxed), false);
    }
    if let Some(tail) = last_answer_phrase(reply) {
        let tail = tail.trim();
        if let Some(boxed) = last_boxed(tail) {
            return (tidy_boxed(boxed), true);
        }
        if LATEX_HINT.is_match(tail) {
            return (tail.to_owned(), true);
        }
        let number = NUMBER.find_iter(tail).last().map(|m| m.as_str());
        return (number.unwrap_or(tail).to_owned(), true);
    }
    match NUMBER.find_iter(reply).last() {
        Some(m) => (m.as_str().to_owned(), true),
        None => (reply.trim().to_owned(), true),
    }
}

/// What follows the last "answer is" / "answer:" / "final answer", up to a sentence end
/// (a period not between digits), a newline or the end.
fn last_answer_phrase(text: &str) -> Option<&str> {
    let mut last = None;
    let mut from = 0;
    while let Some(m) = ANSWER_PHRASE.find_at(text, from) {
        let rest = &text[m.end()..];
        let mut end = rest.len();
        let chars: Vec<(usize, char)> = rest.char_indices().collect();
        // at least one character is taken, as the Python pattern's lazy `.+?` does
        for (k, &(i, c)) in chars.iter().enumerate().skip(1) {
            let digit_before = chars[k - 1].1.is_ascii_digit();
            let digit_after = chars.get(k + 1).is_some_and(|(_, n)| n.is_ascii_digit());
            if c == '\n' || (c == '.' && !digit_before && !digit_after) {
                end = i;
                break;
            }
        }
        if chars.first().is_some_and(|(_, c)| *c != '\n') {
            last = Some(&rest[..end]);
        }
        from = (m.end() + end).max(m.end() + 1).min(text.len());
        if from >= text.len() {
            break;
        }
        while !text.is_char_boundary(from) {
            from += 1;
        }
    }
    last
}

/// The recipe's clean-up of a boxed answer: newlines dropped, a leading `:` and a trailing
/// `.` or `/` removed.
fn tidy_boxed(boxed: &str) -> String {
    static NEWLINES: LazyLock<Regex> = LazyLock::new(|| re(r"\n\s*"));
    let mut s = NEWLINES.replace_all(boxed, "").into_owned();
    if s.starts_with(':') {
        s.remove(0);
    }
    if s.ends_with('.') {
        s.pop();
    }
    if s.ends_with('/') {
        s.pop();
    }
    s
}

/// Units and words the recipe strips when they stand alone (`(^|\W)unit($|\W)`), plus
/// their plurals. The entries are regular expressions as written upstream (`.` matches
/// any character).
const UNIT_TEXTS: &[&str] = &[
    "east",
    "degree",
    "mph",
    "kmph",
    "ft",
    "m square",
    " m east",
    "sq m",
    "deg",
    "mile",
    "q .",
    "monkey",
    "prime",
    "ratio",
    "profit of rs",
    "rd",
    "o",
    "gm",
    "p . m",
    "lb",
    "tile",
    "per",
    "dm",
    "lt",
    "gain",
    "ab",
    "way",
    "west",
    "a .",
    "b .",
    "c .",
    "d .",
    "e .",
    "f .",
    "g .",
    "h .",
    "t",
    "a",
    "h",
    "no change",
    "men",
    "soldier",
    "pie",
    "bc",
    "excess",
    "st",
    "inches",
    "noon",
    "percent",
    "by",
    "gal",
    "kmh",
    "c",
    "acre",
    "rise",
    "a . m",
    "th",
    "π r 2",
    "sq",
    "mark",
    "l",
    "toy",
    "coin",
    "sq . m",
    "gallon",
    "° f",
    "profit",
    "minw",
    "yr",
    "women",
    "feet",
    "am",
    "pm",
    "hr",
    "cu cm",
    "square",
    "v â € ™",
    "are",
    "rupee",
    "rounds",
    "cubic",
    "cc",
    "mtr",
    "s",
    "ohm",
    "number",
    "kmph",
    "day",
    "hour",
    "minute",
    "min",
    "second",
    "man",
    "woman",
    "sec",
    "cube",
    "mt",
    "sq inch",
    "mp",
    "∏ cm ³",
    "hectare",
    "more",
    "sec",
    "unit",
    "cu . m",
    "cm 2",
    "rs .",
    "rs",
    "kg",
    "g",
    "month",
    "km",
    "m",
    "cm",
    "mm",
    "apple",
    "liter",
    "loss",
    "yard",
    "pure",
    "year",
    "increase",
    "decrease",
    "d",
    "less",
    "Surface",
    "litre",
    "pi sq m",
    "s .",
    "metre",
    "meter",
    "inch",
];

static UNIT_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    UNIT_TEXTS
        .iter()
        .map(ToString::to_string)
        .chain(UNIT_TEXTS.iter().map(|u| format!("{u}s")))
        .map(|u| re(&format!(r"(^|\W){u}($|\W)")))
        .collect()
});

/// The recipe's `strip_string`: LaTeX and unit normalisation of an answer.
pub(super) fn strip_string(answer: &str) -> String {
    static ARRAY_BEGIN: LazyLock<Regex> = LazyLock::new(|| re(r"\\begin\{array\}\{.*?\}"));
    static TRAILING_TEXT: LazyLock<Regex> = LazyLock::new(|| re(r"\\text\{.*?\}$"));
    static TEXT: LazyLock<Regex> = LazyLock::new(|| re(r"\\text\{(.*?)\}"));
    static MONTHS: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(January|February|March|April|May|June|July|August|September|October|November|December)\b",
        )
    });
    static MBOX: LazyLock<Regex> = LazyLock::new(|| re(r"\\mbox\{.*?\}"));
    static TRAILING_ZEROS: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)\.0*([^\d])"));
    static END_ZEROS: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)\.0*$"));
    static SQRT: LazyLock<Regex> = LazyLock::new(|| re(r"\\sqrt(\w+)"));

    let mut s = answer.trim().replace('\n', "");
    s = s.trim_end_matches('.').replace("\\!", "");
    s = ARRAY_BEGIN.replace_all(&s, "\\begin{pmatrix}").into_owned();
    s = s
        .replace("\\end{array}", "\\end{pmatrix}")
        .replace("bmatrix", "pmatrix")
        .replace("tfrac", "frac")
        .replace("dfrac", "frac")
        .replace("\\neq", "\\ne")
        .replace("\\leq", "\\le")
        .replace("\\geq", "\\ge")
        .replace("\\left", "")
        .replace("\\right", "")
        .replace("\\{", "{")
        .replace("\\}", "}");
    let without_text = TRAILING_TEXT.replace(&s, "").trim().to_owned();
    if !without_text.is_empty() && without_text != s {
        s = without_text;
    }
    for unit in UNIT_PATTERNS.iter() {
        let stripped = unit.replace_all(&s, "${1}${2}");
        if !stripped.is_empty() {
            s = stripped.into_owned();
        }
    }
    s = s
        .replace("^{\\circ}", "")
        .replace("^\\circ", "")
        .replace("\\$", "")
        .replace('$', "")
        .replace("\\(", "")
        .replace("\\)", "");
    s = TEXT.replace_all(&s, "${1}").into_owned();
    for key in [
        "x=", "y=", "z=", "x\\in", "y\\in", "z\\in", "x\\to", "y\\to", "z\\to",
    ] {
        s = s.replace(key, "");
    }
    s = s
        .replace("\\emptyset", "{}")
        .replace("(-\\infty,\\infty)", "\\mathbb{R}")
        .replace("\\%", "")
        .replace('%', "");
    s = MONTHS.replace_all(&s, "").into_owned();
    s = s.replace(" .", " 0.").replace("{.", "{0.");
    s = s.replace("infinity", "\\infty");
    if !s.contains("\\infty") {
        s = s.replace("inf", "\\infty");
    }
    s = s
        .replace("+\\inity", "\\infty")
        .replace("and", "")
        .replace("\\mathbf", "");
    s = MBOX.replace_all(&s, "").into_owned();
    if s.contains('j') && !s.contains('i') {
        s = s.replace('j', "i");
    }
    s = TRAILING_ZEROS.replace_all(&s, "${1}${2}").into_owned();
    s = END_ZEROS.replace_all(&s, "${1}").into_owned();
    if s.is_empty() {
        return s;
    }
    if s.starts_with('.') {
        s.insert(0, '0');
    }
    let sides: Vec<&str> = s.split('=').collect();
    if sides.len() == 2 && sides[0].chars().count() <= 2 {
        s = sides[1].to_owned();
    }
    s = SQRT.replace_all(&s, "\\sqrt{${1}}").into_owned();
    s = s.replace(' ', "");
    s = fix_fracs(&s);
    fix_a_slash_b(&s)
}

/// `\fracab` → `\frac{a}{b}`, `\frac1{b}` → `\frac{1}{b}`.
fn fix_fracs(s: &str) -> String {
    let mut parts = s.split("\\frac");
    let mut out = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        out.push_str("\\frac");
        let mut chars = part.chars();
        match (chars.next(), chars.next()) {
            (Some('{'), _) => out.push_str(part),
            (Some(a), Some('{')) => {
                out.push_str(&format!("{{{a}}}{{"));
                out.push_str(chars.as_str());
            }
            (Some(a), Some(b)) => {
                out.push_str(&format!("{{{a}}}{{{b}}}"));
                out.push_str(chars.as_str());
            }
            _ => return s.to_owned(),
        }
    }
    out
}

/// `3/4` → `\frac{3}{4}` when both sides are integers.
fn fix_a_slash_b(s: &str) -> String {
    let parts: Vec<&str> = s.split('/').collect();
    if let [a, b] = parts.as_slice() {
        if let (Ok(a), Ok(b)) = (a.parse::<i128>(), b.parse::<i128>()) {
            return format!("\\frac{{{a}}}{{{b}}}");
        }
    }
    s.to_owned()
}

/// The recipe's `math_equal`, without its sympy step (see the module comment).
fn math_equal(pred: &str, gold: &str, depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    if pred.trim().to_lowercase() == gold.trim().to_lowercase() {
        return true;
    }
    if single_choice(pred, gold) || choice_prefix(pred, gold, depth) || lists(pred, gold, depth) {
        return true;
    }
    if let (Some(p), Some(g)) = (number(pred), number(gold)) {
        return [g / 100.0, g, g * 100.0]
            .iter()
            .any(|c| (p - c).abs() <= NUMERIC_TOLERANCE);
    }
    if pred.is_empty() {
        return false;
    }
    brackets_equal(pred, gold)
        || equations(pred, gold, depth)
        || rational(pred)
            .zip(rational(gold))
            .is_some_and(|(p, g)| p == g)
}

/// A gold letter A-E against the last lone A-E letter of the reply.
fn single_choice(pred: &str, gold: &str) -> bool {
    static LETTER: LazyLock<Regex> = LazyLock::new(|| re(r"\b(A|B|C|D|E)\b"));
    if !matches!(gold, "A" | "B" | "C" | "D" | "E") {
        return false;
    }
    let cleaned = pred
        .trim_matches('\n')
        .trim_end_matches('.')
        .trim_end_matches('/')
        .trim_matches(' ')
        .trim_start_matches(':')
        .to_uppercase();
    LETTER.find_iter(&cleaned).last().map(|m| m.as_str()) == Some(gold)
}

/// `(A) 42`, `A. 42`, `**A** 42`, … compared without the label.
fn choice_prefix(pred: &str, gold: &str, depth: u32) -> bool {
    static PREFIX: LazyLock<Regex> =
        LazyLock::new(|| re(r"^(?:\([A-E]\)|[A-E]\.|[A-E]\)|\*\*[A-E]\*\*|[A-E]:)"));
    PREFIX
        .find(pred)
        .is_some_and(|m| math_equal(pred[m.end()..].trim(), gold, depth + 1))
}

/// Comma-separated lists, in any order.
fn lists(pred: &str, gold: &str, depth: u32) -> bool {
    if !pred.contains(',') || !gold.contains(',') {
        return false;
    }
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.split(',').map(|p| p.trim().to_owned()).collect();
        v.sort();
        v
    };
    let (p, g) = (sorted(pred), sorted(gold));
    p.len() == g.len() && p.iter().zip(&g).all(|(a, b)| math_equal(a, b, depth + 1))
}

/// A plain number (commas ignored; `50%` is 0.5).
fn number(s: &str) -> Option<f64> {
    let s = s.replace(',', "");
    if let Ok(v) = s.trim().parse::<f64>() {
        return Some(v);
    }
    let inner = s.strip_suffix('%')?;
    let inner = inner.strip_suffix('\\').unwrap_or(inner);
    inner.trim().parse::<f64>().ok().map(|v| v / 100.0)
}

/// Equal once the outer brackets and every brace and parenthesis are gone.
fn brackets_equal(pred: &str, gold: &str) -> bool {
    let (mut p, mut g) = (pred.trim().to_owned(), gold.trim().to_owned());
    let wrapped = (p.starts_with('[') && p.ends_with(']') && !g.starts_with('('))
        || (p.starts_with('(') && p.ends_with(')') && !g.starts_with('['));
    if wrapped {
        let strip = |s: &str| s.trim_matches(|c| "[]()".contains(c)).to_owned();
        p = strip(&p);
        g = strip(&g);
    }
    let drop = |s: &str| s.replace(['{', '}', '(', ')'], "").to_lowercase();
    drop(&p) == drop(&g)
}

/// `x = 5` against `5`.
fn equations(pred: &str, gold: &str, depth: u32) -> bool {
    let short_lhs = |s: &str| {
        s.matches('=').count() == 1
            && s.split('=')
                .next()
                .is_some_and(|l| l.trim().chars().count() <= 2)
    };
    if short_lhs(pred) && !gold.contains('=') {
        let rhs = pred.split('=').nth(1).unwrap_or_default();
        return math_equal(rhs, gold, depth + 1);
    }
    if short_lhs(gold) && !pred.contains('=') {
        let rhs = gold.split('=').nth(1).unwrap_or_default();
        return math_equal(pred, rhs, depth + 1);
    }
    false
}

/// An exact rational: an integer, a decimal, `a/b`, `\frac{a}{b}`, optionally negated.
fn rational(s: &str) -> Option<(i128, i128)> {
    static FRAC: LazyLock<Regex> = LazyLock::new(|| re(r"^\\frac\{([^{}]+)\}\{([^{}]+)\}$"));
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('-') {
        return rational(rest).map(|(n, d)| (-n, d));
    }
    let (n, d) = if let Some(c) = FRAC.captures(s) {
        let (a, b) = (rational(&c[1])?, rational(&c[2])?);
        (a.0.checked_mul(b.1)?, a.1.checked_mul(b.0)?)
    } else if let Some((a, b)) = s.split_once('/') {
        let (a, b) = (rational(a)?, rational(b)?);
        (a.0.checked_mul(b.1)?, a.1.checked_mul(b.0)?)
    } else if let Some((int, frac)) = s.split_once('.') {
        if !(int.chars().all(|c| c.is_ascii_digit()) && frac.chars().all(|c| c.is_ascii_digit()))
            || frac.len() > 18
        {
            return None;
        }
        let scale = 10i128.checked_pow(u32::try_from(frac.len()).ok()?)?;
        let whole: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let part: i128 = if frac.is_empty() {
            0
        } else {
            frac.parse().ok()?
        };
        (whole.checked_mul(scale)?.checked_add(part)?, scale)
    } else if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) && s.len() < 30 {
        (s.parse().ok()?, 1)
    } else {
        return None;
    };
    if d == 0 {
        return None;
    }
    let g = gcd(n.abs(), d.abs()).max(1);
    let sign = if d < 0 { -1 } else { 1 };
    Some((sign * n / g, sign * d / g))
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn correct(reply: &str, gold: &str) -> bool {
        grade(reply, gold).correct
    }

    #[test]
    fn the_last_boxed_answer_is_taken_with_nested_braces() {
        let g = grade(
            "first \\boxed{1}, finally \\boxed{\\frac{1}{2}}.",
            "\\frac12",
        );
        assert_eq!(
            (g.extracted.as_str(), g.unparsed, g.correct),
            ("\\frac{1}{2}", false, true)
        );
        assert_eq!(last_boxed("\\boxed{a{b}c"), None);
    }

    #[test]
    fn answers_normalise_like_the_recipe() {
        assert_eq!(strip_string("\\dfrac{3}{4}"), "\\frac{3}{4}");
        assert_eq!(strip_string("3/4"), "\\frac{3}{4}");
        assert_eq!(strip_string("x = 5"), "5");
        assert_eq!(strip_string("10\\%"), "10");
        assert_eq!(strip_string("\\$1,000.00"), "1,000");
        assert_eq!(strip_string("90^\\circ"), "90");
        assert_eq!(strip_string("\\sqrt2"), "\\sqrt{2}");
        assert_eq!(strip_string("5 \\text{ cm}"), "5");
        assert_eq!(strip_string(".5"), "0.5");
    }

    #[test]
    fn equal_answers_in_other_forms_are_correct() {
        assert!(correct("The answer is 0.5.", "\\frac{1}{2}"));
        assert!(correct("\\boxed{24.0}", "24"));
        assert!(correct("\\boxed{1,000}", "1000"));
        assert!(correct("\\boxed{x=3}", "3"));
        assert!(correct("\\boxed{3, 1, 2}", "1,2,3"));
        assert!(correct("\\boxed{(B) 12}", "12"));
        assert!(correct("\\boxed{50\\%}", "0.5"));
        assert!(correct("\\boxed{-\\frac{6}{8}}", "-3/4"));
        assert!(correct("so we get 33 apples in total", "33"));
        assert!(!correct("\\boxed{25}", "24"));
        assert!(!correct("", "24"));
        // a period between digits is a decimal point, not the end of the sentence
        let g = grade("Final answer: 3.75. Done", "15/4");
        assert_eq!(
            (g.extracted.as_str(), g.unparsed, g.correct),
            ("3.75", true, true)
        );
    }
}
