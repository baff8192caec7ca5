//! What the `raw_payload` and `inputs_json` formats share: a complete request body becomes
//! a turn that is sent verbatim, and its conversations carry no history of their own.

use aiperf_core::{ContextMode, Conversation, Turn};
use serde_json::{Map, Value};

/// The body fields that cap the output length, read in this order (as the Python AIPerf
/// reads them).
const MAX_TOKEN_KEYS: [&str; 3] = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

/// A turn that sends `payload` as its whole request body. Its text is what the body asks
/// the model to read (message contents, `prompt`, `input`, …), joined by one space, so
/// the input sequence length counts it; its output length is the body's own cap.
pub(crate) fn payload_turn(payload: Map<String, Value>) -> Turn {
    let texts = input_texts(&payload);
    Turn {
        texts: if texts.is_empty() {
            Vec::new()
        } else {
            vec![texts.join(" ")]
        },
        max_tokens: MAX_TOKEN_KEYS
            .iter()
            .find_map(|key| payload.get(*key)?.as_u64().filter(|n| *n >= 1))
            .and_then(|n| u32::try_from(n).ok()),
        raw_payload: Some(Value::Object(payload)),
        ..Turn::default()
    }
}

/// A conversation of verbatim turns: each body already holds whatever history it needs.
pub(crate) fn conversation(session_id: String, turns: Vec<Turn>) -> Conversation {
    Conversation {
        session_id,
        turns,
        context_mode: ContextMode::MessageArrayWithResponses,
        ..Conversation::default()
    }
}

/// The texts a body gives the model: the contents (and replayed tool calls) of a chat
/// `messages` or Responses `input` item list; otherwise a completions `prompt`, an
/// embeddings `input` or a TGI `inputs` (a string or a list of strings).
fn input_texts(payload: &Map<String, Value>) -> Vec<&str> {
    let mut texts = Vec::new();
    for key in ["messages", "input"] {
        let Some(items) = payload.get(key).and_then(Value::as_array) else {
            continue;
        };
        let is_item_list = items
            .iter()
            .any(|item| item.get("role").is_some() || item.get("type").is_some());
        if is_item_list {
            for item in items {
                item_texts(item, &mut texts);
            }
        }
    }
    if !texts.is_empty() {
        return texts;
    }
    for key in ["prompt", "input", "inputs"] {
        match payload.get(key) {
            Some(Value::String(text)) => return vec![text],
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                return items.iter().filter_map(Value::as_str).collect();
            }
            _ => {}
        }
    }
    texts
}

/// The texts of one message: its string content or its parts' `text`, and the names and
/// arguments of the tool calls it replays.
fn item_texts<'a>(item: &'a Value, texts: &mut Vec<&'a str>) {
    match item.get("content") {
        Some(Value::String(text)) => texts.push(text),
        Some(Value::Array(parts)) => texts.extend(
            parts
                .iter()
                .filter(|part| {
                    matches!(
                        part.get("type").and_then(Value::as_str),
                        Some("text" | "input_text" | "output_text")
                    )
                })
                .filter_map(|part| part.get("text")?.as_str()),
        ),
        _ => {}
    }
    for call in item
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for field in ["name", "arguments"] {
            texts.extend(call.get("function").and_then(|f| f.get(field)?.as_str()));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(payload: Value) -> Turn {
        payload_turn(payload.as_object().unwrap().clone())
    }

    #[test]
    fn a_chat_body_counts_its_message_texts_and_its_cap() {
        let payload = json!({
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:,"}},
                ]},
                {"role": "assistant", "tool_calls": [
                    {"function": {"name": "f", "arguments": "{}"}},
                ]},
            ],
            "max_completion_tokens": 9,
        });
        let made = turn(payload.clone());
        assert_eq!(made.texts, ["be brief look f {}"]);
        assert_eq!(made.max_tokens, Some(9));
        assert_eq!(made.raw_payload, Some(payload));
    }

    #[test]
    fn flat_bodies_count_their_prompt_or_input() {
        assert_eq!(turn(json!({"prompt": "p", "max_tokens": 3})).texts, ["p"]);
        assert_eq!(turn(json!({"input": ["a", "b"]})).texts, ["a b"]);
        assert_eq!(turn(json!({"inputs": "tgi"})).texts, ["tgi"]);
        let nothing = turn(json!({"query": 1, "max_tokens": 0}));
        assert!(nothing.texts.is_empty());
        assert_eq!(nothing.max_tokens, None);
    }
}
