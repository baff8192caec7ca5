//! ShareGPT: human → gpt pairs become turns, vLLM's length filter drops whole
//! conversations, and the download lands in place or says what to do instead.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aiperf_core::transport::{BoxFuture, Chunk, HttpRequest, RawExchange, TransportError};
use aiperf_core::{Transport, Turn};
use aiperf_datasets::{
    fetch_sharegpt, load_sharegpt, sharegpt_cache_path, Tokenizer, SHAREGPT_URL,
};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/custom/sharegpt.json")
}

fn turn(tokenizer: &Tokenizer, prompt: &str, reply: &str) -> Turn {
    Turn {
        texts: vec![prompt.to_string()],
        max_tokens: Some(tokenizer.count(reply) as u32),
        ..Turn::default()
    }
}

#[test]
fn pairs_become_turns_and_short_replies_drop_the_conversation() {
    let tokenizer = Tokenizer::builtin();
    let conversations = load_sharegpt(&fixture(), false, &tokenizer).unwrap();
    let ids: Vec<&str> = conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    // Numbered as kept, as the Python AIPerf numbers them.
    assert_eq!(ids, ["session_000000", "session_000001"]);
    assert_eq!(
        conversations[0].turns,
        [
            turn(
                &tokenizer,
                "What is the tallest mountain on Earth?",
                "Mount Everest is the tallest mountain above sea level."
            ),
            turn(
                &tokenizer,
                "How tall is it exactly, in meters?",
                "It is about 8,849 meters tall."
            ),
        ]
    );
    assert_eq!(
        conversations[1].turns,
        [turn(
            &tokenizer,
            "Untagged prompt with enough tokens in it",
            "Untagged reply that also has enough tokens"
        )]
    );

    // With --osl the reply length is not what is asked for: short replies stay.
    let with_osl = load_sharegpt(&fixture(), true, &tokenizer).unwrap();
    let ids: Vec<&str> = with_osl.iter().map(|c| c.session_id.as_str()).collect();
    assert_eq!(ids, ["session_000000", "session_000001", "session_000002"]);
    assert_eq!(with_osl[1].turns[0].max_tokens, Some(1));
}

#[test]
fn long_prompts_and_long_pairs_are_filtered() {
    let tokenizer = Tokenizer::builtin();
    // "token token … token": one token per word.
    let words = |n: usize| vec!["token"; n].join(" ");
    let entry = |prompt_words: usize, reply_words: usize| {
        serde_json::json!({"conversations": [
            {"from": "human", "value": words(prompt_words)},
            {"from": "gpt", "value": words(reply_words)},
        ]})
    };
    let file = tempfile::NamedTempFile::new().unwrap();
    let entries = serde_json::json!([
        entry(1024, 10),   // prompt at the limit: kept
        entry(1025, 10),   // prompt over 1024: dropped
        entry(1000, 1048), // 2048 in all: kept
        entry(1000, 1049), // over 2048: dropped
    ]);
    std::fs::write(file.path(), entries.to_string()).unwrap();
    assert_eq!(tokenizer.count(&words(1024)), 1024);
    let ids: Vec<String> = load_sharegpt(file.path(), false, &tokenizer)
        .unwrap()
        .into_iter()
        .map(|c| c.session_id)
        .collect();
    assert_eq!(ids, ["session_000000", "session_000001"]);
}

#[test]
fn malformed_json_names_the_line() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        "[\n{\"conversations\": []},\n{\"conversations\": 5}\n]",
    )
    .unwrap();
    let error = load_sharegpt(file.path(), false, &Tokenizer::builtin()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}:3: invalid ShareGPT JSON at column 20: invalid type: integer `5`, expected a \
             sequence at line 3 column 20",
            file.path().display()
        )
    );
}

#[test]
fn cache_path_is_relative_to_the_working_folder() {
    assert_eq!(
        sharegpt_cache_path(),
        Path::new(".cache/aiperf/datasets/ShareGPT_V3_unfiltered_cleaned_split.json")
    );
}

/// Answers the ShareGPT URL with a redirect to a CDN, which answers `cdn_status`.
struct FakeHub {
    cdn_status: u16,
    seen: Mutex<Vec<String>>,
}

fn exchange(status: u16, headers: Vec<(String, String)>, body: &'static [u8]) -> RawExchange {
    let now = Instant::now();
    RawExchange {
        started_at: now,
        head_at: Some(now),
        status: Some(status),
        content_type: None,
        headers,
        chunks: [Chunk {
            at: now,
            bytes: body,
        }]
        .into_iter()
        .collect(),
        ended_at: now,
        error: None::<TransportError>,
        trace: None,
        retries: 0,
    }
}

impl Transport for FakeHub {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(request.url.clone());
            if request.url == SHAREGPT_URL {
                let location = (
                    "location".to_string(),
                    "https://cdn.example/sharegpt".to_string(),
                );
                exchange(302, vec![location], b"")
            } else {
                exchange(self.cdn_status, Vec::new(), b"[{\"conversations\": []}]")
            }
        })
    }
}

#[tokio::test]
async fn fetch_follows_the_redirect_and_writes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("nested/ShareGPT.json");
    let hub = FakeHub {
        cdn_status: 200,
        seen: Mutex::new(Vec::new()),
    };
    fetch_sharegpt(&hub, &dest, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"[{\"conversations\": []}]");
    assert_eq!(
        *hub.seen.lock().unwrap(),
        [SHAREGPT_URL, "https://cdn.example/sharegpt"]
    );
}

#[tokio::test]
async fn failed_fetch_says_where_to_put_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("ShareGPT.json");
    let hub = FakeHub {
        cdn_status: 503,
        seen: Mutex::new(Vec::new()),
    };
    let error = fetch_sharegpt(&hub, &dest, Duration::from_secs(5))
        .await
        .unwrap_err();
    let dest = dest.display();
    assert_eq!(
        error.to_string(),
        format!(
            "{dest}: could not download ShareGPT from {SHAREGPT_URL}: HTTP 503 (after redirects \
             to https://cdn.example/sharegpt); put the file at {dest} or pass --input-file"
        )
    );
    assert!(!dir.path().join("ShareGPT.json").exists());
}
