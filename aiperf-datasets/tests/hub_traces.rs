//! Trace corpora on the Hugging Face hub: a weka corpus's rows, found offline in a
//! temporary hub cache, replay exactly as the same traces in `weka_trace` files do;
//! null fields (as a Parquet conversion writes them) count as absent; a malformed row
//! names its file and line.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use aiperf_core::config::{CustomDatasetType, PromptCorpus};
use aiperf_core::transport::{BoxFuture, HttpRequest, RawExchange};
use aiperf_core::Transport;
use aiperf_datasets::custom::load_weka_corpus;
use aiperf_datasets::hub::{resolve, HubDataset, HubOptions};
use aiperf_datasets::{load_custom_dataset, CustomDatasetOptions, Tokenizer};
use serde_json::{json, Value};

/// Fails the test when anything is sent.
struct NoNetwork;

impl Transport for NoNetwork {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        panic!("offline resolution sent a request to {}", request.url)
    }
}

const CORPUS: &str = "semianalysisai/cc-traces-weka-test";

fn request(t: f64, input: u64, output: u64, hash_ids: &[u64], api_time: f64) -> Value {
    json!({"t": t, "type": "n", "model": "m", "in": input, "out": output,
           "hash_ids": hash_ids, "api_time": api_time, "think_time": 0.5})
}

/// Trace `a`: a request, a subagent (2.0 s to 2.9 s) and a request after it; trace `b`:
/// two requests.
fn traces() -> Vec<Value> {
    vec![
        json!({"id": "a", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
        "requests": [
            request(0.0, 40, 7, &[1, 2, 3], 1.5),
            {"type": "subagent", "t": 2.0, "agent_id": "agent_001",
             "subagent_type": "Explore", "status": "completed", "models": ["m"],
             "duration_ms": 900, "total_tokens": 30, "tool_use_count": 1,
             "requests": [request(2.25, 20, 3, &[9, 10], 0.1)]},
            request(4.0, 56, 0, &[1, 2, 3, 4], 0.5),
        ]}),
        json!({"id": "b", "models": ["m"], "block_size": 16, "hash_id_scope": "local",
               "requests": [request(10.0, 30, 5, &[1, 2], 1.0),
                            request(12.0, 45, 6, &[1, 2, 3], 1.0)]}),
    ]
}

/// A snapshot of `CORPUS` holding `train.jsonl` with `lines`, as `huggingface_hub`
/// leaves it.
fn cached_corpus(cache: &Path, lines: &[String]) -> PathBuf {
    let repo = cache.join("datasets--semianalysisai--cc-traces-weka-test");
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let snapshot = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::write(snapshot.join("train.jsonl"), lines.join("\n") + "\n").unwrap();
    snapshot.join("train.jsonl")
}

async fn resolved(cache: &Path) -> Vec<PathBuf> {
    let options = HubOptions {
        cache_dir: Some(cache.to_path_buf()),
        offline: true,
        token: None,
        endpoint: "http://127.0.0.1:9".into(),
        timeout: Duration::from_secs(5),
    };
    let corpus = HubDataset {
        id: CORPUS.into(),
        config: None,
        split: "train".into(),
        revision: None,
    };
    resolve(&corpus, &options, &NoNetwork).await.unwrap()
}

/// Sonnet prompts: the lengths checked below are token-exact with it; the format's
/// default (coding) blocks, which the builtin tokenizer joins without a separator, can
/// re-encode a few tokens longer (docs/datasets.md#trace-prompts-from-hash-ids).
fn options() -> CustomDatasetOptions {
    CustomDatasetOptions {
        seed: 9,
        corpus: Some(PromptCorpus::Sonnet),
        ..CustomDatasetOptions::default()
    }
}

