//! `POST /v1/audio/transcriptions` (OpenAI speech to text): a `multipart/form-data`
//! upload whose `file` is required. The transcript is corpus text whose length is drawn
//! like an answer to a prompt (from the file's bytes, so the same clip gets the same
//! words), answered as `{"text": …}` after the TTFT; the request does not stream, as the
//! Python AIPerf 0.13 never asks it to.

use bytes::Bytes;
use serde_json::json;

use super::{ApiError, Ctx, Reply};
use crate::form::parse_form;
use crate::tokens::{self, fnv1a, LengthAsk};

/// Transcript length "prompt" per uploaded kilobyte: a longer clip gets more words.
const BYTES_PER_PROMPT_TOKEN: usize = 1024;

pub(crate) fn transcribe(
    ctx: Ctx,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Reply, ApiError> {
    let parts = parse_form(content_type, body)?;
    let file = parts
        .iter()
        .find(|part| part.name == "file" && part.filename.is_some())
        .ok_or_else(|| ApiError::bad_request("'file' is required (an uploaded audio file)"))?;
    let size_tokens = u32::try_from(file.data.len() / BYTES_PER_PROMPT_TOKEN).unwrap_or(u32::MAX);
    let plan = tokens::plan(size_tokens, fnv1a(file.data), LengthAsk::default());
    let out = json!({"text": tokens::output_text(0..plan.completion()).trim_start()});
    let due = ctx.due_after(ctx.state.cfg.ttft_ms, 0.0, 0);
    Ok(ctx.plain(Bytes::from(out.to_string()), due, 0))
}
