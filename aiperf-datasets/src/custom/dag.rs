//! `dag_jsonl`: agentic conversations whose sessions start one another, one session per
//! line (the Python AIPerf 0.13's schema):
//!
//! ```json
//! {"session_id": "plan", "turns": [
//!   {"messages": [{"role": "user", "content": "Plan"}], "spawns": ["a", "b"]},
//!   {"messages": [{"role": "user", "content": "Merge"}], "forks": ["review"]}]}
//! ```
//!
//! A turn has `messages` (appended to the session's history, with the live replies),
//! optional `model`, `max_tokens`, `tools`, `extra` (body fields), `delay` (ms before
//! the turn is sent) and two ways to start other sessions once its reply is back:
//! - `spawns`: fresh sessions. Bare ids are waited for by the next turn; an object
//!   `{"children": [...], "join_at": K}` is waited for by turn `K`. From the last turn
//!   nobody waits.
//! - `forks`: sessions that continue this one's history. A bare id ends the parent (only
//!   allowed on its last turn); `{"child": id, "background": true}` lets it go on.
//!
//! A line may also name `pre_session_spawns` (started before its first turn, never
//! waited for) and a `context_mode`. Sessions no other session starts are the roots:
//! the dataset's conversations, each carrying the sessions it starts. Unknown ids,
//! cycles, a child forked by two parents and misplaced `system` messages are errors on
//! the line that names them.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use aiperf_core::{Branch, BranchMode, ContextMode, Conversation, Turn};
use serde_json::Value;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::mooncake::check_messages;
use super::record::{for_each_record, Record};

const LINE_KEYS: [&str; 4] = ["session_id", "turns", "context_mode", "pre_session_spawns"];
const TURN_KEYS: [&str; 8] = [
    "messages",
    "model",
    "max_tokens",
    "tools",
    "extra",
    "forks",
    "spawns",
    "delay",
];
/// Keys of 0.13's request-less orchestrator conversations, which this build refuses.
const ORCHESTRATOR_KEYS: [&str; 7] = [
    "orchestrator",
    "spawns",
    "rounds",
    "think_time_ms",
    "think_time_sigma",
    "think_time_min_ms",
    "think_time_max_ms",
];

/// A session id named by a line, and where (for errors about it).
#[derive(Debug, Clone)]
struct Reference {
    id: String,
    field: String,
}

/// A turn's branch before its children are resolved.
#[derive(Debug)]
struct PendingBranch {
    mode: BranchMode,
    children: Vec<Reference>,
    join_at: Option<usize>,
}

/// One line, parsed.
#[derive(Debug)]
struct Session {
    line: usize,
    /// Its turns without branches (added once the children are known).
    conversation: Conversation,
    branches: Vec<Vec<PendingBranch>>,
    pre_session_spawns: Vec<Reference>,
}

/// The root sessions of a `dag_jsonl` file, each carrying the sessions it starts.
pub(crate) fn load(path: &Path) -> Result<Vec<Conversation>, DatasetFileError> {
    let mut sessions: Vec<Session> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for_each_record(path, |record| {
        let session = parse_line(record)?;
        let id = session.conversation.session_id.clone();
        if let Some(&first) = by_id.get(&id) {
            return Err(line_error(
                path,
                session.line,
                "session_id",
                format!(
                    "duplicate session_id '{id}' (first on line {})",
                    sessions[first].line
                ),
            ));
        }
        by_id.insert(id, sessions.len());
        sessions.push(session);
        Ok(())
    })?;
    let graph = Graph {
        path,
        sessions: &sessions,
        by_id: &by_id,
    };
    let fork_parent = graph.check_references()?;
    graph.check_cycles()?;
    graph.check_fork_children(&fork_parent)?;
    let started: HashSet<&str> = sessions
        .iter()
        .flat_map(Session::references)
        .map(|r| r.id.as_str())
        .collect();
    let mut built: HashMap<usize, Arc<Conversation>> = HashMap::new();
    Ok((0..sessions.len())
        .filter(|&index| !started.contains(sessions[index].conversation.session_id.as_str()))
        .map(|index| {
            let root = graph.build(index, &mut built);
            // No session starts a root: dropping its entry leaves `root` the only owner.
            built.remove(&index);
            Arc::unwrap_or_clone(root)
        })
        .collect())
}

