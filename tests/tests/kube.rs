//! `aiperf kube generate`, the built binary: the manifests parsed back with an independent
//! YAML parser have the structure an Indexed Job of N shards needs, carry no secret, and
//! the ConfigMap's run_config.json runs as it is against the mock server.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;
use std::process::{Command, Output};

use aiperf_mock_server::{MockConfig, MockServer};
use common::{aiperf_binary, args, assert_exit, profile, read_json, stat};
use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{json, Value};

const SECRET: &str = "sk-kube-e2e-do-not-leak";

fn kube_generate(rest: &[String]) -> Output {
    Command::new(aiperf_binary())
        .args(["kube", "generate"])
        .args(rest)
        .env("AIPERF_API_KEY", SECRET)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every document of `text` as JSON: plain scalars typed as YAML 1.2's core schema
/// reads them, quoted and block scalars as strings.
fn parse_documents(text: &str) -> Vec<Value> {
    let mut events = Parser::new_from_str(text).map(|event| event.unwrap().0);
    let mut documents = Vec::new();
    while let Some(event) = events.next() {
        match event {
            Event::StreamStart | Event::DocumentStart(_) | Event::DocumentEnd => {}
            Event::StreamEnd => break,
            event => documents.push(node(event, &mut events)),
        }
    }
    documents
}

fn node<'a>(event: Event<'a>, events: &mut impl Iterator<Item = Event<'a>>) -> Value {
    match event {
        Event::Scalar(text, ScalarStyle::Plain, ..) => match text.as_ref() {
            "null" | "~" => Value::Null,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => other
                .parse::<i64>()
                .map_or_else(|_| Value::String(other.to_owned()), Value::from),
        },
        Event::Scalar(text, ..) => Value::String(text.into_owned()),
        Event::SequenceStart(..) => {
            let mut items = Vec::new();
            loop {
                match events.next().unwrap() {
                    Event::SequenceEnd => break Value::Array(items),
                    event => items.push(node(event, events)),
                }
            }
        }
        Event::MappingStart(..) => {
            let mut map = serde_json::Map::new();
            loop {
                match events.next().unwrap() {
                    Event::MappingEnd => break Value::Object(map),
                    key => {
                        let Value::String(key) = node(key, events) else {
                            panic!("a non-string key")
                        };
                        let value = node(events.next().unwrap(), events);
                        map.insert(key, value);
                    }
                }
            }
        }
        other => panic!("unexpected YAML event {other:?}"),
    }
}

fn container(job: &Value) -> &Value {
    &job["spec"]["template"]["spec"]["containers"][0]
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn an_indexed_job_of_n_shards_starts_them_together() {
    let output = kube_generate(&args(
        "-m m --url http://vllm.inference.svc:8000 --streaming --concurrency 100 \
         --request-count 1000 --shards 5 --start-at 2026-11-26T11:00:00+01:00 \
         --name qwen --namespace bench --results-pvc shared --api-key-secret inference-key \
         --image registry.example.com/aiperf-rs:0.1.0",
    ));
    assert_exit(&output, 0);
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    assert!(!text.contains(SECRET) && !stderr(&output).contains(SECRET));
    let documents = parse_documents(&text);
    let kinds: Vec<_> = documents
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ConfigMap", "qwen-config"),
            ("Job", "qwen-shards"),
            ("Job", "qwen-merge"),
        ]
    );
    // The merge Job waits for every shard's directory and merges them beside them.
    let merge_args: Vec<&str> = documents[2]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut expected = vec!["merge"];
    let shard_dirs: Vec<String> = (0..5).map(|k| format!("/results/qwen/shard-{k}")).collect();
    expected.extend(shard_dirs.iter().map(String::as_str));
    expected.extend(["--output", "/results/qwen/merged", "--wait", "86400"]);
    assert_eq!(merge_args, expected);
    assert!(documents
        .iter()
        .all(|d| d["metadata"]["namespace"] == "bench"));

    let run_config: Value =
        serde_json::from_str(documents[0]["data"]["run_config.json"].as_str().unwrap()).unwrap();
    assert_eq!(run_config["load"]["concurrency"], 100);
    assert_eq!(run_config["load"]["request_count"], 1000);
    assert_eq!(
        run_config["endpoint"]["urls"],
        json!(["http://vllm.inference.svc:8000"])
    );

    let shards = &documents[1];
    assert_eq!(shards["spec"]["completionMode"], "Indexed");
    assert_eq!(shards["spec"]["completions"], 5);
    assert_eq!(shards["spec"]["parallelism"], 5);
    let shard = container(shards);
    assert_eq!(shard["image"], "registry.example.com/aiperf-rs:0.1.0");
    assert_eq!(
        strings(&shard["args"]),
        [
            "profile",
            "-f",
            "/etc/aiperf/run_config.json",
            "--shard-count",
            "5",
            "--start-at",
            "2026-11-26T10:00:00Z",
            "--artifact-dir",
            "/results/qwen/shard-$(JOB_COMPLETION_INDEX)",
        ]
    );
    assert_eq!(
        shard["env"],
        json!([{"name": "AIPERF_API_KEY",
                "valueFrom": {"secretKeyRef": {"name": "inference-key", "key": "api-key"}}}])
    );
    // 100 streams over 5 shards: 20 each; 1,000 requests: 200 each.
    assert_eq!(
        shard["resources"],
        json!({"requests": {"cpu": "270m", "memory": "213Mi"}})
    );
    let pod = &shards["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][1]["persistentVolumeClaim"]["claimName"],
        "shared"
    );
    let spread =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        spread["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    assert_eq!(
        spread["podAffinityTerm"]["labelSelector"]["matchLabels"],
        shards["spec"]["template"]["metadata"]["labels"]
    );
}

