//! `inputs.json`: the exact body each conversation's turns are sent with.
//!
//! A dataset whose prompts are made as the run needs them (`Turn::deferred_text`: long
//! traces) has its file written on a thread once sending ends, each conversation's
//! prompts made again and dropped once written: making them costs seconds of CPU for a
//! long trace, which must not be taken from the requests being measured, nor delay the
//! first one. The thread works while the run's other files are written, and stops at a
//! cancellation (Ctrl-C must not wait for it): the file is then left out, with a
//! warning. A streamed dataset (`ConversationStream`, made as the run goes) is written
//! the same way, from a pass of its own made one conversation at a time. Any other
//! dataset's file is written before the run, as it is quick.

use std::borrow::Borrow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use aiperf_core::dataset::DatasetError;
use aiperf_core::{
    build_request, BenchmarkConfig, CancellationToken, Conversation, ConversationStream, Endpoint,
    RequestInput, ValidatedConfig,
};
use serde_json::{json, Value};

use crate::workload::WorkloadError;
use crate::RunError;

/// `inputs.json`: written already, to be written once sending ends, being written, or
/// failed to start.
pub(crate) enum InputsWriter {
    Written,
    AfterSending(Box<Job>),
    Writing(JoinHandle<Result<Completion, RunError>>),
    Failed(RunError),
}

/// What the thread needs: the conversations without their prompts are small to copy.
pub(crate) struct Job {
    path: PathBuf,
    endpoint: Arc<dyn Endpoint>,
    config: ValidatedConfig,
    conversations: Conversations,
}

/// The conversations the file holds.
enum Conversations {
    /// Loaded, their prompts deferred.
    Deferred(Vec<Conversation>),
    /// Made by a pass of the stream.
    Streamed(ConversationStream),
}

/// How writing the file ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Completion {
    Complete,
    Cancelled,
}

impl InputsWriter {
    /// Writes the file of `conversations` to `path` now, unless their prompts are
    /// deferred (see the module docs).
    pub(crate) fn start(
        path: &Path,
        endpoint: &Arc<dyn Endpoint>,
        config: &ValidatedConfig,
        conversations: &[Conversation],
    ) -> Result<Self, RunError> {
        if !conversations.iter().any(Conversation::has_deferred_text) {
            let loaded = conversations.iter().map(Ok);
            write(path, endpoint.as_ref(), config, loaded, None)?;
            return Ok(Self::Written);
        }
        Ok(Self::after_sending(
            path,
            endpoint,
            config,
            Conversations::Deferred(conversations.to_vec()),
        ))
    }

    /// The file of `stream`'s conversations, to be written once sending ends.
    pub(crate) fn of_stream(
        path: &Path,
        endpoint: &Arc<dyn Endpoint>,
        config: &ValidatedConfig,
        stream: ConversationStream,
    ) -> Self {
        Self::after_sending(path, endpoint, config, Conversations::Streamed(stream))
    }

    fn after_sending(
        path: &Path,
        endpoint: &Arc<dyn Endpoint>,
        config: &ValidatedConfig,
        conversations: Conversations,
    ) -> Self {
        Self::AfterSending(Box::new(Job {
            path: path.to_path_buf(),
            endpoint: Arc::clone(endpoint),
            config: config.clone(),
            conversations,
        }))
    }

    /// Sending ended: a deferred file is written on a thread of its own, until `cancel`.
    pub(crate) fn sending_ended(self, cancel: &CancellationToken) -> Self {
        let Self::AfterSending(job) = self else {
            return self;
        };
        let cancel = cancel.clone();
        let path = job.path.clone();
        let spawned = std::thread::Builder::new()
            .name("inputs-json".into())
            .spawn(move || {
                let Job {
                    path,
                    endpoint,
                    config,
                    conversations,
                } = *job;
                let endpoint = endpoint.as_ref();
                match conversations {
                    Conversations::Deferred(conversations) => {
                        let loaded = conversations.iter().map(Ok);
                        write(&path, endpoint, &config, loaded, Some(&cancel))
                    }
                    Conversations::Streamed(stream) => {
                        write(&path, endpoint, &config, stream.pass(), Some(&cancel))
                    }
                }
            });
        match spawned {
            Ok(writer) => Self::Writing(writer),
            Err(error) => Self::Failed(RunError::write(&path)(error)),
        }
    }

    /// Waits until the file is written (or left out after a cancellation).
    pub(crate) fn finish(self) -> Result<(), RunError> {
        let writer = match self {
            Self::Written | Self::AfterSending(_) => return Ok(()),
            Self::Failed(error) => return Err(error),
            Self::Writing(writer) => writer,
        };
        let completion = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        if completion == Completion::Cancelled {
            tracing::warn!(
                "inputs.json was not written: the run was cancelled before the prompts of \
                 this dataset were written out (the same seed and options make them again)"
            );
        }
        Ok(())
    }
}

