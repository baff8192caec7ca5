//! `weka_trace`: Weka KV-cache-tester agentic coding traces. A trace is one `.json`
//! file (`{"id", "models", "block_size", "hash_id_scope": "local", "requests": [...]}`);
//! `--input-file` is one such file or a folder of them (read in name order). The
//! Hugging Face weka corpora hold one such trace per row and replay the same way.
//!
//! A trace's top-level requests (`type` `n` or `s`: `t` seconds, `in`/`out` tokens,
//! `hash_ids`, `api_time`, `think_time`) are split into [agent chains](super::weka_chains)
//! by their hash-id prefixes: the first request's chain is the trace's session, every
//! other chain a child session (`<id>::fa:NNN`, or `aux:`/`wg:` as 0.13 classifies it).
//! Each `type: "subagent"` entry's inner
//! requests, split the same way, form child sessions (`<id>::sa:<agent_id>` and its
//! siblings) nested as 0.13 nests them: spawned by the parent's last request before the
//! entry, its first request after its recorded offset from the spawn, and joined by
//! the parent's first later request recorded at or after the subagent's end. Children
//! recorded starting while their spawning request was in flight start as it is sent;
//! the others once it has its reply. Every
//! request carries its whole context, so each turn is sent on its own, its prompt made
//! of its `hash_ids` blocks of the trace's `block_size`. Hash ids are local to a trace:
//! each trace's blocks come from its own seed stream, so traces never share a prefix.
//! A turn waits the recorded idle gap before it (`t` minus the previous request's `t +
//! api_time`, at least 0), or its `think_time` with `--use-think-time-only`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aiperf_core::config::{PromptCorpus, RandomCorpusStyle};
use aiperf_core::{Branch, BranchMode, ContextMode, Conversation, Turn};
use serde::Deserialize;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::sessions::replayed_session;
use super::weka_chains::{self, ChainRequest, WorkerKind};
use super::weka_prompts::{PromptSource, TracePrompts};
use crate::seed::derive_seed;
use crate::Tokenizer;

/// How to read weka traces.
#[derive(Debug, Clone)]
pub(crate) struct WekaOptions {
    pub(crate) tokenizer: Tokenizer,
    pub(crate) seed: u64,
    pub(crate) corpus: PromptCorpus,
    pub(crate) style: RandomCorpusStyle,
    /// `--max-context-length`: traces whose peak `in + out` is over this are left out.
    pub(crate) max_context_length: Option<u64>,
    /// `--use-think-time-only`.
    pub(crate) think_time_only: bool,
    /// Prompts are left as recipes, made a trace at a time when a run needs them
    /// (see [`super::weka_prompts`]): splitting chains and nesting subagents need the
    /// hash ids, never the text.
    pub(crate) defer_prompts: bool,
}

// Every recorded field is declared so that a typo is an error; the recorded model
// names, prefix sizes, summaries and telemetry are validated but not replayed.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trace {
    id: String,
    models: Vec<String>,
    block_size: u32,
    hash_id_scope: Scope,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
    requests: Vec<Entry>,
    #[serde(default)]
    totals: Option<serde_json::Value>,
}

/// Only trace-local hash ids exist in the format (0.13 rejects any other scope too).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Scope {
    Local,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Entry {
    #[serde(rename = "n")]
    Normal(Request),
    #[serde(rename = "s")]
    Streaming(Request),
    #[serde(rename = "subagent")]
    Subagent(SpawnedAgent),
}

#[allow(dead_code)] // see `Trace`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    t: f64,
    model: String,
    #[serde(rename = "in")]
    input_length: u64,
    #[serde(rename = "out")]
    output_length: u64,
    #[serde(default)]
    hash_ids: Vec<u64>,
    #[serde(default)]
    input_types: Vec<String>,
    #[serde(default)]
    output_types: Vec<String>,
    #[serde(default)]
    stop: String,
    api_time: Option<f64>,
    think_time: Option<f64>,
    #[serde(default)]
    ttft: Option<f64>,
}

