//! `inputs.json`: the exact body each conversation's turns are sent with.
//!
//! A dataset whose prompts are made as the run needs them (`Turn::deferred_text`: long
//! traces) has its file written on a thread once sending ends, each conversation's
//! prompts made again and dropped once written: making them costs seconds of CPU for a
//! long trace, which must not be taken from the requests being measured, nor delay the
//! first one. The thread works while the run's other files are written, and stops at a
//! cancellation (Ctrl-C must not wait for it): the file is then left out, with a
//! warning. Any other dataset's file is written before the run, as it is quick, except a
//! streamed one.
//!
//! A streamed dataset (`ConversationStream`, made as the run goes) is written from the
//! conversations the run makes, not made a second time: the stream the engine draws
//! from hands a copy of each conversation of its first pass to a queue, which a thread
//! of its own writes out as the run goes ([`StreamedInputs`]). The maker never waits for
//! that thread: it holds the queue's lock only to push, and once the queue holds
//! [`MAX_QUEUED_BYTES`] (the disk or the thread fell behind) it stops handing copies
//! over. Once sending ended, the thread makes what the file still lacks itself: the rest
//! of the first pass, when the run stopped before its end (a duration, a failure
//! threshold), continued from where the run left it; after the queue overflowed, a
//! fresh pass from the first conversation the file lacks.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use aiperf_core::dataset::{ConversationPass, DatasetError};
use aiperf_core::{
    build_request, BenchmarkConfig, CancellationToken, Conversation, ConversationStream, Endpoint,
    RequestInput, ValidatedConfig,
};
use serde_json::Value;

use crate::workload::WorkloadError;
use crate::RunError;

mod pretty;

/// `inputs.json`: written already, to be written once sending ends, being written beside
/// the run, being written, or failed to start.
pub(crate) enum InputsWriter {
    Written,
    AfterSending(Box<Job>),
    Beside(StreamedInputs),
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

/// The conversations the file holds: loaded, their prompts deferred.
struct Conversations(Vec<Conversation>);

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
        Ok(Self::AfterSending(Box::new(Job {
            path: path.to_path_buf(),
            endpoint: Arc::clone(endpoint),
            config: config.clone(),
            conversations: Conversations(conversations.to_vec()),
        })))
    }

    /// The file of `stream`'s conversations, written from the conversations the run
    /// makes (see the module docs) until `cancel`: the writer, and the stream for the
    /// run to draw from (`stream` with its first pass handed to the writer as it goes).
    pub(crate) fn of_stream(
        path: &Path,
        endpoint: &Arc<dyn Endpoint>,
        config: &ValidatedConfig,
        stream: ConversationStream,
        cancel: &CancellationToken,
    ) -> (Self, ConversationStream) {
        let started = StreamedInputs::start(
            path,
            endpoint,
            config,
            stream.clone(),
            cancel,
            MAX_QUEUED_BYTES,
        );
        match started {
            Ok((writer, teed)) => (Self::Beside(writer), teed),
            Err(error) => (Self::Failed(RunError::write(path)(error)), stream),
        }
    }

    /// Sending ended: a deferred file is written on a thread of its own, until `cancel`;
    /// a streamed one gets what the run did not make.
    pub(crate) fn sending_ended(self, cancel: &CancellationToken) -> Self {
        let job = match self {
            Self::AfterSending(job) => job,
            Self::Beside(mut streamed) => return streamed.sending_ended(),
            other => return other,
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
                    conversations: Conversations(conversations),
                } = *job;
                let loaded = conversations.iter().map(Ok);
                write(&path, endpoint.as_ref(), &config, loaded, Some(&cancel))
            });
        match spawned {
            Ok(writer) => Self::Writing(writer),
            Err(error) => Self::Failed(RunError::write(&path)(error)),
        }
    }

    /// Waits until the file is written (or left out after a cancellation).
    pub(crate) fn finish(self) -> Result<(), RunError> {
        let writer = match self {
            Self::Written | Self::AfterSending(_) | Self::Beside(_) => return Ok(()),
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

/// Bounds what the queue of a streamed dataset's conversations holds when its writer
/// falls behind (a slow disk): about this many bytes of prompts and media. The maker
/// hands nothing more over after that; the writer makes the rest itself once sending
/// ended.
const MAX_QUEUED_BYTES: usize = 32 << 20;

/// The writer of a streamed dataset is woken once this many conversations wait (or the
/// first pass is complete, or sending ended), not for each: a wake-up is a system call
/// on the maker's thread and a context switch.
const WAKE_AFTER: usize = 64;

/// `inputs.json` of a streamed dataset, written on a thread of its own from the
/// conversations the run makes (see the module docs).
pub(crate) struct StreamedInputs {
    first: Arc<FirstPass>,
    /// Taken once sending ended; still here when the run failed before that.
    thread: Option<JoinHandle<Result<Completion, RunError>>>,
}

impl StreamedInputs {
    /// Starts the writer; the stream returned hands its first pass to it, until the
    /// queue holds `max_queued_bytes`.
    fn start(
        path: &Path,
        endpoint: &Arc<dyn Endpoint>,
        config: &ValidatedConfig,
        stream: ConversationStream,
        cancel: &CancellationToken,
        max_queued_bytes: usize,
    ) -> std::io::Result<(Self, ConversationStream)> {
        let first = Arc::new(FirstPass {
            conversations: stream.len(),
            max_queued_bytes,
            pass: Mutex::new(PassState::NotStarted),
            queue: Mutex::new(Queue::default()),
            queued: Condvar::new(),
        });
        let writer = {
            let (path, endpoint, config) =
                (path.to_path_buf(), Arc::clone(endpoint), config.clone());
            let (first, stream, cancel) = (Arc::clone(&first), stream.clone(), cancel.clone());
            std::thread::Builder::new()
                .name("inputs-json".into())
                .spawn(move || {
                    let written =
                        write_streamed(&path, endpoint.as_ref(), &config, &first, &stream, &cancel);
                    // Nothing more is handed over to a writer that stopped.
                    lock(&first.queue).closed = true;
                    written
                })?
        };
        let teed = {
            let first = Arc::clone(&first);
            let started = AtomicBool::new(false);
            let single_turn = stream.is_single_turn();
            let teed = ConversationStream::new(stream.len(), move || -> ConversationPass {
                if started.swap(true, Ordering::Relaxed) {
                    stream.pass()
                } else {
                    *lock(&first.pass) = PassState::Making(stream.pass());
                    Box::new(HandedOver(Arc::clone(&first)))
                }
            });
            if single_turn {
                teed.single_turn()
            } else {
                teed
            }
        };
        Ok((
            Self {
                first,
                thread: Some(writer),
            },
            teed,
        ))
    }

    /// Tells the writer sending ended: it writes what is queued, then makes the rest.
    fn sending_ended(&mut self) -> InputsWriter {
        self.first.end(End::SendingEnded);
        match self.thread.take() {
            Some(thread) => InputsWriter::Writing(thread),
            None => InputsWriter::Written,
        }
    }
}

impl Drop for StreamedInputs {
    /// The run failed before sending ended: the writer stops and removes its file.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.first.end(End::Abandoned);
        }
    }
}

