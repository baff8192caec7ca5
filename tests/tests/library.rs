//! The library API as a Rust test harness uses it: benchmark a server in-process and
//! assert an SLO on the summary.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;

use aiperf_core::config::InputConfig;
use aiperf_core::{
    Benchmark, BenchmarkBuilder, BenchmarkConfig, CollectRecords, DatasetSource, SamplingStrategy,
    ValidatedConfig,
};
use aiperf_datasets::{SyntheticDataset, Tokenizer};
use aiperf_endpoints::{endpoint_for, EndpointOptions, HttpTransport};
use aiperf_metrics::slo::parse_slos;
use aiperf_metrics::MetricsSink;
use aiperf_mock_server::{MockConfig, MockServer};

fn config(server: &MockServer, concurrency: usize, requests: u64) -> ValidatedConfig {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["mock-model".into()];
    config.endpoint.urls = vec![server.url()];
    config.endpoint.streaming = true;
    config.load.concurrency = Some(concurrency);
    config.load.request_count = Some(requests);
    config.validate().unwrap()
}

fn conversations(tokenizer: &Tokenizer) -> Vec<aiperf_core::Conversation> {
    SyntheticDataset::new(
        &InputConfig {
            isl_mean: 32,
            osl_mean: Some(16),
            num_dataset_entries: Some(10),
            random_seed: Some(3),
            ..InputConfig::default()
        },
        &[],
        tokenizer.clone(),
    )
    .unwrap()
    .load()
    .unwrap()
    .conversations
}

