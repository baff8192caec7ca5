//! Parse errors, each tied to a 1-based line (and, where useful, column).

use std::fmt;

/// What was wrong with a line. Offending text quoted in messages is cut to 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A metric name that does not match `[a-zA-Z_:][a-zA-Z0-9_:]*` (or no name at all).
    #[error("invalid metric name \"{0}\"")]
    InvalidMetricName(String),
    /// A label name that does not match `[a-zA-Z_][a-zA-Z0-9_]*`.
    #[error("invalid label name \"{0}\"")]
    InvalidLabelName(String),
    /// A label name not followed by `=`.
    #[error("expected '=' after label name \"{0}\"")]
    MissingLabelEquals(String),
    /// A label `=` not followed by an opening `"`.
    #[error("expected '\"' to open the value of label \"{0}\"")]
    MissingLabelQuote(String),
    /// A label value with no closing `"` before the end of the line.
    #[error("unterminated label value")]
    UnterminatedLabelValue,
    /// A backslash in a label value followed by something other than `\`, `"` or `n`.
    #[error("invalid escape sequence \"\\{0}\" in label value")]
    InvalidEscape(String),
    /// A label set with no closing `}` before the end of the line.
    #[error("unterminated label set: missing '}}'")]
    UnterminatedLabelSet,
    /// Something other than `,` or `}` after a label value.
    #[error("expected ',' or '}}' after a label value, found \"{0}\"")]
    ExpectedLabelSeparator(String),
    /// The same label name twice in one label set.
    #[error("duplicate label \"{0}\"")]
    DuplicateLabel(String),
    /// A sample line without a value.
    #[error("missing value for sample {0}")]
    MissingValue(String),
    /// A sample value that is not a float.
    #[error("invalid value \"{value}\" for sample {sample}")]
    InvalidValue {
        /// The text where the value should be.
        value: String,
        /// The sample name.
        sample: String,
    },
    /// A timestamp that is neither integer milliseconds nor (OpenMetrics) float seconds.
    #[error("invalid timestamp \"{timestamp}\" for sample {sample}")]
    InvalidTimestamp {
        /// The text where the timestamp should be.
        timestamp: String,
        /// The sample name.
        sample: String,
    },
    /// An exemplar (` # {labels} value [timestamp]`) that does not parse.
    #[error("malformed exemplar for sample {0}")]
    InvalidExemplar(String),
    /// Text after the last field of a line.
    #[error("unexpected text \"{text}\" after {after}")]
    TrailingText {
        /// The unexpected text.
        text: String,
        /// What it follows (`sample foo`, `# TYPE foo`).
        after: String,
    },
    /// A `# HELP`, `# TYPE` or `# UNIT` line without a metric name.
    #[error("# {0} line without a metric name")]
    MissingMetricName(&'static str),
    /// A `# TYPE` line without a type.
    #[error("# TYPE line for {0} without a type")]
    MissingType(String),
    /// A `# TYPE` line with an unknown type keyword.
    #[error("unknown metric type \"{kind}\" for {name}")]
    UnknownType {
        /// The family name.
        name: String,
        /// The keyword given.
        kind: String,
    },
    /// A second `# HELP`, `# TYPE` or `# UNIT` line for one family.
    #[error("second # {directive} line for {name}")]
    DuplicateMetadata {
        /// `HELP`, `TYPE` or `UNIT`.
        directive: &'static str,
        /// The family name.
        name: String,
    },
    /// A `# TYPE` line after samples of its family.
    #[error("# TYPE line for {0} after its samples")]
    TypeAfterSamples(String),
    /// A sample whose name matches a typed family that has no such sample (e.g. a bare
    /// `foo` in histogram `foo`).
    #[error("sample {sample} does not fit {kind} family {family}")]
    SampleNotInFamily {
        /// The sample name.
        sample: String,
        /// The family name.
        family: String,
        /// The family's type.
        kind: &'static str,
    },
    /// A histogram bucket without an `le` label, or with one that is not a float.
    #[error("histogram bucket {0} needs an \"le\" label holding a float")]
    InvalidBucketBound(String),
    /// A summary quantile sample without a `quantile` label, or with one that is not a
    /// float.
    #[error("summary sample {0} needs a \"quantile\" label holding a float")]
    InvalidQuantile(String),
    /// A non-blank line after OpenMetrics `# EOF`.
    #[error("content after # EOF")]
    ContentAfterEof,
}

/// A line of exposition text that could not be parsed.
///
/// Displays as `line 12: unterminated label value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based line number.
    pub line: usize,
    /// The 1-based column (in characters) where the problem was found, when known.
    pub column: Option<usize>,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.kind)
    }
}

impl std::error::Error for ParseError {}

/// `s` cut to 64 characters (with `…` when cut), for quoting in messages.
pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", s.get(..i).unwrap_or("")),
        None => s.to_string(),
    }
}
