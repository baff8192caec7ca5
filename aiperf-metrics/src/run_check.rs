//! Checking that a run's artifact directory is whole and agrees with itself (`aiperf
//! validate run DIR`): every file parses, the records add up to the summary's request
//! counts, the CSV shows the summary's values, and every record's conversation is in
//! `inputs.json`. It reads runs of the Python AIPerf 0.13 too, whose files have the same
//! shape.
//!
//! ```
//! use aiperf_metrics::run_check::check_run_directory;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(
//!     dir.path().join("profile_export_aiperf.json"),
//!     r#"{"request_count": {"unit": "requests", "avg": 0}}"#,
//! )
//! .unwrap();
//! let report = check_run_directory(dir.path()).unwrap();
//! assert!(report.problems.is_empty(), "{:?}", report.problems);
//! assert_eq!(report.files_checked, ["profile_export_aiperf.json"]);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::artifacts::{
    open_if_present, read_jsonl, read_summary, read_timeslices, ArtifactError, RunSummary,
    RECORDS_FILE, SUMMARY_FILE, TIMESLICES_FILE,
};
use crate::catalogue::metric_def;
use crate::export::RESULTS_READY_FILE;

/// The summary table as CSV.
pub const CSV_FILE: &str = "profile_export_aiperf.csv";
/// The payloads the run sent.
pub const INPUTS_FILE: &str = "inputs.json";

/// What [`check_run_directory`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunCheckReport {
    /// The files read, in the order they were checked.
    pub files_checked: Vec<String>,
    /// Records in `profile_export.jsonl` (successes and errors), when it is there.
    pub records: Option<usize>,
    /// Each disagreement or unreadable file, as `file: problem`; empty for a sound run.
    pub problems: Vec<String>,
}

/// Checks the run directory `dir`. The summary is required (it is what makes a directory
/// a run); every other file is checked when present. A file that does not parse is a
/// problem of the report, not an error, so one bad file does not hide the others.
pub fn check_run_directory(dir: &Path) -> Result<RunCheckReport, ArtifactError> {
    if !dir.is_dir() {
        return Err(ArtifactError::NotADirectory(dir.to_path_buf()));
    }
    let summary_path = dir.join(SUMMARY_FILE);
    if !summary_path.is_file() {
        return Err(ArtifactError::MissingSummary(summary_path));
    }
    let mut report = RunCheckReport::default();
    let summary = read_summary(&summary_path)?;
    report.files_checked.push(SUMMARY_FILE.to_owned());

    let records = report.file(dir, RECORDS_FILE, read_records);
    if let Some(records) = &records {
        report.records = Some(records.successes + records.errors);
        report.compare_counts(&summary, records);
    }
    if let Some(csv) = report.file(dir, CSV_FILE, read_csv_rows) {
        report.compare_csv(&summary, &csv);
    }
    if let Some(sessions) = report.file(dir, INPUTS_FILE, read_input_sessions) {
        if let Some(records) = &records {
            report.compare_conversations(&sessions, records);
        }
    }
    report.file(dir, TIMESLICES_FILE, |path| {
        read_timeslices(path).map_err(|e| e.to_string()).map(drop)
    });
    report.file(dir, RESULTS_READY_FILE, |path| {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        serde_json::from_str::<Value>(&text)
            .map_err(|e| format!("invalid JSON: {e}"))
            .map(drop)
    });
    Ok(report)
}

impl RunCheckReport {
    /// Reads `name` with `read` when it exists, noting the file, or its problem.
    fn file<T>(
        &mut self,
        dir: &Path,
        name: &str,
        read: impl FnOnce(&Path) -> Result<T, String>,
    ) -> Option<T> {
        let path = dir.join(name);
        if !path.exists() {
            return None;
        }
        self.files_checked.push(name.to_owned());
        read(&path)
            .map_err(|problem| self.problems.push(format!("{name}: {problem}")))
            .ok()
    }

    /// The summary's request counts against the records: successes are `request_count`,
    /// errors (cancellations included) `error_request_count` (absent when there were none).
    fn compare_counts(&mut self, summary: &RunSummary, records: &Records) {
        let count = |tag: &str| summary.stat(tag, "avg").map(|v| v.round() as usize);
        for (tag, expected, what) in [
            ("request_count", records.successes, "successful records"),
            ("error_request_count", records.errors, "error records"),
        ] {
            let given = count(tag).unwrap_or(0);
            if given != expected {
                self.problems.push(format!(
                    "{SUMMARY_FILE}: {tag} is {given}, but {RECORDS_FILE} has {expected} \
                     {what}"
                ));
            }
        }
    }

