//! `POST /rag/api/prompt` (Solido RAG): `{"query": [texts], "filters", "inference_model"}`
//! answered with generated `content` and the `sources` it cites. The body has no
//! streaming field: an `Accept: text/event-stream` request gets one `{"content"}` event
//! per token group, paced like chat tokens, the last one with the sources; any other gets
//! `{"content", "sources"}` when its last token is due.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::{parse, ApiError, Ctx, Reply};
use crate::body::{EventWriter, TokenKind};
use crate::tokens::{self, fnv1a, Finish, LengthAsk};

/// The sources every answer cites.
const SOURCES: &str = r#"[{"title":"SDE User Guide","page":1}]"#;

#[derive(Debug, Deserialize)]
struct PromptRequest {
    query: Option<Vec<String>>,
}

pub(crate) fn handle(ctx: Ctx, body: &[u8], streaming: bool) -> Result<Reply, ApiError> {
    let req: PromptRequest = parse(body)?;
    let query = req.query.unwrap_or_default().join(" ");
    if query.trim().is_empty() {
        return Err(ApiError::bad_request("'query' needs at least one text"));
    }
    let plan = tokens::plan(
        ctx.count(&query),
        fnv1a(query.as_bytes()),
        LengthAsk::default(),
    );
    if streaming {
        return Ok(ctx.stream(Box::new(SolidoWriter), plan, None));
    }
    let out = format!(
        r#"{{"content":{},"sources":{SOURCES}}}"#,
        json!(tokens::output_text(0..plan.completion()).trim_start())
    );
    Ok(ctx.full(Bytes::from(out), plan, None))
}

/// Writes `data: {"content": …}` events, the sources on the last.
struct SolidoWriter;

impl EventWriter for SolidoWriter {
    fn tokens(
        &self,
        out: &mut Vec<u8>,
        _kind: TokenKind,
        first: u32,
        end: u32,
        finish: Option<Finish>,
    ) {
        out.extend_from_slice(b"data: {\"content\":\"");
        tokens::push_text(out, first..end);
        out.push(b'"');
        if finish.is_some() {
            out.extend_from_slice(format!(",\"sources\":{SOURCES}").as_bytes());
        }
        out.extend_from_slice(b"}\n\n");
    }

    fn epilogue(&self, _out: &mut Vec<u8>) {}
}
