//! [`DatasetFileError`]: what is wrong with a dataset file, and where.

use std::path::{Path, PathBuf};

/// The kind of problem a [`DatasetFileError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetFileErrorKind {
    /// The file or folder could not be read (or written, for downloads).
    Io,
    /// A line is not valid JSON or not a JSON object.
    Syntax,
    /// A required field is missing.
    MissingField,
    /// A field has the wrong type or an out-of-range value.
    WrongType,
    /// A field the format does not know.
    UnknownKey,
    /// The file holds no records.
    Empty,
    /// A CSV file is malformed or lacks a required column.
    Csv,
    /// The record is well-formed but breaks a rule of the format (mutually exclusive
    /// fields, incompatible `hash_ids`, a session mixing input modes).
    Invalid,
    /// The format could not be detected.
    UnknownFormat,
    /// A download failed.
    Download,
}

/// Why a dataset file could not be loaded.
///
/// Displays as `<path>:<line>: <field>: <message>`, leaving out the parts that do not
/// apply (a whole-file problem has no line, a syntax error no field).
#[derive(Debug, thiserror::Error)]
#[error("{}", self.render())]
pub struct DatasetFileError {
    /// The file (or folder) the problem is in.
    pub path: PathBuf,
    /// 1-based line (or CSV row) number, when the problem is in one record.
    pub line: Option<usize>,
    /// The field, when the problem is in one field (`turns[1].text` for nested ones).
    pub field: Option<String>,
    /// What kind of problem it is.
    pub kind: DatasetFileErrorKind,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
    /// The underlying I/O error, for [`DatasetFileErrorKind::Io`].
    #[source]
    pub source: Option<std::io::Error>,
}

impl DatasetFileError {
    /// An error about the whole file.
    pub fn file(path: &Path, kind: DatasetFileErrorKind, message: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            line: None,
            field: None,
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A file or folder could not be read.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Self {
            message: format!("cannot read: {source}"),
            source: Some(source),
            ..Self::file(path, DatasetFileErrorKind::Io, "")
        }
    }

    /// The same error, located at `line`.
    #[must_use]
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The same error, about `field`.
    #[must_use]
    pub fn in_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    fn render(&self) -> String {
        let mut out = self.path.display().to_string();
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
        }
        if let Some(field) = &self.field {
            out.push_str(&format!(": {field}"));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}