/// Writes the body of every turn of `conversations` and of the sessions they start
/// (each after its parent), per session, to `path`, making deferred prompts one
/// conversation at a time. A body that is not JSON is kept as a string; a multipart
/// form is written as its JSON view. Once `cancel` fires, stops and removes the file.
fn write<C: Borrow<Conversation>>(
    path: &Path,
    endpoint: &dyn Endpoint,
    config: &BenchmarkConfig,
    conversations: impl Iterator<Item = Result<C, DatasetError>>,
    cancel: Option<&CancellationToken>,
) -> Result<Completion, RunError> {
    let file = std::fs::File::create(path).map_err(RunError::write(path))?;
    let mut writer = std::io::BufWriter::new(file);
    let mut entries = 0;
    for conversation in conversations {
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            drop(writer);
            std::fs::remove_file(path).map_err(RunError::write(path))?;
            return Ok(Completion::Cancelled);
        }
        let conversation = conversation.map_err(WorkloadError::Dataset)?;
        let conversation = conversation.borrow();
        let made;
        let conversation = if conversation.has_deferred_text() {
            made = conversation.materialized();
            &made
        } else {
            conversation
        };
        for session in conversation.with_descendants() {
            let entry = entry(endpoint, config, session)?;
            write_entry(&mut writer, &entry, entries == 0).map_err(RunError::write(path))?;
            entries += 1;
        }
    }
    write_end(&mut writer, entries)
        .and_then(|()| writer.flush())
        .map_err(RunError::write(path))?;
    Ok(Completion::Complete)
}

/// One session's entry: its id and the body of each of its turns.
fn entry(
    endpoint: &dyn Endpoint,
    config: &BenchmarkConfig,
    conversation: &Conversation,
) -> Result<Value, RunError> {
    let mut payloads = Vec::with_capacity(conversation.turns.len());
    for turn in conversation.turns.chunks(1) {
        let built = build_request(
            endpoint,
            &RequestInput {
                model: turn[0].model.as_deref().unwrap_or(config.primary_model()),
                system_message: conversation.system_message.as_deref(),
                user_context_message: conversation.user_context_message.as_deref(),
                turns: turn,
                streaming: config.endpoint.streaming,
            },
        )?;
        let recorded = built.recorded_payload();
        let payload = serde_json::from_slice::<Value>(recorded)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(recorded).into_owned()));
        payloads.push(payload);
    }
    Ok(json!({"session_id": conversation.session_id, "payloads": payloads}))
}

/// Writes `entry` as an element of the file's `data` array, laid out as
/// `serde_json::to_writer_pretty` lays out the whole `{"data": [...]}` object (two
/// levels in: four spaces; JSON strings hold no raw line breaks).
fn write_entry(writer: &mut impl Write, entry: &Value, first: bool) -> std::io::Result<()> {
    writer.write_all(if first { b"{\n  \"data\": [\n" } else { b",\n" })?;
    let pretty = serde_json::to_vec_pretty(entry).map_err(std::io::Error::from)?;
    for (index, line) in pretty.split(|byte| *byte == b'\n').enumerate() {
        if index > 0 {
            writer.write_all(b"\n")?;
        }
        writer.write_all(b"    ")?;
        writer.write_all(line)?;
    }
    Ok(())
}

/// Closes the `data` array and the object after `entries` entries.
fn write_end(writer: &mut impl Write, entries: usize) -> std::io::Result<()> {
    writer.write_all(if entries == 0 {
        b"{\n  \"data\": []\n}"
    } else {
        b"\n  ]\n}"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file as one `to_writer_pretty` of the whole object lays it out.
    fn whole(entries: &[Value]) -> Vec<u8> {
        serde_json::to_vec_pretty(&json!({ "data": entries })).unwrap()
    }

    fn streamed(entries: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            write_entry(&mut out, entry, index == 0).unwrap();
        }
        write_end(&mut out, entries.len()).unwrap();
        out
    }

    #[test]
    fn entries_written_one_by_one_are_laid_out_as_the_whole_object() {
        let entries = [
            json!({"session_id": "a", "payloads": [{"messages": [{"role": "user", "content": "x\ny"}], "n": 1}]}),
            json!({"session_id": "b", "payloads": []}),
            json!({"session_id": "c", "payloads": ["not json"]}),
        ];
        for n in 0..=entries.len() {
            assert_eq!(
                String::from_utf8(streamed(&entries[..n])).unwrap(),
                String::from_utf8(whole(&entries[..n])).unwrap(),
                "{n} entries"
            );
        }
    }
}