#[tokio::test]
async fn a_hub_corpus_replays_as_the_same_trace_files_do() {
    let cache = tempfile::tempdir().unwrap();
    let lines: Vec<String> = traces().iter().map(Value::to_string).collect();
    let file = cached_corpus(cache.path(), &lines);
    let files = resolved(cache.path()).await;
    assert_eq!(files, [file]);
    let tokenizer = Tokenizer::builtin();
    let from_hub = load_weka_corpus(&files, &options(), &tokenizer).unwrap();

    let folder = tempfile::tempdir().unwrap();
    for (name, trace) in ["a.json", "b.json"].iter().zip(traces()) {
        std::fs::write(folder.path().join(name), trace.to_string()).unwrap();
    }
    let file_options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::WekaTrace),
        ..options()
    };
    let from_files = load_custom_dataset(folder.path(), &file_options, &tokenizer).unwrap();
    assert_eq!(from_hub, from_files.conversations);

    let ids: Vec<&str> = from_hub.iter().map(|c| c.session_id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    let a = &from_hub[0];
    let lengths: Vec<usize> = a
        .turns
        .iter()
        .map(|t| tokenizer.encode(&t.texts[0]).len())
        .collect();
    assert_eq!(lengths, [40, 56]);
    // Idle gap 4.0 − (0.0 + 1.5) s; the subagent waits 250 ms after its spawn.
    let delays: Vec<Option<f64>> = a.turns.iter().map(|t| t.delay_ms).collect();
    assert_eq!(delays, [None, Some(2500.0)]);
    let child = &a.turns[0].branches[0].children[0];
    assert_eq!(child.session_id, "a::sa:agent_001");
    assert_eq!(child.turns[0].delay_ms, Some(250.0));
    assert_eq!(a.turns[0].branches[0].join_at, Some(1));
    let b = &from_hub[1];
    assert_eq!(b.turns[1].delay_ms, Some(1000.0));
    assert_eq!(
        b.turns.iter().map(|t| t.max_tokens).collect::<Vec<_>>(),
        [Some(5), Some(6)]
    );
}

#[tokio::test]
async fn null_fields_count_as_absent() {
    let cache = tempfile::tempdir().unwrap();
    // A Parquet conversion gives every row every column: the absent ones are null.
    let mut with_nulls = traces();
    with_nulls[1]["totals"] = Value::Null;
    with_nulls[1]["requests"][0]["ttft"] = Value::Null;
    with_nulls[1]["requests"][0]["agent_id"] = Value::Null;
    let lines: Vec<String> = with_nulls.iter().map(Value::to_string).collect();
    cached_corpus(cache.path(), &lines);
    let tokenizer = Tokenizer::builtin();
    let with_nulls = load_weka_corpus(&resolved(cache.path()).await, &options(), &tokenizer);

    let plain = tempfile::tempdir().unwrap();
    let lines: Vec<String> = traces().iter().map(Value::to_string).collect();
    cached_corpus(plain.path(), &lines);
    let plain = load_weka_corpus(&resolved(plain.path()).await, &options(), &tokenizer);
    assert_eq!(with_nulls.unwrap(), plain.unwrap());
}

#[tokio::test]
async fn a_malformed_row_names_its_file_and_line() {
    let cache = tempfile::tempdir().unwrap();
    let mut lines: Vec<String> = traces().iter().map(Value::to_string).collect();
    lines[1] = lines[1].replace("api_time", "api_tim");
    let file = cached_corpus(cache.path(), &lines);
    let tokenizer = Tokenizer::builtin();
    let error = load_weka_corpus(&resolved(cache.path()).await, &options(), &tokenizer)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!(
            "{}:2: not a weka trace: unknown field `api_tim`, expected one of `t`, `model`",
            file.display()
        )),
        "{error}"
    );

    let mut lines: Vec<String> = traces().iter().map(Value::to_string).collect();
    lines[1] = lines[1].replace("\"block_size\":16", "\"block_size\":0");
    cached_corpus(cache.path(), &lines);
    let error = load_weka_corpus(&resolved(cache.path()).await, &options(), &tokenizer)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!("{}:2: block_size: must be at least 1", file.display())
    );

    let twice = [lines[0].clone(), String::new(), lines[0].clone()];
    cached_corpus(cache.path(), &twice);
    let error = load_weka_corpus(&resolved(cache.path()).await, &options(), &tokenizer)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!(
            "{}:3: id: duplicate trace id \"a\": each trace needs its own",
            file.display()
        )
    );
}
