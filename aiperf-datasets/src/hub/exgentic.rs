//! Exgentic agent LLM traces (`--public-dataset exgentic`, `exgentic_v2`), replayed as
//! the Python AIPerf 0.13 replays them.
//!
//! Each row is one recorded agent session: its `harness`, `session_id`, the `models` it
//! called, (v2) its `benchmark`, and its `spans`. Every LLM-call span that did not fail
//! and used tokens both ways becomes one request carrying the complete message array the
//! agent sent (its system instructions, then its input messages, made OpenAI-shaped), its
//! tool definitions, temperature and stop sequences, and asking for the recorded
//! `gen_ai.request.max_tokens` (else the recorded output length). Calls are ordered by
//! start time. A session's calls are one conversation whose turns wait the recorded gap
//! between the previous call's end and their start (none when the calls overlapped);
//! under `--fixed-schedule` each call is a conversation of its own, sent at its offset
//! from its session's first call, so calls that overlapped overlap again.
//!
//! Sessions are read until `max_sessions` have been taken, so a large split is not read
//! whole. `--dataset-filter` keeps the sessions of one `harness`, `source_model` or
//! (v2) `benchmark` ([`ExgenticFilters`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

use aiperf_core::dataset::DatasetError;
use aiperf_core::{ContextMode, Conversation, Dataset, DatasetSource, SamplingStrategy, Turn};
use serde_json::{json, Map, Value};

use super::{read_rows, HubError, Row, Rows};
use crate::catalogue::ExgenticVersion;
use crate::custom::iso_time::unix_ms;

/// The agent harnesses the traces were recorded with.
pub const HARNESSES: [&str; 5] = [
    "claude_code",
    "openai_solo",
    "smolagents_code",
    "tool_calling",
    "tool_calling_with_shortlisting",
];

/// The models the agents called (provider prefixes stripped).
pub const SOURCE_MODELS: [&str; 6] = [
    "DeepSeek-V3.2",
    "Kimi-K2.5",
    "claude-opus-4-5",
    "gemini-3-pro-preview",
    "gpt-4.1",
    "gpt-5.2-2025-12-11",
];

/// The benchmarks the agents ran (v2 only).
pub const BENCHMARKS: [&str; 6] = [
    "appworld",
    "browsecompplus",
    "swebench",
    "tau2_airline",
    "tau2_retail",
    "tau2_telecom",
];

/// Harness and model pairs a release has no traces of.
fn unsupported_pairs(version: ExgenticVersion) -> &'static [(&'static str, &'static str)] {
    match version {
        ExgenticVersion::V1 => &[
            ("openai_solo", "gpt-5.2-2025-12-11"),
            ("smolagents_code", "claude-opus-4-5"),
            ("smolagents_code", "gemini-3-pro-preview"),
            ("smolagents_code", "gpt-5.2-2025-12-11"),
            ("tool_calling", "gpt-5.2-2025-12-11"),
            ("tool_calling_with_shortlisting", "claude-opus-4-5"),
            ("tool_calling_with_shortlisting", "gpt-4.1"),
            ("tool_calling_with_shortlisting", "gpt-5.2-2025-12-11"),
        ],
        ExgenticVersion::V2 => &[
            ("claude_code", "gpt-4.1"),
            ("openai_solo", "gpt-4.1"),
            ("smolagents_code", "gpt-4.1"),
            ("tool_calling", "gpt-4.1"),
            ("tool_calling_with_shortlisting", "claude-opus-4-5"),
            ("tool_calling_with_shortlisting", "gpt-4.1"),
            ("tool_calling_with_shortlisting", "gpt-5.2-2025-12-11"),
        ],
    }
}

/// A recorded model name without Exgentic's provider prefix (`azure/gpt-4.1` is
/// `gpt-4.1`).
pub fn canonical_source_model(name: &str) -> &str {
    ["openai/azure/", "azure/", "aws/", "gcp/"]
        .iter()
        .find(|prefix| {
            name.get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        })
        .map_or(name, |prefix| &name[prefix.len()..])
}

/// The sessions `--dataset-filter` keeps; `None` keeps all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExgenticFilters {
    /// `harness=`: one of [`HARNESSES`].
    pub harness: Option<&'static str>,
    /// `source_model=`: one of [`SOURCE_MODELS`]; a session matches when it called it.
    pub source_model: Option<&'static str>,
    /// `benchmark=` (v2 only): one of [`BENCHMARKS`].
    pub benchmark: Option<&'static str>,
}

