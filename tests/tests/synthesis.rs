//! Trace synthesis end to end: `aiperf synthesize trace` output checked with the
//! `analyze-trace` statistics, `aiperf synthesize agentic-code` reproducible per seed
//! and loadable as a mooncake trace, and `profile --synthesis-*` sending the
//! synthesized requests to the recording mock server.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aiperf_core::config::CustomDatasetType;
use aiperf_datasets::{analyze_trace_file, load_custom_dataset, CustomDatasetOptions, Tokenizer};
use aiperf_mock_server::{MockConfig, MockServer};
use common::{aiperf_binary, args, assert_exit, profile, read_jsonl, recorded_body};

/// 40 requests 100 ms apart over four roots (`i % 4`) and eight second blocks, each
/// with a unique third block; 16-token blocks, 40 tokens each.
fn write_trace(path: &Path) {
    let lines: String = (0..40)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 40, \"output_length\": 10, \
                 \"hash_ids\": [{}, {}, {}]}}\n",
                i * 100,
                i % 4,
                100 + i % 8,
                1000 + i
            )
        })
        .collect();
    std::fs::write(path, lines).unwrap();
}

fn synthesize(flags: &str) -> Output {
    Command::new(aiperf_binary())
        .arg("synthesize")
        .args(args(flags))
        .output()
        .unwrap()
}

/// Re-synthesizes `trace` into `out` with `flags`; the written file.
fn synthesize_trace(trace: &Path, out: &Path, flags: &str) -> PathBuf {
    let output = synthesize(&format!(
        "trace --input-file {} --isl-block-size 16 --output {} {flags}",
        trace.display(),
        out.display()
    ));
    assert_exit(&output, 0);
    out.join("trace.synthesized.jsonl")
}

fn timestamps(path: &Path) -> Vec<u64> {
    read_jsonl(path)
        .iter()
        .map(|line| line["timestamp"].as_u64().unwrap())
        .collect()
}

#[test]
fn speedup_halves_the_span_and_root_multiplier_doubles_the_prefix_groups() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    write_trace(&trace);
    let out = synthesize_trace(
        &trace,
        &dir.path().join("out"),
        "--synthesis-speedup-ratio 2 --synthesis-prefix-root-multiplier 2",
    );
    let span = |ts: &[u64]| ts.last().unwrap() - ts.first().unwrap();
    assert_eq!(span(&timestamps(&trace)), 3900);
    assert_eq!(span(&timestamps(&out)), 1950);

    let before = analyze_trace_file(&trace, 16).unwrap();
    let after = analyze_trace_file(&out, 16).unwrap();
    assert_eq!(before.total_requests, 40);
    assert_eq!(after.total_requests, 40);
    assert_eq!(before.num_prefix_groups, 4);
    assert_eq!(after.num_prefix_groups, 8);
    assert_eq!(after.avg_isl, 40.0);

    // The same seed writes the same bytes.
    let again = synthesize_trace(
        &trace,
        &dir.path().join("again"),
        "--synthesis-speedup-ratio 2 --synthesis-prefix-root-multiplier 2",
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn length_multipliers_and_limits_show_in_the_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    write_trace(&trace);
    let out = synthesize_trace(
        &trace,
        &dir.path().join("out"),
        "--synthesis-prompt-len-multiplier 2 --synthesis-output-len-multiplier 3 --max-osl 25",
    );
    let stats = analyze_trace_file(&out, 16).unwrap();
    // Shared prefix 32 tokens kept, unique 8 tokens doubled; 10 × 3 capped to 25.
    assert_eq!((stats.min_isl, stats.max_isl), (48, 48));
    assert_eq!((stats.min_osl, stats.max_osl), (25, 25));

    let skipped = synthesize(&format!(
        "trace --input-file {} --isl-block-size 16 --output {} --max-isl 39",
        trace.display(),
        dir.path().join("none").display()
    ));
    assert_exit(&skipped, 0);
    assert!(String::from_utf8_lossy(&skipped.stdout).contains("Wrote 0 requests to"));
}

#[test]
fn a_bad_option_or_line_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, "{\"input_length\": 10, \"hash_ids\": [1, 2]}\n").unwrap();
    let output = synthesize(&format!("trace --input-file {}", trace.display()));
    assert_exit(&output, 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains(&format!(
        "{}:1: hash_ids: input_length 10 is too short for 2 hash ids of 512-token blocks: \
         the final block would hold -502 tokens (must be at least 1); check --isl-block-size",
        trace.display()
    )));
    let output = synthesize(&format!(
        "trace --input-file {} --synthesis-speedup-ratio 0",
        trace.display()
    ));
    assert_exit(&output, 2);
    assert!(String::from_utf8_lossy(&output.stderr)
        .contains("--synthesis-speedup-ratio must be greater than 0, got 0"));
}

