//! The line parser and the family builder.
//!
//! Every line is parsed completely into a [`Line`] before it touches the families, so a bad
//! line that lenient mode skips leaves no trace. The cursor only stops on ASCII bytes, so
//! every slice it takes lies on character boundaries; slices are taken with `get` anyway,
//! and nothing indexes, so no input can panic. Work is linear in the input length.

use std::collections::{HashMap, HashSet};

use super::error::{excerpt, ParseError, ParseErrorKind};
use super::model::{parse_bound, MetricFamily, MetricType, Sample};

/// Parse Prometheus text format 0.0.4 (or OpenMetrics text) into metric families, in order
/// of first appearance; the first bad line is an error.
///
/// ```
/// use aiperf_telemetry::prometheus::{parse, MetricType};
///
/// let families = parse("# TYPE up gauge\nup{job=\"a\"} 1\n").expect("valid text");
/// assert_eq!(families[0].kind, MetricType::Gauge);
/// assert_eq!(families[0].samples[0].label("job"), Some("a"));
/// ```
pub fn parse(text: &str) -> Result<Vec<MetricFamily>, ParseError> {
    let mut builder = Builder::default();
    for (i, line) in lines(text) {
        builder.line(i, line)?;
    }
    Ok(builder.families)
}

/// Parse like [`parse`] but skip bad lines: returns the families of every good line and one
/// error per bad line. What a scraper wants: one odd series does not hide the rest.
///
/// ```
/// use aiperf_telemetry::prometheus::parse_lenient;
///
/// let (families, errors) = parse_lenient("a 1\nb{x=\"unterminated} 2\nc 3\n");
/// assert_eq!(families.len(), 2);
/// assert_eq!(errors[0].to_string(), "line 2: unterminated label value");
/// ```
pub fn parse_lenient(text: &str) -> (Vec<MetricFamily>, Vec<ParseError>) {
    let mut builder = Builder::default();
    let mut errors = Vec::new();
    for (i, line) in lines(text) {
        if let Err(e) = builder.line(i, line) {
            errors.push(e);
        }
    }
    (builder.families, errors)
}

/// Lines with their 1-based numbers, without `\n` or a trailing `\r`.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// One parsed line.
enum Line {
    Blank,
    Comment,
    Eof,
    Help(String, String),
    Type(String, MetricType),
    Unit(String, String),
    Sample(Sample),
}

/// A line-level error: byte position in the line (if known) and what went wrong.
struct LineError {
    pos: Option<usize>,
    kind: ParseErrorKind,
}

type LineResult<T> = Result<T, LineError>;

fn err<T>(pos: usize, kind: ParseErrorKind) -> LineResult<T> {
    Err(LineError {
        pos: Some(pos),
        kind,
    })
}

/// Every suffix some family type owns; a sample name that fits two families (`x_gcount`:
/// `_count` of `x_g`, `_gcount` of `x`) goes to the first that owns its suffix, in this order.
const SUFFIXES: [&str; 8] = [
    "_bucket", "_count", "_sum", "_created", "_total", "_info", "_gcount", "_gsum",
];

#[derive(Default)]
struct Builder {
    families: Vec<MetricFamily>,
    index: HashMap<String, usize>,
    /// Per family: whether a `# TYPE` line declared it.
    typed: Vec<bool>,
    eof: bool,
}

impl Builder {
    fn line(&mut self, number: usize, text: &str) -> Result<(), ParseError> {
        let to_error = |e: LineError| ParseError {
            line: number,
            column: e
                .pos
                .and_then(|p| text.get(..p))
                .map(|p| p.chars().count() + 1),
            kind: e.kind,
        };
        let parsed = parse_line(text).map_err(to_error)?;
        if self.eof && !matches!(parsed, Line::Blank) {
            return Err(ParseError {
                line: number,
                column: Some(1),
                kind: ParseErrorKind::ContentAfterEof,
            });
        }
        self.apply(parsed).map_err(to_error)
    }

    fn family_index(&mut self, name: String, kind: MetricType, typed: bool) -> usize {
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        self.families.push(MetricFamily::new(name.clone(), kind));
        self.typed.push(typed);
        self.index.insert(name, self.families.len() - 1);
        self.families.len() - 1
    }

