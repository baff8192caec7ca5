//! The `chat_embeddings` endpoint: a chat-style request to an embeddings route (vLLM's
//! multimodal embeddings, `/v1/embeddings`).

use std::sync::atomic::AtomicBool;

use crate::chat::Messages;
use crate::embeddings::EmbeddingsFormat;
use crate::payload::{current_turn, model, warn_max_tokens_ignored, Body, Field, UsageChunk};
use crate::response::parse_with;
use crate::EndpointOptions;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};

const INFO: EndpointInfo = EndpointInfo {
    name: "chat_embeddings",
    default_path: "/v1/embeddings",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Chat embeddings: builds `{"messages", "model", …}` exactly as the `chat` endpoint builds
/// its messages (system message, user context, each turn's texts and images as content
/// parts, `raw_messages` verbatim) and reads an embeddings response like
/// [`EmbeddingsEndpoint`](crate::EmbeddingsEndpoint): one
/// [`ParsedResponse`](aiperf_core::ParsedResponse) with `has_other_data` set when `data`
/// holds an embedding.
///
/// There is no `stream` field (embeddings do not stream) and no output length: a turn's
/// max tokens are ignored with one warning. `--extra-inputs` (e.g.
/// `encoding_format:float`) and then the turn's `extra` are merged last.
#[derive(Debug)]
pub struct ChatEmbeddingsEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
}

impl ChatEmbeddingsEndpoint {
    /// A chat embeddings endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
        }
    }
}

impl Endpoint for ChatEmbeddingsEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        warn_max_tokens_ignored(INFO.name, turn, &self.warned_max_tokens);
        let mut body = Body::with_capacity(2);
        body.insert("messages", Field::Messages(Messages(input)));
        body.insert("model", Field::Str(model(input, turn)));
        Ok(body.finish(&self.options, turn, false, UsageChunk::Never))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, EmbeddingsFormat)
    }
}

#[cfg(test)]
mod tests {
    use aiperf_core::Turn;
    use serde_json::json;

    use super::*;
    use crate::test_support::{body, exchange, input, round_trip};

    #[test]
    fn a_chat_style_body_without_stream_or_max_tokens() {
        let turns = [Turn {
            images: vec!["data:image/png;base64,AAA".into()],
            max_tokens: Some(9),
            extra: Some(
                json!({"encoding_format": "base64"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            ..Turn::text("a cat")
        }];
        let options = EndpointOptions {
            extra_inputs: json!({"encoding_format": "float", "dimensions": 8})
                .as_object()
                .unwrap()
                .clone(),
            ..EndpointOptions::default()
        };
        let request = ChatEmbeddingsEndpoint::new(options)
            .build(&RequestInput {
                system_message: Some("Represent the image"),
                ..input(&turns, false)
            })
            .unwrap();
        assert_eq!(
            body(&request),
            r#"{"messages":[{"role":"system","content":"Represent the image"},{"role":"user","content":[{"type":"text","text":"a cat"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}}]}],"model":"m","encoding_format":"base64","dimensions":8}"#
        );
        assert_eq!(request.headers[1].1, "application/json");
    }

    #[test]
    fn reads_an_embeddings_answer_and_rejects_other_items() {
        let endpoint = ChatEmbeddingsEndpoint::new(EndpointOptions::default());
        let good = exchange(
            200,
            Some("application/json"),
            &[
                r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":3,"total_tokens":3}}"#,
            ],
        );
        let parsed = endpoint.parse(&good);
        assert_eq!(parsed.error, None);
        assert_eq!(parsed.responses.len(), 1);
        assert!(parsed.responses[0].has_other_data);
        assert_eq!(
            parsed.responses[0].usage.as_ref().unwrap().prompt_tokens(),
            Some(3)
        );
        let bad = exchange(
            200,
            Some("application/json"),
            &[r#"{"data":[{"object":"chat.completion"}]}"#],
        );
        let parsed = endpoint.parse(&bad);
        assert_eq!(
            parsed.error.unwrap().message,
            "the response's data[0] is not an embedding (object \"chat.completion\")"
        );
    }

    #[tokio::test]
    async fn round_trip_against_the_mock() {
        let turns = [Turn::text("one two three")];
        let endpoint = ChatEmbeddingsEndpoint::new(EndpointOptions::default());
        let (raw, parsed) = round_trip(&endpoint, None, &input(&turns, false)).await;
        assert_eq!(raw.status, Some(200));
        assert_eq!(parsed.error, None);
        assert!(parsed.responses[0].has_other_data);
        let usage = parsed.responses[0].usage.as_ref().unwrap();
        assert_eq!(usage.prompt_tokens(), Some(3));
    }
}