/// A chat benchmark as `config` describes it.
fn chat_benchmark(config: &ValidatedConfig) -> BenchmarkBuilder {
    Benchmark::builder(config)
        .endpoint(endpoint_for("chat", EndpointOptions::default()).unwrap())
        .transport(Arc::new(HttpTransport::builder().build().unwrap()))
        .conversations(
            conversations(&Tokenizer::builtin()),
            SamplingStrategy::Sequential,
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p99_time_to_first_token_meets_an_slo_against_the_mock_server() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 2.0))
        .await
        .unwrap();
    let config = config(&server, 4, 32);
    let info = endpoint_for("chat", EndpointOptions::default())
        .unwrap()
        .info()
        .clone();
    let sink = MetricsSink::new(&config, &info, Arc::new(Tokenizer::builtin())).unwrap();
    let summary = chat_benchmark(&config)
        .sink(sink)
        .unwrap()
        .run()
        .await
        .unwrap();

    assert_eq!(summary.request_count(), 32);
    let ttft = summary.metric("time_to_first_token").unwrap();
    assert!(
        ttft.avg >= 20.0,
        "TTFT cannot beat the server's 20 ms: {}",
        ttft.avg
    );
    assert!(ttft.p99.unwrap() < 200.0, "p99 TTFT {:?}", ttft.p99);

    // The same gate as `aiperf profile --slo`, from Rust.
    let met = summary.check_slos(
        &parse_slos("time_to_first_token:p99:200 output_sequence_length:min:16").unwrap(),
    );
    assert!(met.passed(), "{}", met.render());
    let missed = summary.check_slos(
        &parse_slos("time_to_first_token:avg:5 request_throughput:avg:1000000").unwrap(),
    );
    assert!(!missed.passed());
    assert!(
        missed.outcomes.iter().all(|o| !o.passed),
        "{}",
        missed.render()
    );
    let osl = summary.metric("output_sequence_length").unwrap();
    assert_eq!((osl.min, osl.max), (Some(16.0), Some(16.0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_records_carry_parsed_responses_and_exact_payloads() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let tokenizer = Tokenizer::builtin();
    let records = chat_benchmark(&config(&server, 2, 6))
        .sink(CollectRecords::default())
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(records.len(), 6);
    for record in &records {
        assert!(record.is_valid(), "{:?}", record.error);
        assert_eq!(record.status, Some(200));
        // 16 content deltas, one token each, in arrival order.
        let texts: Vec<&str> = record
            .content_responses()
            .map(|r| r.response.text.as_str())
            .collect();
        assert_eq!(texts.len(), 16);
        assert_eq!(tokenizer.count(&texts.concat()), 16);
        let payload: serde_json::Value = serde_json::from_slice(&record.payload).unwrap();
        assert_eq!(payload["max_completion_tokens"], 16);
        assert_eq!(payload["stream"], true);
        assert_eq!(record.input_text, payload["messages"][0]["content"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_describes_what_ran_whatever_the_sink_was_built_with() {
    // A sink built from a configuration other than the run's (no streaming, the default
    // URL) once dropped TTFT and echoed a URL never used; the engine now hands the sink
    // the configuration that runs.
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let ran = config(&server, 2, 6);
    let mut other = BenchmarkConfig::default();
    other.endpoint.models = vec!["another-model".into()];
    let other = other.validate().unwrap();
    let info = endpoint_for("chat", EndpointOptions::default())
        .unwrap()
        .info()
        .clone();
    let sink = MetricsSink::new(&other, &info, Arc::new(Tokenizer::builtin())).unwrap();
    let summary = chat_benchmark(&ran)
        .sink(sink)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(summary.request_count(), 6);
    assert!(summary.metric("time_to_first_token").is_some());
    assert_eq!(summary.config.endpoint.urls, [server.url()]);
    assert_eq!(summary.config.primary_model(), "mock-model");
    assert!(summary.config.endpoint.streaming);
}

/// Counts with a tokenizer and remembers the texts it counted; names itself as the
/// tokenizer does (known counts are taken) or not at all (every text is counted).
struct Spy {
    tokenizer: Tokenizer,
    takes_known_counts: bool,
    counted: std::sync::Mutex<Vec<String>>,
}

impl aiperf_core::TokenCounter for Spy {
    fn count_tokens(&self, text: &str) -> usize {
        self.counted.lock().unwrap().push(text.to_owned());
        self.tokenizer.count(text)
    }

    fn id(&self) -> Option<aiperf_core::CounterId> {
        self.takes_known_counts
            .then(|| aiperf_core::TokenCounter::id(&self.tokenizer))
            .flatten()
    }
}

/// The records of a run of the synthetic conversations of `input` (made with `made_with`)
/// under `config`, and per record its input sequence length as counted by `counter` with
/// and without known counts, whether its input text was left uncounted, and its turn.
async fn input_lengths(
    input: InputConfig,
    made_with: Tokenizer,
    counter: &Tokenizer,
    config: impl FnOnce(&mut BenchmarkConfig),
) -> Vec<InputLength> {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let mut run = BenchmarkConfig::default();
    run.endpoint.models = vec!["mock-model".into()];
    run.endpoint.urls = vec![server.url()];
    run.load.concurrency = Some(2);
    run.load.request_count = Some(8);
    config(&mut run);
    let run = run.validate().unwrap();
    let conversations = SyntheticDataset::new(&input, &[], made_with)
        .unwrap()
        .load()
        .unwrap()
        .conversations;
    let endpoint = endpoint_for("chat", EndpointOptions::default()).unwrap();
    let ctx = aiperf_metrics::MetricsContext::new(&run, endpoint.info());
    let records = Benchmark::builder(&run)
        .endpoint(endpoint)
        .transport(Arc::new(HttpTransport::builder().build().unwrap()))
        .conversations(conversations, SamplingStrategy::Sequential)
        .sink(CollectRecords::default())
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(records.len(), 8);
    let spy = |takes_known_counts| Spy {
        tokenizer: counter.clone(),
        takes_known_counts,
        counted: std::sync::Mutex::default(),
    };
    records
        .iter()
        .map(|record| {
            assert!(record.is_valid(), "{:?}", record.error);
            let (with, without) = (spy(true), spy(false));
            let known = aiperf_metrics::count_tokens(record, Some(&with), &ctx).input;
            let counted = aiperf_metrics::count_tokens(record, Some(&without), &ctx).input;
            assert!(without.counted.lock().unwrap().contains(&record.input_text));
            let taken = !with.counted.lock().unwrap().contains(&record.input_text);
            InputLength {
                known,
                counted,
                taken,
                turn: record.credit.turn_index,
            }
        })
        .collect()
}

/// A record's input sequence length with and without known counts.
struct InputLength {
    known: Option<u64>,
    counted: Option<u64>,
    taken: bool,
    turn: usize,
}

/// How many records took a known count, after checking every record's input length is
/// the one counting its input text gives.
fn taken(lengths: &[InputLength]) -> usize {
    for length in lengths {
        assert!(length.counted.is_some());
        assert_eq!(length.known, length.counted);
    }
    lengths.iter().filter(|length| length.taken).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_made_prompts_count_is_taken_only_where_it_is_what_counting_gives() {
    let o200k = Tokenizer::builtin();
    let input = |change: &dyn Fn(&mut InputConfig)| {
        let mut input = InputConfig {
            isl_mean: 40,
            osl_mean: Some(4),
            num_dataset_entries: Some(8),
            random_seed: Some(5),
            ..InputConfig::default()
        };
        change(&mut input);
        input
    };
    let lengths = |change: &'static dyn Fn(&mut InputConfig)| {
        input_lengths(input(change), o200k.clone(), &o200k, |_| {})
    };
    // One prompt sent alone: taken for every record, and it is the prompt's ISL.
    let alone = lengths(&|_| {}).await;
    assert_eq!(taken(&alone), 8);
    assert!(alone.iter().all(|length| length.known == Some(40)));
    // Anything sent with the prompt is counted: a shared system prompt, a user context,
    // a prefix, a batch of prompts; in a two-turn session, the second turn (its history).
    let with_system = lengths(&|i| i.prompt.shared_system_length = Some(7)).await;
    assert_eq!(taken(&with_system), 0);
    let with_context = lengths(&|i| i.prompt.user_context_length = Some(7)).await;
    assert_eq!(taken(&with_context), 0);
    let with_prefix = lengths(&|i| {
        i.prompt.prefix_pool_size = 2;
        i.prompt.prefix_length = 5;
    })
    .await;
    assert_eq!(taken(&with_prefix), 0);
    let batched = lengths(&|i| i.prompt.batch_size = 2).await;
    assert_eq!(taken(&batched), 0);
    let two_turns = lengths(&|i| i.session.turns_mean = 2).await;
    let first_turns = two_turns.iter().filter(|length| length.turn == 0).count();
    assert!((1..8).contains(&first_turns));
    assert_eq!(taken(&two_turns), first_turns);
    // A cache-bust marker put into the sent copy of the first turn's text.
    let marked = input_lengths(input(&|_| {}), o200k.clone(), &o200k, |run| {
        run.input.cache_bust = aiperf_core::cache_bust::CacheBust::FirstTurnPrefix;
    })
    .await;
    assert_eq!(taken(&marked), 0);
    // Prompts made with another tokenizer than the one counting.
    let cl100k = Tokenizer::tiktoken(aiperf_datasets::TiktokenEncoding::Cl100kBase);
    let other = input_lengths(input(&|_| {}), cl100k, &o200k, |_| {}).await;
    assert_eq!(taken(&other), 0);
}
