//! `aiperf profile`'s input-side flags of the Python AIPerf 0.13, the built binary against
//! the in-process mock server: the verbatim system prompt, the tokenizer revision, and the
//! trace replay options (speedup, ignored delays, session sampling).
#![allow(clippy::unwrap_used)] // tests fail loudly by design
#![allow(clippy::print_stderr)] // a test says on the terminal which optional input it skipped

mod common;

use std::path::Path;
use std::process::{Command, Output};

use aiperf_core::Conversation;
use aiperf_datasets::adjust::sample_sessions;
use aiperf_mock_server::{MockConfig, MockServer};
use common::{aiperf_binary, args, assert_exit, profile, read_json, read_jsonl, recorded_body};
use serde_json::{json, Value};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn run_args(url: &str, dir: &Path, rest: &str) -> Vec<String> {
    args(&format!(
        "-m mock-model --url {url} --artifact-dir {} --random-seed 5 {rest}",
        dir.join("artifacts").display()
    ))
}

/// The user texts of every payload in `inputs.json`, in order.
fn input_texts(dir: &Path) -> Vec<String> {
    let inputs = read_json(&dir.join("artifacts").join("inputs.json"));
    inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|session| session["payloads"].as_array().unwrap().clone())
        .map(|payload| {
            let messages = payload["messages"].as_array().unwrap();
            messages.last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_prompt_file_leads_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let prompt = "You are terse.\nAnswer in \"one\" line.\n";
    let file = write(dir.path(), "system.txt", prompt);
    let argv = run_args(
        &server.url(),
        dir.path(),
        &format!("--system-prompt-file {file} --isl 16 --request-count 4 --session-turns-mean 2"),
    );
    assert_exit(&profile(argv).await, 0);
    server.shutdown().await;
    let requests = read_jsonl(&record);
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let messages = recorded_body(request)["messages"].clone();
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": prompt}),
            "{messages}"
        );
        let roles: Vec<&str> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles.iter().filter(|r| **r == "system").count(),
            1,
            "{roles:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_prompt_joins_a_dataset_file_s_requests() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "prompts.jsonl",
        "{\"text\": \"first\"}\n{\"text\": \"second\"}\n",
    );
    let argv = run_args(
        "mock",
        dir.path(),
        &format!("--input-file {file} --custom-dataset-type single_turn --request-count 2"),
    );
    let mut argv = argv;
    argv.extend(["--system-prompt".into(), "Be brief.".into()]);
    assert_exit(&profile(argv).await, 0);
    let inputs = read_json(&dir.path().join("artifacts").join("inputs.json"));
    for session in inputs["data"].as_array().unwrap() {
        assert_eq!(
            session["payloads"][0]["messages"][0],
            json!({"role": "system", "content": "Be brief."})
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_file_s_turns_are_spread_over_the_models_like_synthetic_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "prompts.jsonl",
        "{\"text\": \"1\"}\n{\"text\": \"2\"}\n{\"text\": \"3\"}\n",
    );
    let mut argv = run_args(
        "mock",
        dir.path(),
        &format!("--input-file {file} --custom-dataset-type single_turn --request-count 3"),
    );
    argv[1] = "mock-a,mock-b".into();
    assert_exit(&profile(argv).await, 0);
    let inputs = read_json(&dir.path().join("artifacts").join("inputs.json"));
    let models: Vec<&str> = inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["payloads"][0]["model"].as_str().unwrap())
        .collect();
    // Python 0.13 does the same; before, every request named the first model.
    assert_eq!(models, ["mock-a", "mock-b", "mock-a"]);
}

/// A word-level tokenizer.json: with a whitespace pre-tokenizer "one two three" is three
/// tokens; without one it is a single (unknown) token.
fn word_level_tokenizer(split_on_whitespace: bool) -> String {
    let pre_tokenizer = if split_on_whitespace {
        json!({"type": "Whitespace"})
    } else {
        Value::Null
    };
    json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": pre_tokenizer, "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "one": 1}, "unk_token": "[UNK]"}
    })
    .to_string()
}

/// A Hugging Face cache under `root` holding `org/words` at two revisions: `split` counts
/// words, `whole` counts each text as one token. `main` is not cached.
fn two_revision_cache(root: &Path) {
    let repo = root.join("hub").join("models--org--words");
    for (revision, sha, split) in [
        ("split", "1111111111111111111111111111111111111111", true),
        ("whole", "2222222222222222222222222222222222222222", false),
    ] {
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs").join(revision), sha).unwrap();
        let snapshot = repo.join("snapshots").join(sha);
        std::fs::create_dir_all(&snapshot).unwrap();
        std::fs::write(snapshot.join("tokenizer.json"), word_level_tokenizer(split)).unwrap();
    }
}