#[allow(dead_code)] // see `Trace`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnedAgent {
    t: f64,
    agent_id: String,
    subagent_type: String,
    duration_ms: Option<u64>,
    total_tokens: Option<u64>,
    tool_use_count: Option<u64>,
    status: String,
    requests: Vec<Entry>,
    models: Vec<String>,
    #[serde(default)]
    tool_tokens: u64,
    #[serde(default)]
    system_tokens: u64,
}

/// The sessions of the weka trace file or folder at `path`.
pub(crate) fn load(
    path: &Path,
    options: &WekaOptions,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let traces = trace_files(path)?.into_iter().map(|file| {
        let trace = read_trace(&file)?;
        Ok((
            Origin {
                path: file,
                line: None,
            },
            trace,
        ))
    });
    replay(traces, options, path)
}

/// The sessions of a Hugging Face weka corpus: each row of `rows` is one whole trace,
/// replayed exactly as the same trace in a file would be. Null fields (a Parquet
/// conversion fills every absent field with null) count as absent.
#[cfg(feature = "hub")]
pub(crate) fn load_rows(
    mut rows: crate::hub::Rows,
    options: &WekaOptions,
    what: &Path,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let traces = std::iter::from_fn(|| {
        let row = rows.next()?;
        let origin = rows.position().map(|(path, line)| Origin {
            path: path.to_owned(),
            line: Some(line),
        });
        Some(match (row, origin) {
            (Err(error), _) => Err(hub_row_error(error, what)),
            (Ok(row), Some(origin)) => {
                let mut value = serde_json::Value::Object(row);
                drop_nulls(&mut value);
                serde_json::from_value::<Trace>(value)
                    .map_err(|e| {
                        origin.error(
                            DatasetFileErrorKind::Syntax,
                            format!("not a weka trace: {e}"),
                        )
                    })
                    .and_then(|trace| validate(trace, &origin))
                    .map(|trace| (origin, trace))
            }
            (Ok(_), None) => Err(DatasetFileError::file(
                what,
                DatasetFileErrorKind::Invalid,
                "a row came from no file",
            )),
        })
    });
    replay(traces, options, what)
}

/// A row-reading failure as a dataset file error at the same place.
#[cfg(feature = "hub")]
fn hub_row_error(error: crate::hub::HubError, what: &Path) -> DatasetFileError {
    use crate::hub::HubError;
    match error {
        HubError::Row {
            path,
            line,
            message,
        } => DatasetFileError::file(&path, DatasetFileErrorKind::Syntax, message).at_line(line),
        HubError::Io { path, source } => DatasetFileError::io(&path, source),
        HubError::File { path, message } => {
            DatasetFileError::file(&path, DatasetFileErrorKind::Syntax, message)
        }
        other => DatasetFileError::file(what, DatasetFileErrorKind::Io, other.to_string()),
    }
}