    fn apply(&mut self, line: Line) -> LineResult<()> {
        let meta_err = |kind| LineError { pos: None, kind };
        match line {
            Line::Blank | Line::Comment => {}
            Line::Eof => self.eof = true,
            Line::Help(name, text) => {
                let i = self.family_index(name, MetricType::Untyped, false);
                if let Some(f) = self.families.get_mut(i) {
                    if f.help.is_some() {
                        return Err(meta_err(ParseErrorKind::DuplicateMetadata {
                            directive: "HELP",
                            name: f.name.clone(),
                        }));
                    }
                    f.help = Some(text);
                }
            }
            Line::Unit(name, unit) => {
                let i = self.family_index(name, MetricType::Untyped, false);
                if let Some(f) = self.families.get_mut(i) {
                    if f.unit.is_some() {
                        return Err(meta_err(ParseErrorKind::DuplicateMetadata {
                            directive: "UNIT",
                            name: f.name.clone(),
                        }));
                    }
                    f.unit = Some(unit);
                }
            }
            Line::Type(name, kind) => match self.index.get(&name) {
                None => {
                    self.family_index(name, kind, true);
                }
                Some(&i) => {
                    if self.typed.get(i).copied().unwrap_or(false) {
                        return Err(meta_err(ParseErrorKind::DuplicateMetadata {
                            directive: "TYPE",
                            name,
                        }));
                    }
                    if let Some(f) = self.families.get_mut(i) {
                        if !f.samples.is_empty() {
                            return Err(meta_err(ParseErrorKind::TypeAfterSamples(name)));
                        }
                        f.kind = kind;
                    }
                    if let Some(t) = self.typed.get_mut(i) {
                        *t = true;
                    }
                }
            },
            Line::Sample(sample) => {
                let (i, suffix) = match self.resolve(&sample.name)? {
                    Some(found) => found,
                    None => (
                        self.family_index(sample.name.clone(), MetricType::Untyped, false),
                        "",
                    ),
                };
                let Some(f) = self.families.get_mut(i) else {
                    return Ok(());
                };
                check_sample(f.kind, suffix, &sample).map_err(meta_err)?;
                f.samples.push(sample);
            }
        }
        Ok(())
    }

    /// The family a sample name belongs to, with the suffix it has there; `None` for a
    /// sample that starts an untyped family of its own.
    fn resolve(&self, name: &str) -> LineResult<Option<(usize, &'static str)>> {
        let owns = |i: usize, suffix: &str| {
            self.families
                .get(i)
                .is_some_and(|f| f.kind.sample_suffixes().contains(&suffix))
        };
        let exact = self.index.get(name).copied();
        if let Some(i) = exact {
            if owns(i, "") {
                return Ok(Some((i, "")));
            }
        }
        for suffix in SUFFIXES {
            if let Some(&i) = name.strip_suffix(suffix).and_then(|b| self.index.get(b)) {
                if owns(i, suffix) {
                    return Ok(Some((i, suffix)));
                }
            }
        }
        match exact.and_then(|i| self.families.get(i)) {
            Some(f) => Err(LineError {
                pos: None,
                kind: ParseErrorKind::SampleNotInFamily {
                    sample: name.to_string(),
                    family: f.name.clone(),
                    kind: f.kind.as_str(),
                },
            }),
            None => Ok(None),
        }
    }
}

/// Histogram buckets need a float `le`, summary quantiles a float `quantile`.
fn check_sample(kind: MetricType, suffix: &str, s: &Sample) -> Result<(), ParseErrorKind> {
    if kind.is_histogram() && suffix == "_bucket" && s.label("le").and_then(parse_bound).is_none() {
        return Err(ParseErrorKind::InvalidBucketBound(s.name.clone()));
    }
    if kind == MetricType::Summary
        && suffix.is_empty()
        && s.label("quantile").and_then(parse_bound).is_none()
    {
        return Err(ParseErrorKind::InvalidQuantile(s.name.clone()));
    }
    Ok(())
}

/// A byte cursor over one line.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