    /// Every catalogued metric of the summary must be a CSV row showing its average.
    fn compare_csv(&mut self, summary: &RunSummary, csv: &BTreeMap<String, String>) {
        for (tag, stats) in &summary.metrics {
            let (Some(def), Some(avg)) = (metric_def(tag), stats.stat("avg")) else {
                continue;
            };
            let label = if ["", "count", "requests"].contains(&stats.unit.as_str()) {
                def.header.to_owned()
            } else {
                format!("{} ({})", def.header, stats.unit)
            };
            let expected = format!("{avg:.2}");
            match csv.get(&label) {
                None => self.problems.push(format!(
                    "{CSV_FILE}: no row `{label}` for {tag} of the summary"
                )),
                Some(shown) if *shown != expected => self.problems.push(format!(
                    "{CSV_FILE}: `{label}` shows {shown}, the summary's {tag} avg is {expected}"
                )),
                Some(_) => {}
            }
        }
    }

    fn compare_conversations(&mut self, sessions: &BTreeSet<String>, records: &Records) {
        let missing: Vec<&String> = records
            .conversations
            .iter()
            .filter(|id| !sessions.contains(*id))
            .collect();
        if let Some(first) = missing.first() {
            self.problems.push(format!(
                "{RECORDS_FILE}: {} conversation(s) not in {INPUTS_FILE}, e.g. {first}",
                missing.len()
            ));
        }
    }
}

/// What the records say about the counts and the conversations.
struct Records {
    successes: usize,
    errors: usize,
    conversations: BTreeSet<String>,
}

fn read_records(path: &Path) -> Result<Records, String> {
    let reader = open_if_present(path)
        .map_err(|e| e.to_string())?
        .ok_or("disappeared while being read")?;
    let mut records = Records {
        successes: 0,
        errors: 0,
        conversations: BTreeSet::new(),
    };
    read_jsonl(reader, path, |record: Value| {
        match record.get("error") {
            Some(Value::Null) | None => records.successes += 1,
            Some(_) => records.errors += 1,
        }
        let conversation = record
            .pointer("/metadata/conversation_id")
            .and_then(Value::as_str);
        if let Some(id) = conversation {
            records.conversations.insert(id.to_owned());
        }
    })
    .map_err(|error| match error {
        // The report names the file already.
        ArtifactError::JsonLine { line, source, .. } => {
            format!("line {line}: invalid JSON: {source}")
        }
        other => other.to_string(),
    })?;
    Ok(records)
}

/// The CSV's metric rows: label → first value (the average, or the single value).
fn read_csv_rows(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (label, rest) = split_label(line);
        if label == "Metric" {
            continue;
        }
        let first = rest.split(',').next().unwrap_or_default();
        rows.insert(label, first.to_owned());
    }
    Ok(rows)
}

/// The first CSV field (unquoted) and the rest of the line after its comma.
fn split_label(line: &str) -> (String, &str) {
    if let Some(quoted) = line.strip_prefix('"') {
        let mut label = String::new();
        let mut chars = quoted.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' if chars.peek().map(|(_, n)| *n) == Some('"') => {
                    label.push('"');
                    chars.next();
                }
                '"' => {
                    let rest = &quoted[i + 1..];
                    return (label, rest.strip_prefix(',').unwrap_or(rest));
                }
                c => label.push(c),
            }
        }
        (label, "")
    } else {
        match line.split_once(',') {
            Some((label, rest)) => (label.to_owned(), rest),
            None => (line.to_owned(), ""),
        }
    }
}

