//! HTTP transport, SSE decoding and endpoint formats of aiperf-rs.
//!
//! This crate implements the two halves of a request that [`aiperf_core`] leaves open:
//!
//! - an [`Endpoint`](aiperf_core::Endpoint) turns a turn into a request body and a finished
//!   exchange into parsed responses: [`ChatEndpoint`] (`/v1/chat/completions`),
//!   [`CompletionsEndpoint`] (`/v1/completions`), [`ResponsesEndpoint`] (`/v1/responses`),
//!   [`EmbeddingsEndpoint`] (`embeddings`, `nim_embeddings`), [`ChatEmbeddingsEndpoint`],
//!   [`RankingsEndpoint`] (`nim_rankings`, `cohere_rankings`, `hf_tei_rankings`),
//!   [`HuggingFaceGenerateEndpoint`] (TGI), [`ImageGenerationEndpoint`]
//!   (`/v1/images/generations`), [`ImageEditEndpoint`] (`/v1/images/edits`, a
//!   `multipart/form-data` upload), [`AudioTranscriptionEndpoint`]
//!   (`/v1/audio/transcriptions`, an upload too), [`ImageRetrievalEndpoint`] (NIM
//!   `/v1/infer`), [`SolidoRagEndpoint`] (`/rag/api/prompt`),
//!   [`VideoGenerationEndpoint`] (asynchronous `/v1/videos` jobs),
//!   [`MessagesEndpoint`] (Anthropic `/v1/messages`; its API
//!   key goes in `x-api-key`, as its
//!   [`EndpointInfo::api_key_header`](aiperf_core::EndpointInfo::api_key_header) says), [`TemplateEndpoint`] (a user's Jinja
//!   template) and [`RawEndpoint`] (the dataset's complete request bodies, sent verbatim),
//!   chosen by name with [`endpoint_for`]; requests
//!   go to [`EndpointInfo::path`](aiperf_core::EndpointInfo::path) joined to the base
//!   URL by [`build_url`];
//! - a [`Transport`](aiperf_core::Transport) sends the bytes: [`HttpTransport`] (its own
//!   HTTP/1.1 client or hyper for HTTP/2, pooled keep-alive, rustls) stamps the response head and every body chunk as it
//!   arrives and does nothing else, so the hot path never parses.
//!
//! Parsing happens later, from the stamped chunks: streamed bodies go through the
//! incremental [`sse`] decoder, and every event keeps the stamp of the read that completed
//! it. Errors become [`ErrorDetails`](aiperf_core::ErrorDetails): a non-2xx status gives
//! `{code: status, type: reason phrase, message: the JSON body's error message or the body
//! text}`; `event: error` or an in-band `{"error": …}` chunk gives `SSEResponseError`
//! (502); a transport failure gives its [`TransportError`](aiperf_core::TransportError)
//! type; a 2xx body or a stream event that is not JSON gives `JSONDecodeError` (its text
//! is lost, so the request's token counts would be wrong).
//!
//! [`TemplateEndpoint`] needs the Cargo feature `templates` (on by default), which brings
//! minijinja; without it `endpoint_for("template", …)` is an [`UnknownEndpoint`] that
//! names the feature.
//!
//! ```
//! use std::time::Instant;
//! use aiperf_core::{Chunk, RawExchange, RequestInput, Turn};
//! use aiperf_endpoints::{build_url, endpoint_for, EndpointOptions};
//!
//! let chat = endpoint_for("chat", EndpointOptions::default())?;
//! let url = build_url("localhost:8000/v1", None, chat.info().default_path);
//! assert_eq!(url, "http://localhost:8000/v1/chat/completions");
//!
//! let turns = [Turn::text("Hello")];
//! let request = chat.build(&RequestInput {
//!     model: "m",
//!     system_message: None,
//!     user_context_message: None,
//!     turns: &turns,
//!     streaming: true,
//! })?;
//! assert_eq!(
//!     request.body,
//!     r#"{"messages":[{"role":"user","content":"Hello"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}"#
//! );
//!
//! // What a transport would have recorded for a streamed answer.
//! let now = Instant::now();
//! let exchange = RawExchange {
//!     started_at: now,
//!     head_at: Some(now),
//!     status: Some(200),
//!     content_type: Some("text/event-stream".into()),
//!     headers: Vec::new(),
//!     chunks: [Chunk {
//!         at: now,
//!         bytes: b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
//!     }]
//!     .into_iter()
//!     .collect(),
//!     ended_at: now,
//!     error: None,
//!     trace: None,
//!     retries: 0,
//! };
//! let parsed = chat.parse(&exchange);
//! assert_eq!(parsed.error, None);
//! assert_eq!(parsed.responses[0].text, "Hi");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod audio_transcription;
mod chat;
mod chat_embeddings;
mod completions;
mod embeddings;
mod factory;
mod huggingface;
mod image_edit;
mod image_generation;
mod image_retrieval;
mod messages;
mod multipart;
mod openai;
mod payload;
mod rankings;
mod raw;
pub mod readiness;
mod response;
mod response_field;
mod responses;
mod solido_rag;
pub mod sse;
#[cfg(feature = "templates")]
mod template;
mod tls;
mod transport;
mod video_generation;

pub use aiperf_core::url::build_url;
pub use audio_transcription::AudioTranscriptionEndpoint;
pub use chat::ChatEndpoint;
pub use chat_embeddings::ChatEmbeddingsEndpoint;
pub use completions::CompletionsEndpoint;
pub use embeddings::EmbeddingsEndpoint;
pub use factory::{
    endpoint_for, endpoint_types, EndpointOptions, UnknownEndpoint, SUPPORTED_ENDPOINT_TYPES,
};
pub use huggingface::HuggingFaceGenerateEndpoint;
pub use image_edit::ImageEditEndpoint;
pub use image_generation::ImageGenerationEndpoint;
pub use image_retrieval::ImageRetrievalEndpoint;
pub use messages::{MessagesEndpoint, ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS};
pub use rankings::RankingsEndpoint;
pub use raw::RawEndpoint;
pub use response::exchange_failure;
pub use response_field::RESPONSE_FIELD_KEY;
pub use responses::ResponsesEndpoint;
pub use solido_rag::SolidoRagEndpoint;
#[cfg(feature = "templates")]
pub use template::{TemplateEndpoint, NAMED_TEMPLATES, PAYLOAD_TEMPLATE_KEY};
pub use transport::{
    HttpTransport, HttpTransportBuilder, ReadLateness, TransportBuildError,
    DEFAULT_MAX_RESPONSE_BYTES,
};
pub use video_generation::{VideoGenerationEndpoint, VideoJobOptions};

#[cfg(test)]
mod test_support;