/// Removes the null members of every object in `value`.
#[cfg(feature = "hub")]
fn drop_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(members) => {
            members.retain(|_, member| !member.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Where a trace came from: its file, and for a row of a corpus its line (or Parquet
/// row), so an error names both.
struct Origin {
    path: PathBuf,
    line: Option<usize>,
}

impl Origin {
    fn error(&self, kind: DatasetFileErrorKind, message: impl Into<String>) -> DatasetFileError {
        let error = DatasetFileError::file(&self.path, kind, message);
        match self.line {
            Some(line) => error.at_line(line),
            None => error,
        }
    }
}

/// The sessions of `traces`, in order, one root session per trace (`what` names them
/// all when none is left). Trace ids must be unique: they name the sessions.
fn replay(
    traces: impl Iterator<Item = Result<(Origin, Trace), DatasetFileError>>,
    options: &WekaOptions,
    what: &Path,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let mut conversations = Vec::new();
    let mut over_limit = 0;
    let mut seen_ids = std::collections::HashSet::new();
    for located in traces {
        let (origin, trace) = located?;
        if !seen_ids.insert(trace.id.clone()) {
            return Err(origin
                .error(
                    DatasetFileErrorKind::Invalid,
                    format!(
                        "duplicate trace id {:?}: each trace needs its own",
                        trace.id
                    ),
                )
                .in_field("id"));
        }
        if options
            .max_context_length
            .is_some_and(|max| peak_context(&trace.requests) > max)
        {
            over_limit += 1;
            continue;
        }
        let source = PromptSource {
            tokenizer: options.tokenizer.clone(),
            seed: derive_seed(options.seed, &format!("dataset.weka.{}", trace.id)),
            block_size: trace.block_size,
            corpus: options.corpus,
            style: options.style,
        };
        // Made now when prompts are made at load; with them deferred, the first trace's
        // alone: it says whether any trace's can be built (that depends on the
        // tokenizer and the corpus, not the seed) and is the first a run needs.
        let ready = if !options.defer_prompts || conversations.is_empty() {
            let prompts = source
                .prompts()
                .map_err(|message| origin.error(DatasetFileErrorKind::Invalid, message))?;
            Some(prompts)
        } else {
            None
        };
        let mut prompts = TracePrompts::new(source);
        let mut builder = SessionBuilder {
            block_size: trace.block_size,
            prompts: &mut prompts,
            think_time_only: options.think_time_only,
        };
        let (root, _) = builder
            .session(trace.id.clone(), &trace.requests, None, "requests")
            .map_err(|(field, message)| {
                origin
                    .error(DatasetFileErrorKind::Invalid, message)
                    .in_field(field)
            })?;
        prompts.finish(ready);
        if !root.turns.is_empty() {
            conversations.push(if options.defer_prompts {
                root
            } else {
                root.materialized()
            });
        }
    }
    if over_limit > 0 {
        tracing::info!(
            skipped = over_limit,
            max_context_length = options.max_context_length,
            "left out weka traces whose peak context is over --max-context-length"
        );
    }
    if conversations.is_empty() {
        return Err(DatasetFileError::file(
            what,
            DatasetFileErrorKind::Empty,
            "no weka trace requests to replay (every trace empty or over \
             --max-context-length)",
        ));
    }
    Ok(conversations)
}

/// The `.json` files of a folder in name order, or the file itself.
fn trace_files(path: &Path) -> Result<Vec<PathBuf>, DatasetFileError> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| DatasetFileError::io(path, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|file| file.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the folder holds no .json weka traces",
        ));
    }
    Ok(files)
}

/// One trace file; a schema error names its line.
fn read_trace(file: &Path) -> Result<Trace, DatasetFileError> {
    let text = std::fs::read_to_string(file).map_err(|e| DatasetFileError::io(file, e))?;
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        return Err(DatasetFileError::file(
            file,
            DatasetFileErrorKind::Empty,
            "the file holds no records (it is empty or has only blank lines)",
        ));
    }
    let trace: Trace = serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        // The line is given on its own; serde's message repeats it.
        let message = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let message = message.strip_suffix(&position).unwrap_or(&message);
        DatasetFileError::file(
            file,
            DatasetFileErrorKind::Syntax,
            format!("not a weka trace: {message}"),
        )
        .at_line(e.line())
    })?;
    validate(
        trace,
        &Origin {
            path: file.to_owned(),
            line: None,
        },
    )
}

/// What the schema cannot say: blocks hold at least one token.
fn validate(trace: Trace, origin: &Origin) -> Result<Trace, DatasetFileError> {
    if trace.block_size == 0 {
        return Err(origin
            .error(DatasetFileErrorKind::Invalid, "must be at least 1")
            .in_field("block_size"));
    }
    Ok(trace)
}

/// The largest `in + max(out, 1)` of any request, subagents included.
fn peak_context(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .map(|entry| match entry {
            Entry::Normal(r) | Entry::Streaming(r) => r.input_length + r.output_length.max(1),
            Entry::Subagent(agent) => peak_context(&agent.requests),
        })
        .max()
        .unwrap_or(0)
}

/// How close (in seconds) a later request may start before a subagent's recorded end
/// and still count as sent after it (recorded times are rounded).
const JOIN_EPSILON_S: f64 = 1e-6;

/// A field of a trace and what is wrong with it.
type FieldError = (String, String);

/// Builds the sessions of one trace.
struct SessionBuilder<'a> {
    block_size: u32,
    prompts: &'a mut TracePrompts,
    think_time_only: bool,
}