/// The `session_id` of every entry of `inputs.json`'s `data`.
fn read_input_sessions(path: &Path) -> Result<BTreeSet<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let document: Value = serde_json::from_str(&text).map_err(|e| format!("invalid JSON: {e}"))?;
    let data = document
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no `data` list")?;
    data.iter()
        .enumerate()
        .map(|(i, entry)| {
            entry
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("data[{i}] has no session_id"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A small sound run: two successes and one error, its CSV and its inputs.
    fn sound_run() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            SUMMARY_FILE,
            r#"{"schema_version": "1.4",
                "request_count": {"unit": "requests", "avg": 2.0},
                "error_request_count": {"unit": "requests", "avg": 1.0},
                "request_latency": {"unit": "ms", "avg": 12.345, "p99": 20.0},
                "input_config": {"unit": "not a metric"}}"#,
        );
        write(
            RECORDS_FILE,
            "{\"metadata\": {\"conversation_id\": \"session_000000\"}, \"metrics\": {}}\n\
             {\"metadata\": {\"conversation_id\": \"session_000001\"}, \"metrics\": {}, \"error\": null}\n\
             {\"metadata\": {\"conversation_id\": \"session_000001\"}, \"error\": {\"code\": 500}}\n",
        );
        write(
            CSV_FILE,
            "Metric,avg,min\r\nRequest Latency (ms),12.35,1.00\r\n\r\nMetric,Value\r\n\
             Request Count,2.00\r\nError Request Count,1.00\r\n",
        );
        write(
            INPUTS_FILE,
            r#"{"data": [{"session_id": "session_000000", "payloads": []},
                         {"session_id": "session_000001", "payloads": []}]}"#,
        );
        write(RESULTS_READY_FILE, r#"{"ready": true}"#);
        dir
    }

    fn problems_after(change: impl FnOnce(&Path)) -> Vec<String> {
        let dir = sound_run();
        change(dir.path());
        check_run_directory(dir.path()).unwrap().problems
    }

    fn replace(dir: &Path, name: &str, from: &str, to: &str) {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from} not in {name}");
        std::fs::write(path, text.replace(from, to)).unwrap();
    }

    #[test]
    fn a_sound_run_has_no_problems_and_names_what_it_read() {
        let dir = sound_run();
        let report = check_run_directory(dir.path()).unwrap();
        assert_eq!(report.problems, Vec::<String>::new());
        assert_eq!(report.records, Some(3));
        assert_eq!(
            report.files_checked,
            [
                SUMMARY_FILE,
                RECORDS_FILE,
                CSV_FILE,
                INPUTS_FILE,
                RESULTS_READY_FILE
            ]
        );
    }

    #[test]
    fn counts_that_disagree_with_the_records_are_named() {
        let problems = problems_after(|dir| {
            replace(dir, SUMMARY_FILE, "\"avg\": 2.0", "\"avg\": 5.0");
            replace(
                dir,
                RECORDS_FILE,
                "\"error\": {\"code\": 500}",
                "\"error\": null",
            );
        });
        assert_eq!(
            problems,
            [
                "profile_export_aiperf.json: request_count is 5, but profile_export.jsonl has 3 \
                 successful records",
                "profile_export_aiperf.json: error_request_count is 1, but \
                 profile_export.jsonl has 0 error records",
                "profile_export_aiperf.csv: `Request Count` shows 2.00, the summary's \
                 request_count avg is 5.00",
            ]
        );
    }

    #[test]
    fn a_csv_value_that_differs_from_the_summary_is_named() {
        let problems = problems_after(|dir| replace(dir, CSV_FILE, "12.35", "12.40"));
        assert_eq!(
            problems,
            [
                "profile_export_aiperf.csv: `Request Latency (ms)` shows 12.40, the summary's \
              request_latency avg is 12.35"
            ]
        );
        let problems = problems_after(|dir| replace(dir, CSV_FILE, "Request Count,2.00\r\n", ""));
        assert_eq!(
            problems,
            ["profile_export_aiperf.csv: no row `Request Count` for request_count of the summary"]
        );
    }

    #[test]
    fn a_broken_line_and_an_unknown_conversation_are_named() {
        let problems = problems_after(|dir| {
            replace(
                dir,
                RECORDS_FILE,
                "session_000000\"}, \"metrics\": {}}",
                "session_000009\"}}",
            );
        });
        assert_eq!(
            problems,
            ["profile_export.jsonl: 1 conversation(s) not in inputs.json, e.g. session_000009"]
        );
        let problems =
            problems_after(|dir| replace(dir, RECORDS_FILE, "{\"metadata\"", "{metadata"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("profile_export.jsonl: line 1: invalid JSON: key must be a string"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_directory_without_a_summary_is_not_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let error = check_run_directory(dir.path()).unwrap_err().to_string();
        assert!(error.ends_with("not found: is this the artifact directory of an aiperf run?"));
    }

    #[test]
    fn the_python_aiperf_s_csv_agrees_with_its_summary() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/examples/streaming-chat-c64-ttft20-itl5");
        if !dir.is_dir() {
            eprintln!("skipping: {} not found", dir.display());
            return;
        }
        let report = check_run_directory(&dir).unwrap();
        assert_eq!(
            report.files_checked,
            [SUMMARY_FILE, CSV_FILE, RESULTS_READY_FILE]
        );
        assert_eq!(report.problems, Vec::<String>::new());
    }
}
