//! What can go wrong while reading artifacts and drawing charts.

use std::path::PathBuf;

use aiperf_metrics::artifacts::ArtifactError;

/// An error of `aiperf plot`, naming the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A file or folder could not be read or written.
    #[error("cannot access {path}: {reason}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's reason (in the message, not a separate cause, so
        /// that it is printed once).
        reason: std::io::Error,
    },
    /// A JSON artifact is malformed.
    #[error("{path}{}: not the JSON aiperf writes: {reason}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Json {
        /// The file.
        path: PathBuf,
        /// The 1-based line of a JSONL file; `None` for a whole-file JSON document.
        line: Option<usize>,
        /// The parser's reason (in the message, printed once).
        reason: serde_json::Error,
    },
    /// No run artifacts were found where the user pointed.
    #[error("no aiperf run found in {0}: expected profile_export_aiperf.json there or in its subfolders (a run's artifact directory, a sweep or a multi-run folder)")]
    NoRuns(PathBuf),
    /// plotters failed to draw or the PNG encoder failed.
    #[error("cannot draw chart {chart}: {reason}")]
    Draw {
        /// The chart's name.
        chart: String,
        /// What failed.
        reason: String,
    },
    /// The embedded font could not be registered.
    #[error("the embedded DejaVu Sans font is unusable")]
    Font,
}

impl PlotError {
    pub(crate) fn io(path: impl Into<PathBuf>, reason: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            reason,
        }
    }

    pub(crate) fn draw(chart: &str, reason: impl std::fmt::Display) -> Self {
        Self::Draw {
            chart: chart.to_owned(),
            reason: reason.to_string(),
        }
    }
}

/// The artifact reader's errors in the words of `aiperf plot`, whose messages say "cannot
/// access" for any file, read or written, and "not the JSON aiperf writes" for any
/// malformed artifact.
impl From<ArtifactError> for PlotError {
    fn from(error: ArtifactError) -> Self {
        use serde::de::Error;
        match error {
            ArtifactError::Io { path, source } => Self::Io {
                path,
                reason: source,
            },
            ArtifactError::Json { path, source } => Self::Json {
                path,
                line: None,
                reason: source,
            },
            ArtifactError::JsonLine { path, line, source } => Self::Json {
                path,
                line: Some(line),
                reason: source,
            },
            ArtifactError::NotASummary(path) => Self::Json {
                path,
                line: None,
                reason: serde_json::Error::custom("expected an object with the aiperf keys"),
            },
            ArtifactError::NotADirectory(dir) => Self::NoRuns(dir),
            ArtifactError::MissingSummary(summary) => {
                Self::NoRuns(summary.parent().map(PathBuf::from).unwrap_or(summary))
            }
        }
    }
}
