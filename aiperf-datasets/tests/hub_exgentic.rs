//! Exgentic agent traces (`--public-dataset exgentic`, `exgentic_v2`) from a temporary
//! hub cache, offline: each session's LLM calls become turns carrying the exact message
//! arrays, tools, body fields, output limits and delays the Python AIPerf 0.13 sends;
//! `--dataset-filter` keeps what it names and refuses what the release has not; reading
//! stops at the session count; a malformed row names its file, line and field.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aiperf_core::transport::{BoxFuture, HttpRequest, RawExchange};
use aiperf_core::{ContextMode, Conversation, Transport};
use aiperf_datasets::catalogue::{self, ExgenticVersion};
use aiperf_datasets::hub::exgentic::{conversations, ExgenticFilters, ExgenticOptions};
use aiperf_datasets::hub::{hub_dataset, read_rows, resolve, HubError, HubOptions};
use serde_json::{json, Value};

/// Fails the test when anything is sent.
struct NoNetwork;

impl Transport for NoNetwork {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        panic!("offline resolution sent a request to {}", request.url)
    }
}

fn at(second: f64) -> String {
    format!("2026-01-05T10:00:{second:06.3}Z")
}

fn chat_span(kind: Option<&str>, start: f64, end: f64, attributes: Value) -> Value {
    let mut span = json!({"start_time": at(start), "end_time": at(end),
                          "attributes": attributes});
    if let Some(kind) = kind {
        span["type"] = json!(kind);
    }
    span
}

fn user(text: &str) -> String {
    json!([{"role": "user", "parts": [{"type": "text", "content": text}]}]).to_string()
}

