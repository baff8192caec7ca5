use std::time::Duration;

use aiperf_core::config::{
    ArrivalPattern, CustomDatasetType, ExportLevel, ModelSelectionStrategy, PromptCorpus,
    RandomCorpusStyle,
};

use super::*;

fn parse(text: &str) -> Result<ConfigFile, ConfigFileError> {
    parse_config_file(text, "bench.yaml")
}

fn error(text: &str) -> String {
    parse(text)
        .expect_err("the file should be refused")
        .to_string()
}

#[test]
fn a_full_file_maps_onto_the_configuration() {
    let file = parse(
        r#"
schemaVersion: "2.0"
randomSeed: 7
benchmark:
  models: [a, b]
  endpoint:
    urls: [localhost:9000, mock]
    type: completions
    path: /v2/generate
    streaming: true
    timeout: 2m
    apiKey: sk-1
    headers: {X-Team: perf}
    extra: {ignore_eos: true, temperature: 0.5}
    connectionReuse: never
  dataset:
    type: synthetic
    entries: 12
    prompts:
      isl: {mean: 100, stddev: 5}
      osl: 20
  phases:
    - name: warmup
      type: concurrency
      excludeFromResults: true
      requests: 3
      concurrency: 2
    - name: profiling
      type: gamma
      rate: 12.5
      smoothness: 1.5
      concurrency: 4
      duration: 30s
      gracePeriod: 5
      rateRamp: 10
  slos: {request_latency: 500, time_to_first_token: 50}
  artifacts:
    dir: out/x
    prefix: px
    raw: true
    sliceDuration: 10s
  tokenizer: {name: gpt2}
"#,
    )
    .unwrap();
    let c = &file.benchmark;
    assert_eq!(c.endpoint.models, ["a", "b"]);
    assert_eq!(c.endpoint.urls, ["http://localhost:9000", "mock"]);
    assert_eq!(c.endpoint.endpoint_type, "completions");
    assert_eq!(c.endpoint.custom_endpoint.as_deref(), Some("/v2/generate"));
    assert!(c.endpoint.streaming);
    assert_eq!(c.endpoint.request_timeout, Duration::from_secs(120));
    assert_eq!(c.endpoint.api_key.as_deref(), Some("sk-1"));
    assert_eq!(
        c.endpoint.headers,
        [("X-Team".to_string(), "perf".to_string())]
    );
    assert_eq!(
        serde_json::Value::Object(c.endpoint.extra_inputs.clone()),
        serde_json::json!({"ignore_eos": true, "temperature": 0.5})
    );
    assert_eq!(
        file.transport.connection_reuse,
        crate::ConnectionReuse::Never
    );
    assert_eq!(c.input.random_seed, Some(7));
    assert_eq!(c.input.num_dataset_entries, Some(12));
    assert_eq!((c.input.isl_mean, c.input.isl_stddev), (100, 5.0));
    assert_eq!((c.input.osl_mean, c.input.osl_stddev), (Some(20), 0.0));
    assert_eq!(c.load.warmup.request_count, Some(3));
    assert_eq!(c.load.warmup.concurrency, Some(2));
    assert_eq!(c.load.request_rate, Some(12.5));
    assert_eq!(c.load.arrival_pattern, Some(ArrivalPattern::Gamma));
    assert_eq!(c.load.arrival_smoothness, Some(1.5));
    assert_eq!(c.load.concurrency, Some(4));
    assert_eq!(c.load.benchmark_duration, Some(30.0));
    assert_eq!(c.load.benchmark_grace_period, Some(5.0));
    assert_eq!(c.load.request_rate_ramp_duration, Some(10.0));
    assert_eq!(
        c.goodput,
        [
            ("request_latency".to_string(), 500.0),
            ("time_to_first_token".to_string(), 50.0)
        ]
    );
    assert_eq!(c.output.artifact_dir.as_deref(), Some(Path::new("out/x")));
    assert_eq!(c.output.export_prefix.as_deref(), Some("px"));
    assert_eq!(c.output.export_level, ExportLevel::Raw);
    assert_eq!(file.records.slice_duration, Some(Duration::from_secs(10)));
    assert_eq!(c.input.tokenizer.as_deref(), Some("gpt2"));
    file.into_run_spec().unwrap();
}