/// The first pass of a streamed dataset, made by the run's maker thread and written by
/// the writer's.
struct FirstPass {
    /// The stream's length: the conversations the file holds.
    conversations: usize,
    /// See [`MAX_QUEUED_BYTES`].
    max_queued_bytes: usize,
    /// The pass the maker draws from, locked by the maker for each conversation it
    /// makes (uncontended: the writer locks it only after sending ended).
    pass: Mutex<PassState>,
    queue: Mutex<Queue>,
    /// Wakes the writer.
    queued: Condvar,
}

enum PassState {
    /// The run has not started the pass.
    NotStarted,
    Making(ConversationPass),
    /// The writer took the pass over: the maker gets no more from it.
    TakenOver,
}

/// Conversations made, waiting for the writer.
#[derive(Default)]
struct Queue {
    /// In dataset order, after those the writer took already.
    waiting: VecDeque<Conversation>,
    /// About how many bytes `waiting` holds.
    bytes: usize,
    /// How many conversations of the first pass the maker made.
    made: usize,
    /// Not every made conversation was queued (the queue was full, or one failed to be
    /// made): nothing more is, and the writer makes the rest itself.
    gap: bool,
    /// The writer waits for `WAKE_AFTER` conversations.
    writer_waiting: bool,
    /// The writer stopped: nothing more is queued.
    closed: bool,
    end: Option<End>,
}

/// Why the writer stops waiting for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    SendingEnded,
    /// The run failed: the file is not wanted.
    Abandoned,
}

