//! The `completions` endpoint: OpenAI text completions (`/v1/completions`).

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use serde_json::{Map, Value};

use crate::openai::Object;
use crate::payload::{current_turn, finish, model, UsageChunk};
use crate::response::{parse_exchange, Extracted};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "completions",
    default_path: "/v1/completions",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Text completions: builds `{"prompt", "model", "stream", "max_tokens", …}` from exactly
/// one turn and reads `choices[0].text`.
///
/// `prompt` is a string for one text and a list only for a batch of several, as the Python
/// AIPerf 0.13 sends it: servers such as `transformers serve` reject a list with 400
/// "prompt must be a string.". The system
/// message and the user context, when present, are prepended to every prompt, each
/// followed by `\n` (this is also how warmup prompts get their `warmup\n` prefix).
#[derive(Debug, Clone, Default)]
pub struct CompletionsEndpoint {
    options: EndpointOptions,
}

impl CompletionsEndpoint {
    /// A completions endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self { options }
    }
}

impl Endpoint for CompletionsEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        let error = |reason: String| EndpointError {
            endpoint: INFO.name,
            reason,
        };
        if input.turns.len() != 1 {
            return Err(error(format!(
                "completions takes exactly one turn, got {} (use the chat endpoint for \
                 multi-turn conversations)",
                input.turns.len()
            )));
        }
        let prefix: String = [input.system_message, input.user_context_message]
            .into_iter()
            .flatten()
            .map(|part| format!("{part}\n"))
            .collect();
        let mut prompts: Vec<Value> = turn
            .texts
            .iter()
            .filter(|text| !text.is_empty())
            .map(|text| Value::String(format!("{prefix}{text}")))
            .collect();
        if prompts.is_empty() {
            return Err(error("the turn has no text to use as prompt".into()));
        }
        let prompt = if prompts.len() == 1 {
            prompts.swap_remove(0)
        } else {
            Value::Array(prompts)
        };
        let mut body = Map::new();
        body.insert("prompt".into(), prompt);
        body.insert("model".into(), model(input, turn).into());
        body.insert("stream".into(), input.streaming.into());
        if let Some(max_tokens) = turn.max_tokens {
            body.insert("max_tokens".into(), max_tokens.into());
        }
        Ok(finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::WhenStreaming,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_exchange(exchange, extract)
    }
}

/// Reads `choices[0].text`.
fn extract(object: &Object<'_>) -> Extracted {
    Extracted {
        text: object
            .first_choice()
            .and_then(|choice| choice.text.as_deref())
            .unwrap_or_default()
            .to_owned(),
        reasoning: String::new(),
    }
}

#[cfg(test)]
mod tests;