#[test]
fn shorthands_read_like_their_long_forms() {
    let file = parse(
        "benchmark:\n  model: m\n  dataset: {type: file, path: t.jsonl, format: mooncake_trace}\n  \
         warmup: {type: concurrency, requests: 5}\n  profiling: {type: poisson, rate: 3, requests: 9}\n",
    )
    .unwrap();
    let c = &file.benchmark;
    assert_eq!(c.input.input_file.as_deref(), Some(Path::new("t.jsonl")));
    assert_eq!(
        c.input.custom_dataset_type,
        Some(CustomDatasetType::MooncakeTrace)
    );
    assert_eq!(c.load.warmup.request_count, Some(5));
    assert_eq!(c.load.request_rate, Some(3.0));
    assert_eq!(c.load.arrival_pattern, Some(ArrivalPattern::Poisson));
    assert_eq!(c.load.request_count, Some(9));
}

#[test]
fn the_baseten_body_options_are_read() {
    let file = parse(
        "benchmark:\n  model: m\n  dataset: {type: file, path: t.parquet, format: baseten_trace, \
         omit_kv_hints: true, force_min_tokens: false}\n",
    )
    .unwrap();
    let trace = &file.benchmark.input.trace;
    assert!(trace.omit_kv_hints && trace.omit_min_tokens);
}

#[test]
fn every_dataset_file_format_is_named_as_on_the_command_line() {
    for format in CustomDatasetType::every() {
        let file = parse(&format!(
            "benchmark:\n  model: m\n  dataset: {{type: file, path: t, format: {}}}\n",
            format.as_str()
        ))
        .unwrap();
        assert_eq!(file.benchmark.input.custom_dataset_type, Some(format));
    }
}

#[test]
fn an_unknown_key_is_refused_with_its_line_and_the_nearest_key() {
    assert_eq!(
        error("benchmark:\n  model: m\n  endpoint:\n    ulr: http://x\n"),
        "bench.yaml:4: benchmark.endpoint.ulr: unknown key; did you mean `url`?"
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  phases:\n    - type: concurrency\n      concurency: 3\n"),
        "bench.yaml:5: benchmark.phases[0].concurency: unknown key; did you mean `concurrency`?"
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  banana: 1\n"),
        "bench.yaml:3: benchmark.banana: unknown key"
    );
}

#[test]
fn a_0_13_key_without_an_implementation_is_refused_by_name() {
    assert_eq!(
        error("benchmark:\n  model: m\n  endpoint:\n    url: x\n    template: {body: '{}'}\n"),
        "bench.yaml:5: benchmark.endpoint.template: not available in aiperf-rs (a key of the \
         Python AIPerf 0.13 this implementation does not support; remove it)"
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  wandb: {project: p}\n"),
        "bench.yaml:3: benchmark.wandb: not available in aiperf-rs (a key of the Python \
         AIPerf 0.13 this implementation does not support; remove it)"
    );
}

#[test]
fn wrong_values_name_the_file_line_and_key() {
    assert_eq!(
        error("benchmark:\n  model: m\n  phases:\n    type: concurrency\n    concurrency: many\n"),
        "bench.yaml:5: benchmark.phases.concurrency: expected a whole number, got \"many\""
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  endpoint:\n    streaming: sometimes\n"),
        "bench.yaml:4: benchmark.endpoint.streaming: expected true or false, got \"sometimes\""
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  endpoint:\n    timeout: soon\n"),
        "bench.yaml:4: benchmark.endpoint.timeout: expected a duration (seconds, or e.g. \
         500ms, 30s, 2m, 1h), got \"soon\""
    );
    assert_eq!(
        error("schemaVersion: '1.0'\nbenchmark: {model: m}\n"),
        "bench.yaml:1: schemaVersion: schema version \"1.0\" is not supported; aiperf-rs \
         reads version \"2.0\""
    );
    assert_eq!(
        error("randomSeed: 1\n"),
        "bench.yaml:1: benchmark: missing: the file needs a `benchmark:` section"
    );
    assert_eq!(
        error("benchmark: [1, 2\n"),
        "bench.yaml:2: while parsing a flow sequence, expected ',' or ']'"
    );
}