/// Runs `synthesize agentic-code` into `out`; the dataset it wrote.
fn agentic_code(out: &Path, flags: &str) -> PathBuf {
    let output = synthesize(&format!("agentic-code --output {} {flags}", out.display()));
    assert_exit(&output, 0);
    let run_dir = std::fs::read_dir(out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    run_dir.join("dataset.jsonl")
}

#[test]
fn agentic_code_sessions_are_reproducible_and_load_as_a_mooncake_trace() {
    let dir = tempfile::tempdir().unwrap();
    let first = agentic_code(&dir.path().join("a"), "--num-sessions 12 --seed 7");
    let second = agentic_code(&dir.path().join("b"), "--num-sessions 12 --seed 7");
    let other = agentic_code(&dir.path().join("c"), "--num-sessions 12 --seed 8");
    let bytes = std::fs::read(&first).unwrap();
    assert_eq!(bytes, std::fs::read(&second).unwrap());
    assert_ne!(bytes, std::fs::read(&other).unwrap());

    let rows = read_jsonl(&first);
    let openers: Vec<_> = rows
        .iter()
        .filter(|r| r.get("timestamp").is_some())
        .collect();
    assert_eq!(openers.len(), 12);
    // Every session opens with the 63 shared L1 blocks (32 000 tokens of 512).
    for row in &openers {
        let ids = row["hash_ids"].as_array().unwrap();
        assert_eq!(ids[62], 62, "{row}");
    }
    let loaded = load_custom_dataset(
        &first,
        &CustomDatasetOptions {
            block_size: Some(512),
            ..CustomDatasetOptions::default()
        },
        &Tokenizer::builtin(),
    )
    .unwrap();
    assert_eq!(loaded.dataset_type, CustomDatasetType::MooncakeTrace);
    assert_eq!(loaded.conversations.len(), 12);
    let turns: usize = loaded.conversations.iter().map(|c| c.turns.len()).sum();
    assert_eq!(turns, rows.len());

    // The manifest's parameters reproduce the run.
    let manifest = first.with_file_name("manifest.json");
    let replayed = agentic_code(
        &dir.path().join("d"),
        &format!("--num-sessions 12 --seed 7 --config {}", manifest.display()),
    );
    assert_eq!(bytes, std::fs::read(replayed).unwrap());

    // Beside the trace, 0.13's quality report, counting what the trace holds, and the
    // same as a page needing nothing else.
    let quality = common::read_json(&first.with_file_name("quality.json"));
    let end = &quality["session_end_stats"];
    assert_eq!(end["total_sessions"], 12);
    assert_eq!(
        end["forced_retires"].as_u64().unwrap() + end["probabilistic_resets"].as_u64().unwrap(),
        12
    );
    assert_eq!(quality["session_stats"]["count"], 12);
    assert_eq!(
        quality["observed_vs_target"]["generation_length"]["observed"]["count"],
        rows.len()
    );
    assert_eq!(
        quality["observed_vs_target"]["initial_context"]["observed"]["count"],
        12
    );
    let page = std::fs::read_to_string(first.with_file_name("report.html")).unwrap();
    assert!(page.contains(&format!("12 sessions, {} turns.", rows.len())));
    for reference in ["http:", "https:", "//", "src=", "href="] {
        assert!(!page.contains(reference), "{reference} in report.html");
    }
}

#[test]
fn agentic_code_max_isl_bounds_every_context_and_max_osl_every_reply() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = agentic_code(
        &dir.path().join("a"),
        "--num-sessions 20 --max-isl 60000 --max-osl 200",
    );
    let rows = read_jsonl(&dataset);
    let mut context = std::collections::HashMap::<String, u64>::new();
    for row in &rows {
        let output = row["output_length"].as_u64().unwrap();
        assert!((30..=200).contains(&output), "{row}");
        let session = row["session_id"].as_str().unwrap().to_owned();
        let sent = context.entry(session).or_default();
        *sent += row["input_length"].as_u64().unwrap();
        assert!(*sent < 60_000, "{row}");
        *sent += output;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_sends_the_synthesized_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 9, \"hash_ids\": [1, 2, 3]}\n\
         {\"timestamp\": 40, \"input_length\": 36, \"output_length\": 4, \"hash_ids\": [1, 2, 4]}\n\
         {\"timestamp\": 80, \"input_length\": 90, \"output_length\": 5, \"hash_ids\": [7, 8, 9, 10, 11, 12]}\n",
    )
    .unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let argv = args(&format!(
        "-m mock-model --url {} --artifact-dir {} --random-seed 5 --input-file {} \
         --isl-block-size 16 --synthesis-output-len-multiplier 2 --synthesis-max-isl 64",
        server.url(),
        dir.path().join("artifacts").display(),
        trace.display()
    ));
    assert_exit(&profile(argv).await, 0);
    let mut sent: Vec<u64> = read_jsonl(&record)
        .iter()
        .map(|r| recorded_body(r)["max_completion_tokens"].as_u64().unwrap())
        .collect();
    sent.sort_unstable();
    // The 90-token request is over --synthesis-max-isl; the others ask for twice as much.
    assert_eq!(sent, vec![8, 18]);
}

#[test]
fn agentic_code_takes_0_13_s_bundled_default_config_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = agentic_code(
        &dir.path().join("a"),
        "--num-sessions 5 --seed 1 --config default",
    );
    let run_dir = dataset.parent().unwrap();
    let name = run_dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("default_5s_seed1_"), "{name}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    let params = &manifest["generation_params"];
    assert_eq!(params["max_prompt_tokens"], 167_000);
    assert_eq!(params["cache"]["layer1_5_tokens"], 0);
    // No group layer: every opener is the 63 shared L1 blocks, then its own.
    for row in read_jsonl(&dataset)
        .iter()
        .filter(|r| r.get("timestamp").is_some())
    {
        let ids = row["hash_ids"].as_array().unwrap();
        assert_eq!(ids[62], 62, "{row}");
    }

    let missing = synthesize("agentic-code --config nonesuch --num-sessions 1");
    assert_exit(&missing, 2);
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("nonesuch: no such file, nor a bundled config (bundled: default)"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
