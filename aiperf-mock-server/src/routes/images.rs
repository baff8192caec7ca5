//! `POST /v1/images/generations` (OpenAI image generation), `POST /v1/images/edits` (its
//! multipart twin: a prompt and an uploaded image, answered like a whole generation) and
//! `POST /v1/infer` (NVIDIA NIM image retrieval: one detected table per input image, due
//! after the TTFT).
//!
//! Every image is the same 1×1 PNG. `response_format` `b64_json` (the default) carries it
//! inline, `url` points at a placeholder address. A whole answer is due after the TTFT;
//! streaming (`"stream": true`) sends `partial_images` (0–3, default 0)
//! `image_generation.partial_image` events and then `image_generation.completed` (with
//! `usage`), paced like tokens: the first at the TTFT, the next ones one ITL apart (and
//! counted as generated tokens in the server's statistics).

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse, unix_now, ApiError, Ctx, Reply};
use crate::body::{EventWriter, TokenKind};
use crate::form::{parse_form, FormPart};
use crate::tokens::{Finish, Plan};

/// A 1×1 PNG, base64: the smallest real image a client can decode.
pub const TINY_PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Most images one request may ask for (as the OpenAI API).
const MAX_IMAGES: u64 = 10;

#[derive(Debug, Deserialize)]
struct ImagesRequest {
    prompt: Option<String>,
    n: Option<u64>,
    response_format: Option<String>,
    stream: Option<bool>,
    partial_images: Option<u32>,
}

pub(crate) fn handle(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: ImagesRequest = parse(body)?;
    let prompt = req
        .prompt
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ApiError::bad_request("'prompt' is required"))?;
    let (n, inline) = images_wanted(req.n, req.response_format.as_deref())?;
    if req.stream.unwrap_or(false) {
        let prompt_tokens = ctx.count(&prompt);
        let partials = req.partial_images.unwrap_or(0).min(3);
        // One "token" per event: the partial images, then the final image.
        let plan = Plan {
            prompt_tokens,
            reasoning: 0,
            content: partials + 1,
            finish: Finish::Stop,
        };
        let usage = usage(prompt_tokens);
        return Ok(ctx.stream(Box::new(ImagesWriter { plan, usage }), plan, None));
    }
    Ok(whole_answer(ctx, &prompt, n, inline))
}

/// `POST /v1/images/edits`: a `multipart/form-data` form with a `prompt` and an `image`
/// file (or, as SGLang takes it, a `url`), answered like a whole image generation.
pub(crate) fn edit(ctx: Ctx, content_type: Option<&str>, body: &[u8]) -> Result<Reply, ApiError> {
    let parts = parse_form(content_type, body)?;
    let field = |name: &str| parts.iter().find(|part| part.name == name);
    let prompt = field("prompt")
        .map(FormPart::text)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ApiError::bad_request("'prompt' is required"))?;
    let uploaded = parts
        .iter()
        .any(|part| matches!(part.name.as_str(), "image" | "image[]") && part.filename.is_some());
    if !uploaded && field("url").is_none() {
        return Err(ApiError::bad_request(
            "'image' is required (an uploaded image file, or a 'url')",
        ));
    }
    let n = field("n")
        .map(|part| {
            part.text().trim().parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("'n' must be a number, got {:?}", part.text()))
            })
        })
        .transpose()?;
    let response_format = field("response_format").map(FormPart::text);
    let (n, inline) = images_wanted(n, response_format.as_deref())?;
    Ok(whole_answer(ctx, &prompt, n, inline))
}

/// How many images, and whether inline (`b64_json`) rather than by `url`.
fn images_wanted(n: Option<u64>, response_format: Option<&str>) -> Result<(u64, bool), ApiError> {
    let n = n.unwrap_or(1);
    if !(1..=MAX_IMAGES).contains(&n) {
        return Err(ApiError::bad_request(format!(
            "'n' must be between 1 and {MAX_IMAGES}"
        )));
    }
    let inline = match response_format {
        None | Some("b64_json") => true,
        Some("url") => false,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "'response_format' must be b64_json or url, got {other:?}"
            )))
        }
    };
    Ok((n, inline))
}

fn usage(prompt_tokens: u32) -> Value {
    json!({
        "input_tokens": prompt_tokens,
        "output_tokens": 0,
        "total_tokens": prompt_tokens,
    })
}

/// `n` images for `prompt`, due after the TTFT.
fn whole_answer(ctx: Ctx, prompt: &str, n: u64, inline: bool) -> Reply {
    let prompt_tokens = ctx.count(prompt);
    let image = |i: u64| {
        if inline {
            json!({"b64_json": TINY_PNG_B64, "revised_prompt": prompt})
        } else {
            json!({"url": format!("https://images.mock.invalid/{i}.png"), "revised_prompt": prompt})
        }
    };
    let out = json!({
        "created": unix_now(),
        "data": (0..n).map(image).collect::<Vec<_>>(),
        "usage": usage(prompt_tokens),
    });
    let due = ctx.due_after(ctx.state.cfg.ttft_ms, 0.0, 0);
    ctx.plain(Bytes::from(out.to_string()), due, u64::from(prompt_tokens))
}

#[derive(Debug, Deserialize)]
struct RetrievalRequest {
    input: Option<Vec<RetrievalInput>>,
}

#[derive(Debug, Deserialize)]
struct RetrievalInput {
    #[serde(rename = "type")]
    kind: Option<String>,
    url: Option<String>,
}

pub(crate) fn retrieve(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: RetrievalRequest = parse(body)?;
    let images = req.input.unwrap_or_default();
    if images.is_empty() {
        return Err(ApiError::bad_request("'input' needs at least one image"));
    }
    if let Some(i) = images
        .iter()
        .position(|image| image.kind.as_deref() != Some("image_url") || image.url.is_none())
    {
        return Err(ApiError::bad_request(format!(
            "input[{i}] must be {{\"type\": \"image_url\", \"url\": …}}"
        )));
    }
    let boxes = |index: usize| {
        json!({
            "index": index,
            "bounding_boxes": {"table": [
                {"x_min": 0.1, "y_min": 0.2, "x_max": 0.8, "y_max": 0.6, "confidence": 0.93}
            ]},
        })
    };
    let out = json!({"data": (0..images.len()).map(boxes).collect::<Vec<_>>()});
    let due = ctx.due_after(ctx.state.cfg.ttft_ms, 0.0, 0);
    Ok(ctx.plain(Bytes::from(out.to_string()), due, 0))
}

/// Renders `image_generation.*` events; the plan's last "token" is the final image.
struct ImagesWriter {
    plan: Plan,
    usage: Value,
}

fn event(out: &mut Vec<u8>, kind: &str, mut data: Value) {
    data["type"] = Value::from(kind);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}

impl EventWriter for ImagesWriter {
    fn tokens(
        &self,
        out: &mut Vec<u8>,
        _kind: TokenKind,
        first: u32,
        end: u32,
        _finish: Option<Finish>,
    ) {
        let created = unix_now();
        for i in first..end {
            if i + 1 < self.plan.content {
                event(
                    out,
                    "image_generation.partial_image",
                    json!({"b64_json": TINY_PNG_B64, "created_at": created, "partial_image_index": i}),
                );
            } else {
                event(
                    out,
                    "image_generation.completed",
                    json!({"b64_json": TINY_PNG_B64, "created_at": created, "usage": self.usage}),
                );
            }
        }
    }

    /// The final image was the last event; the API sends no `[DONE]`.
    fn epilogue(&self, _out: &mut Vec<u8>) {}
}