/// `aiperf profile` with `HF_HOME` at `hf_home` and downloads disabled.
async fn profile_offline(hf_home: &Path, argv: Vec<String>) -> Output {
    let hf_home = hf_home.to_owned();
    tokio::task::spawn_blocking(move || {
        Command::new(aiperf_binary())
            .arg("profile")
            .args(&argv)
            .args(["--ui-type", "none"])
            .env("HF_HOME", &hf_home)
            .env_remove("HF_HUB_CACHE")
            .env_remove("HUGGINGFACE_HUB_CACHE")
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tokenizer_revision_picks_its_snapshot_in_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    two_revision_cache(dir.path());
    let file = write(
        dir.path(),
        "prompts.jsonl",
        "{\"text\": \"one two three four five\"}\n",
    );
    let isl_with = |revision: &str| {
        let dir = dir.path().join(revision);
        let argv = run_args(
            "mock",
            &dir,
            &format!(
                "--input-file {file} --custom-dataset-type single_turn --request-count 1 \
                 --tokenizer org/words --tokenizer-revision {revision}"
            ),
        );
        let hf_home = dir.parent().unwrap().to_owned();
        async move {
            let output = profile_offline(&hf_home, argv).await;
            assert_exit(&output, 0);
            let summary = read_json(&dir.join("artifacts").join("profile_export_aiperf.json"));
            common::stat(&summary, "input_sequence_length", "avg")
        }
    };
    assert_eq!(isl_with("split").await, 5.0);
    assert_eq!(isl_with("whole").await, 1.0);

    // Without the flag the revision is main, which this cache does not hold.
    let argv = run_args(
        "mock",
        dir.path(),
        &format!("--input-file {file} --tokenizer org/words --request-count 1"),
    );
    let output = profile_offline(dir.path(), argv).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("org/words (revision main) is not in the Hugging Face cache"),
        "{stderr}"
    );
}

const TRACE: &str = r#"{"timestamp": 1000, "input_length": 40, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 1200, "input_length": 40, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, 3]}
{"timestamp": 1800, "input_length": 30, "output_length": 4, "hash_ids": [4, 5]}
{"timestamp": 2200, "input_length": 40, "output_length": 4, "hash_ids": [6, 7]}
"#;

/// The profile's records: when each request was sent (ms after the first, in order), and
/// the client's largest schedule lag (ms).
fn sent_offsets(dir: &Path) -> (Vec<f64>, f64) {
    let artifacts = dir.join("artifacts");
    let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
    let mut sent_ms: Vec<f64> = read_jsonl(&artifacts.join("profile_export.jsonl"))
        .iter()
        .map(|r| r["metadata"]["request_start_ns"].as_f64().unwrap() / 1e6)
        .collect();
    sent_ms.sort_by(f64::total_cmp);
    let first = sent_ms[0];
    let offsets = sent_ms.iter().map(|at| at - first).collect();
    (offsets, summary["schedule_lag"]["max"].as_f64().unwrap())
}

async fn run_trace(dir: &Path, flags: &str) -> Output {
    let trace = write(dir, "trace.jsonl", TRACE);
    let argv = run_args(
        "mock",
        dir,
        &format!(
            "--input-file {trace} --custom-dataset-type mooncake_trace --isl-block-size 20 {flags}"
        ),
    );
    profile(argv).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_speedup_divides_the_trace_offsets() {
    let dir = tempfile::tempdir().unwrap();
    assert_exit(&run_trace(dir.path(), "--replay-speedup 2").await, 0);
    let (offsets, max_lag_ms) = sent_offsets(dir.path());
    let want = [0.0, 100.0, 250.0, 400.0, 600.0];
    assert_eq!(offsets.len(), want.len(), "{offsets:?}");
    // A send can start late on a loaded machine; the client reports by how much.
    let tolerance = 2.0 + max_lag_ms;
    for (got, want) in offsets.iter().zip(want) {
        assert!(
            (got - want).abs() < tolerance,
            "sent at {offsets:?}, want {want} (lag up to {max_lag_ms} ms)"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_trace_delays_turn_the_replay_into_an_ordinary_run() {
    // No timestamps left: no fixed schedule, so the default stop of 10 requests applies
    // rather than the trace's 5 entries.
    let dir = tempfile::tempdir().unwrap();
    assert_exit(
        &run_trace(dir.path(), "--ignore-trace-delays --concurrency 1").await,
        0,
    );
    let (offsets, _) = sent_offsets(dir.path());
    assert_eq!(offsets.len(), 10);

    // An explicit fixed schedule keeps the timestamps: each entry once.
    let dir = tempfile::tempdir().unwrap();
    assert_exit(
        &run_trace(dir.path(), "--ignore-trace-delays --fixed-schedule").await,
        0,
    );
    let (offsets, _) = sent_offsets(dir.path());
    assert_eq!(offsets.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_sample_ratio_keeps_the_same_sessions_for_a_seed() {
    let lines: String = (0..40)
        .map(|i| format!("{{\"session_id\": \"s{i}\", \"text\": \"prompt {i}\"}}\n"))
        .collect();
    let sampled = |seed: u64| {
        let lines = lines.clone();
        async move {
            let dir = tempfile::tempdir().unwrap();
            let file = write(dir.path(), "sessions.jsonl", &lines);
            let mut argv = run_args(
                "mock",
                dir.path(),
                &format!(
                    "--input-file {file} --custom-dataset-type single_turn \
                     --trace-session-sample-ratio 0.5 --request-count 1"
                ),
            );
            let at = argv.iter().position(|a| a == "--random-seed").unwrap();
            argv[at + 1] = seed.to_string();
            assert_exit(&profile(argv).await, 0);
            input_texts(dir.path())
        }
    };
    let expected = |seed: u64| -> Vec<String> {
        let indices: Vec<Conversation> = (0..40)
            .map(|i| Conversation {
                session_id: i.to_string(),
                ..Conversation::default()
            })
            .collect();
        sample_sessions(indices, 0.5, seed)
            .iter()
            .map(|c| format!("prompt {}", c.session_id))
            .collect()
    };
    let first = sampled(5).await;
    assert_eq!(first, expected(5));
    assert!((10..30).contains(&first.len()), "{first:?}");
    assert_eq!(sampled(5).await, first);
    assert_ne!(sampled(6).await, first);
}

/// The requests a recording mock received for a synthetic run with `flags`.
async fn recorded_run(flags: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let argv = run_args(&server.url(), dir.path(), &format!("--isl 12 {flags}"));
    assert_exit(&profile(argv).await, 0);
    server.shutdown().await;
    let mut requests = read_jsonl(&record);
    requests.sort_by(|a, b| {
        a["timestamp_ns"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["timestamp_ns"].as_f64().unwrap())
    });
    requests
}

fn first_user_text(request: &Value) -> String {
    let body = recorded_body(request);
    let messages = body["messages"].as_array().unwrap();
    let first = messages.iter().find(|m| m["role"] == "user").unwrap();
    first["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_bust_gives_each_played_session_its_own_marker() {
    let requests = recorded_run(
        "--cache-bust first-turn-prefix --session-turns-mean 2 --num-dataset-entries 1 \
         --request-count 6 --concurrency 1",
    )
    .await;
    assert_eq!(requests.len(), 6);
    let mut marker_of_session = std::collections::BTreeMap::new();
    for request in &requests {
        let text = first_user_text(request);
        let (marker, rest) = text.split_once("\n\n").unwrap();
        assert!(
            marker.len() == "[rid:]".len() + 12
                && marker.starts_with("[rid:")
                && marker.ends_with(']'),
            "{text:?}"
        );
        assert!(!rest.contains("[rid:"), "{text:?}");
        let session = common::recorded_header(request, "x-correlation-id")
            .unwrap()
            .to_owned();
        let known = marker_of_session
            .entry(session)
            .or_insert_with(|| marker.to_owned());
        assert_eq!(known, marker, "one marker per session");
    }
    // The one conversation was played three times, each play with its own marker.
    let markers: std::collections::BTreeSet<_> = marker_of_session.values().collect();
    assert_eq!((marker_of_session.len(), markers.len()), (3, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_isolation_marks_only_warmup_requests() {
    let requests = recorded_run(
        "--cache-bust warmup-isolation-first-turn --warmup-request-count 2 --request-count 3 \
         --concurrency 1",
    )
    .await;
    let warm: Vec<bool> = requests
        .iter()
        .map(|r| first_user_text(r).starts_with("[warmup]\n\n"))
        .collect();
    assert_eq!(warm, [true, true, false, false, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_template_counts_what_the_server_tokenizes() {
    let Ok(tokenizers) = std::env::var("AIPERF_TEST_TOKENIZER_DIR") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but AIPERF_TEST_TOKENIZER_DIR is not set"
        );
        eprintln!("skipping the chat template test: AIPERF_TEST_TOKENIZER_DIR is not set");
        return;
    };
    let qwen3 = Path::new(&tokenizers).join("qwen3");
    let isl = |template: bool| {
        let qwen3 = qwen3.clone();
        async move {
            let dir = tempfile::tempdir().unwrap();
            let file = write(dir.path(), "p.jsonl", "{\"text\": \"hello there\"}\n");
            let mut argv = run_args(
                "mock",
                dir.path(),
                &format!(
                    "--input-file {file} --custom-dataset-type single_turn --request-count 1 \
                     --tokenizer {}",
                    qwen3.display()
                ),
            );
            argv.extend(["--system-prompt".into(), "Be brief.".into()]);
            if template {
                argv.push("--apply-chat-template".into());
            }
            assert_exit(&profile(argv).await, 0);
            let summary = read_json(
                &dir.path()
                    .join("artifacts")
                    .join("profile_export_aiperf.json"),
            );
            common::stat(&summary, "input_sequence_length", "avg")
        }
    };
    // transformers: len(apply_chat_template([system "Be brief.", user "hello there"],
    // tokenize=True, add_generation_prompt=True)["input_ids"]) is 18.
    assert_eq!(isl(true).await, 18.0);
    // The bare texts, "Be brief." and "hello there" joined by a space.
    assert_eq!(isl(false).await, 5.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_corpus_of_a_flag_and_of_a_file_sends_the_same_inputs() {
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let flags = dir.path().join("flags");
    let argv = run_args(
        &server.url(),
        &flags,
        "--prompt-corpus random --random-corpus-style sglang --isl 32 --osl 4 \
         --num-dataset-entries 4 --request-count 4 --concurrency 1 --no-server-metrics",
    );
    assert_exit(&profile(argv).await, 0);
    let from_file = dir.path().join("file");
    let yaml = format!(
        "schemaVersion: \"2.0\"\nbenchmark:\n  model: mock-model\n  endpoint:\n    url: {}\n  \
         dataset:\n    type: synthetic\n    entries: 4\n    random_seed: 5\n    prompts:\n      \
         isl: 32\n      osl: 4\n      corpus: random\n      randomCorpusStyle: sglang\n  \
         phases:\n    - {{name: profiling, type: concurrency, concurrency: 1, requests: 4}}\n  \
         artifacts:\n    dir: {}\n",
        server.url(),
        from_file.join("artifacts").display()
    );
    let file = write(dir.path(), "bench.yaml", &yaml);
    let argv = args(&format!("-f {file} --no-server-metrics"));
    assert_exit(&profile(argv).await, 0);

    let texts = input_texts(&flags);
    assert_eq!(texts.len(), 4);
    assert_eq!(texts, input_texts(&from_file));
    let tokenizer = aiperf_datasets::Tokenizer::builtin();
    assert!(
        texts.iter().all(|text| tokenizer.count(text) == 32),
        "{texts:?}"
    );
    let recorded = read_json(&from_file.join("artifacts").join("run_config.json"));
    assert_eq!(recorded["input"]["prompt"]["corpus"], "random");
    assert_eq!(recorded["input"]["prompt"]["random_corpus_style"], "sglang");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sonnet_is_the_built_in_prose_and_a_verbatim_file_ignores_the_corpus_with_a_warning() {
    let server = MockServer::start(MockConfig::with_timing(0.0, 0.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, flags: &str| {
        run_args(
            &server.url(),
            &dir.path().join(name),
            &format!("--isl 16 --request-count 2 --no-server-metrics {flags}"),
        )
    };
    let sonnet = profile(run("sonnet", "--prompt-corpus sonnet")).await;
    assert_exit(&sonnet, 0);
    let stderr = String::from_utf8_lossy(&sonnet.stderr);
    assert!(
        stderr.contains("--prompt-corpus sonnet: Shakespeare's sonnets are not shipped"),
        "{stderr}"
    );
    let default = profile(run("default", "")).await;
    assert_exit(&default, 0);
    assert!(!String::from_utf8_lossy(&default.stderr).contains("--prompt-corpus"));
    assert_eq!(
        input_texts(&dir.path().join("sonnet")),
        input_texts(&dir.path().join("default"))
    );

    let file = write(dir.path(), "prompts.jsonl", "{\"text\": \"first\"}\n");
    let verbatim = profile(run(
        "verbatim",
        &format!("--input-file {file} --custom-dataset-type single_turn --prompt-corpus coding"),
    ))
    .await;
    assert_exit(&verbatim, 0);
    let stderr = String::from_utf8_lossy(&verbatim.stderr);
    assert!(
        stderr.contains(
            "--prompt-corpus has no effect: the single_turn file's prompts are sent as written"
        ),
        "{stderr}"
    );
    assert_eq!(input_texts(&dir.path().join("verbatim")), ["first"]);
}
