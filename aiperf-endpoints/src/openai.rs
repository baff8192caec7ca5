//! The fields of OpenAI-style response objects (chat and completions, streamed or whole)
//! that the benchmark reads, deserialised without building a JSON tree: strings borrow
//! from the payload unless they hold escapes, and every other field is skipped. Parsing
//! every streamed chunk is the bulk of the client's work, so this matters.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

/// One response object: a `chat.completion(.chunk)` or a `(text_)completion`.
#[derive(Debug, Default, Deserialize)]
#[allow(clippy::struct_field_names)] // `object` is the API's own field name
pub(crate) struct Object<'a> {
    #[serde(borrow, default)]
    pub object: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    pub usage: Option<Map<String, Value>>,
    /// Only its presence matters here (an in-band error); details are read separately.
    #[serde(default)]
    pub error: Option<serde::de::IgnoredAny>,
}

/// One entry of `choices`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice<'a> {
    #[serde(borrow, default)]
    pub delta: Option<Message<'a>>,
    #[serde(borrow, default)]
    pub message: Option<Message<'a>>,
    /// Completions put the text here.
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
}

/// A chat message or delta.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Message<'a> {
    #[serde(borrow, default)]
    pub content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub tool_calls: Option<Vec<ToolCall<'a>>>,
}

/// A tool call (or a streamed piece of one).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCall<'a> {
    #[serde(borrow, default)]
    pub function: Option<Function<'a>>,
}

/// A tool call's function name and arguments (either may stream in pieces).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Function<'a> {
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub arguments: Option<Cow<'a, str>>,
}

impl Object<'_> {
    /// The first choice, if any.
    pub(crate) fn first_choice(&self) -> Option<&Choice<'_>> {
        self.choices.as_ref().and_then(|choices| choices.first())
    }

    /// True when this is an error object rather than a response: `{"error": …}` or
    /// `{"object": "error"}` without `choices`.
    pub(crate) fn is_error(&self) -> bool {
        self.choices.is_none() && (self.error.is_some() || self.object.as_deref() == Some("error"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_chunks_and_skips_unknown_fields() {
        let object: Object = serde_json::from_str(
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m",
               "choices":[{"index":0,"delta":{"content":"a\"b","role":"assistant"},
               "logprobs":null,"finish_reason":null}],"usage":null}"#,
        )
        .unwrap();
        let delta = object.first_choice().unwrap().delta.as_ref().unwrap();
        assert_eq!(delta.content.as_deref(), Some("a\"b"));
        assert!(object.usage.is_none() && !object.is_error());
    }

    #[test]
    fn recognises_error_objects() {
        let object: Object = serde_json::from_str(r#"{"error":{"message":"x"}}"#).unwrap();
        assert!(object.is_error());
        let object: Object = serde_json::from_str(r#"{"object":"error","message":"x"}"#).unwrap();
        assert!(object.is_error());
        let object: Object = serde_json::from_str(r#"{"error":null,"choices":[]}"#).unwrap();
        assert!(!object.is_error());
    }
}
