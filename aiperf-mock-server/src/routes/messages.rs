//! `POST /v1/messages` (Anthropic Messages API, text output).
//!
//! `max_tokens` is required, as in the real API. Streaming sends typed events
//! (`event: <type>` + `data: {"type":<type>,…}`): `message_start` (usage with the input
//! tokens), `content_block_start`, `ping`, one `content_block_delta` per event
//! (`thinking_delta` for reasoning tokens in block 0, then `text_delta` in the next block),
//! `content_block_stop`, `message_delta` (stop reason and the cumulative `output_tokens`)
//! and `message_stop`. No `[DONE]`, as in the real API.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{budget, content_text, json_str, parse, push_joined, ApiError, Ctx, Reply};
use crate::body::{EventWriter, TokenKind};
use crate::tokens::{self, effort_tokens, fnv1a, is_reasoning_model, Finish, LengthAsk, Plan};

#[derive(Debug, Deserialize)]
struct MessagesRequest {
    model: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    system: Value,
    max_tokens: Option<u64>,
    stream: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    content: Value,
}

pub(crate) fn handle(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: MessagesRequest = parse(body)?;
    let max = budget("max_tokens", req.max_tokens)?
        .ok_or_else(|| ApiError::bad_request("max_tokens: Field required"))?;
    let mut prompt = String::new();
    content_text(&req.system, &mut prompt);
    for m in &req.messages {
        let mut text = String::new();
        content_text(&m.content, &mut text);
        push_joined(&mut prompt, &text);
    }
    let model = ctx.model(req.model.as_deref());
    let reasoning =
        (ctx.state.cfg.reasoning || is_reasoning_model(&model)).then(|| effort_tokens(None));
    let ask = LengthAsk {
        max: Some(max),
        reasoning,
        ..LengthAsk::default()
    };
    let plan = tokens::plan(ctx.count(&prompt), fnv1a(prompt.as_bytes()), ask);
    let ids = Ids {
        msg: ctx.id("msg_"),
        model,
    };
    if req.stream.unwrap_or(false) {
        Ok(ctx.stream(Box::new(MessagesWriter { ids, plan }), plan, Some(max)))
    } else {
        let body = Bytes::from(whole_message(&ids, &plan).to_string());
        Ok(ctx.full(body, plan, Some(max)))
    }
}

struct Ids {
    msg: String,
    model: String,
}

/// The API's stop reason for `finish`.
fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Length => "max_tokens",
        Finish::Stop => "end_turn",
    }
}

fn whole_message(ids: &Ids, plan: &Plan) -> Value {
    let mut content = Vec::new();
    if plan.reasoning > 0 {
        content.push(json!({
            "type": "thinking",
            "thinking": tokens::output_text(0..plan.reasoning),
            "signature": "mock",
        }));
    }
    content.push(json!({
        "type": "text",
        "text": tokens::output_text(plan.reasoning..plan.completion()),
    }));
    json!({
        "id": ids.msg,
        "type": "message",
        "role": "assistant",
        "model": ids.model,
        "content": content,
        "stop_reason": stop_reason(plan.finish),
        "stop_sequence": null,
        "usage": {"input_tokens": plan.prompt_tokens, "output_tokens": plan.completion()},
    })
}

struct MessagesWriter {
    ids: Ids,
    plan: Plan,
}

fn event(out: &mut Vec<u8>, kind: &str, mut data: Value) {
    data["type"] = Value::from(kind);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// `content_block_start` of block `index`: `thinking` or `text`.
fn block_start(out: &mut Vec<u8>, index: u32, kind: TokenKind) {
    let block = match kind {
        TokenKind::Reasoning => json!({"type": "thinking", "thinking": ""}),
        TokenKind::Content => json!({"type": "text", "text": ""}),
    };
    event(
        out,
        "content_block_start",
        json!({"index": index, "content_block": block}),
    );
}

impl MessagesWriter {
    /// Index of the text block: after the thinking block when there is one.
    fn text_index(&self) -> u32 {
        u32::from(self.plan.reasoning > 0)
    }
}

impl EventWriter for MessagesWriter {
    fn prologue(&self, out: &mut Vec<u8>) {
        let message = json!({
            "id": self.ids.msg, "type": "message", "role": "assistant", "model": self.ids.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": self.plan.prompt_tokens, "output_tokens": 1},
        });
        event(out, "message_start", json!({"message": message}));
        let first = if self.plan.reasoning > 0 {
            TokenKind::Reasoning
        } else {
            TokenKind::Content
        };
        block_start(out, 0, first);
        event(out, "ping", json!({}));
    }

    fn tokens(
        &self,
        out: &mut Vec<u8>,
        kind: TokenKind,
        first: u32,
        end: u32,
        _finish: Option<Finish>,
    ) {
        if kind == TokenKind::Content && first == self.plan.reasoning && self.plan.reasoning > 0 {
            event(out, "content_block_stop", json!({"index": 0}));
            block_start(out, 1, TokenKind::Content);
        }
        let (index, delta_kind, field) = match kind {
            TokenKind::Reasoning => (0, "thinking_delta", "thinking"),
            TokenKind::Content => (self.text_index(), "text_delta", "text"),
        };
        out.extend_from_slice(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":",
        );
        out.extend_from_slice(index.to_string().as_bytes());
        out.extend_from_slice(b",\"delta\":{\"type\":");
        out.extend_from_slice(json_str(delta_kind).as_bytes());
        out.extend_from_slice(b",");
        out.extend_from_slice(json_str(field).as_bytes());
        out.extend_from_slice(b":\"");
        tokens::push_text(out, first..end);
        out.extend_from_slice(b"\"}}\n\n");
    }

    fn epilogue(&self, out: &mut Vec<u8>) {
        event(
            out,
            "content_block_stop",
            json!({"index": self.text_index()}),
        );
        event(
            out,
            "message_delta",
            json!({
                "delta": {"stop_reason": stop_reason(self.plan.finish), "stop_sequence": null},
                "usage": {"output_tokens": self.plan.completion()},
            }),
        );
        event(out, "message_stop", json!({}));
    }

    fn sse_error(&self, out: &mut Vec<u8>) {
        event(
            out,
            "error",
            json!({"error": {
                "type": "api_error",
                "message": "Injected mid-stream error (aiperf-mock-server --sse-error-rate)",
            }}),
        );
    }
}
