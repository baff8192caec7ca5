//! The `image_edit` endpoint: OpenAI image edits (`/v1/images/edits`), as OpenAI, SGLang
//! and FLUX.2 servers take them.

use std::sync::atomic::AtomicBool;

use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestContentType, RequestInput,
};
use serde_json::{Map, Value};

use crate::image_generation::ImagesFormat;
use crate::multipart::{file_field, form_request, merge_unreserved};
use crate::payload::{current_turn, model, prompt, warn_max_tokens_ignored};
use crate::response::parse_with;
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "image_edit",
    default_path: "/v1/images/edits",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: false,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// The form fields the endpoint fills from the turn; the extra inputs cannot replace
/// them (a `mask` would have to be a file upload, which extra inputs cannot give).
const RESERVED: &[&str] = &["prompt", "image", "url", "mask"];

/// Image edit: a `multipart/form-data` form with the current turn's first text as the
/// `prompt`, the `model`, `response_format` `b64_json` and `n` 1, and its first image as
/// the `image` file, then `--extra-inputs` and the turn's `extra` fields (`size`,
/// `quality`, …; `n` and `response_format` can be overridden).
///
/// A `data:` URL or bare base64 image is uploaded with its media type (from the URL, else
/// from the bytes' signature: PNG, JPEG, GIF, WebP, BMP) and a matching name
/// (`image.png`, `image.jpg`, …); an `http(s)://` image is sent as the `url` field
/// instead (an SGLang extension; OpenAI takes uploads only). The answer reads like image
/// generation's: `data` items with `b64_json` or `url`. No streaming, no generated tokens:
/// a run reports latency, throughput and the prompt's input length.
#[derive(Debug)]
pub struct ImageEditEndpoint {
    options: EndpointOptions,
    warned_max_tokens: AtomicBool,
    warned_reserved: AtomicBool,
}

impl ImageEditEndpoint {
    /// An `image_edit` endpoint with these options.
    pub fn new(options: EndpointOptions) -> Self {
        Self {
            options,
            warned_max_tokens: AtomicBool::new(false),
            warned_reserved: AtomicBool::new(false),
        }
    }
}

impl Endpoint for ImageEditEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = current_turn(INFO.name, input)?;
        warn_max_tokens_ignored(INFO.name, turn, &self.warned_max_tokens);
        let error = |reason: String| EndpointError {
            endpoint: INFO.name,
            reason,
        };
        let prompt = prompt(INFO.name, turn)?;
        let image = turn
            .images
            .iter()
            .find(|image| !image.is_empty())
            .ok_or_else(|| {
                error(
                    "the turn has no image to edit (give synthetic images with \
                     --image-width-mean and --image-height-mean, or a dataset with images)"
                        .into(),
                )
            })?;
        let mut payload = Map::new();
        payload.insert("prompt".into(), prompt.into());
        payload.insert("model".into(), model(input, turn).into());
        payload.insert("response_format".into(), "b64_json".into());
        payload.insert("n".into(), 1.into());
        let lower = image.get(..8).unwrap_or(image).to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            payload.insert("url".into(), image.as_str().into());
        } else {
            payload.insert("image".into(), image_file(image).map_err(error)?);
        }
        let extra = turn.extra.clone().unwrap_or_default();
        for extra in [&self.options.extra_inputs, &extra] {
            merge_unreserved(
                &mut payload,
                extra,
                RESERVED,
                INFO.name,
                &self.warned_reserved,
            );
        }
        form_request(payload).map_err(error)
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        parse_with(exchange, ImagesFormat)
    }

    fn request_content_type(&self) -> RequestContentType {
        RequestContentType::MultipartFormData
    }
}

/// Media types told by the first base64 characters of an image's bytes.
const SIGNATURES: [(&str, &str); 6] = [
    ("iVBORw0KGgo", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGODlh", "image/gif"),
    ("R0lGODdh", "image/gif"),
    ("UklGR", "image/webp"),
    ("Qk", "image/bmp"),
];

/// The `image` field for a `data:` URL or bare base64 image.
fn image_file(image: &str) -> Result<Value, String> {
    let (declared, b64) = match image.strip_prefix("data:") {
        Some(rest) => {
            let (header, b64) = rest
                .split_once(',')
                .ok_or("the image's data: URL has no comma before its data")?;
            // Only an image type is believed; anything else is sniffed from the bytes.
            let declared = header
                .split_once(';')
                .map(|(media_type, _)| media_type)
                .filter(|media_type| media_type.starts_with("image/"));
            (declared, b64)
        }
        None => (None, image),
    };
    let media_type = declared
        .or_else(|| {
            SIGNATURES
                .iter()
                .find(|(prefix, _)| b64.starts_with(prefix))
                .map(|(_, media_type)| *media_type)
        })
        .ok_or(
            "the image is neither a data: URL nor base64 PNG, JPEG, GIF, WebP or BMP \
             (remote images must be http:// or https:// URLs)",
        )?;
    let subtype = media_type["image/".len()..]
        .split('+')
        .next()
        .unwrap_or_default();
    let extension = if subtype == "jpeg" { "jpg" } else { subtype };
    Ok(file_field(b64, &format!("image.{extension}"), media_type))
}

#[cfg(test)]
mod tests;