/// A `--dataset-filter` the Exgentic traces do not take, worded as the Python AIPerf
/// words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExgenticFilterError(String);

impl ExgenticFilters {
    /// The filters of `--dataset-filter key=value` pairs: keys `harness`,
    /// `source_model` and (v2) `benchmark`, values matched without regard to case (a
    /// source model may carry a provider prefix). An unknown key or value lists the
    /// available ones; a harness and model pair the release has no traces of lists the
    /// models that harness has; a model no harness has is refused.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use aiperf_datasets::catalogue::ExgenticVersion;
    /// use aiperf_datasets::hub::exgentic::ExgenticFilters;
    ///
    /// let given = BTreeMap::from([("source_model".to_string(), "Azure/GPT-4.1".to_string())]);
    /// let filters = ExgenticFilters::parse(ExgenticVersion::V1, &given).unwrap();
    /// assert_eq!(filters.source_model, Some("gpt-4.1"));
    /// ```
    pub fn parse(
        version: ExgenticVersion,
        given: &BTreeMap<String, String>,
    ) -> Result<Self, ExgenticFilterError> {
        let invalid = |what: String| {
            ExgenticFilterError(format!(
                "Invalid Exgentic dataset filters: {what}; available filters: {}",
                available_filters(version)
            ))
        };
        let mut filters = Self::default();
        for (key, value) in given {
            let (slot, known, value) = match key.as_str() {
                "harness" => (&mut filters.harness, &HARNESSES[..], value.as_str()),
                "source_model" => (
                    &mut filters.source_model,
                    &SOURCE_MODELS[..],
                    canonical_source_model(value),
                ),
                "benchmark" => (&mut filters.benchmark, &BENCHMARKS[..], value.as_str()),
                _ => return Err(invalid(format!("unknown filter {key:?}"))),
            };
            let found = known.iter().find(|name| name.eq_ignore_ascii_case(value));
            *slot = Some(*found.ok_or_else(|| invalid(format!("unknown {key} {value:?}")))?);
        }
        if filters.benchmark.is_some() && version != ExgenticVersion::V2 {
            return Err(ExgenticFilterError(
                "Exgentic benchmark filter is only supported for Exgentic v2 traces".into(),
            ));
        }
        if let (Some(harness), Some(model)) = (filters.harness, filters.source_model) {
            let pairs = unsupported_pairs(version);
            if pairs.contains(&(harness, model)) {
                let models: Vec<&str> = SOURCE_MODELS
                    .into_iter()
                    .filter(|m| !pairs.contains(&(harness, m)))
                    .collect();
                return Err(ExgenticFilterError(format!(
                    "Unsupported Exgentic filter combination harness='{harness}', \
                     source_model='{model}'; available source models for this harness: {}",
                    models.join(", ")
                )));
            }
        }
        if let Some(model) = filters.source_model {
            if !available_models(version).contains(&model) {
                return Err(ExgenticFilterError(format!(
                    "Unsupported Exgentic source_model='{model}'; no harness supports it"
                )));
            }
        }
        Ok(filters)
    }

    fn keeps(&self, harness: &str, models: &BTreeSet<String>, benchmark: Option<&str>) -> bool {
        self.harness.is_none_or(|wanted| harness == wanted)
            && self
                .source_model
                .is_none_or(|wanted| models.iter().any(|m| m.eq_ignore_ascii_case(wanted)))
            && self
                .benchmark
                .is_none_or(|wanted| benchmark == Some(wanted))
    }
}

/// `harness=[…], source_model=[…]` (and `benchmark=[…]` for v2): the values a release
/// takes (models some harness has traces of).
fn available_filters(version: ExgenticVersion) -> String {
    let mut available = format!(
        "harness=[{}], source_model=[{}]",
        HARNESSES.join(", "),
        available_models(version).join(", ")
    );
    if version == ExgenticVersion::V2 {
        available.push_str(&format!(", benchmark=[{}]", BENCHMARKS.join(", ")));
    }
    available
}

/// The models some harness of the release has traces of (v2 has none of gpt-4.1).
fn available_models(version: ExgenticVersion) -> Vec<&'static str> {
    let pairs = unsupported_pairs(version);
    SOURCE_MODELS
        .into_iter()
        .filter(|model| HARNESSES.iter().any(|h| !pairs.contains(&(h, model))))
        .collect()
}

