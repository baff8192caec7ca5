//! Rankings: `POST /v1/ranking` (NVIDIA NIM), `/rerank` (HF TEI), `/v2/rerank` (Cohere).
//!
//! The score of a passage is deterministic: the share of query words it contains, plus a small
//! hash-derived tie breaker; results are sorted by score, best first.

use std::collections::HashSet;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse, ApiError, Ctx, Reply};
use crate::tokens::fnv1a;

/// Which ranking API.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Flavor {
    Nim,
    Tei,
    Cohere,
}

#[derive(Debug, Deserialize)]
struct NimRequest {
    query: TextObj,
    passages: Vec<TextObj>,
}

#[derive(Debug, Deserialize)]
struct TextObj {
    text: String,
}

#[derive(Debug, Deserialize)]
struct TeiRequest {
    query: String,
    texts: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct CohereRequest {
    model: Option<String>,
    query: String,
    documents: Vec<Value>,
    top_n: Option<usize>,
}

/// Logit of `passage` for `query`: in about [-5, 5].
pub fn logit(query: &str, passage: &str) -> f64 {
    let q: HashSet<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let p: HashSet<String> = passage.split_whitespace().map(str::to_lowercase).collect();
    let overlap = if q.is_empty() {
        0.0
    } else {
        q.intersection(&p).count() as f64 / q.len() as f64
    };
    let tie =
        (fnv1a(format!("{query}\u{0}{passage}").as_bytes()) >> 11) as f64 / (1u64 << 53) as f64;
    overlap * 8.0 - 5.0 + tie * 0.5
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `(index, logit)` sorted best first.
fn rank(query: &str, passages: &[String]) -> Vec<(usize, f64)> {
    let mut r: Vec<(usize, f64)> = passages
        .iter()
        .enumerate()
        .map(|(i, p)| (i, logit(query, p)))
        .collect();
    r.sort_by(|a, b| b.1.total_cmp(&a.1));
    r
}

pub(crate) fn handle(ctx: Ctx, body: &[u8], flavor: Flavor) -> Result<Reply, ApiError> {
    let (query, passages, top_n, model) = match flavor {
        Flavor::Nim => {
            let r: NimRequest = parse(body)?;
            (
                r.query.text,
                r.passages.into_iter().map(|p| p.text).collect::<Vec<_>>(),
                None,
                None,
            )
        }
        Flavor::Tei => {
            let r: TeiRequest = parse(body)?;
            (r.query, r.texts, None, None)
        }
        Flavor::Cohere => {
            let r: CohereRequest = parse(body)?;
            let docs = r
                .documents
                .into_iter()
                .map(|d| match d {
                    Value::String(s) => s,
                    other => other
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                })
                .collect();
            (r.query, docs, r.top_n, r.model)
        }
    };
    let prompt_tokens = u64::from(ctx.count(&query))
        + passages
            .iter()
            .map(|p| u64::from(ctx.count(p)))
            .sum::<u64>();
    let mut ranked = rank(&query, &passages);
    if let Some(n) = top_n {
        ranked.truncate(n);
    }
    let v = match flavor {
        Flavor::Nim => json!({
            "rankings": ranked.iter().map(|(i, l)| json!({"index": i, "logit": l})).collect::<Vec<_>>()
        }),
        Flavor::Tei => json!(ranked
            .iter()
            .map(|(i, l)| json!({"index": i, "score": sigmoid(*l)}))
            .collect::<Vec<_>>()),
        Flavor::Cohere => json!({
            "id": ctx.id("rerank-"),
            "results": ranked.iter().map(|(i, l)| json!({"index": i, "relevance_score": sigmoid(*l)})).collect::<Vec<_>>(),
            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
            "model": ctx.model(model.as_deref()),
        }),
    };
    let c = &ctx.state.cfg;
    let due = ctx.due_after(
        c.ranking_base_latency_ms,
        c.ranking_per_passage_latency_ms,
        passages.len(),
    );
    Ok(ctx.plain(Bytes::from(v.to_string()), due, prompt_tokens))
}
