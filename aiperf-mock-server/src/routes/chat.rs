//! `POST /v1/chat/completions`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{budget, content_text, parse, unix_now, ApiError, Ctx, Reply, StreamFrames};
use crate::body::{EventWriter, TokenKind};
use crate::tokens::{
    self, effort_tokens, fnv1a, is_reasoning_model, Finish, LengthAsk, Output, Plan,
};

#[derive(Debug, Deserialize)]
struct ChatRequest {
    model: Option<String>,
    messages: Vec<Message>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    min_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    reasoning_effort: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    content: Value,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

pub(crate) fn handle(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: ChatRequest = parse(body)?;
    let max = match req.max_completion_tokens {
        Some(v) => budget("max_completion_tokens", Some(v))?,
        None => budget("max_tokens", req.max_tokens)?,
    };
    let mut prompt = String::new();
    for m in &req.messages {
        content_text(&m.content, &mut prompt);
    }
    let model = ctx.model(req.model.as_deref());
    let reasoning = (ctx.state.cfg.reasoning || is_reasoning_model(&model))
        .then(|| effort_tokens(req.reasoning_effort.as_deref()));
    let ask = LengthAsk {
        max,
        min: req.min_tokens.map(|v| u32::try_from(v).unwrap_or(u32::MAX)),
        reasoning,
    };
    let plan = tokens::plan(ctx.count(&prompt), fnv1a(prompt.as_bytes()), ask);
    let (output, plan) = ctx.output(&prompt, plan);
    let id = ctx.id("chatcmpl-");
    let created = unix_now();
    if req.stream.unwrap_or(false) {
        let include_usage = req
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let frames = StreamFrames::new(
            "chat.completion.chunk",
            &id,
            created,
            &model,
            &plan,
            include_usage,
            &ctx.state.cfg.quirks,
        );
        let writer = ChatWriter { frames, output };
        Ok(ctx.stream(Box::new(writer), plan, max))
    } else {
        let body = full_body(&id, created, &model, &plan, &output);
        Ok(ctx.full(body, plan, max))
    }
}

/// `usage` object shared by chat and completions.
pub(crate) fn usage_json(plan: &Plan) -> Value {
    let mut u = json!({
        "prompt_tokens": plan.prompt_tokens,
        "completion_tokens": plan.completion(),
        "total_tokens": plan.prompt_tokens + plan.completion(),
    });
    if plan.reasoning > 0 {
        u["completion_tokens_details"] = json!({"reasoning_tokens": plan.reasoning});
    }
    u
}

fn full_body(id: &str, created: u64, model: &str, plan: &Plan, output: &Output) -> Bytes {
    let mut message = json!({
        "role": "assistant",
        "content": output.text(plan.reasoning..plan.completion()),
    });
    if plan.reasoning > 0 {
        message["reasoning_content"] = Value::String(tokens::output_text(0..plan.reasoning));
    }
    let v = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": plan.finish.openai(),
        }],
        "usage": usage_json(plan),
    });
    Bytes::from(v.to_string())
}

/// Renders `chat.completion.chunk` events from a pre-serialised head.
struct ChatWriter {
    frames: StreamFrames,
    output: Output,
}

impl EventWriter for ChatWriter {
    fn prologue(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frames.head);
        out.extend_from_slice(
            b"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
        );
    }

    fn tokens(
        &self,
        out: &mut Vec<u8>,
        kind: TokenKind,
        first: u32,
        end: u32,
        finish: Option<Finish>,
    ) {
        out.extend_from_slice(&self.frames.head);
        out.extend_from_slice(match kind {
            TokenKind::Content => b"[{\"index\":0,\"delta\":{\"content\":\"".as_slice(),
            TokenKind::Reasoning => b"[{\"index\":0,\"delta\":{\"reasoning_content\":\"".as_slice(),
        });
        self.output.push_json(out, first..end);
        out.extend_from_slice(b"\"},\"logprobs\":null,\"finish_reason\":");
        self.frames.close_event(out, finish);
    }

    fn epilogue(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frames.tail);
    }
}