fn line_error(
    path: &Path,
    line: usize,
    field: &str,
    message: impl Into<String>,
) -> DatasetFileError {
    DatasetFileError::file(path, DatasetFileErrorKind::Invalid, message)
        .at_line(line)
        .in_field(field)
}

fn parse_line(mut record: Record<'_>) -> Result<Session, DatasetFileError> {
    if let Some(key) = ORCHESTRATOR_KEYS.iter().find(|key| record.has(key)) {
        return Err(record.error(
            key,
            DatasetFileErrorKind::Invalid,
            "orchestrator conversations (request-less spines of rounds) are not supported; \
             start sessions from a turn's spawns or forks",
        ));
    }
    let session_id = record
        .take_str("session_id")?
        .ok_or_else(|| record.missing("session_id"))?;
    if session_id.is_empty() {
        return Err(record.error(
            "session_id",
            DatasetFileErrorKind::Invalid,
            "must not be empty",
        ));
    }
    let context_mode = match record.take_str("context_mode")?.as_deref() {
        None | Some("deltas_without_responses") => ContextMode::DeltasWithoutResponses,
        Some("message_array_with_responses") => ContextMode::MessageArrayWithResponses,
        Some(other) => {
            return Err(record.error(
                "context_mode",
                DatasetFileErrorKind::Invalid,
                format!(
                    "'{other}' is not supported (expected deltas_without_responses or \
                     message_array_with_responses)"
                ),
            ))
        }
    };
    let pre_session_spawns = match record.take("pre_session_spawns") {
        None => Vec::new(),
        Some(value) => ids(&record, "pre_session_spawns", value)?,
    };
    let turn_values = record
        .take_array("turns")?
        .ok_or_else(|| record.missing("turns"))?;
    if turn_values.is_empty() {
        return Err(record.error(
            "turns",
            DatasetFileErrorKind::Invalid,
            "at least one turn is required",
        ));
    }
    let turn_count = turn_values.len();
    let mut turns = Vec::with_capacity(turn_count);
    let mut branches = Vec::with_capacity(turn_count);
    for (index, value) in turn_values.into_iter().enumerate() {
        let name = format!("turns[{index}]");
        let nested = record.nested(&name, value)?;
        let (turn, turn_branches) = parse_turn(nested, &name, index, turn_count)?;
        turns.push(turn);
        branches.push(turn_branches);
    }
    let line = record.line;
    record.finish(&LINE_KEYS)?;
    Ok(Session {
        line,
        conversation: Conversation {
            session_id,
            turns,
            context_mode,
            ..Conversation::default()
        },
        branches,
        pre_session_spawns,
    })
}

