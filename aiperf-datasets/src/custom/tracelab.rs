//! `tracelab`: the TraceLab agentic-coding corpus (JSONL, usually gzipped): one row per
//! LLM round of a coding-agent session. Rows sharing `session_id` form one session whose
//! rounds are replayed in the order they were submitted, each after the think time the
//! agent took once the previous round's reply ended.
//!
//! The corpus records token counts, not text, and no content hashes: each round's
//! prompt is made of [hash-id blocks](super::hash_prompts) whose chain is rebuilt from
//! the engine-reported `prefix_tokens` — a round keeps the first `prefix_tokens / B`
//! blocks of the round before it and gets fresh blocks for the rest — so the server's
//! KV cache sees the prefix reuse the corpus recorded. Every round carries its whole
//! context, so each turn is sent on its own.
//!
//! A subagent's rounds are a session of their own in the corpus, with no link to the
//! session that spawned it. As 0.13 does, the link is recovered by timing containment:
//! a session of the same `user` and `project` whose whole span lies inside a spawning
//! tool call's window (a Claude `Agent`/`Task` call lasting at least
//! [`TracelabJoin::min_spawn_ms`], or a Codex session's first `spawn_agent` to its last
//! `wait_agent` result) is that call's subagent (the tightest window wins). It becomes a
//! child session of its parent, nested as `weka_trace` nests subagents. [`TracelabJoin`]
//! turns the link (or only Codex's windows) off, as 0.13's switches do.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use aiperf_core::config::TracelabJoin;
use aiperf_core::{Branch, BranchMode, Conversation, Turn};
use serde_json::Value;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::hash_prompts::HashIdPrompts;
use super::iso_time::unix_ms;
use super::record::{for_each_record_of, Record};
use super::sessions::replayed_session;

/// Event types that feed a round: the request is submitted once the last one landed.
const INPUT_EVENTS: [&str; 2] = ["user_message", "tool_result"];
/// Event types the model emitted: the last one ends the round's reply.
const OUTPUT_EVENTS: [&str; 3] = ["text", "reasoning", "tool_call"];
/// The first bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Claude Code's blocking tools that run a subagent for their whole duration.
const CLAUDE_SPAWN_TOOLS: [&str; 2] = ["Agent", "Task"];
/// How close (in ms) a later round may start before a subagent's end and still count
/// as sent after it (0.13 rounds recorded times to the microsecond).
const JOIN_EPSILON_MS: f64 = 1e-3;

/// One dated round of a session.
#[derive(Debug)]
struct Round {
    /// When the request was submitted, in Unix ms.
    submitted_ms: f64,
    /// How long the reply took (submission to the last emitted event), when recorded.
    reply_ms: Option<f64>,
    /// The corpus's `round_index`: breaks ties of submission time.
    index: u64,
    input_tokens: u64,
    prefix_tokens: u64,
    output_tokens: u64,
}

/// A window of time in which a session ran a subagent, in Unix ms.
#[derive(Debug, Clone, Copy)]
struct SpawnWindow {
    start: f64,
    end: f64,
    /// How long the subagent ran (ms): the tool's recorded wall latency (Claude), else
    /// the window's length.
    duration: f64,
}

/// The subagents one parent round spawns that the same later round joins.
struct SpawnGroup {
    spawner: usize,
    join_at: Option<usize>,
    /// The earliest spawn of the group, in Unix ms.
    spawned_at: f64,
    /// Each child (session index) with when its first round was submitted.
    children: Vec<(usize, f64)>,
}

/// Everything read from the rows of one session.
#[derive(Debug, Default)]
struct SessionRows {
    id: String,
    rounds: Vec<Round>,
    /// `user` and `project` of its first row: a subagent runs for the same ones.
    owner: (Option<Value>, Option<Value>),
    /// Its first row's `provider` is `codex`.
    codex: bool,
    /// The earliest and latest of every event and tool time of its rows.
    span: Option<(f64, f64)>,
    /// Its Claude spawning tool calls that recorded their wall latency.
    claude_windows: Vec<SpawnWindow>,
    /// When its Codex `spawn_agent` calls were emitted.
    codex_spawns: Vec<f64>,
    /// When its Codex `wait_agent` calls returned.
    codex_waits: Vec<f64>,
}

