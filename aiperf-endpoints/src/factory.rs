//! Choosing an endpoint format by its `--endpoint-type` name.

use std::fmt;
use std::sync::Arc;

use aiperf_core::capability::Capability;
use aiperf_core::Endpoint;
use serde_json::{Map, Value};

#[cfg(feature = "templates")]
use crate::TemplateEndpoint;
use crate::{
    AudioTranscriptionEndpoint, ChatEmbeddingsEndpoint, ChatEndpoint, CompletionsEndpoint,
    EmbeddingsEndpoint, HuggingFaceGenerateEndpoint, ImageEditEndpoint, ImageGenerationEndpoint,
    ImageRetrievalEndpoint, MessagesEndpoint, RankingsEndpoint, RawEndpoint, ResponsesEndpoint,
    SolidoRagEndpoint, VideoGenerationEndpoint, VideoJobOptions,
};

/// The endpoint types [`endpoint_for`] can build in this build (aliases aside: `rankings`
/// is `nim_rankings`). `template` is listed only with the `templates` feature: the list
/// is what a caller may offer or accept, so it holds no type that would then fail.
pub const SUPPORTED_ENDPOINT_TYPES: &[&str] = &[
    "chat",
    "completions",
    "responses",
    "embeddings",
    "chat_embeddings",
    "nim_embeddings",
    "nim_rankings",
    "cohere_rankings",
    "hf_tei_rankings",
    "huggingface_generate",
    "image_generation",
    "image_edit",
    "image_retrieval",
    "audio_transcription",
    "solido_rag",
    "messages",
    "raw",
    "video_generation",
    #[cfg(feature = "templates")]
    "template",
];

/// Every endpoint type this crate knows, with a line on each, for listings (`aiperf
/// plugins`): the [`SUPPORTED_ENDPOINT_TYPES`] plus `template` marked as not compiled in
/// when the `templates` feature is off.
pub fn endpoint_types() -> Vec<Capability> {
    let mut types: Vec<Capability> = SUPPORTED_ENDPOINT_TYPES
        .iter()
        .filter(|name| **name != "template")
        .map(|name| Capability::always(name, endpoint_summary(name)))
        .collect();
    types.push(Capability::optional(
        "template",
        endpoint_summary("template"),
        "aiperf-endpoints/templates",
        cfg!(feature = "templates"),
    ));
    types
}

/// One line on an endpoint type (its request, its response, its default path).
fn endpoint_summary(name: &str) -> &'static str {
    match name {
        "chat" => {
            "OpenAI chat completions, streaming or not, text and media (/v1/chat/completions)"
        }
        "completions" => "OpenAI text completions (/v1/completions)",
        "responses" => "OpenAI Responses API (/v1/responses)",
        "embeddings" => "OpenAI embeddings (/v1/embeddings)",
        "chat_embeddings" => "vLLM multimodal embeddings sent as chat messages (/v1/embeddings)",
        "nim_embeddings" => "NVIDIA NIM embeddings with input_type (/v1/embeddings)",
        "nim_rankings" => "NVIDIA NIM reranking of passages for a query (/v1/ranking)",
        "cohere_rankings" => "Cohere rerank API (/v2/rerank)",
        "hf_tei_rankings" => "Hugging Face TEI rerank (/rerank)",
        "huggingface_generate" => "Hugging Face TGI generate and generate_stream (/generate)",
        "image_generation" => "OpenAI image generation (/v1/images/generations)",
        "image_edit" => {
            "OpenAI image edits: prompt and image uploaded as a form (/v1/images/edits)"
        }
        "image_retrieval" => "NVIDIA NIM image inference, e.g. page elements or tables (/v1/infer)",
        "audio_transcription" => {
            "OpenAI speech to text: audio uploaded as a form (/v1/audio/transcriptions)"
        }
        "solido_rag" => "Solido retrieval-augmented generation, streaming or not (/rag/api/prompt)",
        "messages" => "Anthropic Messages API, streaming or not (/v1/messages)",
        "raw" => {
            "a dataset's complete request bodies sent verbatim to --url; the reply text \
                  found by --extra-inputs response_field or detected"
        }
        "video_generation" => {
            "OpenAI/SGLang text-to-video jobs: submit, poll until done, optionally download \
             (/v1/videos)"
        }
        "template" => {
            "any JSON API: request bodies from your Jinja template, the reply text \
                       from a JSON path you name"
        }
        _ => "",
    }
}

/// Options shared by the request-building formats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointOptions {
    /// Send chat's max tokens as `max_tokens` instead of `max_completion_tokens`
    /// (`--use-legacy-max-tokens`).
    pub use_legacy_max_tokens: bool,
    /// Ask streaming servers for usage with `stream_options.include_usage`
    /// (`--use-server-token-count`).
    pub use_server_token_count: bool,
    /// Ask a streaming chat server for cumulative usage on every chunk with
    /// `stream_options.continuous_usage_stats` (`--per-chunk-usage`; a vLLM and TRT-LLM
    /// extension that strict OpenAI rejects). Only chat sends it, as in the Python AIPerf.
    pub per_chunk_usage: bool,
    /// `--extra-inputs`, merged shallowly over the built body in order (a turn's own
    /// `extra` fields are merged after them). The `template` endpoint takes its
    /// `payload_template` and `response_field` out of them first.
    pub extra_inputs: Map<String, Value>,
    /// How `video_generation` follows its jobs.
    pub video: VideoJobOptions,
}