/// A turn and the branches it starts. `name` is its field path (`turns[2]`).
fn parse_turn(
    mut record: Record<'_>,
    name: &str,
    index: usize,
    turn_count: usize,
) -> Result<(Turn, Vec<PendingBranch>), DatasetFileError> {
    let messages = record
        .take_array("messages")?
        .ok_or_else(|| record.missing("messages"))?;
    check_messages(&record, &messages)?;
    let delay = record.take_ms("delay")?.filter(|ms| *ms > 0.0);
    let turn = Turn {
        model: record.take_str("model")?,
        max_tokens: record.take_positive_u32("max_tokens")?,
        raw_tools: record.take_array("tools")?,
        extra: record.take_object("extra")?,
        raw_messages: Some(messages),
        delay_ms: delay,
        ..Turn::default()
    };
    let mut branches = Vec::new();
    if let Some(forks) = record.take_array("forks")? {
        let (mut ends_parent, mut background) = (Vec::new(), Vec::new());
        for (k, entry) in forks.into_iter().enumerate() {
            let field = format!("{name}.forks[{k}]");
            let (reference, in_background) = fork_entry(&record, &field, entry)?;
            if in_background {
                background.push(reference);
            } else {
                ends_parent.push(reference);
            }
        }
        if !ends_parent.is_empty() && index + 1 < turn_count {
            return Err(record.error(
                "forks",
                DatasetFileErrorKind::Invalid,
                "a fork that ends the parent is only allowed on its last turn; use \
                 {\"child\": ID, \"background\": true} to let the parent go on",
            ));
        }
        branches.extend(
            [ends_parent, background]
                .into_iter()
                .filter(|children| !children.is_empty())
                .map(|children| PendingBranch {
                    mode: BranchMode::Fork,
                    children,
                    join_at: None,
                }),
        );
    }
    if let Some(spawns) = record.take_array("spawns")? {
        // Consecutive bare ids are one group, joined by the next turn.
        let next_turn = (index + 1 < turn_count).then_some(index + 1);
        let mut bare: Vec<Reference> = Vec::new();
        for (k, entry) in spawns.into_iter().enumerate() {
            let field = format!("{name}.spawns[{k}]");
            match entry {
                Value::String(id) => bare.push(reference(&record, &field, id)?),
                Value::Object(_) => {
                    if !bare.is_empty() {
                        branches.push(spawn(std::mem::take(&mut bare), next_turn));
                    }
                    let nested = record.nested(&format!("spawns[{k}]"), entry)?;
                    branches.push(spawn_object(nested, &field, index, turn_count)?);
                }
                other => {
                    return Err(record.wrong_type(
                        &format!("spawns[{k}]"),
                        "a session id or an object",
                        &other,
                    ))
                }
            }
        }
        if !bare.is_empty() {
            branches.push(spawn(bare, next_turn));
        }
    }
    check_duplicates(&record, &branches)?;
    record.finish(&TURN_KEYS)?;
    Ok((turn, branches))
}

fn spawn(children: Vec<Reference>, join_at: Option<usize>) -> PendingBranch {
    PendingBranch {
        mode: BranchMode::Spawn,
        children,
        join_at,
    }
}

/// `{"children": [...], "join_at": K}`: `K` after the spawning turn and within the
/// conversation (the next turn when absent).
fn spawn_object(
    mut record: Record<'_>,
    field: &str,
    index: usize,
    turn_count: usize,
) -> Result<PendingBranch, DatasetFileError> {
    let children_value = record.require("children")?;
    let children = ids(&record, "children", children_value)?
        .into_iter()
        .enumerate()
        .map(|(k, r)| Reference {
            field: format!("{field}.children[{k}]"),
            ..r
        })
        .collect::<Vec<_>>();
    if children.is_empty() {
        return Err(record.error(
            "children",
            DatasetFileErrorKind::Invalid,
            "at least one child session id is required",
        ));
    }
    let join_at = match record.take_u64("join_at")? {
        None => (index + 1 < turn_count).then_some(index + 1),
        Some(k) => {
            let k = usize::try_from(k).unwrap_or(usize::MAX);
            if k <= index || k >= turn_count {
                return Err(record.error(
                    "join_at",
                    DatasetFileErrorKind::Invalid,
                    format!(
                        "{k} must be after the spawning turn ({index}) and before the \
                         conversation's end ({turn_count} turns)"
                    ),
                ));
            }
            Some(k)
        }
    };
    record.finish(&["children", "join_at"])?;
    Ok(spawn(children, join_at))
}

/// A `forks` entry: a bare id (ends the parent) or `{"child", "background"}`.
fn fork_entry(
    record: &Record<'_>,
    field: &str,
    entry: Value,
) -> Result<(Reference, bool), DatasetFileError> {
    let short = field.rsplit_once('.').map_or(field, |(_, last)| last);
    match entry {
        Value::String(id) => Ok((reference(record, field, id)?, false)),
        Value::Object(_) => {
            let mut nested = record.nested(short, entry)?;
            let child = nested
                .take_str("child")?
                .ok_or_else(|| nested.missing("child"))?;
            let background = match nested.take("background") {
                None => false,
                Some(Value::Bool(b)) => b,
                Some(other) => return Err(nested.wrong_type("background", "a boolean", &other)),
            };
            let child = reference(&nested, &format!("{field}.child"), child)?;
            nested.finish(&["child", "background"])?;
            Ok((child, background))
        }
        other => Err(record.wrong_type(short, "a session id or an object", &other)),
    }
}

