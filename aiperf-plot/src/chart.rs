//! What a chart shows, apart from how it is drawn: the report embeds this as data and
//! [`crate::render`] draws it.

use serde::Serialize;

use crate::series::Bin;

/// One chart: a file name, a title, two labelled axes and its data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chart {
    /// File stem of the PNG and SVG, e.g. `ttft_distribution`.
    pub name: String,
    /// Title above the plot.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The data.
    pub body: Body,
}

/// An axis: its label (with the unit) and whether it is logarithmic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    /// Label, unit in parentheses.
    pub label: String,
    /// Base-10 logarithmic scale.
    pub log: bool,
    /// The range starts at zero (rates, counts) rather than near the smallest value.
    pub from_zero: bool,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            log: false,
            from_zero: false,
        }
    }

    /// A linear axis that starts at zero.
    pub fn from_zero(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            log: false,
            from_zero: true,
        }
    }

    /// An axis that is logarithmic when `log`.
    pub fn scaled(label: impl Into<String>, log: bool) -> Self {
        Self {
            label: label.into(),
            log,
            from_zero: false,
        }
    }
}

/// The kinds of chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// Series of (x, y) points.
    Xy {
        /// The series, drawn in order.
        series: Vec<Series>,
    },
    /// A histogram of values on the x axis; y counts requests.
    Histogram {
        /// The bins, in order.
        bins: Vec<Bin>,
    },
    /// Horizontal bars: one row per category (top to bottom), one bar per group in a row.
    Bars {
        /// Row names.
        categories: Vec<String>,
        /// Each group's values, one per category.
        groups: Vec<BarGroup>,
    },
}

/// A named set of points and how to mark them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// How the points are drawn.
    pub mark: Mark,
    /// The points.
    pub points: Vec<[f64; 2]>,
    /// Text written beside each point (a run's label); empty for none.
    pub point_labels: Vec<String>,
}

impl Series {
    /// A series without point labels.
    pub fn new(name: impl Into<String>, mark: Mark, points: Vec<[f64; 2]>) -> Self {
        Self {
            name: name.into(),
            mark,
            points,
            point_labels: Vec::new(),
        }
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// Small dots: many requests.
    Dots,
    /// A line through the points.
    Line,
    /// A thick line with large markers: a highlighted line such as a Pareto front.
    Highlight,
    /// Large markers without a line.
    Markers,
}

/// One group of bars (e.g. `avg`), one value per category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BarGroup {
    /// Legend text.
    pub name: String,
    /// Value per category; `None` draws no bar.
    pub values: Vec<Option<f64>>,
}
