//! `POST /generate` and `POST /generate_stream` (Hugging Face TGI).

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::{budget, parse, ApiError, Ctx, Reply};
use crate::body::{EventWriter, TokenKind};
use crate::tokens::{self, fnv1a, Finish, LengthAsk, Plan, CORPUS};

#[derive(Debug, Deserialize)]
struct TgiRequest {
    inputs: String,
    #[serde(default)]
    parameters: Option<Parameters>,
}

#[derive(Debug, Default, Deserialize)]
struct Parameters {
    max_new_tokens: Option<u64>,
    details: Option<bool>,
}

fn finish_reason(f: Finish) -> &'static str {
    match f {
        Finish::Length => "length",
        Finish::Stop => "eos_token",
    }
}

/// Fake token id of output token `k`.
fn token_id(k: u32) -> u32 {
    1000 + k % CORPUS.len() as u32
}

pub(crate) fn handle(ctx: Ctx, body: &[u8], stream: bool) -> Result<Reply, ApiError> {
    let req: TgiRequest = parse(body)?;
    let params = req.parameters.unwrap_or_default();
    let max = budget("max_new_tokens", params.max_new_tokens)?;
    let plan = tokens::plan(
        ctx.count(&req.inputs),
        fnv1a(req.inputs.as_bytes()),
        LengthAsk {
            max,
            ..LengthAsk::default()
        },
    );
    if stream {
        Ok(ctx.stream(Box::new(TgiWriter { plan }), plan, max))
    } else {
        let mut v = json!({"generated_text": tokens::output_text(0..plan.completion())});
        if params.details.unwrap_or(false) {
            v["details"] = json!({
                "finish_reason": finish_reason(plan.finish),
                "generated_tokens": plan.completion(),
                "seed": null,
                "prefill": [],
                "tokens": [],
            });
        }
        Ok(ctx.full(Bytes::from(v.to_string()), plan, max))
    }
}

struct TgiWriter {
    plan: Plan,
}

impl EventWriter for TgiWriter {
    fn tokens(
        &self,
        out: &mut Vec<u8>,
        _kind: TokenKind,
        first: u32,
        end: u32,
        finish: Option<Finish>,
    ) {
        let last = end.saturating_sub(1);
        out.extend_from_slice(
            format!(
                "data: {{\"index\":{last},\"token\":{{\"id\":{},\"text\":\"",
                token_id(last)
            )
            .as_bytes(),
        );
        tokens::push_text(out, first..end);
        out.extend_from_slice(b"\",\"logprob\":0.0,\"special\":false},\"generated_text\":");
        match finish {
            None => out.extend_from_slice(b"null,\"details\":null}\n\n"),
            Some(f) => {
                out.push(b'"');
                tokens::push_text(out, 0..self.plan.completion());
                out.extend_from_slice(
                    format!(
                        "\",\"details\":{{\"finish_reason\":\"{}\",\"generated_tokens\":{},\"seed\":null}}}}\n\n",
                        finish_reason(f),
                        self.plan.completion()
                    )
                    .as_bytes(),
                );
            }
        }
    }

    fn epilogue(&self, _out: &mut Vec<u8>) {}
}