#[test]
fn rule_violations_are_found_when_the_runs_are_validated() {
    let file =
        parse("benchmark:\n  model: m\n  phases: {type: concurrency, gracePeriod: 3}\n").unwrap();
    assert_eq!(
        file.into_run_spec().unwrap_err().to_string(),
        "bench.yaml: load.benchmark_grace_period requires load.benchmark_duration"
    );
}

#[test]
fn a_grid_sweep_expands_to_every_combination_in_order() {
    let file = parse(
        "sweep:\n  type: grid\n  cooldownSeconds: 2\n  parameters:\n    concurrency: [1, 4]\n    \
         datasets.default.prompts.isl: [128, 512]\n\
         benchmark:\n  model: m\n  datasets:\n    - name: default\n      type: synthetic\n      \
         prompts: {isl: 64, osl: 8}\n  phases:\n    - {name: warmup, excludeFromResults: true, requests: 2}\n    \
         - {name: profiling, type: concurrency, concurrency: 9, requests: 10}\n",
    )
    .unwrap();
    let sweep = file.sweep.as_ref().unwrap();
    assert_eq!(sweep.cooldown, Duration::from_secs(2));
    let got: Vec<_> = sweep
        .points
        .iter()
        .map(|p| {
            (
                p.label.as_str(),
                p.benchmark.load.concurrency,
                p.benchmark.input.isl_mean,
            )
        })
        .collect();
    // Parameters combine in the order of their paths (datasets.… before phases.…), the
    // last varying fastest, and name the directories as the Python AIPerf 0.13 does.
    assert_eq!(
        got,
        [
            ("isl_128__concurrency_1", Some(1), 128),
            ("isl_128__concurrency_4", Some(4), 128),
            ("isl_512__concurrency_1", Some(1), 512),
            ("isl_512__concurrency_4", Some(4), 512),
        ]
    );
    assert_eq!(
        sweep.points[0].parameters,
        [
            ("isl".to_string(), "128".to_string()),
            ("concurrency".to_string(), "1".to_string())
        ]
    );
    // The rest of each point is the file's.
    assert!(sweep
        .points
        .iter()
        .all(|p| p.benchmark.load.warmup.request_count == Some(2)
            && p.benchmark.input.osl_mean == Some(8)));
    let spec = file.into_run_spec().unwrap();
    assert_eq!(spec.sweep.unwrap().points.len(), 4);
    assert_eq!(spec.benchmark.input.isl_mean, 128);
}

#[test]
fn a_zip_sweep_pairs_values_and_needs_equal_lengths() {
    let file = parse(
        "sweep:\n  type: zip\n  parameters:\n    rate: [1, 2]\n    phases.profiling.concurrency: [3, 6]\n\
         benchmark:\n  model: m\n  phases: {type: poisson, rate: 9, requests: 4}\n",
    )
    .unwrap();
    let points: Vec<_> = file
        .sweep
        .unwrap()
        .points
        .into_iter()
        .map(|p| {
            (
                p.label,
                p.benchmark.load.request_rate,
                p.benchmark.load.concurrency,
            )
        })
        .collect();
    assert_eq!(
        points,
        [
            ("concurrency_3__rate_1".to_string(), Some(1.0), Some(3)),
            ("concurrency_6__rate_2".to_string(), Some(2.0), Some(6)),
        ]
    );
    assert_eq!(
        error("sweep:\n  type: zip\n  parameters:\n    rate: [1, 2]\n    concurrency: [3]\nbenchmark: {model: m}\n"),
        "bench.yaml:5: sweep.parameters.concurrency: a zip sweep needs lists of the same \
         length: 1 values here, 2 in the first"
    );
    assert_eq!(
        error("sweep:\n  parameters:\n    phases.cooldown.rate: [1]\nbenchmark: {model: m}\n"),
        "bench.yaml:3: sweep.parameters.phases.cooldown.rate: the benchmark has no phase named \"cooldown\""
    );
}