/// How the traces are replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExgenticOptions {
    /// Which release the rows are.
    pub version: ExgenticVersion,
    /// The sessions kept.
    pub filters: ExgenticFilters,
    /// Reading stops once this many sessions are taken.
    pub max_sessions: usize,
    /// `--fixed-schedule`: each call is a conversation sent at its recorded offset.
    pub fixed_schedule: bool,
}

/// The Exgentic traces in `files` as an [`aiperf_core::DatasetSource`]; nothing is read
/// until it is loaded.
#[derive(Debug, Clone)]
pub struct HubExgenticDataset {
    files: Vec<PathBuf>,
    options: ExgenticOptions,
}

impl HubExgenticDataset {
    /// A source reading `files` (from [`super::resolve`]) as `options` say.
    pub fn new(files: Vec<PathBuf>, options: ExgenticOptions) -> Self {
        Self { files, options }
    }
}

impl DatasetSource for HubExgenticDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        let conversations = conversations(read_rows(&self.files, None), &self.options)?;
        Ok(Dataset {
            conversations,
            preferred_sampling: SamplingStrategy::Sequential,
            timestamped: self.options.fixed_schedule,
        })
    }
}

/// What was skipped and found, for the log line the Python AIPerf writes too.
#[derive(Debug, Default)]
struct Tally {
    sessions: usize,
    requests: usize,
    failed: usize,
    non_llm: usize,
    zero_token: usize,
    overlapping: usize,
}

/// The conversations of Exgentic `rows`, as the [module](self) describes. A malformed row
/// is an error `path:line: field: message`; no matching session is an error listing the
/// harness/model pairs the rows hold.
pub fn conversations(
    mut rows: Rows,
    options: &ExgenticOptions,
) -> Result<Vec<Conversation>, HubError> {
    let mut conversations = Vec::new();
    let mut pairs_seen = BTreeSet::new();
    let mut sessions_seen = HashSet::new();
    let mut tally = Tally::default();
    while tally.sessions < options.max_sessions {
        let Some(row) = rows.next() else { break };
        let row = row?;
        let (path, line) = rows
            .position()
            .map(|(path, line)| (path.to_path_buf(), line))
            .unwrap_or_default();
        let at = |RowError(field, message)| HubError::Row {
            path: path.clone(),
            line,
            message: format!("{field}: {message}"),
        };
        let Some(session) = read_session(&row, options, &mut pairs_seen, &mut tally).map_err(at)?
        else {
            continue;
        };
        if !sessions_seen.insert(session.id.clone()) {
            return Err(at(RowError(
                "session_id".into(),
                format!("{:?} is the session of an earlier row too", session.id),
            )));
        }
        tally.sessions += 1;
        tally.requests += session.calls.len();
        tally.overlapping += session.overlapping();
        conversations.extend(session.into_conversations(options.fixed_schedule));
    }
    if conversations.is_empty() {
        let shown = |value: Option<&str>| value.unwrap_or("None").to_string();
        let pairs: Vec<String> = pairs_seen.iter().map(|(h, m)| format!("{h}/{m}")).collect();
        return Err(HubError::NotFound {
            id: options.version.hub_id().to_string(),
            reason: format!(
                "No replayable Exgentic spans matched harness={}, source_model={}, \
                 benchmark={}; available combinations: {}",
                shown(options.filters.harness),
                shown(options.filters.source_model),
                shown(options.filters.benchmark),
                if pairs.is_empty() {
                    "none".to_string()
                } else {
                    pairs.join(", ")
                }
            ),
        });
    }
    tracing::info!(
        sessions = tally.sessions,
        requests = tally.requests,
        skipped_failed = tally.failed,
        skipped_non_llm = tally.non_llm,
        skipped_zero_token = tally.zero_token,
        overlapping_calls = tally.overlapping,
        "loaded Exgentic sessions"
    );
    Ok(conversations)
}

/// What is wrong with a row: the field (`spans[2].end_time`) and the message.
struct RowError(String, String);

fn row_error(field: &str, message: impl Into<String>) -> RowError {
    RowError(field.to_string(), message.into())
}

/// One session's replayable calls.
struct Session {
    id: String,
    /// Start and end (Unix ms), span index and turn, in start order.
    calls: Vec<Call>,
}

