//! Request handlers, one module per API family, and what they share.

pub(crate) mod audio;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod dcgm;
pub(crate) mod embeddings;
pub(crate) mod images;
pub(crate) mod messages;
pub(crate) mod metrics;
pub(crate) mod rankings;
pub(crate) mod responses;
pub(crate) mod solido;
pub(crate) mod tgi;
pub(crate) mod videos;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::StatusCode;
use serde::de::DeserializeOwned;

use crate::body::{EventWriter, InFlight, TokenStream};
use crate::config::{ms, Quirks};
use crate::faults::{derive, FaultKind};
use crate::state::State;
use crate::timing::{Jitter, Schedule};
use crate::tokens::{Finish, Output, Plan};
use chat::usage_json;

/// What a handler knows about the request it serves.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub state: Arc<State>,
    /// Inference request sequence number.
    pub seq: u64,
    /// Schedule origin: when the request's body had been read, plus the slow-headers
    /// delay when that fault applies.
    pub start: Instant,
    /// Inference requests in flight when this one arrived (not counting itself).
    pub in_flight_before: u64,
    pub fault: Option<FaultKind>,
    pub guard: InFlight,
    /// The [`crate::ANSWER_HEADER`] value: the right answer, for accuracy mode.
    pub answer: Option<String>,
}

/// A handler's answer.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A JSON body sent at `due` (`None`: at once).
    Json {
        body: Bytes,
        due: Option<Instant>,
        plan: Option<Plan>,
        guard: InFlight,
    },
    /// A paced SSE stream.
    Stream(Box<TokenStream>),
}

/// An error answered with an OpenAI-style body.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
}

impl ApiError {
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
        }
    }

    /// The body in the style `quirks` asks for (see [`error_body`]).
    pub(crate) fn body(&self, quirks: &Quirks) -> Bytes {
        error_body(quirks, &self.message, self.kind, self.status)
    }
}

/// `{"error":{"message","type","param":null,"code"}}`, or FastAPI's `{"detail":message}`
/// under [`Quirks::detail_errors`].
pub(crate) fn error_body(quirks: &Quirks, message: &str, kind: &str, status: StatusCode) -> Bytes {
    let v = if quirks.detail_errors {
        serde_json::json!({ "detail": message })
    } else {
        serde_json::json!({
            "error": {"message": message, "type": kind, "param": null, "code": status.as_u16()}
        })
    };
    Bytes::from(v.to_string())
}

/// Parse a JSON body into `T`, or a 400 that says what is wrong.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON request body: {e}")))
}

/// A max-tokens field: at least 1, at most 16 Mi.
pub(crate) fn budget(name: &str, v: Option<u64>) -> Result<Option<u32>, ApiError> {
    match v {
        None => Ok(None),
        Some(0) => Err(ApiError::bad_request(format!("{name} must be at least 1"))),
        Some(n) if n > (1 << 24) => Err(ApiError::bad_request(format!(
            "{name} must be at most {}",
            1u32 << 24
        ))),
        Some(n) => Ok(Some(n as u32)),
    }
}