impl FirstPass {
    /// The maker made `made` (the next conversation of the first pass).
    fn made(&self, made: &Result<Conversation, DatasetError>) {
        let mut queue = lock(&self.queue);
        queue.made += 1;
        if queue.gap || queue.closed {
            return;
        }
        let Ok(conversation) = made else {
            // The writer meets the failure again when it makes this one.
            queue.gap = true;
            return;
        };
        let bytes = held_bytes(conversation);
        if queue.bytes + bytes > self.max_queued_bytes {
            queue.gap = true;
            tracing::debug!(
                queued = queue.waiting.len(),
                "inputs.json fell behind the run: the rest is made again once sending ends"
            );
            return;
        }
        queue.bytes += bytes;
        queue.waiting.push_back(conversation.clone());
        let wake = queue.waiting.len() >= WAKE_AFTER || queue.made == self.conversations;
        if wake && queue.writer_waiting {
            queue.writer_waiting = false;
            self.queued.notify_one();
        }
    }

    fn end(&self, end: End) {
        lock(&self.queue).end.get_or_insert(end);
        self.queued.notify_one();
    }

    /// The conversations queued since the last call, waiting for some while the run
    /// goes on; empty once it ended and none are left. `None` when the run failed.
    fn take_queued(&self) -> Option<VecDeque<Conversation>> {
        let mut queue = lock(&self.queue);
        loop {
            match queue.end {
                Some(End::Abandoned) => return None,
                Some(End::SendingEnded) => break,
                None if queue.waiting.len() >= WAKE_AFTER
                    || queue.made == self.conversations && !queue.waiting.is_empty() =>
                {
                    break
                }
                None => {
                    queue.writer_waiting = true;
                    queue = self
                        .queued
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
        queue.bytes = 0;
        Some(std::mem::take(&mut queue.waiting))
    }

    /// After sending ended, the conversations from the `written`-th on that the run made
    /// and queued, then a pass that makes the rest: the run's own, continued, when
    /// every conversation it made was queued, else `stream`'s from the first.
    fn rest(
        &self,
        stream: &ConversationStream,
        written: usize,
    ) -> (VecDeque<Conversation>, ConversationPass) {
        // Waits for the conversation the maker may be making.
        let taken = std::mem::replace(&mut *lock(&self.pass), PassState::TakenOver);
        let mut queue = lock(&self.queue);
        let waiting = std::mem::take(&mut queue.waiting);
        let continued = match taken {
            PassState::Making(pass) if !queue.gap => Some(pass),
            _ => None,
        };
        drop(queue);
        let pass = continued.unwrap_or_else(|| {
            let skipped = written + waiting.len();
            Box::new(stream.pass().skip(skipped))
        });
        (waiting, pass)
    }
}

/// The first pass of the run's stream: each conversation made goes to the writer too.
struct HandedOver(Arc<FirstPass>);

impl Iterator for HandedOver {
    type Item = Result<Conversation, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut pass = lock(&self.0.pass);
        let PassState::Making(making) = &mut *pass else {
            return None;
        };
        let made = making.next()?;
        self.0.made(&made);
        Some(made)
    }
}

/// About how many bytes `conversation` holds (its strings, and a fixed part per turn).
fn held_bytes(conversation: &Conversation) -> usize {
    let strings = |strings: &[String]| strings.iter().map(String::len).sum::<usize>();
    let turns: usize = conversation
        .turns
        .iter()
        .map(|turn| {
            256 + strings(&turn.texts)
                + strings(&turn.images)
                + strings(&turn.audios)
                + strings(&turn.videos)
        })
        .sum();
    256 + turns
        + conversation.session_id.len()
        + conversation.system_message.as_ref().map_or(0, String::len)
        + conversation
            .user_context_message
            .as_ref()
            .map_or(0, String::len)
}

/// The writer of a streamed dataset's file: what the run makes as it goes, then, once
/// sending ended, the rest (see the module docs).
fn write_streamed(
    path: &Path,
    endpoint: &dyn Endpoint,
    config: &BenchmarkConfig,
    first: &FirstPass,
    stream: &ConversationStream,
    cancel: &CancellationToken,
) -> Result<Completion, RunError> {
    let mut file = InputsFile::create(path, endpoint, config)?;
    let mut written = 0;
    loop {
        let Some(queued) = first.take_queued() else {
            return file.cancelled();
        };
        if queued.is_empty() {
            break;
        }
        for conversation in queued {
            if cancel.is_cancelled() {
                return file.cancelled();
            }
            file.add(&conversation)?;
            written += 1;
        }
        if written == first.conversations {
            // Complete while the run goes on: closed now.
            return file.finish();
        }
    }
    if written < first.conversations {
        let (queued, pass) = first.rest(stream, written);
        let rest = queued.into_iter().map(Ok).chain(pass);
        for conversation in rest.take(first.conversations - written) {
            if cancel.is_cancelled() {
                return file.cancelled();
            }
            file.add(&conversation.map_err(WorkloadError::Dataset)?)?;
        }
    }
    file.finish()
}

/// The lock, whatever panicked while holding it (nothing here is left half-changed).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
    let mut file = InputsFile::create(path, endpoint, config)?;
    for conversation in conversations {
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            return file.cancelled();
        }
        file.add(conversation.map_err(WorkloadError::Dataset)?.borrow())?;
    }
    file.finish()
}