struct Call {
    start_ms: f64,
    end_ms: f64,
    span: usize,
    turn: Turn,
}

impl Session {
    /// Calls that started before the previous call ended.
    fn overlapping(&self) -> usize {
        self.calls
            .windows(2)
            .filter(|pair| pair[1].start_ms < pair[0].end_ms)
            .count()
    }

    fn into_conversations(self, fixed_schedule: bool) -> Vec<Conversation> {
        let conversation = |session_id: String, turns: Vec<Turn>| Conversation {
            session_id,
            turns,
            context_mode: ContextMode::MessageArrayWithResponses,
            ..Conversation::default()
        };
        let first_start = self.calls.first().map_or(0.0, |call| call.start_ms);
        if fixed_schedule {
            return self
                .calls
                .into_iter()
                .map(|call| {
                    let turn = Turn {
                        timestamp_ms: Some(call.start_ms - first_start),
                        ..call.turn
                    };
                    conversation(format!("{}:{}", self.id, call.span), vec![turn])
                })
                .collect();
        }
        let mut previous_end: Option<f64> = None;
        let turns = self
            .calls
            .into_iter()
            .map(|call| {
                let delay_ms = previous_end.map(|end| (call.start_ms - end).max(0.0));
                previous_end = Some(call.end_ms);
                Turn {
                    delay_ms,
                    ..call.turn
                }
            })
            .collect();
        vec![conversation(self.id, turns)]
    }
}

/// The row's session when the filters keep it and it has a replayable call.
fn read_session(
    row: &Row,
    options: &ExgenticOptions,
    pairs_seen: &mut BTreeSet<(String, String)>,
    tally: &mut Tally,
) -> Result<Option<Session>, RowError> {
    let non_empty = |field: &str| {
        row.get(field)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .ok_or_else(|| row_error(field, "must be a non-empty string"))
    };
    let harness = non_empty("harness")?;
    let id = non_empty("session_id")?;
    let models = row
        .get("models")
        .and_then(Value::as_array)
        .and_then(|models| {
            models
                .iter()
                .map(|m| m.as_str().filter(|m| !m.is_empty()))
                .collect::<Option<Vec<&str>>>()
        })
        .ok_or_else(|| row_error("models", "must be a list of non-empty strings"))?;
    let spans = row
        .get("spans")
        .and_then(Value::as_array)
        .filter(|spans| spans.iter().all(Value::is_object))
        .ok_or_else(|| row_error("spans", "must be a list of objects"))?;
    let models: BTreeSet<String> = models
        .into_iter()
        .map(|m| canonical_source_model(m).to_string())
        .collect();
    pairs_seen.extend(models.iter().map(|m| (harness.to_string(), m.clone())));
    let benchmark = row.get("benchmark").and_then(Value::as_str);
    if !options.filters.keeps(harness, &models, benchmark) {
        return Ok(None);
    }
    let mut calls = Vec::new();
    for (index, span) in spans.iter().enumerate() {
        if let Some(call) = read_call(index, span, tally)? {
            calls.push(call);
        }
    }
    calls.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms).then(a.span.cmp(&b.span)));
    Ok((!calls.is_empty()).then(|| Session {
        id: id.to_string(),
        calls,
    }))
}

/// A span's attributes (`gen_ai.*` keys; null values count as absent) and where they
/// are, for errors.
#[derive(Clone, Copy)]
struct Attributes<'a> {
    map: &'a Map<String, Value>,
    span: usize,
}

impl<'a> Attributes<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|value| !value.is_null())
    }

    fn error(&self, name: &str, message: impl Into<String>) -> RowError {
        row_error(&format!("spans[{}].attributes.{name}", self.span), message)
    }
}