/// The child sessions one parent turn spawns that the same later turn joins.
struct SpawnGroup {
    spawner: usize,
    join_at: Option<usize>,
    /// The earliest spawn of the group, in seconds on the trace's clock.
    spawned_at: f64,
    /// Each child with when its first request was recorded.
    children: Vec<(Conversation, f64)>,
}

/// A request of a session: its entry index, its `t` on the trace's clock, the request.
type Placed<'e> = (usize, f64, &'e Request);

/// An agent chain split off a session's requests, as a child session.
struct FlatAgent {
    session: Conversation,
    /// The entry index of its first request.
    first_index: usize,
    /// When its first request was recorded.
    first_t: f64,
    /// When its last request ended.
    end: f64,
}

impl SessionBuilder<'_> {
    /// The session of `entries` (a trace's requests, or a subagent's), as 0.13 nests
    /// them. Its requests are first split into [agent chains](super::weka_chains): the
    /// chain of the earliest request is this session; each other chain is an agent of
    /// its own, `<id>::fa:NNN` (or `aux:`/`wg:`, [`WorkerKind`]; returned to be a
    /// sibling, `<id>:fa:NNN`, for a subagent's session). A trace's agent chain is spawned by this session's last
    /// turn before its first request (the first turn when none is) and joined by the
    /// first later turn recorded at or after the chain's end.
    ///
    /// Each subagent among the entries becomes a child session spawned by the last
    /// turn before it and joined by the first later turn recorded at or after the
    /// subagent's end (or left running to the session's end when none is). A subagent
    /// with no request before it has no turn to spawn it and is left out.
    ///
    /// Children spawned by the same turn and joined by the same turn start together;
    /// when they were recorded starting before that turn's request ended they start as
    /// it is sent, each first request after its recorded offset from that send, and
    /// otherwise once it has its reply, after their offset from the earliest spawn.
    ///
    /// `spawned_at` is the marker's `t` of a subagent's session: an inner `t` before
    /// it is relative to it (older captures), as 0.13 reads them.
    fn session(
        &mut self,
        session_id: String,
        entries: &[Entry],
        spawned_at: Option<f64>,
        field: &str,
    ) -> Result<(Conversation, Vec<FlatAgent>), FieldError> {
        let requests: Vec<Placed<'_>> = entries
            .iter()
            .enumerate()
            .filter_map(|(index, entry)| match entry {
                Entry::Normal(r) | Entry::Streaming(r) => {
                    Some((index, on_trace_clock(r.t, spawned_at), r))
                }
                Entry::Subagent(_) => None,
            })
            .collect();
        let (requests, workers) = split_agents(requests);
        let mut turns = self.turns(&requests, field)?;
        let mut agents = Vec::with_capacity(workers.len());
        for (n, (chain, kind)) in workers.iter().enumerate() {
            let marker = if spawned_at.is_some() { ":" } else { "::" };
            let name = match kind {
                WorkerKind::Agent => format!("fa:{n:03}"),
                WorkerKind::Auxiliary => format!("aux:{n:03}"),
                WorkerKind::Group { group, member } => format!("wg:{group:03}_{member:03}"),
            };
            agents.push(FlatAgent {
                session: Conversation {
                    session_id: format!("{session_id}{marker}{name}"),
                    turns: self.turns(chain, field)?,
                    context_mode: ContextMode::MessageArrayWithResponses,
                    ..Conversation::default()
                },
                first_index: chain[0].0,
                first_t: chain[0].1,
                end: chain
                    .iter()
                    .map(|(_, t, r)| t + busy_seconds(r))
                    .fold(f64::NEG_INFINITY, f64::max),
            });
        }
        let join_after = |index: usize, end: f64| {
            requests
                .iter()
                .position(|(at, t, _)| *at > index && t + JOIN_EPSILON_S >= end)
        };
        let mut groups: Vec<SpawnGroup> = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let Entry::Subagent(agent) = entry else {
                continue;
            };
            let Some(spawner) = requests.iter().rposition(|(at, _, _)| *at < index) else {
                tracing::info!(
                    session = session_id,
                    agent = agent.agent_id,
                    "left out a weka subagent with no request before it to spawn it"
                );
                continue;
            };
            let start = on_trace_clock(agent.t, spawned_at);
            let join_at = join_after(index, subagent_end(agent, start));
            let (child, siblings) = self.session(
                format!("{session_id}::sa:{}", agent.agent_id),
                &agent.requests,
                Some(start),
                &format!("{field}[{index}].requests"),
            )?;
            let Some(first_t) = agent
                .requests
                .iter()
                .find_map(|entry| match entry {
                    Entry::Normal(r) | Entry::Streaming(r) => Some(r.t),
                    Entry::Subagent(_) => None,
                })
                .map(|t| on_trace_clock(t, Some(start)))
            else {
                continue;
            };
            let mut children = vec![(child, first_t)];
            children.extend(siblings.into_iter().map(|a| (a.session, a.first_t)));
            add_to_group(&mut groups, spawner, join_at, start, children);
        }
        if spawned_at.is_some() {
            Self::attach(&mut turns, &requests, groups);
            return Ok((replayed_session(session_id, turns), agents));
        }
        for agent in agents {
            let spawner = requests
                .iter()
                .rposition(|(at, _, _)| *at < agent.first_index)
                .unwrap_or(0);
            let join_at = join_after(agent.first_index, agent.end);
            add_to_group(
                &mut groups,
                spawner,
                join_at,
                agent.first_t,
                vec![(agent.session, agent.first_t)],
            );
        }
        Self::attach(&mut turns, &requests, groups);
        Ok((replayed_session(session_id, turns), Vec::new()))
    }

    /// Hangs each group's children on its spawning turn: started as that turn is sent
    /// when the recording has them starting before its request ended.
    fn attach(turns: &mut [Turn], requests: &[Placed<'_>], groups: Vec<SpawnGroup>) {
        for group in groups {
            let (spawner_t, spawner) = (requests[group.spawner].1, requests[group.spawner].2);
            let busy = busy_seconds(spawner);
            let on_send = busy > 0.0 && group.spawned_at < spawner_t + busy;
            let origin = if on_send { spawner_t } else { group.spawned_at };
            let children = group
                .children
                .into_iter()
                .map(|(mut child, first_t)| {
                    if let Some(first) = child.turns.first_mut() {
                        first.delay_ms = Some(((first_t - origin) * 1000.0).max(0.0));
                    }
                    Arc::new(child)
                })
                .collect();
            turns[group.spawner].branches.push(Branch {
                mode: BranchMode::Spawn,
                children,
                join_at: group.join_at,
                on_send,
            });
        }
    }

    /// The turns of one session's requests (entry index, `t` on the trace's clock),
    /// in recorded order.
    fn turns(&mut self, requests: &[Placed<'_>], field: &str) -> Result<Vec<Turn>, FieldError> {
        let mut turns = Vec::with_capacity(requests.len());
        let mut previous: Option<(f64, &Request)> = None;
        for &(index, t, request) in requests {
            let input = request.input_length.max(1);
            let blocks = needed_blocks(&request.hash_ids, input, u64::from(self.block_size));
            let delay_ms = previous.map(|(before_t, before)| match request.think_time {
                Some(think) if self.think_time_only => think.max(0.0) * 1000.0,
                _ => ((t - before_t - busy_seconds(before)) * 1000.0).max(0.0),
            });
            let prompt = self
                .prompts
                .recipe(input, blocks.to_vec())
                .map_err(|message| (format!("{field}[{index}]"), message))?;
            turns.push(Turn {
                deferred_text: Some(prompt),
                max_tokens: Some(u32::try_from(request.output_length.max(1)).unwrap_or(u32::MAX)),
                delay_ms,
                ..Turn::default()
            });
            previous = Some((t, request));
        }
        Ok(turns)
    }
}

/// Adds `children`, spawned at `spawned_at` by turn `spawner` and joined by `join_at`,
/// to the group of the same two turns, or to a new one.
fn add_to_group(
    groups: &mut Vec<SpawnGroup>,
    spawner: usize,
    join_at: Option<usize>,
    spawned_at: f64,
    children: Vec<(Conversation, f64)>,
) {
    match groups
        .iter_mut()
        .find(|g| g.spawner == spawner && g.join_at == join_at)
    {
        Some(group) => {
            group.spawned_at = group.spawned_at.min(spawned_at);
            group.children.extend(children);
        }
        None => groups.push(SpawnGroup {
            spawner,
            join_at,
            spawned_at,
            children,
        }),
    }
}

/// A session's requests as its own agent chain (in recorded order when it is the only
/// one) and the other agent chains found among them, each in time order.
fn split_agents(
    requests: Vec<Placed<'_>>,
) -> (Vec<Placed<'_>>, Vec<(Vec<Placed<'_>>, WorkerKind)>) {
    let chains = weka_chains::split(
        &requests
            .iter()
            .map(|&(index, t, r)| ChainRequest {
                index,
                t,
                end: t + busy_seconds(r),
                model: &r.model,
                hash_ids: &r.hash_ids,
                input_length: r.input_length,
                output_length: r.output_length,
            })
            .collect::<Vec<_>>(),
    );
    if chains.workers.is_empty() {
        return (requests, Vec::new());
    }
    let by_index: std::collections::HashMap<usize, Placed<'_>> =
        requests.iter().map(|p| (p.0, *p)).collect();
    let placed = |chain: &[usize]| chain.iter().map(|i| by_index[i]).collect::<Vec<_>>();
    let workers = chains
        .workers
        .iter()
        .map(|w| (placed(&w.requests), w.kind))
        .collect();
    (placed(&chains.main), workers)
}