#[test]
fn multi_run_reads_onto_the_multi_run_options() {
    let file = parse(
        "multiRun:\n  numRuns: 3\n  cooldownSeconds: 1.5\n  confidenceLevel: 0.9\n  \
         setConsistentSeed: false\n  disableWarmupAfterFirst: false\nbenchmark: {model: m}\n",
    )
    .unwrap();
    assert_eq!(
        file.runs,
        MultiRunOptions {
            count: 3,
            cooldown: Duration::from_millis(1500),
            confidence_level: 0.9,
            warmup_only_before_first_run: false,
            consistent_seed: false,
        }
    );
}

#[test]
fn every_template_loads_and_validates() {
    for template in TEMPLATES {
        let text = template.render(Some("my-model"), Some("http://h:1"));
        let file = parse_config_file(&text, template.name)
            .unwrap_or_else(|e| panic!("template {}: {e}", template.name));
        assert_eq!(
            file.benchmark.endpoint.models,
            ["my-model"],
            "{}",
            template.name
        );
        assert_eq!(
            file.benchmark.endpoint.urls,
            ["http://h:1"],
            "{}",
            template.name
        );
        file.into_run_spec()
            .unwrap_or_else(|e| panic!("template {}: {e}", template.name));
    }
}

#[test]
fn run_config_json_reads_back_as_written() {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["m".into()];
    config.input.random_seed = Some(99);
    config.load.concurrency = Some(3);
    let mut spec = RunSpec::new(config.clone().validate().unwrap());
    spec.transport.http2 = true;
    let json = serde_json::to_string_pretty(&RunConfig::of_run(&spec, &config)).unwrap();
    let file = parse_config_file(&json, "run_config.json").unwrap();
    assert_eq!(file.benchmark, config);
    assert!(file.transport.http2);
    let bad = json.replace("\"concurrency\": 3", "\"concurrency\": \"x\"");
    let message = parse_config_file(&bad, "run_config.json")
        .unwrap_err()
        .to_string();
    assert!(message.starts_with("run_config.json:"), "{message}");
}

#[test]
fn telemetry_sampling_and_url_strategy_map_onto_their_options() {
    let file = parse(
        "benchmark:\n  model: m\n  endpoint: {urls: [a, b], urlStrategy: round_robin}\n  \
         dataset: {type: synthetic, sampling: sequential}\n  \
         gpuTelemetry: {enabled: true, collector: dcgm, urls: [http://g:9400/metrics]}\n  \
         serverMetrics: {enabled: false, formats: [json, parquet]}\n",
    )
    .unwrap();
    assert_eq!(
        file.benchmark.input.sampling_strategy,
        Some(aiperf_core::dataset::SamplingStrategy::Sequential)
    );
    let telemetry = file.telemetry.unwrap();
    assert!(telemetry.gpu && !telemetry.server_metrics);
    assert_eq!(telemetry.gpu_urls, ["http://g:9400/metrics"]);
    assert_eq!(
        telemetry.server_metrics_formats,
        [
            aiperf_telemetry::export::ServerMetricsFormat::Json,
            aiperf_telemetry::export::ServerMetricsFormat::Parquet
        ]
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  gpuTelemetry: {collector: pynvml}\n"),
        "bench.yaml:3: benchmark.gpuTelemetry.collector: collector \"pynvml\" is not available \
         in aiperf-rs; run a DCGM exporter and use collector dcgm"
    );
    // A distribution aiperf-rs does not draw is refused by its key, not as a missing mean.
    assert_eq!(
        error("benchmark:\n  model: m\n  dataset:\n    isl:\n      peaks: []\n"),
        "bench.yaml:5: benchmark.dataset.isl.peaks: not available in aiperf-rs (a key of the \
         Python AIPerf 0.13 this implementation does not support; remove it)"
    );
}