/// A span's request, or `None` (counted) when it is not an LLM call, failed, or used
/// no tokens.
fn read_call(index: usize, span: &Value, tally: &mut Tally) -> Result<Option<Call>, RowError> {
    let no_attributes = Map::new();
    let attributes = Attributes {
        map: span
            .get("attributes")
            .and_then(Value::as_object)
            .unwrap_or(&no_attributes),
        span: index,
    };
    let is_llm_call = match span.get("type").filter(|v| !v.is_null()) {
        Some(kind) => kind == "llm_call",
        None => attributes
            .get("gen_ai.operation.name")
            .is_some_and(|op| op == "chat"),
    };
    if !is_llm_call {
        tally.non_llm += 1;
        return Ok(None);
    }
    let status = span.get("status").and_then(|s| s.get("code"));
    if status.and_then(Value::as_f64) == Some(2.0) {
        tally.failed += 1;
        return Ok(None);
    }
    let tokens = |name: &str| {
        attributes
            .get(name)
            .and_then(Value::as_i64)
            .ok_or_else(|| attributes.error(name, "must be an integer token count"))
    };
    let input_tokens = tokens("gen_ai.usage.input_tokens")?;
    let output_tokens = tokens("gen_ai.usage.output_tokens")?;
    if input_tokens <= 0 || output_tokens <= 0 {
        tally.zero_token += 1;
        return Ok(None);
    }
    let time = |name: &str| {
        span.get(name)
            .and_then(Value::as_str)
            .and_then(unix_ms)
            .ok_or_else(|| {
                row_error(
                    &format!("spans[{index}].{name}"),
                    "must be an ISO 8601 date-time",
                )
            })
    };
    let start_ms = time("start_time")?;
    let end_ms = time("end_time")?;
    if end_ms < start_ms {
        return Err(row_error(
            &format!("spans[{index}].end_time"),
            "is before start_time",
        ));
    }
    let max_tokens = match attributes.get("gen_ai.request.max_tokens") {
        None => output_tokens,
        Some(value) => value.as_i64().filter(|&n| n >= 1).ok_or_else(|| {
            attributes.error("gen_ai.request.max_tokens", "must be a positive integer")
        })?,
    };
    let at = |name: &'static str| move |message: String| attributes.error(name, message);
    let mut messages = system_instructions(attributes.get("gen_ai.system_instructions"))
        .map_err(at("gen_ai.system_instructions"))?;
    messages.extend(
        input_messages(attributes.get("gen_ai.input.messages"))
            .map_err(at("gen_ai.input.messages"))?,
    );
    let tools = tool_definitions(attributes.get("gen_ai.tool.definitions"))
        .map_err(at("gen_ai.tool.definitions"))?;
    Ok(Some(Call {
        start_ms,
        end_ms,
        span: index,
        turn: Turn {
            max_tokens: Some(u32::try_from(max_tokens).unwrap_or(u32::MAX)),
            raw_messages: Some(messages),
            raw_tools: tools,
            extra: request_fields(&attributes)?,
            ..Turn::default()
        },
    }))
}

/// The recorded temperature and stop sequences, as body fields.
fn request_fields(attributes: &Attributes<'_>) -> Result<Option<Map<String, Value>>, RowError> {
    let mut fields = Map::new();
    if let Some(temperature) = attributes.get("gen_ai.request.temperature") {
        if !temperature.as_f64().is_some_and(f64::is_finite) {
            return Err(attributes.error("gen_ai.request.temperature", "must be a finite number"));
        }
        fields.insert("temperature".into(), temperature.clone());
    }
    if let Some(stop) = attributes.get("gen_ai.request.stop_sequences") {
        let sequences = stop
            .as_array()
            .filter(|items| items.iter().all(Value::is_string))
            .ok_or_else(|| {
                attributes.error("gen_ai.request.stop_sequences", "must be a list of strings")
            })?;
        if !sequences.is_empty() {
            fields.insert("stop".into(), stop.clone());
        }
    }
    Ok((!fields.is_empty()).then_some(fields))
}

/// A JSON array of objects, given as JSON text or as the array itself.
fn object_list(value: Option<&Value>) -> Result<Vec<Map<String, Value>>, String> {
    let parsed = match value {
        Some(Value::String(text)) => {
            serde_json::from_str(text).map_err(|e| format!("is not valid JSON: {e}"))?
        }
        Some(other) => other.clone(),
        None => Value::Null,
    };
    match parsed {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(object) => Ok(object),
                _ => Err(()),
            })
            .collect::<Result<_, ()>>()
            .map_err(|()| "must be a JSON array of objects".to_string()),
        _ => Err("must be a JSON array of objects".to_string()),
    }
}

/// The system instructions as messages: a list of parts is one system message (or
/// several, as [`openai_messages`] splits it), other text is the system message itself.
fn system_instructions(value: Option<&Value>) -> Result<Vec<Value>, String> {
    let text = match value {
        None => return Ok(Vec::new()),
        Some(Value::String(text)) => text,
        Some(_) => return Err("must be a string".into()),
    };
    if text.is_empty() {
        return Ok(Vec::new());
    }
    match object_list(value) {
        Ok(parts) => openai_messages("system", &parts),
        Err(_) => Ok(vec![json!({"role": "system", "content": text})]),
    }
}