/// `inputs.json` being written, one conversation at a time.
struct InputsFile<'a> {
    path: &'a Path,
    writer: std::io::BufWriter<std::fs::File>,
    endpoint: &'a dyn Endpoint,
    config: &'a BenchmarkConfig,
    /// Sessions written so far.
    entries: usize,
}

impl<'a> InputsFile<'a> {
    fn create(
        path: &'a Path,
        endpoint: &'a dyn Endpoint,
        config: &'a BenchmarkConfig,
    ) -> Result<Self, RunError> {
        let file = std::fs::File::create(path).map_err(RunError::write(path))?;
        Ok(Self {
            path,
            writer: std::io::BufWriter::new(file),
            endpoint,
            config,
            entries: 0,
        })
    }

    /// Writes `conversation` and the sessions it starts, each after its parent, its
    /// deferred prompts made for the file and dropped.
    fn add(&mut self, conversation: &Conversation) -> Result<(), RunError> {
        let made;
        let conversation = if conversation.has_deferred_text() {
            made = conversation.materialized();
            &made
        } else {
            conversation
        };
        for session in conversation.with_descendants() {
            write_entry(
                &mut self.writer,
                self.path,
                self.endpoint,
                self.config,
                session,
                self.entries == 0,
            )?;
            self.entries += 1;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Completion, RunError> {
        write_end(&mut self.writer, self.entries)
            .and_then(|()| self.writer.flush())
            .map_err(RunError::write(self.path))?;
        Ok(Completion::Complete)
    }

    /// Stops: a file without every conversation is not left behind.
    fn cancelled(self) -> Result<Completion, RunError> {
        drop(self.writer);
        std::fs::remove_file(self.path).map_err(RunError::write(self.path))?;
        Ok(Completion::Cancelled)
    }
}

/// Writes one session's entry (its id and the body of each of its turns) as an element
/// of the file's `data` array, laid out as `serde_json::to_writer_pretty` lays out the
/// whole `{"data": [...]}` object: two levels in, four spaces. A body serde_json wrote is
/// indented as it is ([`pretty::reindent`]); any other is parsed and printed, and one that
/// is not JSON is written as a string.
fn write_entry(
    writer: &mut impl Write,
    path: &Path,
    endpoint: &dyn Endpoint,
    config: &BenchmarkConfig,
    conversation: &Conversation,
    first: bool,
) -> Result<(), RunError> {
    const PAYLOAD_MARGIN: &[u8] = b"        ";
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(if first { b"{\n  \"data\": [\n" } else { b",\n" });
    out.extend_from_slice(b"    {\n      \"session_id\": ");
    let failed = |error: serde_json::Error| RunError::write(path)(error.into());
    serde_json::to_writer(&mut out, &conversation.session_id).map_err(failed)?;
    out.extend_from_slice(b",\n      \"payloads\": [");
    for (index, turn) in conversation.turns.chunks(1).enumerate() {
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
        out.extend_from_slice(if index == 0 { b"\n" } else { b",\n" });
        out.extend_from_slice(PAYLOAD_MARGIN);
        let recorded = built.recorded_payload();
        if pretty::reindent(recorded, PAYLOAD_MARGIN, &mut out).is_none() {
            let payload = serde_json::from_slice::<Value>(recorded)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(recorded).into_owned()));
            let printed = serde_json::to_vec_pretty(&payload).map_err(failed)?;
            for (line_index, line) in printed.split(|byte| *byte == b'\n').enumerate() {
                if line_index > 0 {
                    out.push(b'\n');
                    out.extend_from_slice(PAYLOAD_MARGIN);
                }
                out.extend_from_slice(line);
            }
        }
    }
    if conversation.turns.is_empty() {
        out.extend_from_slice(b"]\n    }");
    } else {
        out.extend_from_slice(b"\n      ]\n    }");
    }
    writer.write_all(&out).map_err(RunError::write(path))
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
    use std::sync::atomic::AtomicUsize;

