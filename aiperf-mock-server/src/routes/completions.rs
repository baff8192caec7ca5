//! `POST /v1/completions`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::chat::{usage_json, StreamOptions};
use super::{budget, parse, push_joined, unix_now, ApiError, Ctx, Reply, StreamFrames};
use crate::body::{EventWriter, TokenKind};
use crate::tokens::{self, fnv1a, Finish, LengthAsk, Output};

#[derive(Debug, Deserialize)]
struct CompletionRequest {
    model: Option<String>,
    #[serde(default)]
    prompt: Value,
    max_tokens: Option<u64>,
    min_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
}

/// Prompt text and, for token-id prompts, their count.
fn prompt_of(v: &Value) -> (String, Option<u32>) {
    let mut text = String::new();
    let mut ids = 0usize;
    match v {
        Value::String(s) => text.push_str(s),
        Value::Array(items) => {
            for it in items {
                match it {
                    Value::String(s) => push_joined(&mut text, s),
                    Value::Number(_) => ids += 1,
                    Value::Array(inner) => ids += inner.len(),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let ids = (ids > 0).then(|| u32::try_from(ids).unwrap_or(u32::MAX));
    (text, ids)
}

pub(crate) fn handle(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: CompletionRequest = parse(body)?;
    if ctx.state.cfg.quirks.string_prompt_only && !req.prompt.is_string() {
        return Err(ApiError::bad_request("prompt must be a string."));
    }
    let max = budget("max_tokens", req.max_tokens)?;
    let (prompt, ids) = prompt_of(&req.prompt);
    let prompt_tokens = match ids {
        Some(n) if prompt.is_empty() => n.max(1),
        Some(n) => n + ctx.count(&prompt),
        None => ctx.count(&prompt),
    };
    let ask = LengthAsk {
        max,
        min: req.min_tokens.map(|v| u32::try_from(v).unwrap_or(u32::MAX)),
        reasoning: None,
    };
    let plan = tokens::plan(prompt_tokens, fnv1a(prompt.as_bytes()), ask);
    let (output, plan) = ctx.output(&prompt, plan);
    let model = ctx.model(req.model.as_deref());
    let id = ctx.id("cmpl-");
    let created = unix_now();
    if req.stream.unwrap_or(false) {
        let include_usage = req
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let frames = StreamFrames::new(
            "text_completion",
            &id,
            created,
            &model,
            &plan,
            include_usage,
            &ctx.state.cfg.quirks,
        );
        let writer = CompletionWriter { frames, output };
        Ok(ctx.stream(Box::new(writer), plan, max))
    } else {
        let v = json!({
            "id": id,
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{
                "index": 0,
                "text": output.text(0..plan.completion()),
                "logprobs": null,
                "finish_reason": plan.finish.openai(),
            }],
            "usage": usage_json(&plan),
        });
        Ok(ctx.full(Bytes::from(v.to_string()), plan, max))
    }
}

/// Renders `text_completion` events from a pre-serialised head.
struct CompletionWriter {
    frames: StreamFrames,
    output: Output,
}

impl EventWriter for CompletionWriter {
    fn tokens(
        &self,
        out: &mut Vec<u8>,
        _kind: TokenKind,
        first: u32,
        end: u32,
        finish: Option<Finish>,
    ) {
        out.extend_from_slice(&self.frames.head);
        out.extend_from_slice(b"[{\"index\":0,\"text\":\"");
        self.output.push_json(out, first..end);
        out.extend_from_slice(b"\",\"logprobs\":null,\"finish_reason\":");
        self.frames.close_event(out, finish);
    }

    fn epilogue(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frames.tail);
    }
}