#[test]
fn without_start_at_the_shards_start_the_start_delay_after_generation() {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let before = now();
    let output = kube_generate(&args(
        "-m m --shards 2 --start-delay 300 --no-anti-affinity --api-key-secret k",
    ));
    let after = now();
    assert_exit(&output, 0);
    let documents = parse_documents(&String::from_utf8(output.stdout).unwrap());
    let shard_args = strings(&container(&documents[1])["args"]);
    let start = shard_args[shard_args.iter().position(|a| *a == "--start-at").unwrap() + 1];
    let start = aiperf_runner::shard::parse_start_at(start)
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        (before + 300..=after + 300).contains(&start),
        "{start} not {before}+300..{after}+300"
    );
    assert!(documents[1]["spec"]["template"]["spec"]
        .get("affinity")
        .is_none());
}

#[test]
fn a_configuration_file_with_flags_on_top_becomes_the_configmap() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bench.yaml");
    std::fs::write(
        &file,
        "schemaVersion: \"2.0\"\nbenchmark:\n  model: m\n  endpoint:\n    url: http://server:8000\n  \
         phases:\n    type: concurrency\n    concurrency: 64\n    requests: 500\n",
    )
    .unwrap();
    let mut argv = vec!["-f".to_owned(), file.to_str().unwrap().to_owned()];
    argv.extend(args(
        "--concurrency 8 --shards 4 --start-at 1795687200 --api-key-secret k",
    ));
    let output = kube_generate(&argv);
    assert_exit(&output, 0);
    let documents = parse_documents(&String::from_utf8(output.stdout).unwrap());
    let run_config: Value =
        serde_json::from_str(documents[0]["data"]["run_config.json"].as_str().unwrap()).unwrap();
    assert_eq!(run_config["load"]["concurrency"], 8);
    assert_eq!(run_config["load"]["request_count"], 500);
    assert_eq!(
        run_config["endpoint"]["urls"],
        json!(["http://server:8000"])
    );
    // 8 streams over 4 shards: 2 each.
    assert_eq!(
        container(&documents[1])["resources"]["requests"]["cpu"],
        "252m"
    );
}

#[test]
fn what_the_shards_cannot_repeat_is_refused_with_the_reason() {
    let refused = |line: &str| {
        let output = kube_generate(&args(line));
        assert_exit(&output, 2);
        assert!(output.stdout.is_empty());
        let message = stderr(&output);
        assert!(!message.contains(SECRET), "{message}");
        message
    };
    // AIPERF_API_KEY is set: a key with nowhere safe to go.
    assert_eq!(
        refused("-m m --shards 2"),
        "error: the API key is never written into manifests: store it in a Secret \
         (kubectl create secret generic NAME --from-literal=api-key=…) and name it with \
         --api-key-secret\n"
    );
    assert!(refused("-m m --shards 2 --api-key-secret k -H X-Token:abc")
        .starts_with("error: header values (-H) are not written into manifests"));
    assert!(
        refused("-m m --shards 2 --api-key-secret k --num-profile-runs 3")
            .starts_with("error: --num-profile-runs cannot be sharded")
    );
    assert_eq!(
        refused("-m m --shards 2 --api-key-secret k --name Bench"),
        "error: name `Bench`: must be lowercase letters, digits and '-', start and end with a \
         letter or digit, at most 40 characters\n"
    );
    assert!(
        refused("-m m --shards 2 --api-key-secret k --start-at noon").contains(
            "invalid start time \"noon\": give an RFC 3339 time (2026-11-26T10:00:00Z) or \
             seconds since the Unix epoch"
        )
    );
    assert_eq!(
        refused("-m m --shards 2 --api-key-secret k --concurrency 4 --random-seed 1 --shard 0/2"),
        "error: --shard and --shard-count are set by the generated Job: give the number of \
         shards with --shards N\n"
    );
}

/// The pods run `aiperf profile -f run_config.json` with shard flags on top; without
/// them (they belong to the shard mechanics) the ConfigMap's file must already be a
/// whole, runnable benchmark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configmaps_run_config_runs_as_it_is() {
    let server = MockServer::start(MockConfig::with_timing(1.0, 1.0))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let line = format!(
        "-m mock-model --url {} --streaming --concurrency 2 --request-count 6 --isl 16 \
         --osl 4 --tokenizer builtin --random-seed 7 --shards 2 --api-key-secret k",
        server.url()
    );
    let output = kube_generate(&args(&line));
    assert_exit(&output, 0);
    let documents = parse_documents(&String::from_utf8(output.stdout).unwrap());
    let file = tmp.path().join("run_config.json");
    std::fs::write(
        &file,
        documents[0]["data"]["run_config.json"].as_str().unwrap(),
    )
    .unwrap();
    let dir = tmp.path().join("run");
    let argv = vec![
        "-f".to_owned(),
        file.to_str().unwrap().to_owned(),
        "--artifact-dir".to_owned(),
        dir.to_str().unwrap().to_owned(),
    ];
    assert_exit(&profile(argv).await, 0);
    let summary = read_json(&dir.join("profile_export_aiperf.json"));
    assert_eq!(stat(&summary, "request_count", "avg"), 6.0);
    assert_eq!(
        read_json(&dir.join("run_config.json"))["input"]["random_seed"],
        7
    );
    assert!(Path::new(&dir.join("profile_export.jsonl")).exists());
}
