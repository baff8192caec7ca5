//! `aiperf analyze turn-messages`: one self-contained HTML page showing, conversation by
//! conversation and turn by turn, the messages each request sent, read from a run's raw
//! export (`profile_export_raw.jsonl`, written with `--export-level raw`). The page folds
//! with plain `<details>` elements: no script, no network reference, so it opens anywhere.
//!
//! ```
//! use aiperf_plot::turn_messages::{render_turn_messages, turns_of, TurnMessagesOptions};
//!
//! let line = r#"{"metadata": {"conversation_id": "s1", "turn_index": 0, "request_start_ns": 5},
//!     "status": 200, "payload": {"messages": [{"role": "user", "content": "1 < 2"}]}}"#;
//! let turns = turns_of(&[serde_json::from_str(line).unwrap()]);
//! let page = render_turn_messages("my-run", &turns, &TurnMessagesOptions::default());
//! assert!(page.contains("1 &lt; 2"));
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aiperf_metrics::artifacts::{open_if_present, read_jsonl};
use serde_json::Value;

use crate::report::escape;
use crate::PlotError;

/// The raw export this reads.
pub const RAW_FILE: &str = "profile_export_raw.jsonl";
/// The default file name, written into the run directory.
pub const FILE_NAME: &str = "turn_messages.html";

/// How much to show (the Python AIPerf's defaults).
#[derive(Debug, Clone)]
pub struct TurnMessagesOptions {
    /// Where to write the page; `None`: [`FILE_NAME`] in the run directory.
    pub output: Option<PathBuf>,
    /// Conversations shown, earliest first.
    pub limit_conversations: usize,
    /// Turns shown per conversation; the rest are counted.
    pub max_turns: usize,
    /// Characters kept of each message; the rest are counted.
    pub content_cap: usize,
}

impl Default for TurnMessagesOptions {
    fn default() -> Self {
        Self {
            output: None,
            limit_conversations: 40,
            max_turns: 60,
            content_cap: 8000,
        }
    }
}

/// One request as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SentTurn {
    /// Its conversation.
    pub conversation: String,
    /// Its turn index in the conversation.
    pub turn_index: u64,
    /// When it started, ns (orders turns and conversations).
    pub start_ns: u64,
    /// The HTTP status, when a response came.
    pub status: Option<u64>,
    /// `(role, text)` of each message sent; a payload without messages is shown whole
    /// under the role `payload`.
    pub messages: Vec<(String, String)>,
}

/// The turns of raw-export lines, in file order.
pub fn turns_of(lines: &[Value]) -> Vec<SentTurn> {
    lines
        .iter()
        .map(|line| {
            let metadata = &line["metadata"];
            SentTurn {
                conversation: metadata["conversation_id"]
                    .as_str()
                    .unwrap_or("(no conversation id)")
                    .to_owned(),
                turn_index: metadata["turn_index"].as_u64().unwrap_or(0),
                start_ns: metadata["request_start_ns"].as_u64().unwrap_or(0),
                status: line["status"].as_u64(),
                messages: messages_of(&line["payload"]),
            }
        })
        .collect()
}

/// The messages of a request body: chat `messages`, Responses `input`, completions
/// `prompt`; anything else is the whole body, pretty-printed.
fn messages_of(payload: &Value) -> Vec<(String, String)> {
    if let Some(messages) = payload["messages"].as_array() {
        return messages.iter().map(message).collect();
    }
    match &payload["input"] {
        Value::Array(items) => return items.iter().map(message).collect(),
        Value::String(text) => return vec![("user".to_owned(), text.clone())],
        _ => {}
    }
    match &payload["prompt"] {
        Value::String(text) => vec![("prompt".to_owned(), text.clone())],
        Value::Array(parts) => parts
            .iter()
            .map(|part| ("prompt".to_owned(), text_of(part)))
            .collect(),
        _ => vec![(
            "payload".to_owned(),
            serde_json::to_string_pretty(payload).unwrap_or_default(),
        )],
    }
}

fn message(message: &Value) -> (String, String) {
    let role = message["role"].as_str().unwrap_or("message").to_owned();
    (role, text_of(&message["content"]))
}

/// A content value as text: a string as is, content parts joined (media as a marker).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|part| match part["type"].as_str() {
                Some("text" | "input_text") => part["text"].as_str().unwrap_or("").to_owned(),
                Some(kind) => format!("[{kind}]"),
                None => text_of(part),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Reads `run_dir`'s raw export, writes the page and returns its path. A run without a
/// raw export is an error that says which flag writes one.
pub fn write_turn_messages(
    run_dir: &Path,
    options: &TurnMessagesOptions,
) -> Result<PathBuf, PlotError> {
    let path = run_dir.join(RAW_FILE);
    let reader = open_if_present(&path)?.ok_or_else(|| PlotError::Io {
        path: path.clone(),
        reason: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no raw export: the run needs --export-level raw",
        ),
    })?;
    let mut lines = Vec::new();
    read_jsonl(reader, &path, |line: Value| lines.push(line))?;
    let name = run_dir.file_name().map_or_else(
        || run_dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let page = render_turn_messages(&name, &turns_of(&lines), options);
    let output = options
        .output
        .clone()
        .unwrap_or_else(|| run_dir.join(FILE_NAME));
    std::fs::write(&output, page).map_err(|e| PlotError::io(&output, e))?;
    Ok(output)
}