    use aiperf_core::Turn;
    use aiperf_endpoints::{ChatEndpoint, EndpointOptions};

    use serde_json::json;

    use super::*;

    /// A stream of `len` one-turn conversations; `made` counts every one made, over all
    /// passes.
    fn counted(len: usize, made: &Arc<AtomicUsize>) -> ConversationStream {
        let made = Arc::clone(made);
        ConversationStream::new(len, move || {
            let made = Arc::clone(&made);
            (0..len).map(move |i| {
                made.fetch_add(1, Ordering::SeqCst);
                Ok(conversation(i))
            })
        })
        .single_turn()
    }

    fn conversation(i: usize) -> Conversation {
        Conversation {
            session_id: format!("session_{i:06}"),
            turns: vec![Turn::text(format!("prompt number {i}, \"quoted\"\nand on"))],
            ..Conversation::default()
        }
    }

    fn chat() -> Arc<dyn Endpoint> {
        Arc::new(ChatEndpoint::new(EndpointOptions::default()))
    }

    fn config() -> ValidatedConfig {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["mock-model".into()];
        config.validate().unwrap()
    }

    /// The file a whole dataset of `len` such conversations writes before the run.
    fn whole_file(dir: &Path, len: usize) -> Vec<u8> {
        let path = dir.join("whole.json");
        let conversations: Vec<Conversation> = (0..len).map(conversation).collect();
        let written = write(
            &path,
            chat().as_ref(),
            &config(),
            conversations.iter().map(Ok),
            None,
        );
        assert_eq!(written.unwrap(), Completion::Complete);
        std::fs::read(path).unwrap()
    }

    /// A run of `len` conversations whose maker draws `drawn` of them (past the end: a
    /// second pass) before sending ends; the file it leaves, and how many conversations
    /// the stream made in all.
    fn streamed_run(
        dir: &Path,
        len: usize,
        drawn: usize,
        max_queued_bytes: usize,
        cancel: &CancellationToken,
    ) -> (Option<Vec<u8>>, usize) {
        let path = dir.join("streamed.json");
        let made = Arc::new(AtomicUsize::new(0));
        let (writer, teed) = StreamedInputs::start(
            &path,
            &chat(),
            &config(),
            counted(len, &made),
            cancel,
            max_queued_bytes,
        )
        .unwrap();
        assert!(teed.is_single_turn());
        // What the engine's maker thread does: passes one after the other.
        let mut pass = teed.pass();
        for draw in 0..drawn {
            if draw % len == 0 && draw > 0 {
                pass = teed.pass();
            }
            assert_eq!(pass.next().unwrap().unwrap(), conversation(draw % len));
        }
        let finished = InputsWriter::Beside(writer).sending_ended(cancel).finish();
        assert!(finished.is_ok(), "{finished:?}");
        (std::fs::read(&path).ok(), made.load(Ordering::SeqCst))
    }

    #[test]
    fn a_stream_is_written_from_the_conversations_the_run_makes() {
        let dir = tempfile::tempdir().unwrap();
        let whole = whole_file(dir.path(), 300);
        // The whole pass drawn, and 20 of a second one: each conversation made once
        // for the file.
        let (file, made) = streamed_run(
            dir.path(),
            300,
            320,
            MAX_QUEUED_BYTES,
            &CancellationToken::new(),
        );
        assert!(file.unwrap() == whole);
        assert_eq!(made, 320);
    }

