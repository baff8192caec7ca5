//! Shards: N engines built from one configuration, each with `load.shard` set, send
//! exactly the requests one engine sends — the same conversations for the same session
//! numbers, whatever the load shape — and each keeps its share of the limits.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::time::Duration;

use aiperf_core::config::{Shard, UserCentricConfig};
use aiperf_core::{
    Benchmark, BenchmarkConfig, CollectRecords, ConfigError, Conversation, ConversationStream,
    Phase, RequestRecord, SamplingStrategy, Turn,
};
use common::{Echo, SlowEcho};

/// (warmup?, conversation, turn, body) of every request, sorted.
type Sent = Vec<(bool, String, usize, String)>;

fn dataset(turns: usize) -> Vec<Conversation> {
    (0..7)
        .map(|c| Conversation {
            session_id: format!("c{c}"),
            turns: (0..turns)
                .map(|t| Turn {
                    timestamp_ms: Some(f64::from(c * 15 + t as i32)),
                    ..Turn::text(format!("conversation {c} turn {t}"))
                })
                .collect(),
            ..Conversation::default()
        })
        .collect()
}

/// Where a run's conversations come from.
enum Source {
    Loaded(Vec<Conversation>),
    Streamed(ConversationStream),
}

async fn run(
    change: &dyn Fn(&mut BenchmarkConfig),
    shard: Option<Shard>,
    conversations: Vec<Conversation>,
) -> Vec<RequestRecord> {
    run_source(change, shard, Source::Loaded(conversations)).await
}

async fn run_source(
    change: &dyn Fn(&mut BenchmarkConfig),
    shard: Option<Shard>,
    source: Source,
) -> Vec<RequestRecord> {
    let config = common::config_with(|config| {
        change(config);
        config.load.shard = shard;
    });
    let transport = Arc::new(SlowEcho {
        latency: Duration::from_millis(2),
        ..SlowEcho::default()
    });
    let builder = match source {
        Source::Loaded(conversations) => {
            Benchmark::builder(&config).conversations(conversations, SamplingStrategy::Shuffle)
        }
        Source::Streamed(stream) => Benchmark::builder(&config).conversation_stream(stream),
    };
    builder
        .endpoint(Arc::new(Echo))
        .transport(transport)
        .sink(CollectRecords::default())
        .unwrap()
        .run()
        .await
        .unwrap()
}

fn sent(records: &[RequestRecord]) -> Sent {
    let mut sent: Sent = records
        .iter()
        .map(|r| {
            (
                r.credit.phase == Phase::Warmup,
                r.credit.conversation.session_id.clone(),
                r.credit.turn_index,
                String::from_utf8_lossy(&r.payload).into_owned(),
            )
        })
        .collect();
    sent.sort();
    sent
}

/// The whole run's requests, and each of `count` shards' requests.
async fn whole_and_shards(
    change: &dyn Fn(&mut BenchmarkConfig),
    count: u32,
    turns: usize,
) -> (Sent, Vec<Sent>) {
    let whole = sent(&run(change, None, dataset(turns)).await);
    let mut shards = Vec::new();
    for index in 0..count {
        let shard = Shard::new(index, count).unwrap();
        shards.push(sent(&run(change, Some(shard), dataset(turns)).await));
    }
    (whole, shards)
}