fn is_label_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    /// Advance over bytes matching `f` (which must reject every non-ASCII byte or accept
    /// them all, so the slice stays on character boundaries).
    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.pos += 1;
        }
        self.s.get(start..self.pos).unwrap_or("")
    }

    fn skip_blank(&mut self) {
        self.take_while(is_blank);
    }

    fn token(&mut self) -> &'a str {
        self.take_while(|b| !is_blank(b))
    }

    /// A metric name ending at a blank, the end of the line, or (if `brace`) `{`.
    fn metric_name(&mut self, brace: bool) -> LineResult<&'a str> {
        let start = self.pos;
        let name = self.take_while(is_name_byte);
        let ends = match self.peek() {
            None => true,
            Some(b) => is_blank(b) || (brace && b == b'{'),
        };
        let starts_ok = name.bytes().next().is_some_and(|b| !b.is_ascii_digit());
        if ends && starts_ok {
            return Ok(name);
        }
        self.pos = start;
        let token = self.take_while(|b| !(is_blank(b) || (brace && b == b'{')));
        let shown = if token.is_empty() { self.rest() } else { token };
        err(start, ParseErrorKind::InvalidMetricName(excerpt(shown)))
    }
}

fn parse_line(s: &str) -> LineResult<Line> {
    let mut c = Cursor { s, pos: 0 };
    c.skip_blank();
    match c.peek() {
        None => Ok(Line::Blank),
        Some(b'#') => {
            c.pos += 1;
            parse_comment(&mut c)
        }
        Some(_) => parse_sample(&mut c).map(Line::Sample),
    }
}

fn parse_comment(c: &mut Cursor<'_>) -> LineResult<Line> {
    c.skip_blank();
    let directive: &'static str = match c.token() {
        "HELP" => "HELP",
        "TYPE" => "TYPE",
        "UNIT" => "UNIT",
        "EOF" => {
            c.skip_blank();
            return Ok(if c.at_end() { Line::Eof } else { Line::Comment });
        }
        _ => return Ok(Line::Comment),
    };
    c.skip_blank();
    if c.at_end() {
        return err(c.pos, ParseErrorKind::MissingMetricName(directive));
    }
    let name = c.metric_name(false)?.to_string();
    c.skip_blank();
    match directive {
        "HELP" => Ok(Line::Help(name, unescape_help(c.rest()))),
        "TYPE" => {
            let at = c.pos;
            let word = c.token();
            if word.is_empty() {
                return err(at, ParseErrorKind::MissingType(name));
            }
            let Ok(kind) = word.parse::<MetricType>() else {
                return err(
                    at,
                    ParseErrorKind::UnknownType {
                        name,
                        kind: excerpt(word),
                    },
                );
            };
            end_of_line(c, || format!("# TYPE {name}"))?;
            Ok(Line::Type(name, kind))
        }
        _ => {
            let unit = c.token().to_string();
            end_of_line(c, || format!("# UNIT {name}"))?;
            Ok(Line::Unit(name, unit))
        }
    }
}

/// Only blanks may remain.
fn end_of_line(c: &mut Cursor<'_>, after: impl FnOnce() -> String) -> LineResult<()> {
    c.skip_blank();
    if c.at_end() {
        return Ok(());
    }
    err(
        c.pos,
        ParseErrorKind::TrailingText {
            text: excerpt(c.rest()),
            after: after(),
        },
    )
}

/// `\\` → `\`, `\n` → newline; any other backslash is kept as written.
fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            match chars.peek() {
                Some('n') => {
                    out.push('\n');
                    chars.next();
                }
                Some('\\') => {
                    out.push('\\');
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(ch);
        }
    }
    out
}

fn parse_sample(c: &mut Cursor<'_>) -> LineResult<Sample> {
    let name = c.metric_name(true)?.to_string();
    c.skip_blank();
    let labels = if c.peek() == Some(b'{') {
        parse_labels(c)?
    } else {
        Vec::new()
    };
    c.skip_blank();
    let at = c.pos;
    let text = c.token();
    if text.is_empty() {
        return err(at, ParseErrorKind::MissingValue(name));
    }
    let Ok(value) = text.parse::<f64>() else {
        return err(
            at,
            ParseErrorKind::InvalidValue {
                value: excerpt(text),
                sample: name,
            },
        );
    };
    c.skip_blank();
    let mut timestamp_ms = None;
    if !c.at_end() && c.peek() != Some(b'#') {
        let at = c.pos;
        let text = c.token();
        timestamp_ms = Some(parse_timestamp(text).ok_or_else(|| LineError {
            pos: Some(at),
            kind: ParseErrorKind::InvalidTimestamp {
                timestamp: excerpt(text),
                sample: name.clone(),
            },
        })?);
        c.skip_blank();
    }
    if c.peek() == Some(b'#') {
        skip_exemplar(c, &name)?;
    }
    end_of_line(c, || format!("sample {name}"))?;
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// Integer milliseconds (Prometheus), or float seconds (OpenMetrics) converted to
/// milliseconds.
fn parse_timestamp(text: &str) -> Option<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    let ms = text.parse::<f64>().ok()? * 1000.0;
    // i64 spans ±9.22e18; stay inside so the cast is exact.
    (ms.is_finite() && ms.abs() < 9.2e18).then(|| ms.round() as i64)
}

