//! `POST /v1/embeddings`: deterministic unit vectors (768 dimensions unless `dimensions` says
//! otherwise), derived from a hash of each input, in the OpenAI response shape. A chat-style
//! request (`messages` instead of `input`, as vLLM takes for multimodal embeddings) gets one
//! embedding of all the messages' text.

use std::fmt::Write as _;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;

use super::{content_text, json_str, parse, ApiError, Ctx, Reply};
use crate::faults::mix64;
use crate::tokens::fnv1a;

/// Default vector length.
pub const EMBEDDING_DIMS: usize = 768;

#[derive(Debug, Deserialize)]
struct EmbeddingsRequest {
    model: Option<String>,
    #[serde(default)]
    input: Value,
    /// vLLM's chat-style embeddings request: one embedding of the whole conversation.
    messages: Option<Vec<Message>>,
    dimensions: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    content: Value,
}

/// The embedding of `text`: deterministic, unit length.
pub fn embedding(text: &str, dims: usize) -> Vec<f32> {
    let mut h = fnv1a(text.as_bytes());
    let mut v: Vec<f64> = (0..dims)
        .map(|_| {
            h = mix64(h);
            (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    for x in &mut v {
        *x /= norm;
    }
    v.into_iter().map(|x| x as f32).collect()
}

/// The texts of an `input`: a string, or a non-empty array (non-strings as their JSON).
fn texts(input: &Value) -> Result<Vec<String>, ApiError> {
    match input {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => Ok(items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()),
        _ => Err(ApiError::bad_request(
            "'input' (or 'messages') must be a non-empty string or array",
        )),
    }
}

pub(crate) fn handle(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: EmbeddingsRequest = parse(body)?;
    let inputs: Vec<String> = match (&req.input, &req.messages) {
        (Value::Null, Some(messages)) if !messages.is_empty() => {
            let mut text = String::new();
            for m in messages {
                content_text(&m.content, &mut text);
            }
            vec![text]
        }
        (input, _) => texts(input)?,
    };
    let dims = req.dimensions.unwrap_or(EMBEDDING_DIMS).clamp(1, 65_536);
    let prompt_tokens: u64 = inputs.iter().map(|t| u64::from(ctx.count(t))).sum();
    let model = ctx.model(req.model.as_deref());
    let mut out = String::with_capacity(inputs.len() * dims * 12 + 128);
    out.push_str("{\"object\":\"list\",\"data\":[");
    for (i, text) in inputs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"object\":\"embedding\",\"index\":{i},\"embedding\":["
        );
        for (j, x) in embedding(text, dims).iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(out, "{x}");
        }
        out.push_str("]}");
    }
    let _ = write!(
        out,
        "],\"model\":{},\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"total_tokens\":{prompt_tokens}}}}}",
        json_str(&model)
    );
    let c = &ctx.state.cfg;
    let due = ctx.due_after(
        c.embedding_base_latency_ms,
        c.embedding_per_input_latency_ms,
        inputs.len(),
    );
    Ok(ctx.plain(Bytes::from(out), due, prompt_tokens))
}