impl SessionRows {
    fn stamp(&mut self, at: f64) {
        self.span = Some(match self.span {
            Some((first, last)) => (first.min(at), last.max(at)),
            None => (at, at),
        });
    }

    /// Its spawn windows: one per Claude spawning call lasting at least
    /// `join.min_spawn_ms` (shorter ones are mostly no-ops or errors, and their windows
    /// would catch unrelated sessions), or for a Codex session, unless `join.codex` is
    /// off, one from its first `spawn_agent` to its last `wait_agent` result (the corpus
    /// strips the handles that would pair each spawn with its wait).
    fn windows(&self, join: TracelabJoin) -> Vec<SpawnWindow> {
        if !self.codex {
            return self
                .claude_windows
                .iter()
                .filter(|w| w.duration >= join.min_spawn_ms as f64)
                .copied()
                .collect();
        }
        if !join.codex {
            return Vec::new();
        }
        let start = self.codex_spawns.iter().copied().reduce(f64::min);
        let end = self.codex_waits.iter().copied().reduce(f64::max);
        match (start, end) {
            (Some(start), Some(end)) if end > start => vec![SpawnWindow {
                start,
                end,
                duration: (end - start).trunc(),
            }],
            _ => Vec::new(),
        }
    }
}

/// The sessions of a TraceLab file: every session no other spawned, in order of first
/// appearance, each carrying its subagents; rounds with no timestamped event are left
/// out (nothing says when to send them). A subagent that cannot be nested (its parent
/// has no round at or before its spawn) is replayed as a session of its own after them.
/// With `defer`, prompts are left as recipes (see [`HashIdPrompts::give_prompt`]):
/// nothing here needs their text.
pub(crate) fn load(
    path: &Path,
    prompts: &mut HashIdPrompts,
    block_size: u32,
    join: TracelabJoin,
    defer: bool,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let mut sessions: Vec<SessionRows> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for_each_row(path, |mut record| {
        let session_id = record
            .take_id("session_id")?
            .ok_or_else(|| record.missing("session_id"))?;
        let first_row = !by_id.contains_key(&session_id);
        let index = *by_id.entry(session_id.clone()).or_insert_with(|| {
            sessions.push(SessionRows {
                id: session_id,
                ..SessionRows::default()
            });
            sessions.len() - 1
        });
        parse_row(&mut record, &mut sessions[index], first_row)
    })?;
    let mut next_block_id = 0;
    let mut turns: Vec<Vec<Turn>> = Vec::with_capacity(sessions.len());
    for session in &mut sessions {
        session.rounds.sort_by(|a, b| {
            a.submitted_ms
                .total_cmp(&b.submitted_ms)
                .then(a.index.cmp(&b.index))
        });
        turns.push(
            session_turns(
                &session.rounds,
                block_size,
                &mut next_block_id,
                prompts,
                defer,
            )
            .map_err(|message| {
                DatasetFileError::file(path, DatasetFileErrorKind::Invalid, message)
                    .in_field(format!("session {}", session.id))
            })?,
        );
    }
    let parents = if join.subagents {
        subagent_parents(&sessions, join)
    } else {
        vec![None; sessions.len()]
    };
    let mut nested: HashSet<usize> = HashSet::new();
    let mut roots = Vec::new();
    for (index, session) in sessions.iter().enumerate() {
        if parents[index].is_some() || session.rounds.is_empty() {
            continue;
        }
        let children = (0..sessions.len()).filter_map(|child| match parents[child] {
            Some((parent, window)) if parent == index => Some((child, window)),
            _ => None,
        });
        let mut session_turns = std::mem::take(&mut turns[index]);
        nest_subagents(
            &sessions,
            &mut turns,
            index,
            &mut session_turns,
            children,
            &mut nested,
        );
        roots.push(replayed_session(session.id.clone(), session_turns));
    }
    let unnested = (0..sessions.len()).filter(|&index| {
        parents[index].is_some() && !nested.contains(&index) && !sessions[index].rounds.is_empty()
    });
    for index in unnested {
        tracing::info!(
            session = sessions[index].id,
            "replaying a tracelab subagent on its own: its parent has no round before its spawn"
        );
        roots.push(replayed_session(
            sessions[index].id.clone(),
            std::mem::take(&mut turns[index]),
        ));
    }
    Ok(roots)
}