/// The recorded input messages as OpenAI chat messages.
fn input_messages(value: Option<&Value>) -> Result<Vec<Value>, String> {
    let mut messages = Vec::new();
    for message in object_list(value)? {
        let role = message.get("role").and_then(Value::as_str);
        let parts = message.get("parts").and_then(Value::as_array);
        let (Some(role), Some(parts)) = (role, parts) else {
            return Err("each input message requires a string role and parts array".into());
        };
        let parts = parts
            .iter()
            .map(|part| part.as_object().cloned())
            .collect::<Option<Vec<_>>>()
            .ok_or("message parts must be objects")?;
        messages.extend(openai_messages(role, &parts)?);
    }
    if messages.is_empty() {
        return Err("must contain at least one message".into());
    }
    Ok(messages)
}

/// One recorded message (`role` and typed parts) as OpenAI messages: text parts join into
/// `content`, thinking into `reasoning_content`, tool calls into `tool_calls`; each tool
/// result is a `tool` message of its own, after what came before it. A `developer` is a
/// `system` message.
fn openai_messages(role: &str, parts: &[Map<String, Value>]) -> Result<Vec<Value>, String> {
    let role = if role == "developer" { "system" } else { role };
    let mut messages = Vec::new();
    let mut pending = Pending::default();
    for part in parts {
        let text = |key: &str| match part.get(key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        match part.get("type").and_then(Value::as_str) {
            Some("text") => pending.content.push(text("content")),
            Some("thinking") => pending.reasoning.push(text("thinking")),
            Some("tool_call") => pending.tool_calls.push(json!({
                "id": part.get("id").cloned().unwrap_or(Value::Null),
                "type": "function",
                "function": {
                    "name": part.get("name").cloned().unwrap_or(Value::Null),
                    "arguments": json_text(part.get("arguments")),
                },
            })),
            Some("tool_call_response") => {
                if !pending.is_empty() {
                    messages.push(pending.take(role));
                }
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": part.get("id").cloned().unwrap_or(Value::Null),
                    "content": json_text(part.get("result")),
                }));
            }
            other => {
                return Err(format!(
                    "unsupported '{role}' message part {}",
                    python_repr(other)
                ))
            }
        }
    }
    if !pending.is_empty() || messages.is_empty() {
        messages.push(pending.take(role));
    }
    Ok(messages)
}

/// The parts of a message not yet written out.
#[derive(Default)]
struct Pending {
    content: Vec<String>,
    reasoning: Vec<String>,
    tool_calls: Vec<Value>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.content.is_empty() && self.reasoning.is_empty() && self.tool_calls.is_empty()
    }

    fn take(&mut self, role: &str) -> Value {
        let Pending {
            content,
            reasoning,
            tool_calls,
        } = std::mem::take(self);
        let mut message = Map::new();
        message.insert("role".into(), role.into());
        message.insert("content".into(), content.concat().into());
        if !reasoning.is_empty() {
            message.insert("reasoning_content".into(), reasoning.concat().into());
        }
        if !tool_calls.is_empty() {
            message.insert("tool_calls".into(), tool_calls.into());
        }
        Value::Object(message)
    }
}

/// A string as it is; any other value (a missing one is `null`) as compact JSON.
fn json_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "null".to_string(),
    }
}

/// The recorded tool definitions as OpenAI `function` tools; `None` when there are none.
fn tool_definitions(value: Option<&Value>) -> Result<Option<Vec<Value>>, String> {
    if value.is_none() {
        return Ok(None);
    }
    let mut tools = Vec::new();
    for tool in object_list(value)? {
        let field = |key: &str| tool.get(key).cloned().unwrap_or(Value::Null);
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => {}
            other => return Err(format!("unsupported tool type {}", python_repr(other))),
        }
        tools.push(json!({
            "type": "function",
            "function": {
                "name": field("name"),
                "description": field("description"),
                "parameters": field("parameters"),
            },
        }));
    }
    Ok((!tools.is_empty()).then_some(tools))
}

/// A type name as the Python AIPerf's messages show it: `'text'`, or `None`.
fn python_repr(name: Option<&str>) -> String {
    name.map_or_else(|| "None".to_string(), |name| format!("'{name}'"))
}