/// OpenMetrics exemplar ` # {labels} value [timestamp]`: checked, then dropped.
fn skip_exemplar(c: &mut Cursor<'_>, sample: &str) -> LineResult<()> {
    let start = c.pos;
    let bad = || LineError {
        pos: Some(start),
        kind: ParseErrorKind::InvalidExemplar(sample.to_string()),
    };
    c.pos += 1;
    c.skip_blank();
    if c.peek() != Some(b'{') {
        return Err(bad());
    }
    parse_labels(c)?;
    c.skip_blank();
    if c.token().parse::<f64>().is_err() {
        return Err(bad());
    }
    c.skip_blank();
    if !c.at_end() && c.token().parse::<f64>().is_err() {
        return Err(bad());
    }
    Ok(())
}

/// `{name="value",...}` with an optional trailing comma; the cursor is on `{`.
fn parse_labels(c: &mut Cursor<'_>) -> LineResult<Vec<(String, String)>> {
    let open = c.pos;
    c.pos += 1;
    let mut labels: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    loop {
        c.skip_blank();
        match c.peek() {
            None => return err(open, ParseErrorKind::UnterminatedLabelSet),
            Some(b'}') => {
                c.pos += 1;
                return Ok(labels);
            }
            Some(_) => {}
        }
        let at = c.pos;
        let name = c.take_while(is_label_byte);
        let ends = c.peek().is_none_or(|b| is_blank(b) || b == b'=');
        if name.is_empty() || !ends || name.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
            c.pos = at;
            let token = c.take_while(|b| !matches!(b, b' ' | b'\t' | b'=' | b',' | b'}'));
            let shown = if token.is_empty() { c.rest() } else { token };
            return err(at, ParseErrorKind::InvalidLabelName(excerpt(shown)));
        }
        c.skip_blank();
        if c.peek() != Some(b'=') {
            return err(c.pos, ParseErrorKind::MissingLabelEquals(name.to_string()));
        }
        c.pos += 1;
        c.skip_blank();
        if c.peek() != Some(b'"') {
            return err(c.pos, ParseErrorKind::MissingLabelQuote(name.to_string()));
        }
        let value = label_value(c)?;
        if !seen.insert(name.to_string()) {
            return err(at, ParseErrorKind::DuplicateLabel(name.to_string()));
        }
        labels.push((name.to_string(), value));
        c.skip_blank();
        match c.peek() {
            Some(b',') => c.pos += 1,
            Some(b'}') => {}
            None => return err(open, ParseErrorKind::UnterminatedLabelSet),
            Some(_) => {
                let at = c.pos;
                let rest = excerpt(c.rest());
                return err(at, ParseErrorKind::ExpectedLabelSeparator(rest));
            }
        }
    }
}

/// A quoted label value with `\"`, `\\` and `\n` escapes; the cursor is on the opening
/// quote and ends after the closing one.
fn label_value(c: &mut Cursor<'_>) -> LineResult<String> {
    let open = c.pos;
    let body = c.s.get(open + 1..).unwrap_or("");
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, ch)) = chars.next() {
        match ch {
            '"' => {
                c.pos = open + 1 + i + 1;
                return Ok(out);
            }
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, other)) => {
                    return err(
                        open + 1 + i,
                        ParseErrorKind::InvalidEscape(other.to_string()),
                    )
                }
                None => break,
            },
            _ => out.push(ch),
        }
    }
    err(open, ParseErrorKind::UnterminatedLabelValue)
}
