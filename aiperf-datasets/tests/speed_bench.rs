//! SPEED-Bench variants: rows from the Hugging Face cache (offline) or a local copy, a
//! variant's category filter, a leading system message as the conversation's, and the
//! hub's placeholder rows refused with what to do.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use aiperf_core::config::{CustomDatasetType, SpeedBenchVariant};
use aiperf_core::transport::{BoxFuture, HttpRequest, RawExchange};
use aiperf_core::{Conversation, Transport, Turn};
use aiperf_datasets::custom::load_speed_bench_from_hub;
use aiperf_datasets::hub::HubOptions;
use aiperf_datasets::{load_custom_dataset, CustomDatasetOptions, Tokenizer};

const QUALITATIVE: &str = concat!(
    r#"{"question_id":"00000000000000000000000000000001","category":"coding","messages":[{"role":"user","content":"Write a quicksort in Rust."}]}"#,
    "\n",
    r#"{"question_id":"00000000000000000000000000000002","category":"math","messages":[{"role":"user","content":"What is 17 * 23?"}]}"#,
    "\n",
    r#"{"question_id":"00000000000000000000000000000003","category":"coding","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Reverse a list."},{"role":"user","content":"Now in place."}]}"#,
    "\n",
);

const THROUGHPUT_1K: &str = concat!(
    r#"{"question_id":"10000000000000000000000000000001","category":"low_entropy","messages":[{"role":"user","content":"Sort these numbers: 5 3 9."}]}"#,
    "\n",
    r#"{"question_id":"10000000000000000000000000000002","category":"mixed","messages":[{"role":"user","content":"Find the needle in this haystack."}]}"#,
    "\n",
);

fn variant(name: &str) -> SpeedBenchVariant {
    SpeedBenchVariant::from_name(name).unwrap()
}

/// `nvidia/SPEED-Bench` in a hub cache under `home` (`$HF_HOME/hub`), as a snapshot.
fn cache_speed_bench(home: &Path) {
    let repo = home.join("hub/datasets--nvidia--SPEED-Bench");
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    for (config, rows) in [
        ("qualitative", QUALITATIVE),
        ("throughput_1k", THROUGHPUT_1K),
    ] {
        let folder = repo.join("snapshots").join(commit).join(config);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("test.jsonl"), rows).unwrap();
    }
}

/// Offline with `HF_HOME` = `home`, as `HF_HOME=… HF_HUB_OFFLINE=1` would set it.
fn offline(home: &Path) -> HubOptions {
    HubOptions::from_lookup(|key| match key {
        "HF_HOME" => Some(home.display().to_string()),
        "HF_HUB_OFFLINE" => Some("1".into()),
        _ => None,
    })
}

/// Fails the test when anything is sent.
struct NoNetwork;

impl Transport for NoNetwork {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        panic!("an offline load sent a request to {}", request.url)
    }
}

fn user(text: &str) -> Turn {
    Turn::text(text)
}

#[tokio::test]
async fn two_variants_read_their_rows_from_the_hub_cache_offline() {
    let home = tempfile::tempdir().unwrap();
    cache_speed_bench(home.path());
    let options = offline(home.path());

    let coding = load_speed_bench_from_hub(variant("speed_bench_coding"), &options, &NoNetwork)
        .await
        .unwrap();
    assert_eq!(
        coding,
        [
            Conversation {
                session_id: "00000000000000000000000000000001".into(),
                turns: vec![user("Write a quicksort in Rust.")],
                ..Conversation::default()
            },
            Conversation {
                session_id: "00000000000000000000000000000003".into(),
                system_message: Some("You are terse.".into()),
                turns: vec![user("Reverse a list."), user("Now in place.")],
                ..Conversation::default()
            },
        ]
    );

    let mixed = load_speed_bench_from_hub(
        variant("speed_bench_throughput_1k_mixed"),
        &options,
        &NoNetwork,
    )
    .await
    .unwrap();
    assert_eq!(
        mixed,
        [Conversation {
            session_id: "10000000000000000000000000000002".into(),
            turns: vec![user("Find the needle in this haystack.")],
            ..Conversation::default()
        }]
    );
}

