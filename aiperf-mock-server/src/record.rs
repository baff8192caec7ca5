//! `--record-requests`: every inference request appended as one JSON line, off the hot path.
//!
//! Handlers send the raw parts over an unbounded channel; a blocking writer task turns them into
//! JSON (`{"timestamp_ns","method","path","headers","body"}`) and appends them to the file,
//! flushing whenever the channel runs dry. `Authorization` and `x-api-key` values become `"***"`.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::MockError;

/// Header names whose values are masked in the record file.
pub const MASKED_HEADERS: [&str; 3] = ["authorization", "x-api-key", "proxy-authorization"];

#[derive(Debug)]
enum Msg {
    Entry(Entry),
    Close,
}

#[derive(Debug)]
struct Entry {
    timestamp_ns: u128,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

/// Sending side, cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    tx: mpsc::UnboundedSender<Msg>,
}

impl Recorder {
    /// Open `path` for appending and start the writer task.
    pub(crate) fn start(path: &Path) -> Result<(Recorder, JoinHandle<()>), MockError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| MockError::RecordFile {
                path: path.to_path_buf(),
                source,
            })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let display = path.display().to_string();
        let task =
            tokio::task::spawn_blocking(move || write_loop(rx, BufWriter::new(file), &display));
        Ok((Recorder { tx }, task))
    }

    pub(crate) fn record(
        &self,
        method: &hyper::Method,
        path: &str,
        headers: &hyper::HeaderMap,
        body: Bytes,
    ) {
        let headers = headers
            .iter()
            .map(|(k, v)| {
                let name = k.as_str().to_string();
                let value = if MASKED_HEADERS.contains(&name.as_str()) {
                    "***".to_string()
                } else {
                    String::from_utf8_lossy(v.as_bytes()).into_owned()
                };
                (name, value)
            })
            .collect();
        let timestamp_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // A closed channel only means the server is shutting down.
        let _ = self.tx.send(Msg::Entry(Entry {
            timestamp_ns,
            method: method.as_str().to_string(),
            path: path.to_string(),
            headers,
            body,
        }));
    }

    /// Ask the writer to finish (everything sent before is written).
    pub(crate) fn close(&self) {
        let _ = self.tx.send(Msg::Close);
    }
}

fn write_loop(mut rx: mpsc::UnboundedReceiver<Msg>, mut out: BufWriter<std::fs::File>, path: &str) {
    while let Some(msg) = rx.blocking_recv() {
        let Msg::Entry(e) = msg else { break };
        let body = serde_json::from_slice::<serde_json::Value>(&e.body).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&e.body).into_owned())
        });
        let headers: serde_json::Map<String, serde_json::Value> = e
            .headers
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        let line = serde_json::json!({
            "timestamp_ns": e.timestamp_ns as u64,
            "method": e.method,
            "path": e.path,
            "headers": headers,
            "body": body,
        });
        let res = serde_json::to_writer(&mut out, &line)
            .map_err(std::io::Error::other)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| if rx.is_empty() { out.flush() } else { Ok(()) });
        if let Err(err) = res {
            tracing::error!(%err, path, "cannot write request record; recording stops");
            return;
        }
    }
    if let Err(err) = out.flush() {
        tracing::error!(%err, path, "cannot flush request records");
    }
}