/// Seconds since the Unix epoch, for `created` fields.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// JSON string literal (with quotes) of `s`.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Text of one message `content`: a string, or the `text` of each part joined by spaces.
pub(crate) fn content_text(content: &serde_json::Value, out: &mut String) {
    match content {
        serde_json::Value::String(s) => push_joined(out, s),
        serde_json::Value::Array(parts) => {
            for p in parts {
                match p {
                    serde_json::Value::String(s) => push_joined(out, s),
                    serde_json::Value::Object(o) => {
                        if let Some(serde_json::Value::String(s)) = o.get("text") {
                            push_joined(out, s);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Append `s` to `out`, separated by one space.
pub(crate) fn push_joined(out: &mut String, s: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(s);
}

impl Ctx {
    fn cfg(&self) -> &crate::config::MockConfig {
        &self.state.cfg
    }

    /// Effective TTFT for a prompt of `prompt_tokens`.
    fn ttft(&self, prompt_tokens: u32) -> Duration {
        let c = self.cfg();
        let before = self.in_flight_before as f64;
        let base = ms(c.ttft_ms
            + c.ttft_per_isl_token_ms * f64::from(prompt_tokens)
            + c.ttft_concurrency_quad_ms * before * before);
        match Jitter::new(c.ttft_jitter_cv, derive(self.state.seed, self.seq, 1)) {
            Some(mut j) => j.apply(base),
            None => base,
        }
    }

    /// Effective ITL (before per-token jitter); `budget` is the requested max tokens.
    fn itl(&self, budget: Option<u32>) -> Duration {
        let c = self.cfg();
        ms(c.itl_ms
            + c.itl_per_osl_token_ms * f64::from(budget.unwrap_or(0))
            + c.itl_concurrency_lin_ms * self.in_flight_before as f64)
    }

    /// The token schedule, or `None` in fast mode.
    pub(crate) fn schedule(&self, plan: &Plan, budget: Option<u32>) -> Option<Schedule> {
        if self.cfg().fast {
            return None;
        }
        let jitter = Jitter::new(
            self.cfg().itl_jitter_cv,
            derive(self.state.seed, self.seq, 2),
        );
        Some(Schedule::new(
            self.start,
            self.ttft(plan.prompt_tokens),
            self.itl(budget),
            jitter,
        ))
    }

    /// Due instant of a non-streaming token response: when its last token is due.
    pub(crate) fn due_full(&self, plan: &Plan, budget: Option<u32>) -> Option<Instant> {
        self.schedule(plan, budget)
            .map(|mut s| s.due(plan.completion().saturating_sub(1)))
    }

    /// Due instant of a non-token response with a fixed latency (`base + per_item × n`, ms).
    pub(crate) fn due_after(&self, base_ms: f64, per_item_ms: f64, n: usize) -> Option<Instant> {
        if self.cfg().fast {
            return None;
        }
        Some(self.start + ms(base_ms + per_item_ms * n as f64))
    }

    /// A streaming reply for `plan`, with the request's mid-stream fault if any.
    pub(crate) fn stream(
        mut self,
        writer: Box<dyn EventWriter>,
        plan: Plan,
        budget: Option<u32>,
    ) -> Reply {
        self.guard.planned(&plan);
        let schedule = self.schedule(&plan, budget);
        let faults = &self.cfg().faults;
        let fault = match self.fault {
            Some(
                k @ (FaultKind::Drop
                | FaultKind::Malformed
                | FaultKind::SseError
                | FaultKind::Stall
                | FaultKind::Oversized),
            ) => Some((k, faults.drop_after_tokens, ms(faults.stall_ms))),
            _ => None,
        };
        let per_event = self.cfg().tokens_per_event;
        Reply::Stream(Box::new(TokenStream::new(
            writer, plan, per_event, schedule, fault, self.guard,
        )))
    }

    /// A non-streaming token reply.
    pub(crate) fn full(mut self, body: Bytes, plan: Plan, budget: Option<u32>) -> Reply {
        self.guard.planned(&plan);
        Reply::Json {
            body,
            due: self.due_full(&plan, budget),
            plan: Some(plan),
            guard: self.guard,
        }
    }

    /// A non-token JSON reply (embeddings, rankings).
    pub(crate) fn plain(self, body: Bytes, due: Option<Instant>, prompt_tokens: u64) -> Reply {
        self.state
            .stats
            .prompt_tokens
            .fetch_add(prompt_tokens, std::sync::atomic::Ordering::Relaxed);
        Reply::Json {
            body,
            due,
            plan: None,
            guard: self.guard,
        }
    }

    /// Model name for the response: the request's, or the default.
    pub(crate) fn model(&self, requested: Option<&str>) -> String {
        requested
            .filter(|m| !m.is_empty())
            .unwrap_or(&self.cfg().default_model)
            .to_string()
    }

    /// The text of a token response to `prompt` and the plan that sends it: accuracy
    /// mode's reply when it knows the question, else corpus text as `plan` says.
    pub(crate) fn output(&self, prompt: &str, plan: Plan) -> (Output, Plan) {
        let Some(accuracy) = &self.state.accuracy else {
            return (Output::Corpus, plan);
        };
        if let Some(text) = accuracy.reply(self.state.seed, prompt, self.answer.as_deref()) {
            return Output::reply(&text, plan);
        }
        tracing::debug!(seq = self.seq, "accuracy mode: no answer for this prompt");
        (Output::Corpus, plan)
    }

    /// Count prompt tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> u32 {
        self.state.prompts.count(text)
    }

    /// A response id with `prefix` (deterministic per seed and request).
    pub(crate) fn id(&self, prefix: &str) -> String {
        format!("{prefix}{:016x}", derive(self.state.seed, self.seq, 3))
    }
}

/// The constant parts of an OpenAI-style event stream: each event's opening up to
/// `"choices":`, the usage that closes the finish event under
/// [`Quirks::usage_in_finish_chunk`], and the closing (the usage chunk when asked for,
/// then `[DONE]` unless [`Quirks::no_done`]), serialised once per request.
pub(crate) struct StreamFrames {
    /// `data: {"id":…,"object":…,"created":…,"model":…,"choices":`
    pub head: Vec<u8>,
    /// `,"usage":{…}` written into the finish event, or nothing.
    finish_usage: Vec<u8>,
    /// The usage chunk (when asked for) and `data: [DONE]`.
    pub tail: Vec<u8>,
}

impl StreamFrames {
    /// Frames for events of type `object` (e.g. `chat.completion.chunk`).
    pub(crate) fn new(
        object: &str,
        id: &str,
        created: u64,
        model: &str,
        plan: &Plan,
        include_usage: bool,
        quirks: &Quirks,
    ) -> Self {
        let head = format!(
            "data: {{\"id\":{},\"object\":\"{object}\",\"created\":{created},\"model\":{},\"choices\":",
            json_str(id),
            json_str(model)
        )
        .into_bytes();
        let usage = usage_json(plan).to_string();
        let mut finish_usage = Vec::new();
        let mut tail = Vec::new();
        if quirks.usage_in_finish_chunk {
            finish_usage.extend_from_slice(b",\"usage\":");
            finish_usage.extend_from_slice(usage.as_bytes());
        } else if include_usage {
            tail.extend_from_slice(&head);
            tail.extend_from_slice(b"[],\"usage\":");
            tail.extend_from_slice(usage.as_bytes());
            tail.extend_from_slice(b"}\n\n");
        }
        if !quirks.no_done {
            tail.extend_from_slice(b"data: [DONE]\n\n");
        }
        Self {
            head,
            finish_usage,
            tail,
        }
    }

    /// Ends one event after its choice's last field: the `finish_reason` value, the
    /// choices list and, on the finish event, the usage when it belongs there.
    pub(crate) fn close_event(&self, out: &mut Vec<u8>, finish: Option<Finish>) {
        match finish {
            Some(f) => {
                out.push(b'"');
                out.extend_from_slice(f.openai().as_bytes());
                out.extend_from_slice(b"\"}]");
                out.extend_from_slice(&self.finish_usage);
                out.extend_from_slice(b"}\n\n");
            }
            None => out.extend_from_slice(b"null}]}\n\n"),
        }
    }
}