#[test]
fn changes_to_every_run_keep_each_points_swept_values() {
    let mut file = parse(
        "sweep:\n  parameters:\n    concurrency: [1, 4]\n\
         benchmark:\n  model: m\n  endpoint: {url: 'http://u:p@h:1'}\n  \
         phases: [{name: profiling, type: concurrency, concurrency: 2, requests: 10}]\n",
    )
    .unwrap();
    file.change_every_run(|c| {
        c.load.concurrency = Some(8);
        c.load.request_count = Some(3);
        c.endpoint.api_key = Some("sk-1".into());
    });
    assert_eq!(file.benchmark.load.concurrency, Some(8));
    let points: Vec<_> = file
        .sweep
        .unwrap()
        .points
        .into_iter()
        .map(|p| {
            let c = p.benchmark;
            (
                c.load.concurrency,
                c.load.request_count,
                c.endpoint.api_key,
                c.endpoint.urls,
            )
        })
        .collect();
    let url = vec!["http://u:p@h:1".to_string()];
    assert_eq!(
        points,
        [
            (Some(1), Some(3), Some("sk-1".to_string()), url.clone()),
            (Some(4), Some(3), Some("sk-1".to_string()), url),
        ]
    );
}

#[test]
fn the_input_and_endpoint_options_of_issue_16_map_from_the_file() {
    let file = parse(
        r"
benchmark:
  model: m
  endpoint:
    url: localhost:9000
    perChunkUsage: true
    sessionHeader: X-Session-ID
  dataset:
    type: file
    path: trace.jsonl
    systemPrompt: Be brief.
    ignoreTraceDelays: true
    replaySpeedup: 2
    traceSessionSampleRatio: 0.5
",
    )
    .unwrap();
    let config = &file.benchmark;
    assert!(config.endpoint.per_chunk_usage);
    assert_eq!(
        config.endpoint.session_header.as_deref(),
        Some("X-Session-ID")
    );
    assert_eq!(
        config.input.prompt.system_prompt.as_deref(),
        Some("Be brief.")
    );
    let trace = &config.input.trace;
    assert!(trace.ignore_delays && !trace.use_think_time_only);
    assert_eq!(trace.replay_speedup, Some(2.0));
    assert_eq!(trace.session_sample_ratio, Some(0.5));

    let synthetic =
        parse("benchmark:\n  model: m\n  dataset:\n    systemPromptFile: prompt.txt\n").unwrap();
    assert_eq!(
        synthetic.benchmark.input.prompt.system_prompt_file,
        Some("prompt.txt".into())
    );
    // A synthetic dataset has no trace timing to speed up.
    assert_eq!(
        error("benchmark:\n  model: m\n  dataset:\n    replaySpeedup: 2\n"),
        "bench.yaml:4: benchmark.dataset.replaySpeedup: unknown key"
    );
}

