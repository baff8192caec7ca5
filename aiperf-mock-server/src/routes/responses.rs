//! `POST /v1/responses` (OpenAI Responses API, text output).
//!
//! Streaming sends typed events (`event: <type>` + `data: {"type":<type>,…}`):
//! `response.created`, `response.in_progress`, `response.output_item.added`,
//! `response.content_part.added`, one `response.output_text.delta` per event,
//! `response.output_text.done`, `response.content_part.done`, `response.output_item.done`,
//! `response.completed` (with `usage`). No `[DONE]`, as in the OpenAI API.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{budget, content_text, json_str, parse, push_joined, unix_now, ApiError, Ctx, Reply};
use crate::body::{EventWriter, TokenKind};
use crate::tokens::{self, fnv1a, Finish, LengthAsk, Plan};

#[derive(Debug, Deserialize)]
struct ResponsesRequest {
    model: Option<String>,
    #[serde(default)]
    input: Value,
    instructions: Option<String>,
    max_output_tokens: Option<u64>,
    stream: Option<bool>,
}

fn input_text(instructions: Option<&str>, input: &Value) -> String {
    let mut text = String::new();
    if let Some(i) = instructions {
        text.push_str(i);
    }
    match input {
        Value::String(s) => push_joined(&mut text, s),
        Value::Array(items) => {
            for item in items {
                if let Some(c) = item.get("content") {
                    content_text(c, &mut text);
                } else if let Some(Value::String(s)) = item.get("text") {
                    push_joined(&mut text, s);
                }
            }
        }
        _ => {}
    }
    text
}

pub(crate) fn handle(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let req: ResponsesRequest = parse(body)?;
    let max = budget("max_output_tokens", req.max_output_tokens)?;
    let prompt = input_text(req.instructions.as_deref(), &req.input);
    let plan = tokens::plan(
        ctx.count(&prompt),
        fnv1a(prompt.as_bytes()),
        LengthAsk {
            max,
            ..LengthAsk::default()
        },
    );
    let ids = Ids {
        resp: ctx.id("resp_"),
        msg: ctx.id("msg_"),
        model: ctx.model(req.model.as_deref()),
        created: unix_now(),
    };
    if req.stream.unwrap_or(false) {
        let per_event = ctx.state.cfg.tokens_per_event.max(1);
        let events = plan.completion().div_ceil(per_event);
        let writer = ResponsesWriter {
            ids,
            plan,
            events,
            per_event,
        };
        Ok(ctx.stream(Box::new(writer), plan, max))
    } else {
        let body = Bytes::from(response_object(&ids, &plan, "completed").to_string());
        Ok(ctx.full(body, plan, max))
    }
}

struct Ids {
    resp: String,
    msg: String,
    model: String,
    created: u64,
}

fn message_item(ids: &Ids, text: &str, status: &str) -> Value {
    json!({
        "type": "message",
        "id": ids.msg,
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

fn response_object(ids: &Ids, plan: &Plan, status: &str) -> Value {
    let done = status == "completed";
    let output = if done {
        vec![message_item(
            ids,
            &tokens::output_text(0..plan.completion()),
            "completed",
        )]
    } else {
        Vec::new()
    };
    json!({
        "id": ids.resp,
        "object": "response",
        "created_at": ids.created,
        "status": status,
        "model": ids.model,
        "output": output,
        "usage": if done {
            json!({
                "input_tokens": plan.prompt_tokens,
                "output_tokens": plan.completion(),
                "total_tokens": plan.prompt_tokens + plan.completion(),
                "output_tokens_details": {"reasoning_tokens": 0},
            })
        } else {
            Value::Null
        },
    })
}

struct ResponsesWriter {
    ids: Ids,
    plan: Plan,
    events: u32,
    per_event: u32,
}

fn event(out: &mut Vec<u8>, kind: &str, seq: u32, mut data: Value) {
    data["type"] = Value::from(kind);
    data["sequence_number"] = Value::from(seq);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}

impl EventWriter for ResponsesWriter {
    fn prologue(&self, out: &mut Vec<u8>) {
        let r = response_object(&self.ids, &self.plan, "in_progress");
        event(out, "response.created", 0, json!({"response": r}));
        event(out, "response.in_progress", 1, json!({"response": r}));
        event(
            out,
            "response.output_item.added",
            2,
            json!({"output_index": 0, "item": message_item(&self.ids, "", "in_progress")}),
        );
        event(
            out,
            "response.content_part.added",
            3,
            json!({
                "item_id": self.ids.msg, "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            }),
        );
    }

    fn tokens(
        &self,
        out: &mut Vec<u8>,
        _kind: TokenKind,
        first: u32,
        end: u32,
        _finish: Option<Finish>,
    ) {
        let seq = 4 + first / self.per_event;
        out.extend_from_slice(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":");
        out.extend_from_slice(seq.to_string().as_bytes());
        out.extend_from_slice(b",\"item_id\":");
        out.extend_from_slice(json_str(&self.ids.msg).as_bytes());
        out.extend_from_slice(b",\"output_index\":0,\"content_index\":0,\"delta\":\"");
        tokens::push_text(out, first..end);
        out.extend_from_slice(b"\",\"logprobs\":[]}\n\n");
    }

    fn epilogue(&self, out: &mut Vec<u8>) {
        let text = tokens::output_text(0..self.plan.completion());
        let s = 4 + self.events;
        event(
            out,
            "response.output_text.done",
            s,
            json!({
                "item_id": self.ids.msg, "output_index": 0, "content_index": 0, "text": text, "logprobs": [],
            }),
        );
        event(
            out,
            "response.content_part.done",
            s + 1,
            json!({
                "item_id": self.ids.msg, "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []},
            }),
        );
        event(
            out,
            "response.output_item.done",
            s + 2,
            json!({"output_index": 0, "item": message_item(&self.ids, &text, "completed")}),
        );
        event(
            out,
            "response.completed",
            s + 3,
            json!({"response": response_object(&self.ids, &self.plan, "completed")}),
        );
    }
}