/// Each session's parent and the window it ran in, as 0.13 recovers them: the tightest
/// spawn window (shortest, then earliest, then by parent id) of another session with the
/// same owner that holds the session's whole span. A subagent of a subagent has no parent
/// here: 0.13 nests one level and replays deeper ones on their own.
fn subagent_parents(
    sessions: &[SessionRows],
    join: TracelabJoin,
) -> Vec<Option<(usize, SpawnWindow)>> {
    let windows: Vec<(usize, SpawnWindow)> = sessions
        .iter()
        .enumerate()
        .flat_map(|(index, session)| session.windows(join).into_iter().map(move |w| (index, w)))
        .collect();
    let links: Vec<Option<(usize, SpawnWindow)>> = sessions
        .iter()
        .enumerate()
        .map(|(index, child)| {
            let (first, last) = child.span?;
            windows
                .iter()
                .filter(|(parent, window)| {
                    *parent != index
                        && sessions[*parent].owner == child.owner
                        && first >= window.start
                        && last <= window.end
                })
                .min_by(|(pa, a), (pb, b)| {
                    (a.end - a.start)
                        .total_cmp(&(b.end - b.start))
                        .then(a.start.total_cmp(&b.start))
                        .then(sessions[*pa].id.cmp(&sessions[*pb].id))
                })
                .copied()
        })
        .collect();
    links
        .iter()
        .map(|link| link.filter(|(parent, _)| links[*parent].is_none()))
        .collect()
}

/// Adds the subagents `children` (session index, spawn window) of session `parent` to
/// its `parent_turns`, as `weka_trace` nests a subagent entry placed after the parent's
/// last round submitted at or before the spawn: spawned once that round has its reply,
/// its first round after its offset from the earliest spawn of the children the same
/// round spawns and the same later round joins, joined by the parent's first later round
/// submitted at or after the subagent's end. Marks each nested child in `nested`.
fn nest_subagents(
    sessions: &[SessionRows],
    turns: &mut [Vec<Turn>],
    parent: usize,
    parent_turns: &mut [Turn],
    children: impl Iterator<Item = (usize, SpawnWindow)>,
    nested: &mut HashSet<usize>,
) {
    let submitted: Vec<f64> = sessions[parent]
        .rounds
        .iter()
        .map(|r| r.submitted_ms)
        .collect();
    let mut groups: Vec<SpawnGroup> = Vec::new();
    for (child, window) in children {
        let Some(first_round) = sessions[child].rounds.first() else {
            continue;
        };
        let Some(spawner) = submitted.iter().rposition(|&t| t <= window.start) else {
            continue;
        };
        let end = window.start + window.duration;
        let join_at =
            (spawner + 1..submitted.len()).find(|&k| submitted[k] + JOIN_EPSILON_MS >= end);
        let first_at = first_round.submitted_ms.max(window.start);
        nested.insert(child);
        match groups
            .iter_mut()
            .find(|g| g.spawner == spawner && g.join_at == join_at)
        {
            Some(group) => {
                group.spawned_at = group.spawned_at.min(window.start);
                group.children.push((child, first_at));
            }
            None => groups.push(SpawnGroup {
                spawner,
                join_at,
                spawned_at: window.start,
                children: vec![(child, first_at)],
            }),
        }
    }
    for group in groups {
        let children = group
            .children
            .into_iter()
            .map(|(child, first_at)| {
                let mut child_turns = std::mem::take(&mut turns[child]);
                if let Some(first) = child_turns.first_mut() {
                    first.delay_ms = Some((first_at - group.spawned_at).max(0.0));
                }
                let id = format!("{}::sa:{}", sessions[parent].id, sessions[child].id);
                Arc::new(replayed_session(id, child_turns))
            })
            .collect();
        parent_turns[group.spawner].branches.push(Branch {
            mode: BranchMode::Spawn,
            children,
            join_at: group.join_at,
            on_send: false,
        });
    }
}