/// Session `s1` (claude_code, azure/gpt-4.1): calls at 0–1 s, 3.0–3.8 s (an untyped
/// `chat` span) and 3.5–4.0 s (listed before it), plus a tool span, a failed call and a
/// call with no output tokens, all skipped.
fn session_one() -> Value {
    json!({"harness": "claude_code", "session_id": "s1", "models": ["azure/gpt-4.1"],
           "benchmark": "tau2_retail", "spans": [
        chat_span(Some("llm_call"), 0.0, 1.0, json!({
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5,
            "gen_ai.request.max_tokens": 64,
            "gen_ai.system_instructions": "Be brief.",
            "gen_ai.input.messages": user("Hi"),
            "gen_ai.tool.definitions": json!([{"type": "function", "name": "ls",
                "description": "list", "parameters": {"type": "object"}}]).to_string(),
            "gen_ai.request.temperature": 0.2,
            "gen_ai.request.stop_sequences": ["END"]})),
        json!({"type": "tool", "start_time": at(1.0), "end_time": at(2.0)}),
        chat_span(Some("llm_call"), 3.5, 4.0, json!({
            "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 7,
            "gen_ai.request.max_tokens": null,
            "gen_ai.input.messages": [
                {"role": "developer", "parts": [{"type": "text", "content": "Sys"}]},
                {"role": "user", "parts": [{"type": "text", "content": "Hi"}]},
                {"role": "assistant", "parts": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "content": "Let me look."},
                    {"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"path": "."}}]},
                {"role": "tool", "parts": [
                    {"type": "tool_call_response", "id": "c1", "result": ["a.txt"]}]}]})),
        json!({"type": "llm_call", "status": {"code": 2}}),
        chat_span(Some("llm_call"), 5.0, 6.0, json!({
            "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 0})),
        chat_span(None, 3.0, 3.8, json!({
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 4, "gen_ai.usage.output_tokens": 2,
            "gen_ai.input.messages": json!([{"role": "user", "parts": [
                {"type": "text", "content": "A"}, {"type": "text", "content": "B"}]}])
                .to_string()})),
    ]})
}

fn one_call_session(harness: &str, id: &str, model: &str, benchmark: &str) -> Value {
    json!({"harness": harness, "session_id": id, "models": [model], "benchmark": benchmark,
           "spans": [chat_span(Some("llm_call"), 0.0, 1.0, json!({
               "gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 1,
               "gen_ai.input.messages": user(id)}))]})
}

/// `s1`, then `s2` (openai_solo, gpt-5.2, swebench), then `s3` (tool_calling,
/// gcp/gemini-3-pro-preview, appworld).
fn rows() -> Vec<String> {
    [
        session_one(),
        one_call_session("openai_solo", "s2", "gpt-5.2-2025-12-11", "swebench"),
        one_call_session("tool_calling", "s3", "gcp/gemini-3-pro-preview", "appworld"),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

/// `lines` as the split of `version`'s pinned snapshot in a hub cache at `cache`.
fn cached(cache: &Path, version: ExgenticVersion, lines: &[String]) -> PathBuf {
    let snapshot = cache
        .join(format!("datasets--{}", version.hub_id().replace('/', "--")))
        .join("snapshots")
        .join(version.revision());
    std::fs::create_dir_all(&snapshot).unwrap();
    let file = snapshot.join("train.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    file
}

fn options(version: ExgenticVersion, filters: &[(&str, &str)]) -> ExgenticOptions {
    let given: BTreeMap<String, String> = filters
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ExgenticOptions {
        version,
        filters: ExgenticFilters::parse(version, &given).unwrap(),
        max_sessions: 10,
        fixed_schedule: false,
    }
}

fn load(file: &Path, options: &ExgenticOptions) -> Result<Vec<Conversation>, HubError> {
    conversations(read_rows(&[file.to_path_buf()], None), options)
}

fn ids(conversations: &[Conversation]) -> Vec<&str> {
    conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect()
}

#[tokio::test]
async fn a_session_s_calls_replay_with_their_messages_limits_and_gaps() {
    let cache = tempfile::tempdir().unwrap();
    let file = cached(cache.path(), ExgenticVersion::V1, &rows());
    let entry = catalogue::find("exgentic").unwrap();
    assert!(entry.rows.is_supported());
    let offline = HubOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        offline: true,
        token: None,
        endpoint: "http://127.0.0.1:9".into(),
        timeout: Duration::from_secs(5),
    };
    let files = resolve(&hub_dataset(entry, None).unwrap(), &offline, &NoNetwork)
        .await
        .unwrap();
    assert_eq!(files, std::slice::from_ref(&file));

    let loaded = load(&file, &options(ExgenticVersion::V1, &[])).unwrap();
    assert_eq!(ids(&loaded), ["s1", "s2", "s3"]);
    let s1 = &loaded[0];
    assert_eq!(s1.context_mode, ContextMode::MessageArrayWithResponses);
    let turns = &s1.turns;
    assert_eq!(turns.len(), 3);
    // Start order: 0 s, 3.0 s (span 5), 3.5 s (span 2, overlapping the one before).
    let delays: Vec<Option<f64>> = turns.iter().map(|t| t.delay_ms).collect();
    assert_eq!(delays, [None, Some(2000.0), Some(0.0)]);
    let limits: Vec<Option<u32>> = turns.iter().map(|t| t.max_tokens).collect();
    assert_eq!(limits, [Some(64), Some(2), Some(7)]);
    assert!(turns
        .iter()
        .all(|t| t.texts.is_empty() && t.timestamp_ms.is_none()));

    assert_eq!(
        Value::from(turns[0].raw_messages.clone().unwrap()),
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    );
    assert_eq!(
        Value::from(turns[0].raw_tools.clone().unwrap()),
        json!([{"type": "function", "function": {"name": "ls", "description": "list",
                                                   "parameters": {"type": "object"}}}])
    );
    assert_eq!(
        Value::from(turns[0].extra.clone().unwrap()),
        json!({"temperature": 0.2, "stop": ["END"]})
    );
    assert_eq!(
        Value::from(turns[1].raw_messages.clone().unwrap()),
        json!([{"role": "user", "content": "AB"}])
    );
    assert_eq!((&turns[1].raw_tools, &turns[1].extra), (&None, &None));
    assert_eq!(
        serde_json::to_string(turns[2].raw_messages.as_ref().unwrap()).unwrap(),
        json!([
            {"role": "system", "content": "Sys"},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Let me look.", "reasoning_content": "hmm",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "[\"a.txt\"]"}
        ])
        .to_string()
    );
}

#[test]
fn a_fixed_schedule_sends_each_call_at_its_offset_in_its_session() {
    let cache = tempfile::tempdir().unwrap();
    let file = cached(cache.path(), ExgenticVersion::V1, &rows()[..1]);
    let fixed = ExgenticOptions {
        fixed_schedule: true,
        ..options(ExgenticVersion::V1, &[])
    };
    let loaded = load(&file, &fixed).unwrap();
    assert_eq!(ids(&loaded), ["s1:0", "s1:5", "s1:2"]);
    let offsets: Vec<Option<f64>> = loaded.iter().map(|c| c.turns[0].timestamp_ms).collect();
    assert_eq!(offsets, [Some(0.0), Some(3000.0), Some(3500.0)]);
    assert!(loaded
        .iter()
        .all(|c| c.turns.len() == 1 && c.turns[0].delay_ms.is_none()));
}

#[test]
fn each_filter_keeps_the_sessions_it_names() {
    let cache = tempfile::tempdir().unwrap();
    let v1 = cached(cache.path(), ExgenticVersion::V1, &rows());
    let v2 = cached(cache.path(), ExgenticVersion::V2, &rows());
    let kept = |file: &Path, version, filters: &[(&str, &str)]| {
        ids(&load(file, &options(version, filters)).unwrap())
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kept(&v1, ExgenticVersion::V1, &[("harness", "OpenAI_Solo")]),
        ["s2"]
    );
    // The prefix of the filter and of the recorded name are both dropped.
    assert_eq!(
        kept(
            &v1,
            ExgenticVersion::V1,
            &[("source_model", "GCP/Gemini-3-Pro-Preview")]
        ),
        ["s3"]
    );
    assert_eq!(
        kept(&v1, ExgenticVersion::V1, &[("source_model", "gpt-4.1")]),
        ["s1"]
    );
    assert_eq!(
        kept(&v2, ExgenticVersion::V2, &[("benchmark", "swebench")]),
        ["s2"]
    );
    assert_eq!(
        kept(
            &v2,
            ExgenticVersion::V2,
            &[("harness", "claude_code"), ("benchmark", "tau2_retail")]
        ),
        ["s1"]
    );

    let nothing = load(
        &v1,
        &options(ExgenticVersion::V1, &[("harness", "smolagents_code")]),
    );
    assert_eq!(
        nothing.unwrap_err().to_string(),
        "Hugging Face dataset Exgentic/agent-llm-traces: No replayable Exgentic spans matched \
         harness=smolagents_code, source_model=None, benchmark=None; available combinations: \
         claude_code/gpt-4.1, openai_solo/gpt-5.2-2025-12-11, \
         tool_calling/gemini-3-pro-preview"
    );
}

#[test]
fn filters_a_release_does_not_take_are_refused_with_what_it_takes() {
    let refused = |version, key: &str, value: &str| {
        let given = BTreeMap::from([(key.to_string(), value.to_string())]);
        ExgenticFilters::parse(version, &given)
            .unwrap_err()
            .to_string()
    };
    let v1_available = "harness=[claude_code, openai_solo, smolagents_code, tool_calling, \
                        tool_calling_with_shortlisting], source_model=[DeepSeek-V3.2, \
                        Kimi-K2.5, claude-opus-4-5, gemini-3-pro-preview, gpt-4.1, \
                        gpt-5.2-2025-12-11]";
    assert_eq!(
        refused(ExgenticVersion::V1, "lang", "en"),
        format!("Invalid Exgentic dataset filters: unknown filter \"lang\"; available filters: {v1_available}")
    );
    assert_eq!(
        refused(ExgenticVersion::V1, "harness", "cursor"),
        format!("Invalid Exgentic dataset filters: unknown harness \"cursor\"; available filters: {v1_available}")
    );
    // v2 has no gpt-4.1 traces at all.
    assert_eq!(
        refused(ExgenticVersion::V2, "benchmark", "mmlu"),
        "Invalid Exgentic dataset filters: unknown benchmark \"mmlu\"; available filters: \
         harness=[claude_code, openai_solo, smolagents_code, tool_calling, \
         tool_calling_with_shortlisting], source_model=[DeepSeek-V3.2, Kimi-K2.5, \
         claude-opus-4-5, gemini-3-pro-preview, gpt-5.2-2025-12-11], benchmark=[appworld, \
         browsecompplus, swebench, tau2_airline, tau2_retail, tau2_telecom]"
    );
    assert_eq!(
        refused(ExgenticVersion::V2, "source_model", "gpt-4.1"),
        "Unsupported Exgentic source_model='gpt-4.1'; no harness supports it"
    );
    assert_eq!(
        refused(ExgenticVersion::V1, "benchmark", "swebench"),
        "Exgentic benchmark filter is only supported for Exgentic v2 traces"
    );
    let pair = BTreeMap::from([
        (
            "harness".to_string(),
            "tool_calling_with_shortlisting".to_string(),
        ),
        ("source_model".to_string(), "aws/gpt-4.1".to_string()),
    ]);
    assert_eq!(
        ExgenticFilters::parse(ExgenticVersion::V1, &pair)
            .unwrap_err()
            .to_string(),
        "Unsupported Exgentic filter combination harness='tool_calling_with_shortlisting', \
         source_model='gpt-4.1'; available source models for this harness: DeepSeek-V3.2, \
         Kimi-K2.5, gemini-3-pro-preview"
    );
}

#[test]
fn reading_stops_once_enough_sessions_are_taken() {
    let cache = tempfile::tempdir().unwrap();
    let mut lines = rows();
    lines.push("{not json".to_string());
    let file = cached(cache.path(), ExgenticVersion::V1, &lines);
    let enough = |max_sessions| ExgenticOptions {
        max_sessions,
        ..options(ExgenticVersion::V1, &[])
    };
    assert_eq!(ids(&load(&file, &enough(2)).unwrap()), ["s1", "s2"]);
    // The broken fourth line is never read for three sessions, and is for four.
    assert_eq!(ids(&load(&file, &enough(3)).unwrap()), ["s1", "s2", "s3"]);
    let error = load(&file, &enough(4)).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("{}:4: ", file.display())),
        "{error}"
    );
}

#[test]
fn a_malformed_row_names_its_file_line_and_field() {
    let cache = tempfile::tempdir().unwrap();
    let error_of = |row: Value| {
        let lines = [rows()[1].clone(), row.to_string()];
        let file = cached(cache.path(), ExgenticVersion::V1, &lines);
        let error = load(&file, &options(ExgenticVersion::V1, &[])).unwrap_err();
        let prefix = format!("{}:2: ", file.display());
        error.to_string().strip_prefix(&prefix).unwrap().to_string()
    };
    let mut tokens = one_call_session("claude_code", "x", "gpt-4.1", "appworld");
    tokens["spans"][0]["attributes"]["gen_ai.usage.input_tokens"] = json!("ten");
    assert_eq!(
        error_of(tokens),
        "spans[0].attributes.gen_ai.usage.input_tokens: must be an integer token count"
    );
    let mut part = one_call_session("claude_code", "x", "gpt-4.1", "appworld");
    part["spans"][0]["attributes"]["gen_ai.input.messages"] =
        json!([{"role": "user", "parts": [{"type": "image"}]}]);
    assert_eq!(
        error_of(part),
        "spans[0].attributes.gen_ai.input.messages: unsupported 'user' message part 'image'"
    );
    let mut backwards = one_call_session("claude_code", "x", "gpt-4.1", "appworld");
    backwards["spans"][0]["end_time"] = json!("2026-01-05T09:59:59Z");
    assert_eq!(
        error_of(backwards),
        "spans[0].end_time: is before start_time"
    );
    let mut no_harness = one_call_session("claude_code", "x", "gpt-4.1", "appworld");
    no_harness["harness"] = Value::Null;
    assert_eq!(error_of(no_harness), "harness: must be a non-empty string");
    let twice = one_call_session("claude_code", "s2", "gpt-4.1", "appworld");
    assert_eq!(
        error_of(twice),
        "session_id: \"s2\" is the session of an earlier row too"
    );
}
