//! A parser and renderer of the Prometheus text exposition format 0.0.4, which also reads
//! OpenMetrics text.
//!
//! What it reads:
//! - `# HELP name text` (escapes `\\` and `\n`), `# TYPE name type`, OpenMetrics
//!   `# UNIT name unit` and `# EOF`; any other `#` line is a comment;
//! - samples `name{label="value",...} value [timestamp]`, label values with escapes `\"`,
//!   `\\`, `\n`, an optional trailing comma, blanks (spaces, tabs) anywhere between
//!   tokens; values as floats, exponents, `NaN`, `+Inf`, `-Inf`, `Inf`; integer timestamps
//!   in milliseconds, fractional ones as OpenMetrics seconds; OpenMetrics exemplars
//!   (` # {labels} value [timestamp]`) are checked and dropped;
//! - samples are grouped into the family that owns them (`x_bucket`, `x_sum`, `x_count`,
//!   `x_created` into histogram `x`; `x_total` into counter `x`; `x_gsum`, `x_gcount` into
//!   gauge histogram `x`; …); a sample of no declared family starts an untyped family of its
//!   own name. Families keep the order in which they first appear.
//!
//! [`parse`] stops at the first bad line; [`parse_lenient`] skips bad lines and reports
//! them. Neither panics on any input, and both run in time linear in the input.

mod error;
mod model;
mod parse;
mod render;

pub use error::{ParseError, ParseErrorKind};
pub use model::{
    find_family, HistogramSeries, MetricFamily, MetricType, Sample, SummarySeries,
    UnknownMetricType,
};
pub use parse::{parse, parse_lenient};
pub use render::{format_value, render};

#[cfg(test)]
mod tests;