fn reference(record: &Record<'_>, field: &str, id: String) -> Result<Reference, DatasetFileError> {
    if id.is_empty() {
        let short = field.rsplit_once('.').map_or(field, |(_, last)| last);
        return Err(record.error(short, DatasetFileErrorKind::Invalid, "must not be empty"));
    }
    Ok(Reference {
        id,
        field: field.to_owned(),
    })
}

/// A list of session ids (`pre_session_spawns`, a spawn's `children`), without repeats.
fn ids(record: &Record<'_>, key: &str, value: Value) -> Result<Vec<Reference>, DatasetFileError> {
    let Value::Array(items) = value else {
        return Err(record.wrong_type(key, "a list of session ids", &value));
    };
    let mut seen = HashSet::new();
    items
        .into_iter()
        .enumerate()
        .map(|(k, item)| match item {
            Value::String(id) if !seen.insert(id.clone()) => Err(record.error(
                &format!("{key}[{k}]"),
                DatasetFileErrorKind::Invalid,
                format!("'{id}' is listed twice"),
            )),
            Value::String(id) => reference(record, &format!("{key}[{k}]"), id),
            other => Err(record.wrong_type(&format!("{key}[{k}]"), "a session id", &other)),
        })
        .collect()
}

/// A child started twice by one turn would run twice and be waited for twice.
fn check_duplicates(
    record: &Record<'_>,
    branches: &[PendingBranch],
) -> Result<(), DatasetFileError> {
    let mut seen: HashSet<(bool, &str)> = HashSet::new();
    for child in branches.iter().flat_map(|b| {
        b.children
            .iter()
            .map(move |c| (b.mode == BranchMode::Fork, c))
    }) {
        if !seen.insert((child.0, child.1.id.as_str())) {
            let short = child.1.field.split_once('.').map_or("", |(_, rest)| rest);
            return Err(record.error(
                short,
                DatasetFileErrorKind::Invalid,
                format!("'{}' is started twice by this turn", child.1.id),
            ));
        }
    }
    Ok(())
}

impl Session {
    /// Every session id this line starts.
    fn references(&self) -> impl Iterator<Item = &Reference> {
        self.pre_session_spawns.iter().chain(
            self.branches
                .iter()
                .flatten()
                .flat_map(|branch| branch.children.iter()),
        )
    }
}

/// The sessions of a file and their references, for the checks that need all lines.
struct Graph<'a> {
    path: &'a Path,
    sessions: &'a [Session],
    by_id: &'a HashMap<String, usize>,
}

