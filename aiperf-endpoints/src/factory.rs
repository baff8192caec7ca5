//! Choosing an endpoint format by its `--endpoint-type` name.

use std::sync::Arc;

use aiperf_core::Endpoint;
use serde_json::{Map, Value};

use crate::{ChatEndpoint, CompletionsEndpoint};

/// The endpoint types [`endpoint_for`] knows.
pub const SUPPORTED_ENDPOINT_TYPES: &[&str] = &["chat", "completions"];

/// Options shared by the request-building formats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointOptions {
    /// Send chat's max tokens as `max_tokens` instead of `max_completion_tokens`
    /// (`--use-legacy-max-tokens`).
    pub use_legacy_max_tokens: bool,
    /// Ask streaming servers for usage with `stream_options.include_usage`
    /// (`--use-server-token-count`).
    pub use_server_token_count: bool,
    /// `--extra-inputs`, merged shallowly over the built body in order.
    pub extra_inputs: Map<String, Value>,
}

/// An endpoint type name that is not supported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown endpoint type `{name}`; supported types: {}", .supported.join(", "))]
pub struct UnknownEndpoint {
    /// The name asked for.
    pub name: String,
    /// The names that exist.
    pub supported: &'static [&'static str],
}

/// The endpoint for `endpoint_type` (e.g. `chat`), configured with `options`.
///
/// ```
/// use aiperf_endpoints::{endpoint_for, EndpointOptions};
///
/// let chat = endpoint_for("chat", EndpointOptions::default()).unwrap();
/// assert_eq!(chat.info().default_path, "/v1/chat/completions");
/// let error = endpoint_for("embeddings", EndpointOptions::default()).err().unwrap();
/// assert!(error.to_string().contains("chat, completions"));
/// ```
pub fn endpoint_for(
    endpoint_type: &str,
    options: EndpointOptions,
) -> Result<Arc<dyn Endpoint>, UnknownEndpoint> {
    match endpoint_type {
        "chat" => Ok(Arc::new(ChatEndpoint::new(options))),
        "completions" => Ok(Arc::new(CompletionsEndpoint::new(options))),
        other => Err(UnknownEndpoint {
            name: other.to_owned(),
            supported: SUPPORTED_ENDPOINT_TYPES,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_type_is_built_with_its_own_name() {
        for name in SUPPORTED_ENDPOINT_TYPES {
            let endpoint = endpoint_for(name, EndpointOptions::default()).unwrap();
            assert_eq!(endpoint.info().name, *name);
            assert!(endpoint.info().supports_streaming);
        }
    }

    #[test]
    fn unknown_types_list_the_supported_ones() {
        let error = endpoint_for("rankings", EndpointOptions::default())
            .err()
            .unwrap();
        assert_eq!(error.name, "rankings");
        assert_eq!(
            error.to_string(),
            "unknown endpoint type `rankings`; supported types: chat, completions"
        );
    }
}