#[test]
fn weighted_model_selection_reads_its_weights_and_checks_them_at_their_line() {
    let file = parse(
        "benchmark:\n  models:\n    strategy: weighted\n    items:\n      - {name: a, weight: 0.7}\n      - {name: b, weight: 0.3}\n",
    )
    .unwrap();
    assert_eq!(file.benchmark.endpoint.models, ["a", "b"]);
    assert_eq!(
        file.benchmark.input.model_selection,
        ModelSelectionStrategy::Weighted(vec![0.7, 0.3])
    );
    // It survives run_config.json and validation.
    let json = serde_json::to_string(&file.benchmark).unwrap();
    assert!(
        json.contains(r#""model_selection":{"weighted":[0.7,0.3]}"#),
        "{json}"
    );
    file.into_run_spec().unwrap();

    assert_eq!(
        error("benchmark:\n  models:\n    strategy: weighted\n    items:\n      - {name: a, weight: 0.7}\n      - {name: b}\n"),
        "bench.yaml:6: benchmark.models.items[1]: missing `weight`: the weighted strategy \
         needs one on every model"
    );
    assert_eq!(
        error("benchmark:\n  models:\n    strategy: weighted\n    items: [{name: a, weight: 0.5}, {name: b, weight: 0.3}]\n"),
        "bench.yaml:3: benchmark.models.strategy: invalid input.model_selection: model \
         weights must sum to 1.0 (within 0.01), got 0.8"
    );
    assert_eq!(
        error("benchmark:\n  models:\n    items: [{name: a, lora: l}]\n"),
        "bench.yaml:3: benchmark.models.items[0].lora: not available in aiperf-rs (a key of \
         the Python AIPerf 0.13 this implementation does not support; remove it)"
    );
}

#[test]
fn the_readiness_probe_reads_from_the_endpoint_section() {
    let file = parse(
        "benchmark:\n  model: m\n  endpoint:\n    waitForModelTimeout: 2m\n    waitForModelInterval: 500ms\n    waitForModelMode: both\n",
    )
    .unwrap();
    let readiness = file.readiness.unwrap();
    assert_eq!(readiness.timeout, Duration::from_secs(120));
    assert_eq!(readiness.interval, Duration::from_millis(500));
    assert_eq!(readiness.mode, aiperf_endpoints::readiness::WaitMode::Both);
    let defaults = parse("benchmark:\n  model: m\n  endpoint: {waitForModelTimeout: 30}\n")
        .unwrap()
        .readiness
        .unwrap();
    assert_eq!(defaults.interval, Duration::from_secs(5));
    assert_eq!(
        defaults.mode,
        aiperf_endpoints::readiness::WaitMode::Inference
    );
    assert!(
        parse("benchmark:\n  model: m\n  endpoint: {waitForModelTimeout: 0}\n")
            .unwrap()
            .readiness
            .is_none()
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  endpoint:\n    waitForModelMode: models\n"),
        "bench.yaml:4: benchmark.endpoint.waitForModelMode: has no effect without a \
         waitForModelTimeout above 0, which turns the readiness probe on"
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  endpoint:\n    waitForModelTimeout: 5\n    waitForModelMode: sometimes\n"),
        "bench.yaml:5: benchmark.endpoint.waitForModelMode: expected inference, models or \
         both, got \"sometimes\""
    );
}

#[test]
fn the_prompt_corpus_and_its_style_map_from_the_dataset_prompts() {
    let synthetic = parse(
        "benchmark:\n  model: m\n  dataset:\n    prompts:\n      corpus: coding\n      \
         randomCorpusStyle: SGLang\n",
    )
    .unwrap();
    let prompt = &synthetic.benchmark.input.prompt;
    assert_eq!(prompt.corpus, Some(PromptCorpus::Coding));
    assert_eq!(prompt.random_corpus_style, RandomCorpusStyle::Sglang);
    let trace = parse(
        "benchmark:\n  model: m\n  dataset:\n    type: file\n    path: t.jsonl\n    prompts: \
         {corpus: random}\n",
    )
    .unwrap();
    assert_eq!(
        trace.benchmark.input.prompt.corpus,
        Some(PromptCorpus::Random)
    );
    assert_eq!(
        error("benchmark:\n  model: m\n  dataset:\n    prompts: {corpus: poems}\n"),
        "bench.yaml:4: benchmark.dataset.prompts.corpus: expected sonnet, coding or random, \
         got \"poems\""
    );
    assert_eq!(
        error(
            "benchmark:\n  model: m\n  dataset:\n    type: file\n    path: t.jsonl\n    \
             prompts: {isl: 5}\n"
        ),
        "bench.yaml:6: benchmark.dataset.prompts.isl: unknown key"
    );
}

#[test]
fn a_file_dataset_s_synthesis_block_size_and_context_limit_map_onto_the_trace_options() {
    let file = parse(
        r"
benchmark:
  model: m
  dataset:
    type: file
    path: trace.jsonl
    format: mooncake_trace
    blockSize: 32
    maxContextLength: 9000
    synthesis:
      speedupRatio: 2.5
      prefixLenMultiplier: 1.5
      prefixRootMultiplier: 3
      promptLenMultiplier: 0.5
      outputLenMultiplier: 2
      maxIsl: 8192
      maxOsl: 2048
      allowDatasetWrap: true
",
    )
    .unwrap();
    let input = &file.benchmark.input;
    assert_eq!(input.isl_block_size, Some(32));
    assert_eq!(input.trace.max_context_length, Some(9000));
    assert!(input.trace.allow_dataset_wrap);
    assert_eq!(
        input.trace.synthesis,
        aiperf_core::config::TraceSynthesis {
            speedup_ratio: 2.5,
            prefix_len_multiplier: 1.5,
            prefix_root_multiplier: 3,
            prompt_len_multiplier: 0.5,
            output_len_multiplier: 2.0,
            max_isl: Some(8192),
            max_osl: Some(2048),
        }
    );
    assert_eq!(
        error(
            "benchmark:\n  model: m\n  dataset:\n    type: file\n    path: t.jsonl\n    \
             synthesis:\n      prefixRootMultiplier: 1.5\n"
        ),
        "bench.yaml:7: benchmark.dataset.synthesis.prefixRootMultiplier: expected a whole \
         number, got \"1.5\""
    );
    assert_eq!(
        error(
            "benchmark:\n  model: m\n  dataset:\n    type: file\n    path: t.jsonl\n    \
             synthesis:\n      speedupRatoi: 2\n"
        ),
        "bench.yaml:7: benchmark.dataset.synthesis.speedupRatoi: unknown key; did you mean \
         `speedup_ratio`?"
    );
}

#[test]
fn a_public_dataset_maps_like_its_flags() {
    let weka = parse(
        "benchmark:\n  model: m\n  dataset:\n    type: public\n    dataset: weka_hf\n    \
         hfWekaDataset: semianalysisai/cc-traces-weka-test\n    hfSubset: small\n    \
         entries: 5\n    use_think_time_only: true\n    max_context_length: 4096\n",
    )
    .unwrap();
    let input = &weka.benchmark.input;
    assert_eq!(
        input
            .public_dataset
            .as_ref()
            .map(aiperf_core::config::PublicDataset::name),
        Some("weka_hf")
    );
    assert_eq!(
        input.hf_weka_dataset.as_deref(),
        Some("semianalysisai/cc-traces-weka-test")
    );
    assert_eq!(input.hf_subset.as_deref(), Some("small"));
    assert_eq!(input.num_dataset_entries, Some(5));
    assert!(input.trace.use_think_time_only);
    assert_eq!(input.trace.max_context_length, Some(4096));

    let exgentic = parse(
        "benchmark:\n  model: m\n  dataset:\n    type: public\n    dataset: exgentic_v2\n    \
         filters:\n      harness: claude_code\n      benchmark: swebench\n",
    )
    .unwrap();
    let filters: Vec<(&str, &str)> = exgentic
        .benchmark
        .input
        .dataset_filters
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        filters,
        [("benchmark", "swebench"), ("harness", "claude_code")]
    );

    assert_eq!(
        error("benchmark:\n  model: m\n  dataset:\n    type: public\n    hf_subset: x\n"),
        "bench.yaml:3: benchmark.dataset: a public dataset needs `dataset`"
    );
    // Checked with the rest of the configuration, as the flag is.
    let misplaced = parse(
        "benchmark:\n  model: m\n  dataset:\n    type: public\n    dataset: aimo\n    \
         hf_weka_dataset: semianalysisai/cc-traces-weka-test\n",
    )
    .unwrap();
    assert_eq!(
        misplaced.benchmark.validate().unwrap_err().to_string(),
        "input.hf_weka_dataset requires input.public_dataset weka_hf"
    );
    weka.benchmark.validate().unwrap();
}
