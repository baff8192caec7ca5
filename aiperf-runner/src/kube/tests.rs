use aiperf_core::BenchmarkConfig;

use super::*;
use crate::RunSpec;

/// 2026-11-26T10:00:00Z.
const START: u64 = 1_795_687_200;

fn run_config(concurrency: Option<usize>, request_count: Option<u64>) -> RunConfig {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["Qwen/Qwen3-0.6B".into()];
    config.endpoint.urls = vec!["http://vllm.inference.svc:8000".into()];
    config.endpoint.api_key = Some("sk-secret-value".into());
    config.endpoint.streaming = true;
    config.load.concurrency = concurrency;
    config.load.request_count = request_count;
    config.input.random_seed = Some(42);
    let spec = RunSpec::new(config.validate().expect("a valid configuration"));
    RunConfig::of_run(&spec, &spec.benchmark)
}

fn example_options() -> KubeOptions {
    KubeOptions {
        name: "qwen-bench".into(),
        namespace: "bench".into(),
        image: "registry.example.com/aiperf-rs:0.1.0".into(),
        api_key_secret: Some("inference-key".into()),
        clock_reference: Some("time.google.com".into()),
        ..KubeOptions::new(4, START)
    }
}

/// The example in docs/scale-out.md is this test's output: a change to the manifests
/// shows there. `AIPERF_UPDATE_DOCS=1 cargo test -p aiperf-runner kube` rewrites it.
#[test]
fn manifests_for_a_fixed_config_and_start_are_exactly_the_documented_example() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/scale-out-example.yaml"
    );
    let generated =
        generate(&run_config(Some(256), Some(100_000)), &example_options()).expect("valid options");
    if std::env::var_os("AIPERF_UPDATE_DOCS").is_some() {
        std::fs::write(path, &generated).expect("docs/ is writable");
    }
    let documented = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        generated == documented,
        "docs/scale-out-example.yaml is stale: run \
         `AIPERF_UPDATE_DOCS=1 cargo test -p aiperf-runner kube`\n{generated}"
    );
    assert!(!generated.contains("sk-secret-value"));
}

#[test]
fn the_same_input_gives_the_same_text() {
    let run = run_config(Some(8), None);
    let first = generate(&run, &example_options()).expect("valid");
    assert_eq!(generate(&run, &example_options()).expect("valid"), first);
}

#[test]
fn requests_are_sized_from_each_shards_part_of_the_load() {
    let sized = |concurrency, rate, count, shards| {
        let mut config = BenchmarkConfig::default();
        config.load.concurrency = concurrency;
        config.load.request_rate = rate;
        config.load.request_count = count;
        Resources::for_load(&config, shards)
    };
    let expect = |cpu: &str, memory: &str| Resources {
        cpu: cpu.into(),
        memory: memory.into(),
    };
    // 1,000 streams over 4 shards: 250 each; 1,000,000 requests: 250,000 × 256 B ≈ 62 MiB.
    assert_eq!(
        sized(Some(1000), None, Some(1_000_000), 4),
        expect("500m", "504Mi")
    );
    // 10 streams over 4 shards round up to 3 each.
    assert_eq!(sized(Some(10), None, None, 4), expect("253m", "195Mi"));
    // A rate of 100 requests/s over 3 shards: 34 in flight each.
    assert_eq!(sized(None, Some(100.0), None, 3), expect("284m", "226Mi"));
    assert_eq!(sized(None, None, None, 2), expect("251m", "193Mi"));
}

#[test]
fn values_kubernetes_would_refuse_are_refused_by_name() {
    let refused = |change: fn(&mut KubeOptions)| {
        let mut options = KubeOptions::new(2, START);
        change(&mut options);
        generate(&run_config(Some(4), None), &options)
            .expect_err("invalid options")
            .to_string()
    };
    assert_eq!(
        refused(|o| o.shards = 0),
        "the shard count must be at least 1"
    );
    assert!(refused(|o| o.name = "Bench".into()).starts_with("name `Bench`: must be lowercase"));
    assert!(refused(|o| o.name = "a".repeat(41)).starts_with("name `aaaa"));
    assert!(
        refused(|o| o.namespace = "-x".into()).starts_with("namespace `-x`: must be a DNS label")
    );
    assert!(refused(|o| o.results_pvc = "a_b".into()).starts_with("results-pvc `a_b`"));
    assert!(refused(|o| o.api_key_secret = Some("Key".into())).starts_with("api-key-secret `Key`"));
    assert!(refused(|o| o.image = "a b".into()).starts_with("image `a b`"));
    assert_eq!(
        refused(|o| {
            o.resources = Some(Resources {
                cpu: "2 cores".into(),
                memory: "1Gi".into(),
            });
        }),
        "cpu-request `2 cores`: must be a Kubernetes quantity such as 500m, 2, 512Mi or 1Gi"
    );
}

#[test]
fn start_instants_are_written_as_rfc_3339_in_utc() {
    assert_eq!(format_start_instant(START), "2026-11-26T10:00:00Z");
    assert_eq!(format_start_instant(951_782_400), "2000-02-29T00:00:00Z");
}