/// A subagent's inner `t` on its trace's clock: one before the subagent's spawn is
/// relative to it.
fn on_trace_clock(t: f64, spawned_at: Option<f64>) -> f64 {
    match spawned_at {
        Some(spawn) if t + JOIN_EPSILON_S < spawn => spawn + t,
        _ => t,
    }
}

/// How long the server took on a request (0 when not recorded or unusable).
fn busy_seconds(request: &Request) -> f64 {
    request
        .api_time
        .filter(|t| t.is_finite())
        .unwrap_or(0.0)
        .max(0.0)
}

/// When a subagent spawned at `start` ended: its recorded duration, else the end of
/// its last request, else its spawn.
fn subagent_end(agent: &SpawnedAgent, start: f64) -> f64 {
    if let Some(duration_ms) = agent.duration_ms {
        return start + duration_ms as f64 / 1000.0;
    }
    agent
        .requests
        .iter()
        .filter_map(|entry| match entry {
            Entry::Normal(r) | Entry::Streaming(r) => {
                Some(on_trace_clock(r.t, Some(start)) + busy_seconds(r))
            }
            Entry::Subagent(_) => None,
        })
        .reduce(f64::max)
        .unwrap_or(start)
}

/// The recorded block ids a prompt of `input` tokens uses: at most ⌈input / block⌉ of
/// them. A recording that hashed fewer blocks is prefix only: the prompt continues with
/// fresh tokens of its own (docs/datasets.md#trace-prompts-from-hash-ids), as in 0.13.
fn needed_blocks(recorded: &[u64], input: u64, block: u64) -> &[u64] {
    let needed = usize::try_from(input.div_ceil(block)).unwrap_or(usize::MAX);
    &recorded[..needed.min(recorded.len())]
}

/// Whether `path` is a weka trace file, or a folder whose first `.json` file is one.
pub(crate) fn is_weka(path: &Path) -> bool {
    let file = if path.is_dir() {
        match trace_files(path) {
            Ok(files) => files.into_iter().next(),
            Err(_) => None,
        }
    } else {
        Some(path.to_owned())
    };
    file.filter(|f| f.extension().is_some_and(|ext| ext == "json"))
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|value| {
            value.get("hash_id_scope").is_some()
                && value
                    .get("requests")
                    .is_some_and(serde_json::Value::is_array)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_cut_to_the_input_or_kept_as_its_prefix() {
        assert_eq!(needed_blocks(&[5, 6, 7], 20, 16), [5, 6]);
        assert_eq!(needed_blocks(&[5, 6, 7], 48, 16), [5, 6, 7]);
        assert_eq!(needed_blocks(&[5], 40, 16), [5]);
        assert_eq!(needed_blocks(&[], 40, 16), [0_u64; 0]);
    }
}