/// An endpoint type name that is not supported, or whose format this build leaves out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownEndpoint {
    /// The name asked for.
    pub name: String,
    /// The names that can be built ([`SUPPORTED_ENDPOINT_TYPES`]).
    pub supported: &'static [&'static str],
    /// The Cargo feature of aiperf-endpoints that adds `name`, when `name` is a known type
    /// this build was compiled without (`template` without `templates`).
    pub missing_feature: Option<&'static str>,
}

impl fmt::Display for UnknownEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let supported = self.supported.join(", ");
        match self.missing_feature {
            Some(feature) => write!(
                f,
                "endpoint type `{}` is not in this build: it needs the \"{feature}\" feature \
                 of aiperf-endpoints; supported types: {supported}",
                self.name
            ),
            None => write!(
                f,
                "unknown endpoint type `{}`; supported types: {supported}",
                self.name
            ),
        }
    }
}

/// The endpoint for `endpoint_type` (e.g. `chat`; see [`SUPPORTED_ENDPOINT_TYPES`]),
/// configured with `options`. `template` without the `templates` feature is an
/// [`UnknownEndpoint`] that names the feature.
///
/// ```
/// use aiperf_endpoints::{endpoint_for, EndpointOptions};
///
/// let chat = endpoint_for("chat", EndpointOptions::default()).unwrap();
/// assert_eq!(chat.info().default_path, "/v1/chat/completions");
/// let rankings = endpoint_for("rankings", EndpointOptions::default()).unwrap();
/// assert_eq!(rankings.info().name, "nim_rankings");
/// for name in ["messages", "chat_embeddings", "image_generation"] {
///     assert_eq!(endpoint_for(name, EndpointOptions::default()).unwrap().info().name, name);
/// }
/// let error = endpoint_for("chats", EndpointOptions::default()).err().unwrap();
/// assert!(error.to_string().contains("chat, completions, responses"));
/// ```
pub fn endpoint_for(
    endpoint_type: &str,
    options: EndpointOptions,
) -> Result<Arc<dyn Endpoint>, UnknownEndpoint> {
    match endpoint_type {
        "chat" => Ok(Arc::new(ChatEndpoint::new(options))),
        "completions" => Ok(Arc::new(CompletionsEndpoint::new(options))),
        "responses" => Ok(Arc::new(ResponsesEndpoint::new(options))),
        "embeddings" => Ok(Arc::new(EmbeddingsEndpoint::new(options))),
        "chat_embeddings" => Ok(Arc::new(ChatEmbeddingsEndpoint::new(options))),
        "nim_embeddings" => Ok(Arc::new(EmbeddingsEndpoint::nim(options))),
        "nim_rankings" | "rankings" => Ok(Arc::new(RankingsEndpoint::nim(options))),
        "cohere_rankings" => Ok(Arc::new(RankingsEndpoint::cohere(options))),
        "hf_tei_rankings" => Ok(Arc::new(RankingsEndpoint::hf_tei(options))),
        "huggingface_generate" => Ok(Arc::new(HuggingFaceGenerateEndpoint::new(options))),
        "image_generation" => Ok(Arc::new(ImageGenerationEndpoint::new(options))),
        "image_edit" => Ok(Arc::new(ImageEditEndpoint::new(options))),
        "image_retrieval" => Ok(Arc::new(ImageRetrievalEndpoint::new(options))),
        "audio_transcription" => Ok(Arc::new(AudioTranscriptionEndpoint::new(options))),
        "solido_rag" => Ok(Arc::new(SolidoRagEndpoint::new(options))),
        "messages" => Ok(Arc::new(MessagesEndpoint::new(options))),
        "raw" => Ok(Arc::new(RawEndpoint::new(options))),
        "video_generation" => Ok(Arc::new(VideoGenerationEndpoint::new(options))),
        #[cfg(feature = "templates")]
        "template" => Ok(Arc::new(TemplateEndpoint::new(options))),
        #[cfg(not(feature = "templates"))]
        "template" => Err(UnknownEndpoint {
            name: "template".to_owned(),
            supported: SUPPORTED_ENDPOINT_TYPES,
            missing_feature: Some("templates"),
        }),
        other => Err(UnknownEndpoint {
            name: other.to_owned(),
            supported: SUPPORTED_ENDPOINT_TYPES,
            missing_feature: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::RequestContentType;

    #[test]
    fn every_endpoint_type_is_listed_with_a_summary_and_its_path_is_true() {
        let types = endpoint_types();
        for name in SUPPORTED_ENDPOINT_TYPES {
            assert!(types.iter().any(|t| t.name == *name), "{name} not listed");
        }
        for listed in &types {
            assert!(!listed.summary.is_empty(), "{} has no summary", listed.name);
            let Ok(endpoint) = endpoint_for(listed.name, EndpointOptions::default()) else {
                continue;
            };
            let path = endpoint.info().default_path;
            if listed.summary.ends_with(')') {
                assert!(
                    listed.summary.ends_with(&format!("({path})")),
                    "{listed:?}: {path}"
                );
            }
        }
    }

    #[test]
    fn every_supported_type_is_built_with_its_own_name() {
        for name in SUPPORTED_ENDPOINT_TYPES {
            let endpoint = endpoint_for(name, EndpointOptions::default()).unwrap();
            assert_eq!(endpoint.info().name, *name);
        }
    }

    #[test]
    fn streaming_and_token_flags_follow_the_catalogue() {
        let flags = |name: &str| {
            let endpoint = endpoint_for(name, EndpointOptions::default()).unwrap();
            let info = endpoint.info();
            (
                info.supports_streaming,
                info.produces_tokens,
                info.tokenizes_input,
            )
        };
        for name in SUPPORTED_ENDPOINT_TYPES {
            let expected = match *name {
                "chat"
                | "completions"
                | "responses"
                | "huggingface_generate"
                | "messages"
                | "raw"
                | "solido_rag"
                | "template" => (true, true, true),
                "image_generation" => (true, false, true),
                "image_retrieval" | "audio_transcription" => (false, false, false),
                _ => (false, false, true),
            };
            assert_eq!(flags(name), expected, "{name}");
        }
    }

    #[test]
    fn only_the_uploads_and_video_jobs_send_forms() {
        for name in SUPPORTED_ENDPOINT_TYPES {
            let endpoint = endpoint_for(name, EndpointOptions::default()).unwrap();
            let expected = match *name {
                "audio_transcription" | "image_edit" | "video_generation" => {
                    RequestContentType::MultipartFormData
                }
                _ => RequestContentType::ApplicationJson,
            };
            assert_eq!(endpoint.request_content_type(), expected, "{name}");
        }
        assert_eq!(
            endpoint_for("rankings", EndpointOptions::default())
                .unwrap()
                .info()
                .name,
            "nim_rankings"
        );
    }

    #[test]
    fn only_tgi_streams_from_another_path() {
        for name in SUPPORTED_ENDPOINT_TYPES {
            let endpoint = endpoint_for(name, EndpointOptions::default()).unwrap();
            let info = endpoint.info();
            assert_eq!(info.path(false), info.default_path);
            if *name != "huggingface_generate" {
                assert_eq!(info.path(true), info.default_path);
            }
        }
    }

    #[test]
    fn exactly_the_three_rankings_apis_take_rankings() {
        let takes: Vec<&str> = SUPPORTED_ENDPOINT_TYPES
            .iter()
            .copied()
            .filter(|name| {
                endpoint_for(name, EndpointOptions::default())
                    .unwrap()
                    .info()
                    .takes_rankings
            })
            .collect();
        assert_eq!(
            takes,
            ["nim_rankings", "cohere_rankings", "hf_tei_rankings"]
        );
    }

    #[test]
    fn the_api_key_header_comes_first_unless_an_explicit_one_replaces_it() {
        let chat = endpoint_for("chat", EndpointOptions::default()).unwrap();
        let other = [("X-Trace".to_string(), "1".to_string())];
        assert_eq!(
            chat.info().request_headers(Some("k"), &other),
            (
                vec![
                    ("Authorization".to_string(), "Bearer k".to_string()),
                    ("X-Trace".to_string(), "1".to_string()),
                ],
                false
            )
        );
        assert_eq!(
            chat.info().request_headers(None, &other),
            (other.to_vec(), false)
        );
        let messages = endpoint_for("messages", EndpointOptions::default()).unwrap();
        let explicit = [("X-API-KEY".to_string(), "mine".to_string())];
        assert_eq!(
            messages.info().request_headers(Some("k"), &explicit),
            (explicit.to_vec(), true)
        );
    }

    #[test]
    fn unknown_types_list_the_supported_ones() {
        let error = endpoint_for("ranking", EndpointOptions::default())
            .err()
            .unwrap();
        assert_eq!(error.name, "ranking");
        assert_eq!(
            error.to_string(),
            format!(
                "unknown endpoint type `ranking`; supported types: {}",
                SUPPORTED_ENDPOINT_TYPES.join(", ")
            )
        );
    }

    #[cfg(feature = "templates")]
    #[test]
    fn template_is_supported_with_its_feature() {
        assert_eq!(SUPPORTED_ENDPOINT_TYPES.last(), Some(&"template"));
    }

    #[cfg(not(feature = "templates"))]
    #[test]
    fn template_without_its_feature_names_the_feature_and_is_not_listed() {
        let error = endpoint_for("template", EndpointOptions::default())
            .err()
            .unwrap();
        assert_eq!(error.missing_feature, Some("templates"));
        assert!(!SUPPORTED_ENDPOINT_TYPES.contains(&"template"));
        assert_eq!(
            error.to_string(),
            format!(
                "endpoint type `template` is not in this build: it needs the \"templates\" \
                 feature of aiperf-endpoints; supported types: {}",
                SUPPORTED_ENDPOINT_TYPES.join(", ")
            )
        );
    }
}