    #[test]
    fn a_run_that_stops_early_leaves_the_rest_to_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let whole = whole_file(dir.path(), 300);
        for drawn in [0, 1, 100, 299] {
            let (file, made) = streamed_run(
                dir.path(),
                300,
                drawn,
                MAX_QUEUED_BYTES,
                &CancellationToken::new(),
            );
            assert!(file.unwrap() == whole, "{drawn} drawn");
            // The run's pass continued, not made again.
            assert_eq!(made, 300, "{drawn} drawn");
        }
    }

    #[test]
    fn a_writer_that_falls_behind_makes_what_the_queue_could_not_hold() {
        let dir = tempfile::tempdir().unwrap();
        let whole = whole_file(dir.path(), 300);
        // Room for 10 conversations: the other 290 are made again after sending.
        let room = 10 * held_bytes(&conversation(0)) + 10;
        for drawn in [300, 150] {
            let (file, made) =
                streamed_run(dir.path(), 300, drawn, room, &CancellationToken::new());
            assert!(file.unwrap() == whole, "{drawn} drawn");
            assert_eq!(made, drawn + 300, "{drawn} drawn, then a fresh pass");
        }
        let (file, _) = streamed_run(dir.path(), 300, 300, 0, &CancellationToken::new());
        assert!(file.unwrap() == whole, "nothing queued");
    }

    #[test]
    fn a_cancelled_run_leaves_no_file_unless_it_was_complete() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (file, _) = streamed_run(dir.path(), 300, 100, MAX_QUEUED_BYTES, &cancel);
        assert_eq!(file, None);
        // Every conversation made before the cancellation: the file was closed already.
        let whole = whole_file(dir.path(), 64);
        let cancel = CancellationToken::new();
        let path = dir.path().join("streamed.json");
        let (writer, teed) = StreamedInputs::start(
            &path,
            &chat(),
            &config(),
            counted(64, &Arc::default()),
            &cancel,
            MAX_QUEUED_BYTES,
        )
        .unwrap();
        assert_eq!(teed.pass().count(), 64);
        for _ in 0..500 {
            if std::fs::read(&path)
                .unwrap_or_default()
                .ends_with(b"\n  ]\n}")
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        cancel.cancel();
        let finished = InputsWriter::Beside(writer).sending_ended(&cancel).finish();
        assert!(finished.is_ok());
        assert!(std::fs::read(&path).unwrap() == whole);
    }

    #[test]
    fn a_run_that_failed_before_sending_ended_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("streamed.json");
        let (writer, teed) = StreamedInputs::start(
            &path,
            &chat(),
            &config(),
            counted(300, &Arc::default()),
            &CancellationToken::new(),
            MAX_QUEUED_BYTES,
        )
        .unwrap();
        assert_eq!(teed.pass().take(100).count(), 100);
        drop(writer);
        for _ in 0..500 {
            if !path.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("{} is still there", path.display());
    }

    /// The file as one `to_writer_pretty` of the whole object lays it out, each body
    /// parsed into a `Value` (kept as a string when it is not JSON): what the writer
    /// wrote before it indented bodies itself.
    fn whole(conversations: &[Conversation]) -> Vec<u8> {
        let config = config();
        let entries: Vec<Value> = conversations
            .iter()
            .map(|conversation| {
                let payloads: Vec<Value> = conversation
                    .turns
                    .chunks(1)
                    .map(|turn| {
                        let input = RequestInput {
                            model: config.primary_model(),
                            system_message: conversation.system_message.as_deref(),
                            user_context_message: conversation.user_context_message.as_deref(),
                            turns: turn,
                            streaming: false,
                        };
                        let built = build_request(chat().as_ref(), &input).unwrap();
                        let recorded = built.recorded_payload();
                        serde_json::from_slice(recorded).unwrap_or_else(|_| {
                            Value::String(String::from_utf8_lossy(recorded).into_owned())
                        })
                    })
                    .collect();
                json!({"session_id": conversation.session_id, "payloads": payloads})
            })
            .collect();
        serde_json::to_vec_pretty(&json!({ "data": entries })).unwrap()
    }

    fn streamed(conversations: &[Conversation]) -> Vec<u8> {
        let mut out = Vec::new();
        for (index, conversation) in conversations.iter().enumerate() {
            write_entry(
                &mut out,
                Path::new("inputs.json"),
                chat().as_ref(),
                &config(),
                conversation,
                index == 0,
            )
            .unwrap();
        }
        write_end(&mut out, conversations.len()).unwrap();
        out
    }

    #[test]
    fn entries_written_one_by_one_are_laid_out_as_the_whole_object() {
        let with_float = Turn {
            extra: Some(
                json!({"temperature": 0.7, "top_k": 5})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            ..Turn::text("a float in the body: parsed and printed")
        };
        let conversations = [
            conversation(0),
            Conversation {
                session_id: "two \"turns\"".into(),
                system_message: Some("be brief\tplease".into()),
                turns: vec![Turn::text("first\u{1}é"), with_float],
                ..Conversation::default()
            },
            Conversation {
                session_id: "none".into(),
                ..Conversation::default()
            },
            conversation(3),
        ];
        for n in 0..=conversations.len() {
            assert_eq!(
                String::from_utf8(streamed(&conversations[..n])).unwrap(),
                String::from_utf8(whole(&conversations[..n])).unwrap(),
                "{n} entries"
            );
        }
    }
}