/// The turns of one session's rounds (in replay order), their prompts left as recipes
/// with `defer`. Block ids are unique across the file (`next_block_id`), so sessions
/// never share blocks, as in the corpus.
fn session_turns(
    rounds: &[Round],
    block_size: u32,
    next_block_id: &mut u64,
    prompts: &mut HashIdPrompts,
    defer: bool,
) -> Result<Vec<Turn>, String> {
    let block = u64::from(block_size);
    let mut fresh = |count: u64| {
        let ids: Vec<u64> = (*next_block_id..*next_block_id + count).collect();
        *next_block_id += count;
        ids
    };
    let mut previous_blocks: Vec<u64> = Vec::new();
    let mut previous_end: Option<f64> = None;
    let mut turns = Vec::with_capacity(rounds.len());
    for round in rounds {
        let input = round.input_tokens.max(1);
        let whole_blocks = input / block;
        let reused = (round.prefix_tokens.min(input) / block)
            .min(previous_blocks.len() as u64)
            .min(whole_blocks);
        let mut blocks = previous_blocks[..reused as usize].to_vec();
        blocks.extend(fresh(whole_blocks - reused));
        // The partial tail past the last whole block is never reused: a block of its own.
        let mut hash_ids = blocks.clone();
        if input % block != 0 {
            hash_ids.extend(fresh(1));
        }
        let delay_ms = previous_end.map(|end| (round.submitted_ms - end).max(0.0));
        previous_end = Some(round.submitted_ms + round.reply_ms.unwrap_or(0.0));
        previous_blocks = blocks;
        let mut turn = Turn {
            max_tokens: Some(u32::try_from(round.output_tokens.max(1)).unwrap_or(u32::MAX)),
            delay_ms,
            ..Turn::default()
        };
        prompts.give_prompt(&mut turn, input, hash_ids, defer)?;
        turns.push(turn);
    }
    Ok(turns)
}

