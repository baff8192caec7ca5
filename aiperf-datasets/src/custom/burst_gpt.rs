//! `burst_gpt_trace`: the BurstGPT CSV (`Timestamp` in seconds, `Request tokens`,
//! `Response tokens`; other columns ignored). Every row is an independent single-turn
//! session with a synthetic prompt.

use std::io::BufRead;
use std::path::Path;

use aiperf_core::{Conversation, Turn};

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use super::record::MAX_MS;
use super::sessions::Sessions;
use super::trace_requests::{finish_turns, PendingTurn};
use crate::synthesis::{TraceRequest, TraceSynthesizer};

/// The columns a BurstGPT file must have.
pub(crate) const REQUIRED_COLUMNS: [&str; 3] = ["Timestamp", "Request tokens", "Response tokens"];

/// The conversations of a BurstGPT CSV (always timestamped), after `synthesis` if any.
pub(crate) fn load(
    path: &Path,
    prompts: &mut HashIdPrompts,
    synthesis: Option<&TraceSynthesizer>,
    defer: bool,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let file = crate::text_file::open(path, 1 << 16).map_err(|e| DatasetFileError::io(path, e))?;
    let mut lines = file.lines().enumerate();
    let csv_error = |line: usize, message: String| {
        DatasetFileError::file(path, DatasetFileErrorKind::Csv, message).at_line(line)
    };
    let header = loop {
        match lines.next() {
            None => {
                return Err(DatasetFileError::file(
                    path,
                    DatasetFileErrorKind::Empty,
                    "the file holds no records (it is empty or has only blank lines)",
                ))
            }
            Some((index, line)) => {
                let line = line.map_err(|e| DatasetFileError::io(path, e).at_line(index + 1))?;
                if !line.trim().is_empty() {
                    break split_row(&line).map_err(|m| csv_error(index + 1, m))?;
                }
            }
        }
    };
    let columns = column_indices(&header).map_err(|m| csv_error(1, m))?;

    let mut pending = Vec::new();
    for (index, line) in lines {
        let line_no = index + 1;
        let line = line.map_err(|e| DatasetFileError::io(path, e).at_line(line_no))?;
        if line.trim().is_empty() {
            continue;
        }
        let row = split_row(&line).map_err(|m| csv_error(line_no, m))?;
        let cell = |column: usize| row.get(columns[column]).map_or("", |s| s.trim());
        let bad = |column: usize, expected: &str| {
            let text = cell(column);
            csv_error(line_no, format!("expected {expected}, got {text:?}"))
                .in_field(REQUIRED_COLUMNS[column])
        };
        let seconds = cell(0)
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=MAX_MS / 1000.0).contains(v))
            .ok_or_else(|| bad(0, "a non-negative number of seconds (below 2^53 ms)"))?;
        let request_tokens = cell(1)
            .parse::<u64>()
            .map_err(|_| bad(1, "a token count"))?;
        let response_tokens = cell(2)
            .parse::<u32>()
            .map_err(|_| bad(2, "a token count"))?;
        prompts.check(request_tokens, &[]).map_err(|message| {
            DatasetFileError::file(path, DatasetFileErrorKind::Invalid, message)
                .at_line(line_no)
                .in_field(REQUIRED_COLUMNS[1])
        })?;
        let request = TraceRequest {
            input_length: Some(request_tokens),
            hash_ids: Vec::new(),
            timestamp_ms: Some(seconds * 1000.0),
            output_length: Some(response_tokens),
        };
        let turn = PendingTurn {
            line: line_no,
            turn: Turn::default(),
            place: (),
        };
        pending.push((request, turn));
    }
    if pending.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the file holds a header but no rows",
        ));
    }
    let mut sessions = Sessions::new();
    for (turn, ()) in finish_turns(path, pending, synthesis, prompts, defer)? {
        sessions.push(None, turn);
    }
    Ok(sessions.finish())
}

/// Whether `header` (a CSV header row) names every BurstGPT column.
pub(crate) fn is_burst_header(header: &str) -> bool {
    split_row(header).is_ok_and(|cells| column_indices(&cells).is_ok())
}

/// Where each required column is in the header.
fn column_indices(header: &[String]) -> Result<[usize; 3], String> {
    let mut indices = [0; 3];
    for (slot, name) in indices.iter_mut().zip(REQUIRED_COLUMNS) {
        *slot = header
            .iter()
            .position(|cell| cell.trim() == name)
            .ok_or_else(|| {
                format!(
                    "missing column {name:?} (a BurstGPT file needs the columns {})",
                    REQUIRED_COLUMNS.join(", ")
                )
            })?;
    }
    Ok(indices)
}

/// Splits one CSV row (RFC 4180 quoting: `"a,b"` is one cell, `""` inside quotes is a
/// quote). Rows spanning lines are not supported: BurstGPT cells never hold newlines.
fn split_row(line: &str) -> Result<Vec<String>, String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if cell.is_empty() => quoted = true,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            (c, _) => cell.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted cell".to_string());
    }
    cells.push(cell);
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_quoted_cells() {
        assert_eq!(
            split_row(r#"1,"a,b","say ""hi""",x"#).unwrap(),
            ["1", "a,b", "say \"hi\"", "x"]
        );
        assert_eq!(split_row("a,,b\r").unwrap(), ["a", "", "b"]);
        assert_eq!(split_row("\"open").unwrap_err(), "unterminated quoted cell");
    }

    #[test]
    fn recognises_the_header() {
        assert!(is_burst_header(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
        ));
        assert!(!is_burst_header("Timestamp,Request tokens"));
    }
}