impl Graph<'_> {
    /// Every reference names a session; a fork child has one fork parent. Returns each
    /// fork child's parent.
    fn check_references(&self) -> Result<HashMap<usize, usize>, DatasetFileError> {
        let mut fork_parent: HashMap<usize, (usize, String)> = HashMap::new();
        for (parent, session) in self.sessions.iter().enumerate() {
            for reference in session.references() {
                if !self.by_id.contains_key(&reference.id) {
                    return Err(line_error(
                        self.path,
                        session.line,
                        &reference.field,
                        format!("unknown session id '{}': no line has it", reference.id),
                    ));
                }
            }
            let forks = session
                .branches
                .iter()
                .flatten()
                .filter(|b| b.mode == BranchMode::Fork)
                .flat_map(|b| b.children.iter());
            for reference in forks {
                let child = self.by_id[&reference.id];
                if let Some((first, _)) = fork_parent.get(&child) {
                    return Err(line_error(
                        self.path,
                        session.line,
                        &reference.field,
                        format!(
                            "'{}' is already forked by '{}' (line {}); a fork continues one \
                             parent's history, so it has one parent",
                            reference.id,
                            self.sessions[*first].conversation.session_id,
                            self.sessions[*first].line
                        ),
                    ));
                }
                fork_parent.insert(child, (parent, reference.field.clone()));
            }
            for reference in &session.pre_session_spawns {
                if fork_parent.contains_key(&self.by_id[&reference.id]) {
                    return Err(line_error(
                        self.path,
                        session.line,
                        &reference.field,
                        format!(
                            "'{}' is a fork child; pre-session children start fresh",
                            reference.id
                        ),
                    ));
                }
            }
        }
        Ok(fork_parent.into_iter().map(|(c, (p, _))| (c, p)).collect())
    }

    /// No session starts itself, directly or through others.
    fn check_cycles(&self) -> Result<(), DatasetFileError> {
        // 0: unvisited, 1: on the current path, 2: done.
        let mut state = vec![0u8; self.sessions.len()];
        for root in 0..self.sessions.len() {
            if state[root] != 0 {
                continue;
            }
            // Depth-first, iteratively: (session, its references, next one to visit).
            let mut path: Vec<(usize, Vec<&Reference>, usize)> =
                vec![(root, self.sessions[root].references().collect(), 0)];
            state[root] = 1;
            while let Some((node, references, next)) = path.last_mut() {
                let Some(reference) = references.get(*next).copied() else {
                    state[*node] = 2;
                    path.pop();
                    continue;
                };
                *next += 1;
                let child = self.by_id[&reference.id];
                match state[child] {
                    1 => {
                        let start = path.iter().position(|(n, _, _)| *n == child).unwrap_or(0);
                        let mut ids: Vec<&str> = path[start..]
                            .iter()
                            .map(|(n, _, _)| self.sessions[*n].conversation.session_id.as_str())
                            .collect();
                        ids.push(&reference.id);
                        let (parent, _, _) = path[path.len() - 1];
                        return Err(line_error(
                            self.path,
                            self.sessions[parent].line,
                            &reference.field,
                            format!("cycle: {}", ids.join(" -> ")),
                        ));
                    }
                    0 => {
                        state[child] = 1;
                        path.push((child, self.sessions[child].references().collect(), 0));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A fork child continues its parent's history: it cannot ask for isolated turns,
    /// and its `system` message would land mid-history; a root's may only open it.
    fn check_fork_children(
        &self,
        fork_parent: &HashMap<usize, usize>,
    ) -> Result<(), DatasetFileError> {
        for (index, session) in self.sessions.iter().enumerate() {
            let is_fork_child = fork_parent.contains_key(&index);
            let isolated =
                session.conversation.context_mode == ContextMode::MessageArrayWithResponses;
            if is_fork_child && isolated {
                return Err(line_error(
                    self.path,
                    session.line,
                    "context_mode",
                    "a fork child continues its parent's history, so it cannot use \
                     message_array_with_responses",
                ));
            }
            for (t, turn) in session.conversation.turns.iter().enumerate() {
                let messages = turn.raw_messages.as_deref().unwrap_or_default();
                for (m, message) in messages.iter().enumerate() {
                    let opens_request = m == 0 && (isolated || (t == 0 && !is_fork_child));
                    if message.get("role").and_then(Value::as_str) == Some("system")
                        && !opens_request
                    {
                        return Err(line_error(
                            self.path,
                            session.line,
                            &format!("turns[{t}].messages[{m}]"),
                            "a system message must open the request: only the first \
                             message of a root session's first turn may be one",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The conversation of session `index` with its children built in (acyclic:
    /// checked before). A child started by several parents is built once and shared.
    fn build(
        &self,
        index: usize,
        built: &mut HashMap<usize, Arc<Conversation>>,
    ) -> Arc<Conversation> {
        if let Some(done) = built.get(&index) {
            return Arc::clone(done);
        }
        let session = &self.sessions[index];
        let mut conversation = session.conversation.clone();
        let mut child = |reference: &Reference| self.build(self.by_id[&reference.id], built);
        conversation.pre_session_spawns =
            session.pre_session_spawns.iter().map(&mut child).collect();
        for (turn, pending) in conversation.turns.iter_mut().zip(&session.branches) {
            turn.branches = pending
                .iter()
                .map(|branch| Branch {
                    mode: branch.mode,
                    children: branch.children.iter().map(&mut child).collect(),
                    join_at: branch.join_at,
                    on_send: false,
                })
                .collect();
        }
        let conversation = Arc::new(conversation);
        built.insert(index, Arc::clone(&conversation));
        conversation
    }
}
