//! `aiperf profile -f FILE` and `aiperf config …`, the built binary against the in-process
//! mock server: a run repeated from its run_config.json sends byte-identical inputs,
//! flags override the file, flags with nothing to override are refused by name, a sweep
//! and a multi-run written in the file run as they would from the command line.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::process::{Command, Output};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{aiperf_binary, args, assert_exit, profile, read_json, stat};

fn config(argv: &[&str]) -> Output {
    Command::new(aiperf_binary())
        .arg("config")
        .args(argv)
        .output()
        .expect("aiperf runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn with_file(file: &str, rest: &str) -> Vec<String> {
    let mut argv = vec!["-f".to_owned(), file.to_owned()];
    argv.extend(args(rest));
    argv
}

/// A small streaming benchmark of `url`, writing to `dir`.
fn benchmark_yaml(url: &str, dir: &Path) -> String {
    format!(
        "schemaVersion: \"2.0\"\nbenchmark:\n  model: mock-model\n  endpoint:\n    url: {url}\n    \
         streaming: true\n  dataset:\n    type: synthetic\n    entries: 5\n    prompts:\n      \
         isl: {{mean: 16, stddev: 4}}\n      osl: 4\n  phases:\n    - {{name: warmup, \
         excludeFromResults: true, requests: 2, concurrency: 1}}\n    - {{name: profiling, type: \
         concurrency, concurrency: 2, requests: 6}}\n  artifacts:\n    dir: {}\n",
        dir.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_repeated_from_its_run_config_sends_identical_inputs() {
    let server = MockServer::start(MockConfig::with_timing(2.0, 1.0))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let file = write(
        tmp.path(),
        "bench.yaml",
        &benchmark_yaml(&server.url(), &first),
    );
    // No seed in the file: the run draws one and records it.
    assert_exit(&profile(with_file(&file, "--no-server-metrics")).await, 0);
    let run_config = first.join("run_config.json");
    let recorded = read_json(&run_config);
    assert!(recorded["input"]["random_seed"].is_u64(), "{recorded}");
    assert_eq!(recorded["telemetry"]["server_metrics"], false);

    let second = tmp.path().join("second");
    let argv = with_file(
        run_config.to_str().unwrap(),
        &format!("--artifact-dir {}", second.display()),
    );
    assert_exit(&profile(argv).await, 0);
    let inputs = |dir: &Path| std::fs::read(dir.join("inputs.json")).unwrap();
    assert!(!inputs(&first).is_empty());
    assert!(
        inputs(&first) == inputs(&second),
        "inputs.json differs between the run and its repeat"
    );
    // Both runs sent the warmup and the profiling requests, and nothing else.
    assert_eq!(server.stats().requests_total, 2 * (2 + 6));
    assert!(!second.join("server_metrics_export.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_override_the_file_and_the_rest_of_the_file_stays() {
    let server = MockServer::start(MockConfig::with_timing(2.0, 1.0))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let file = write(
        tmp.path(),
        "bench.yaml",
        &benchmark_yaml(&server.url(), &dir),
    );
    let argv = with_file(
        &file,
        "--request-count 3 --isl 8 --isl-stddev 0 --random-seed 5 --no-server-metrics",
    );
    assert_exit(&profile(argv).await, 0);
    let summary = read_json(&dir.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 3.0);
    assert_eq!(stat(&summary, "input_sequence_length", "avg"), 8.0);
    let recorded = read_json(&dir.join("run_config.json"));
    assert_eq!(recorded["input"]["random_seed"], 5);
    // From the file: the concurrency, the output length and the warmup.
    assert_eq!(recorded["load"]["concurrency"], 2);
    assert_eq!(recorded["input"]["osl_mean"], 4);
    assert_eq!(recorded["load"]["warmup"]["request_count"], 2);
    assert_eq!(server.stats().requests_total, 2 + 3);
}

#[test]
fn flags_that_cannot_apply_on_top_of_a_file_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(
        tmp.path(),
        "bench.yaml",
        &benchmark_yaml("http://127.0.0.1:9", tmp.path()),
    );
    let run = |rest: &str| {
        Command::new(aiperf_binary())
            .arg("profile")
            .args(with_file(&file, rest))
            .output()
            .unwrap()
    };
    let output = run("--sweep-type zip --public-dataset sharegpt");
    assert_exit(&output, 2);
    assert_eq!(
        stderr(&output),
        "error: these flags cannot be combined with --config and would otherwise be \
         ignored: --sweep-type, --public-dataset. Set the equivalent values in the \
         configuration file, or drop --config and pass the run entirely on the command line\n"
    );
    let output = run("--concurrency 1,2");
    assert_exit(&output, 2);
    assert_eq!(
        stderr(&output),
        "error: comma-list sweeps cannot be combined with --config; put the sweep under \
         `sweep:` in the configuration file\n"
    );
    let output = run("--input-file trace.jsonl");
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("declares no such dataset"),
        "{}",
        stderr(&output)
    );
    // Without a file, --model stays required.
    let output = Command::new(aiperf_binary())
        .args(["profile", "--url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("--model <MODELS>"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_of_multi_runs_in_the_file_runs_every_point() {
    let server = MockServer::start(MockConfig::with_timing(2.0, 1.0))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let yaml = format!(
        "multiRun: {{numRuns: 2}}\nsweep:\n  type: zip\n  parameters:\n    concurrency: [1, 2]\n    \
         datasets.default.prompts.isl: [8, 24]\n{}",
        benchmark_yaml(&server.url(), &dir)
            .replace("schemaVersion: \"2.0\"\n", "")
            .replace("requests: 2, concurrency: 1}", "requests: 1, concurrency: 1}")
    );
    let file = write(tmp.path(), "sweep.yaml", &yaml);
    let expand = config(&["expand", &file]);
    assert_exit(&expand, 0);
    assert_eq!(
        String::from_utf8_lossy(&expand.stdout),
        format!(
            "{file}: zip sweep, 2 points\n  1  isl_8__concurrency_1             isl=8 concurrency=1\n  \
             2  isl_24__concurrency_2            isl=24 concurrency=2\n"
        )
    );
    assert_exit(&profile(with_file(&file, "--no-server-metrics")).await, 0);
    for (label, isl) in [
        ("isl_8__concurrency_1", 8.0),
        ("isl_24__concurrency_2", 24.0),
    ] {
        for run in ["run_0001", "run_0002"] {
            let run_dir = dir.join(label).join("profile_runs").join(run);
            let summary = read_json(&run_dir.join("profile_export_aiperf.json"));
            assert_eq!(stat(&summary, "request_count", "avg"), 6.0, "{label}/{run}");
            assert_eq!(
                stat(&summary, "input_sequence_length", "avg"),
                isl,
                "{label}/{run}"
            );
        }
        assert!(dir.join(label).join("aggregate").is_dir(), "{label}");
    }
    assert!(dir.join("sweep_aggregate").is_dir());
    // Per point: one warmup request before the first run, then 2 × 6.
    assert_eq!(server.stats().requests_total, 2 * (1 + 2 * 6));
}

#[test]
fn config_init_writes_templates_that_validate() {
    let tmp = tempfile::tempdir().unwrap();
    for template in [
        "default",
        "minimal",
        "latency_test",
        "goodput_slo",
        "sweep",
        "multi_run",
    ] {
        let path = tmp.path().join(format!("{template}.yaml"));
        let path = path.to_str().unwrap();
        let init = config(&[
            "init",
            "-t",
            template,
            "-m",
            "my-model",
            "-u",
            "http://h:1",
            "-o",
            path,
        ]);
        assert_exit(&init, 0);
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains("model: my-model"), "{template}");
        let validate = config(&["validate", path]);
        assert_exit(&validate, 0);
        assert!(
            String::from_utf8_lossy(&validate.stdout).starts_with(&format!("{path}: OK (")),
            "{template}"
        );
    }
    let bad = write(
        tmp.path(),
        "bad.yaml",
        "benchmark:\n  model: m\n  endpoint:\n    ulr: http://x\n",
    );
    let validate = config(&["validate", &bad]);
    assert_exit(&validate, 2);
    assert_eq!(
        stderr(&validate),
        format!("error: {bad}:4: benchmark.endpoint.ulr: unknown key; did you mean `url`?\n")
    );
    let unknown = config(&["init", "-t", "nope"]);
    assert_exit(&unknown, 2);
    assert_eq!(
        stderr(&unknown),
        "error: unknown template \"nope\"; choose one of default, minimal, latency_test, \
         goodput_slo, sweep, multi_run\n"
    );
}