#[tokio::test]
async fn a_variant_not_in_the_cache_offline_says_where_its_files_go() {
    let home = tempfile::tempdir().unwrap();
    cache_speed_bench(home.path());
    let error = load_speed_bench_from_hub(
        variant("speed_bench_throughput_8k"),
        &offline(home.path()),
        &NoNetwork,
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().starts_with(
            "Hugging Face dataset nvidia/SPEED-Bench (throughput_8k/test) is not in the local \
             cache and HF_HUB_OFFLINE is set"
        ),
        "{error}"
    );
}

fn load_local(path: &Path, name: &str) -> Result<Vec<Conversation>, String> {
    let options = CustomDatasetOptions {
        dataset_type: CustomDatasetType::from_name(name),
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(path, &options, &Tokenizer::builtin())
        .map(|loaded| loaded.conversations)
        .map_err(|e| e.to_string())
}

#[test]
fn a_local_folder_holds_one_jsonl_per_config_and_a_whole_split_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("throughput_1k.jsonl"), THROUGHPUT_1K).unwrap();
    let all = load_local(dir.path(), "speed_bench_throughput_1k").unwrap();
    let prompts: Vec<&str> = all.iter().map(|c| c.turns[0].texts[0].as_str()).collect();
    assert_eq!(
        prompts,
        [
            "Sort these numbers: 5 3 9.",
            "Find the needle in this haystack."
        ]
    );
    assert_eq!(
        load_local(dir.path(), "speed_bench_qualitative").unwrap_err(),
        format!(
            "{}: speed_bench_qualitative reads qualitative.jsonl, which this folder does not hold",
            dir.path().display()
        )
    );
}

#[test]
fn a_category_with_no_rows_and_a_placeholder_row_are_errors_with_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rows.jsonl");
    std::fs::write(&file, THROUGHPUT_1K).unwrap();
    assert_eq!(
        load_local(&file, "speed_bench_coding").unwrap_err(),
        format!(
            "{}: no row has category \"coding\" (speed_bench_coding keeps only those); is this \
             the qualitative split?",
            file.display()
        )
    );

    let placeholder = concat!(
        r#"{"question_id":"00000000000000000000000000000001","category":"qa","messages":[{"role":"user","content":"Who?"}]}"#,
        "\n",
        r#"{"question_id":"00000000000000000000000000000002","category":"qa","messages":[{"role":"user","content":"FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH"}]}"#,
        "\n",
    );
    std::fs::write(&file, placeholder).unwrap();
    assert_eq!(
        load_local(&file, "speed_bench_qa").unwrap_err(),
        format!(
            "{}:2: messages[0].content: is the placeholder of the Hugging Face copy, not a \
             prompt: build the full rows with NVIDIA's specdec_bench and pass them with \
             --input-file",
            file.display()
        )
    );

    std::fs::write(
        &file,
        r#"{"question_id":"x","category":"qa","messages":[{"role":"user"}]}"#,
    )
    .unwrap();
    assert_eq!(
        load_local(&file, "speed_bench_qa").unwrap_err(),
        format!(
            "{}:1: messages[0]: must be an object with a non-empty string `role` and `content`",
            file.display()
        )
    );
}

#[test]
fn every_variant_is_a_dataset_type_and_listed() {
    let listed = aiperf_datasets::listing::dataset_formats();
    assert_eq!(
        listed
            .iter()
            .filter(|f| f.name.starts_with("speed_bench_"))
            .count(),
        32
    );
    assert_eq!(
        CustomDatasetType::from_name("speed-bench-throughput-32k-high-entropy"),
        Some(CustomDatasetType::SpeedBench(variant(
            "speed_bench_throughput_32k_high_entropy"
        )))
    );
    let json =
        serde_json::to_string(&CustomDatasetType::SpeedBench(variant("speed_bench_rag"))).unwrap();
    assert_eq!(json, r#""speed_bench_rag""#);
}
