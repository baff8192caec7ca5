//! The file under the JSON Lines exports: one line per record, written as records
//! finish, flushed every few lines so that a run that dies loses little.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::MetricsError;

/// A JSON Lines file being appended to; errors name the file.
#[derive(Debug)]
pub(crate) struct LineFile {
    out: BufWriter<File>,
    path: PathBuf,
    pending: usize,
    flush_every: usize,
}

impl LineFile {
    /// Creates (or truncates) `path`, creating its directory if needed.
    pub(crate) fn create(path: &Path, flush_every: usize) -> Result<Self, MetricsError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| MetricsError::io(parent, e))?;
        }
        let file = File::create(path).map_err(|e| MetricsError::io(path, e))?;
        Ok(Self {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            pending: 0,
            flush_every,
        })
    }

    /// Appends `line` and its newline.
    pub(crate) fn append(&mut self, line: &[u8]) -> Result<(), MetricsError> {
        let io = |e| MetricsError::io(&self.path, e);
        self.out.write_all(line).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)?;
        self.pending += 1;
        if self.pending >= self.flush_every {
            self.out.flush().map_err(io)?;
            self.pending = 0;
        }
        Ok(())
    }

    /// Flushes and closes the file.
    pub(crate) fn finish(mut self) -> Result<(), MetricsError> {
        self.out
            .flush()
            .map_err(|e| MetricsError::io(&self.path, e))
    }
}
