//! The output corpus is exact for client tokenizers: every word (with its leading space) is one
//! token, and N emitted tokens always encode to exactly N tokens.

#![allow(clippy::unwrap_used)]

mod common;

use aiperf_mock_server::{output_text, MockConfig, MockServer, CORPUS};
use common::*;
use serde_json::json;

const LENGTHS: [u32; 8] = [1, 2, 17, 152, 153, 154, 500, 3001];

fn check_counts(name: &str, count: impl Fn(&str) -> usize) {
    for w in CORPUS {
        assert_eq!(count(&format!(" {w}")), 1, "{name}: {w:?} is not one token");
    }
    let mut seen = std::collections::HashSet::new();
    assert!(
        CORPUS.iter().all(|w| seen.insert(*w)),
        "duplicate corpus word"
    );
    for n in LENGTHS {
        assert_eq!(count(&output_text(0..n)), n as usize, "{name}: {n} tokens");
        // reasoning then content, as a client may count them separately
        assert_eq!(
            count(&output_text(7..7 + n)),
            n as usize,
            "{name}: offset {n}"
        );
    }
}

#[test]
fn corpus_is_exact_in_o200k_base() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    check_counts("o200k_base", |s| bpe.encode_ordinary(s).len());
}

#[test]
fn corpus_is_exact_in_cl100k_base() {
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    check_counts("cl100k_base", |s| bpe.encode_ordinary(s).len());
}

#[test]
fn corpus_is_exact_in_qwen3() {
    let dir = if let Ok(d) = std::env::var("AIPERF_TEST_TOKENIZER_DIR") {
        std::path::PathBuf::from(d)
    } else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but AIPERF_TEST_TOKENIZER_DIR is not set: point it at the folder holding qwen3/tokenizer.json");
        eprintln!("skipping corpus_is_exact_in_qwen3: set AIPERF_TEST_TOKENIZER_DIR to a folder holding qwen3/tokenizer.json");
        return;
    };
    let tok = tokenizers::Tokenizer::from_file(dir.join("qwen3/tokenizer.json")).unwrap();
    check_counts("qwen3", |s| tok.encode(s, false).unwrap().len());
}

#[tokio::test]
async fn streamed_text_counts_exactly_with_o200k() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let s = MockServer::start(MockConfig::fast()).await.unwrap();
    for (model, max) in [("mock-model", 333u32), ("qwen3", 400)] {
        let body = json!({"model": model, "messages": [{"role": "user", "content": "x"}], "max_tokens": max, "stream": true, "stream_options": {"include_usage": true}});
        let r = post(s.addr(), "/v1/chat/completions", &body).await;
        let (content, reasoning) = chat_content(&r);
        let chunks = r.data_json();
        let usage = &chunks.last().unwrap()["usage"];
        let client = bpe.encode_ordinary(&content).len() + bpe.encode_ordinary(&reasoning).len();
        assert_eq!(client as u64, usage["completion_tokens"].as_u64().unwrap());
        assert_eq!(client as u32, max);
        let rt = usage["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap_or(0);
        assert_eq!(bpe.encode_ordinary(&reasoning).len() as u64, rt);
    }
}