/// The page: conversations in the order of their first request (at most
/// `limit_conversations`), each turn's messages in turn order.
pub fn render_turn_messages(
    run: &str,
    turns: &[SentTurn],
    options: &TurnMessagesOptions,
) -> String {
    let mut conversations: BTreeMap<&str, Vec<&SentTurn>> = BTreeMap::new();
    for turn in turns {
        conversations
            .entry(&turn.conversation)
            .or_default()
            .push(turn);
    }
    let mut ordered: Vec<(&str, Vec<&SentTurn>)> = conversations.into_iter().collect();
    for (_, turns) in &mut ordered {
        turns.sort_by_key(|t| (t.turn_index, t.start_ns));
    }
    ordered.sort_by_key(|(id, turns)| (turns.iter().map(|t| t.start_ns).min(), *id));

    let shown = ordered.len().min(options.limit_conversations);
    let mut html = String::new();
    html.push_str(&format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Turn messages: {run}</title>\n\
         <style>{STYLE}</style></head><body>\n<h1>Turn messages: {run}</h1>\n\
         <p>{total} conversations, {requests} requests; showing {shown} (earliest first).</p>\n",
        run = escape(run),
        total = ordered.len(),
        requests = turns.len(),
    ));
    for (id, turns) in ordered.iter().take(shown) {
        html.push_str(&format!(
            "<details class=\"conversation\"><summary>{} · {} turn(s)</summary>\n",
            escape(id),
            turns.len()
        ));
        for turn in turns.iter().take(options.max_turns) {
            let status = turn
                .status
                .map_or("no response".to_owned(), |s| format!("status {s}"));
            html.push_str(&format!(
                "<details class=\"turn\"><summary>turn {} · {status} · {} message(s)</summary>\n",
                turn.turn_index,
                turn.messages.len()
            ));
            for (role, text) in &turn.messages {
                html.push_str(&format!(
                    "<div class=\"message\"><div class=\"role\">{}</div><pre>{}</pre></div>\n",
                    escape(role),
                    escape(&capped(text, options.content_cap))
                ));
            }
            html.push_str("</details>\n");
        }
        if turns.len() > options.max_turns {
            html.push_str(&format!(
                "<p class=\"more\">{} more turn(s) not shown (--max-turns)</p>\n",
                turns.len() - options.max_turns
            ));
        }
        html.push_str("</details>\n");
    }
    html.push_str("</body></html>\n");
    html
}

/// `text` cut to `cap` characters, saying how many were left out.
fn capped(text: &str, cap: usize) -> String {
    match text.char_indices().nth(cap) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!(
                "{}… ({rest} more characters; raise --content-cap)",
                &text[..cut]
            )
        }
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:70em}\
    details{margin:.3em 0 .3em 1em}summary{cursor:pointer}\
    .conversation>summary{font-weight:bold}.role{font-size:.8em;color:#666}\
    pre{white-space:pre-wrap;background:#f4f4f4;padding:.5em;margin:.2em 0}\
    .more{color:#666;margin-left:1em}";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(conversation: &str, index: u64, start_ns: u64, payload: Value) -> Value {
        json!({
            "metadata": {"conversation_id": conversation, "turn_index": index, "request_start_ns": start_ns},
            "status": 200,
            "payload": payload,
        })
    }

    #[test]
    fn each_payload_shape_gives_its_messages() {
        let turns = turns_of(&[
            turn(
                "a",
                0,
                1,
                json!({"messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": "data:..."}}
                    ]}
                ]}),
            ),
            turn("b", 0, 2, json!({"prompt": "Once upon"})),
            turn("c", 0, 3, json!({"input": "hello"})),
            turn("d", 0, 4, json!({"query": "q", "passages": ["p"]})),
        ]);
        assert_eq!(
            turns[0].messages,
            [
                ("system".into(), "Be brief.".into()),
                ("user".into(), "What is this?\n[image_url]".into())
            ]
        );
        assert_eq!(turns[1].messages, [("prompt".into(), "Once upon".into())]);
        assert_eq!(turns[2].messages, [("user".into(), "hello".into())]);
        assert_eq!(turns[3].messages[0].0, "payload");
        assert!(turns[3].messages[0].1.contains("\"passages\""));
    }

    #[test]
    fn the_page_orders_caps_and_escapes() {
        let user = |text: &str| json!({"messages": [{"role": "user", "content": text}]});
        let turns = turns_of(&[
            turn("late", 0, 50, user("x")),
            turn("early", 1, 20, user("second <b>")),
            turn("early", 0, 10, user("0123456789")),
            turn("early", 2, 30, user("third")),
        ]);
        let options = TurnMessagesOptions {
            limit_conversations: 1,
            max_turns: 2,
            content_cap: 4,
            ..TurnMessagesOptions::default()
        };
        let page = render_turn_messages("run <1>", &turns, &options);
        assert!(page.contains("<title>Turn messages: run &lt;1&gt;</title>"));
        assert!(page.contains("<p>2 conversations, 4 requests; showing 1 (earliest first).</p>"));
        assert!(page.contains("<summary>early · 3 turn(s)</summary>"));
        assert!(!page.contains("late"));
        let first = page.find("turn 0 ·").unwrap();
        let second = page.find("turn 1 ·").unwrap();
        assert!(first < second);
        assert!(page.contains("<pre>0123… (6 more characters; raise --content-cap)</pre>"));
        assert!(page.contains("<pre>seco… (6 more characters; raise --content-cap)</pre>"));
        assert!(page.contains("1 more turn(s) not shown (--max-turns)"));
        assert!(!page.contains("<b>"));
        assert!(!page.contains("<script") && !page.contains("http"));
    }
}