/// Reads one row into its session: its round (when one of its events has a timestamp),
/// the times that make the session's span, and the spawning tool calls. The corpus has
/// many more fields (models, costs, tool arguments): they do not change what is sent
/// and are ignored.
/// `first_row` tells the session's first row, whose owner and provider are the session's.
fn parse_row(
    record: &mut Record<'_>,
    session: &mut SessionRows,
    first_row: bool,
) -> Result<(), DatasetFileError> {
    let user = record.take("user");
    let project = record.take("project");
    let provider = record.take("provider");
    if first_row {
        session.owner = (user, project);
        session.codex = provider.as_ref().and_then(Value::as_str) == Some("codex");
    }
    for (index, tool) in record
        .take_array("tools")?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let mut tool = record.nested(&format!("tools[{index}]"), tool)?;
        let name = tool.take_str("tool_name")?.unwrap_or_default();
        let emitted = take_time(&mut tool, "emitted_at")?;
        let result = take_time(&mut tool, "result_at")?;
        let latency = match tool.take("tool_wall_latency_ms") {
            None | Some(Value::Null) => None,
            Some(value) => Some(value.as_f64().filter(|ms| ms.is_finite()).ok_or_else(|| {
                tool.wrong_type("tool_wall_latency_ms", "a number of milliseconds", &value)
            })?),
        };
        emitted
            .into_iter()
            .chain(result)
            .for_each(|at| session.stamp(at));
        match (name.as_str(), emitted, result) {
            ("spawn_agent", Some(at), _) => session.codex_spawns.push(at),
            ("wait_agent", _, Some(at)) => session.codex_waits.push(at),
            (name, Some(start), Some(end)) if CLAUDE_SPAWN_TOOLS.contains(&name) => {
                if let Some(latency) = latency {
                    session.claude_windows.push(SpawnWindow {
                        start,
                        end,
                        duration: latency.trunc(),
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(round) = parse_round(record, session)? {
        session.rounds.push(round);
    }
    Ok(())
}

/// An optional ISO 8601 time field, in Unix ms.
fn take_time(record: &mut Record<'_>, key: &str) -> Result<Option<f64>, DatasetFileError> {
    let Some(time) = record.take_str(key)? else {
        return Ok(None);
    };
    unix_ms(&time).map(Some).ok_or_else(|| {
        record.error(
            key,
            DatasetFileErrorKind::WrongType,
            format!("expected an ISO 8601 time such as 2025-01-31T12:00:00.123Z, got {time:?}"),
        )
    })
}

/// A row's round; `None` when none of its events has a timestamp. Every event time
/// counts towards the session's span.
fn parse_round(
    record: &mut Record<'_>,
    session: &mut SessionRows,
) -> Result<Option<Round>, DatasetFileError> {
    let round_index = record.take_u64("round_index")?.unwrap_or(0);
    let input_tokens = record.take_u64("input_tokens_total")?.unwrap_or(0);
    let prefix_tokens = record.take_u64("prefix_tokens")?.unwrap_or(0);
    // Reasoning is generated too: it counts towards the round's output.
    let output_tokens = record.take_u64("output_tokens")?.unwrap_or(0)
        + record.take_u64("reasoning_output_tokens")?.unwrap_or(0);
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (index, event) in record
        .take_array("timing_events")?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let mut event = record.nested(&format!("timing_events[{index}]"), event)?;
        let kind = event.take_str("event_type")?.unwrap_or_default();
        let Some(at) = take_time(&mut event, "timestamp")? else {
            continue;
        };
        session.stamp(at);
        if INPUT_EVENTS.contains(&kind.as_str()) {
            inputs.push(at);
        } else if OUTPUT_EVENTS.contains(&kind.as_str()) {
            outputs.push(at);
        }
    }
    let last_output = outputs.iter().copied().reduce(f64::max);
    let submitted_ms = match inputs.iter().copied().reduce(f64::max) {
        Some(at) => at,
        None => match outputs.iter().copied().reduce(f64::min) {
            Some(at) => at,
            None => return Ok(None),
        },
    };
    Ok(Some(Round {
        submitted_ms,
        reply_ms: last_output.map(|end| (end - submitted_ms).max(0.0)),
        index: round_index,
        input_tokens,
        prefix_tokens,
        output_tokens,
    }))
}

/// The lines of a text file, gzipped or not (told by its first bytes, whatever its
/// name).
fn lines(path: &Path) -> Result<impl Iterator<Item = std::io::Result<String>>, DatasetFileError> {
    let mut file = BufReader::new(File::open(path).map_err(|e| DatasetFileError::io(path, e))?);
    let gzipped = file
        .fill_buf()
        .map_err(|e| DatasetFileError::io(path, e))?
        .starts_with(&GZIP_MAGIC);
    let reader: Box<dyn Read> = if gzipped {
        Box::new(flate2::bufread::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    Ok(BufReader::with_capacity(1 << 16, reader).lines())
}

/// Streams the non-blank lines of a (possibly gzipped) JSONL file, parsed as objects.
fn for_each_row<'p>(
    path: &'p Path,
    visit: impl FnMut(Record<'p>) -> Result<(), DatasetFileError>,
) -> Result<(), DatasetFileError> {
    for_each_record_of(path, lines(path)?, visit)
}

/// Keys that only TraceLab rows have together.
const DETECT_KEYS: [&str; 4] = [
    "session_id",
    "prefix_tokens",
    "newly_append_tokens",
    "timing_events",
];

/// Whether the first non-blank line of a (possibly gzipped) file is a TraceLab row.
pub(crate) fn is_tracelab(path: &Path) -> bool {
    let Ok(mut lines) = lines(path) else {
        return false;
    };
    let first = lines.find_map(|line| match line {
        Ok(text) if text.trim().is_empty() => None,
        other => Some(other),
    });
    match first {
        Some(Ok(text)) => matches!(
            serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}')),
            Ok(serde_json::Value::Object(fields)) if DETECT_KEYS.iter().all(|key| fields.contains_key(*key))
        ),
        _ => false,
    }
}
