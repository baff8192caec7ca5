//! The file under the JSON Lines exports: one line per record, written as records
//! finish, flushed every few lines so that a run that dies loses little.
//!
//! Only whole lines are ever handed to the operating system, and a write that fails (a
//! full disk) is cut back to the last whole line, so the file stays valid JSON Lines
//! whatever happens.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::MetricsError;

/// A JSON Lines file being appended to; errors name the file.
#[derive(Debug)]
pub(crate) struct LineFile {
    file: File,
    path: PathBuf,
    /// Whole lines not yet written.
    buffer: Vec<u8>,
    /// Lines in `buffer`.
    pending: usize,
    flush_every: usize,
    /// Bytes known to be in the file: always the end of a whole line.
    written: u64,
}

impl LineFile {
    /// Creates (or truncates) `path`, creating its directory if needed.
    pub(crate) fn create(path: &Path, flush_every: usize) -> Result<Self, MetricsError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| MetricsError::io(parent, e))?;
        }
        let file = File::create(path).map_err(|e| MetricsError::io(path, e))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            buffer: Vec::new(),
            pending: 0,
            flush_every,
            written: 0,
        })
    }

    /// Appends `line` and its newline.
    pub(crate) fn append(&mut self, line: &[u8]) -> Result<(), MetricsError> {
        self.buffer.extend_from_slice(line);
        self.end_line()
    }

    /// Appends the line `write` serialises into the buffer (no intermediate string), and
    /// its newline. A line whose writing fails leaves nothing behind.
    pub(crate) fn append_with(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) -> Result<(), MetricsError> {
        let line_start = self.buffer.len();
        if let Err(error) = write(&mut self.buffer) {
            self.buffer.truncate(line_start);
            return Err(error.into());
        }
        self.end_line()
    }

    /// Ends the line just buffered; flushes every `flush_every` lines.
    fn end_line(&mut self) -> Result<(), MetricsError> {
        self.buffer.push(b'\n');
        self.pending += 1;
        if self.pending >= self.flush_every {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered lines. On failure the file is cut back to its last whole line
    /// and the buffered lines are dropped.
    fn flush(&mut self) -> Result<(), MetricsError> {
        let result = self.file.write_all(&self.buffer);
        let written = self.buffer.len() as u64;
        // Cleared, not replaced: the next lines reuse the allocation.
        self.buffer.clear();
        self.pending = 0;
        match result {
            Ok(()) => {
                self.written += written;
                Ok(())
            }
            Err(error) => {
                if let Err(cut) = self.file.set_len(self.written) {
                    tracing::warn!(
                        path = %self.path.display(),
                        %cut,
                        "cannot cut the file back to its last whole line"
                    );
                }
                Err(MetricsError::io(&self.path, error))
            }
        }
    }

    /// Writes what is buffered and closes the file.
    pub(crate) fn finish(mut self) -> Result<(), MetricsError> {
        self.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_reach_the_file_every_few_and_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/records.jsonl");
        let mut file = LineFile::create(&path, 2).unwrap();
        file.append(b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        file.append(b"{\"a\":2}").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n"
        );
        file.append(b"{\"a\":3}").unwrap();
        file.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
        );
    }

    #[test]
    fn a_line_that_cannot_be_serialised_leaves_no_partial_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let mut file = LineFile::create(&path, 100).unwrap();
        let json =
            |value: serde_json::Value| move |out: &mut Vec<u8>| serde_json::to_writer(out, &value);
        file.append_with(json(serde_json::json!({"a": 1}))).unwrap();
        // A line written in parts: the first part lands, then the second fails (serde_json
        // starts the object, then refuses the key).
        let unkeyable = std::collections::BTreeMap::from([((1, 2), 3)]);
        let error = file
            .append_with(|out| {
                out.extend_from_slice(b"{\"first\":");
                serde_json::to_writer(out, &unkeyable)
            })
            .unwrap_err()
            .to_string();
        assert!(error.contains("key must be a string"), "{error}");
        file.append_with(json(serde_json::json!({"a": 2}))).unwrap();
        file.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_write_names_the_file_and_the_os_error() {
        let mut file = LineFile::create(Path::new("/dev/full"), 1).unwrap();
        let error = file.append(b"{}").unwrap_err().to_string();
        assert!(error.contains("/dev/full"), "{error}");
        assert!(error.contains("No space left on device"), "{error}");
    }
}
