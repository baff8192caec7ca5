//! SpecBench: each question's first turn is one single-turn conversation, a line that
//! is not a JSON object names its line, the download lands at the cache path, and
//! offline nothing is sent and the error says where the file goes.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aiperf_core::transport::{BoxFuture, Chunk, HttpRequest, RawExchange, TransportError};
use aiperf_core::Transport;
use aiperf_datasets::{fetch_spec_bench, load_spec_bench, spec_bench_cache_path, SPEC_BENCH_URL};

const QUESTIONS: &str = r#"{"question_id": 81, "category": "writing", "turns": ["  Compose a travel blog post.  ", "Rewrite it."]}
{"question_id": 82, "category": "qa", "turns": []}

{"question_id": 83, "category": "math", "turns": ["What is 7 * 6?"]}
"#;

#[test]
fn each_question_s_first_turn_is_one_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec_bench.jsonl");
    std::fs::write(&path, QUESTIONS).unwrap();
    let conversations = load_spec_bench(&path).unwrap();
    let prompts: Vec<(&str, usize, &str)> = conversations
        .iter()
        .map(|c| {
            (
                c.session_id.as_str(),
                c.turns.len(),
                c.turns[0].texts[0].as_str(),
            )
        })
        .collect();
    assert_eq!(
        prompts,
        [
            (
                conversations[0].session_id.as_str(),
                1,
                "Compose a travel blog post."
            ),
            (conversations[1].session_id.as_str(), 1, "What is 7 * 6?"),
        ]
    );
    assert_ne!(conversations[0].session_id, conversations[1].session_id);
    assert_eq!(conversations[0].turns[0].max_tokens, None);
    assert_eq!(
        spec_bench_cache_path(),
        Path::new(".cache/aiperf/datasets/spec_bench.jsonl")
    );
}

#[test]
fn a_line_that_is_not_an_object_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec_bench.jsonl");
    std::fs::write(&path, format!("{QUESTIONS}[\"not an object\"]\n")).unwrap();
    let error = load_spec_bench(&path).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "{}:5: not a SpecBench question (a JSON object): invalid type: sequence, expected \
             a map at line 1 column 0",
            path.display()
        )
    );
}

/// Answers every request with `body`, noting the URLs asked for.
struct FakeGitHub {
    seen: Mutex<Vec<String>>,
}

impl Transport for FakeGitHub {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(request.url.clone());
            let now = Instant::now();
            RawExchange {
                started_at: now,
                head_at: Some(now),
                status: Some(200),
                content_type: None,
                headers: Vec::new(),
                chunks: [Chunk {
                    at: now,
                    bytes: QUESTIONS.as_bytes(),
                }]
                .into_iter()
                .collect(),
                ended_at: now,
                error: None::<TransportError>,
                trace: None,
                retries: 0,
            }
        })
    }
}

#[tokio::test]
async fn the_download_lands_at_the_cache_path_and_offline_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("datasets/spec_bench.jsonl");
    let github = FakeGitHub {
        seen: Mutex::new(Vec::new()),
    };
    let error = fetch_spec_bench(&github, &dest, Duration::from_secs(5), true)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{0}: SpecBench is not downloaded and HF_HUB_OFFLINE is set: put {SPEC_BENCH_URL} \
             at {0}, or pass it with --input-file",
            dest.display()
        )
    );
    assert!(github.seen.lock().unwrap().is_empty());

    fetch_spec_bench(&github, &dest, Duration::from_secs(5), false)
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), QUESTIONS);
    assert_eq!(*github.seen.lock().unwrap(), [SPEC_BENCH_URL]);
    assert_eq!(load_spec_bench(&dest).unwrap().len(), 2);
}