fn union(shards: &[Sent]) -> Sent {
    let mut all: Sent = shards.iter().flatten().cloned().collect();
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_shards_send_the_whole_runs_requests_after_a_counted_warmup() {
    let change = |c: &mut BenchmarkConfig| {
        c.load.concurrency = Some(4);
        c.load.request_count = Some(23);
        c.load.warmup.request_count = Some(5);
    };
    let (whole, shards) = whole_and_shards(&change, 3, 1).await;
    assert_eq!(whole.len(), 28);
    assert_eq!(union(&shards), whole);
    // 23 = 8 + 8 + 7 profiling requests; 5 = 2 + 2 + 1 warmup requests.
    let profiling: Vec<usize> = shards
        .iter()
        .map(|s| s.iter().filter(|r| !r.0).count())
        .collect();
    assert_eq!(profiling, [8, 8, 7]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_of_a_stream_send_the_whole_runs_requests_after_a_counted_warmup() {
    let change = |c: &mut BenchmarkConfig| {
        c.load.concurrency = Some(4);
        c.load.request_count = Some(23);
        c.load.warmup.request_count = Some(5);
    };
    // Fewer conversations than draws: the run passes over the stream twice, and each
    // shard passes over the other shards' draws, warmup's included.
    let stream = || ConversationStream::new(7, || dataset(1).into_iter().map(Ok)).single_turn();
    let whole = sent(&run_source(&change, None, Source::Streamed(stream())).await);
    let mut shards = Vec::new();
    for index in 0..3 {
        let shard = Some(Shard::new(index, 3).unwrap());
        shards.push(sent(
            &run_source(&change, shard, Source::Streamed(stream())).await,
        ));
    }
    assert_eq!(whole.len(), 28);
    assert_eq!(union(&shards), whole);
    // Dataset order: warmup draws 0 to 4, profiling 5, 6, then 0 to 6 three times over.
    let profiling_c0 = whole.iter().filter(|r| !r.0 && r.1 == "c0").count();
    assert_eq!(profiling_c0, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_shards_split_the_arrivals_of_one_schedule() {
    let change = |c: &mut BenchmarkConfig| {
        c.load.request_rate = Some(400.0);
        c.load.request_count = Some(20);
    };
    let (whole, shards) = whole_and_shards(&change, 4, 1).await;
    assert_eq!(whole.len(), 20);
    assert_eq!(union(&shards), whole);
    assert!(shards.iter().all(|s| s.len() == 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_sessions_stay_whole_on_one_shard() {
    let change = |c: &mut BenchmarkConfig| {
        c.load.concurrency = Some(3);
        c.load.num_sessions = Some(10);
    };
    let (whole, shards) = whole_and_shards(&change, 3, 3).await;
    assert_eq!(whole.len(), 30);
    assert_eq!(union(&shards), whole);
    // 10 sessions = 4 + 3 + 3, three turns each.
    let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
    assert_eq!(sizes, [12, 9, 9]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_trace_is_split_by_session() {
    let change = |c: &mut BenchmarkConfig| {
        c.load.fixed_schedule.enabled = Some(true);
        c.load.fixed_schedule.auto_offset = true;
        c.input.input_file = Some("trace.jsonl".into());
    };
    let (whole, shards) = whole_and_shards(&change, 2, 2).await;
    assert_eq!(whole.len(), 14, "every turn of the trace");
    assert_eq!(union(&shards), whole);
    let first: Vec<&str> = shards[0].iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        first,
        ["c0", "c0", "c2", "c2", "c4", "c4", "c6", "c6"],
        "trace sessions 0, 2, 4, 6"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_users_are_partitioned() {
    let change = |c: &mut BenchmarkConfig| {
        c.load.user_centric = Some(UserCentricConfig {
            rate: 200.0,
            num_users: 4,
        });
        c.load.num_users = Some(4);
        c.load.num_sessions = Some(8);
    };
    let (whole, shards) = whole_and_shards(&change, 2, 2).await;
    assert_eq!(union(&shards), whole);
    assert!(!shards[0].is_empty() && !shards[1].is_empty());
}

#[test]
fn a_shard_without_work_or_without_a_seed_is_refused() {
    let base = || {
        let mut config = BenchmarkConfig::default();
        config.endpoint.models = vec!["m".into()];
        config.endpoint.urls = vec!["http://127.0.0.1:1".into()];
        config.input.random_seed = Some(1);
        config.load.shard = Shard::new(0, 4);
        config
    };
    let mut few_slots = base();
    few_slots.load.concurrency = Some(3);
    assert_eq!(
        few_slots.validate().unwrap_err().to_string(),
        "invalid load.concurrency: 3 cannot be split over 4 shards: each shard needs at least one"
    );
    let mut no_seed = base();
    no_seed.load.concurrency = Some(4);
    no_seed.input.random_seed = None;
    assert!(matches!(
        no_seed.validate().unwrap_err(),
        ConfigError::Requires {
            field: "load.shard",
            ..
        }
    ));
    let mut fine = base();
    fine.load.concurrency = Some(4);
    fine.load.request_count = Some(4);
    assert!(fine.validate().is_ok());
}
