//! Asynchronous jobs in the engine: an endpoint's follow-ups make one record, bounded by
//! the request's client cancellation as a whole.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::{
    BoxFuture, BuiltRequest, Cancellation, Chunk, ClosedLoop, CollectRecords, Endpoint,
    EndpointError, EndpointInfo, FollowUp, HttpMethod, HttpRequest, HttpTrace, ParsedExchange,
    Phase, PhasePlan, RawExchange, RequestInput, RequestRecord, SamplingStrategy, Transport,
};

mod common;

use common::{dataset, Echo};

/// Echo's format, whose exchanges are tickets: polled `polls` times, 20 ms apart.
struct Ticket {
    polls: u32,
}

impl Endpoint for Ticket {
    fn info(&self) -> &EndpointInfo {
        &common::INFO
    }
    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        Echo.build(input)
    }
    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        Echo.parse(exchange)
    }
    fn follow_up(&self, request_url: &str, followed: u32, _: &RawExchange) -> FollowUp {
        if followed < self.polls {
            FollowUp::Poll {
                url: format!("{request_url}/job"),
                after: Duration::from_millis(20),
            }
        } else {
            FollowUp::Done
        }
    }
}

/// Answers every request at once with `job <n>` (`n` counting GETs; 0 for a submit).
#[derive(Default)]
struct JobServer {
    gets: AtomicUsize,
}

impl Transport for JobServer {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        Box::pin(async move {
            let at = Instant::now();
            let n = if request.method == HttpMethod::Get {
                self.gets.fetch_add(1, Ordering::SeqCst) + 1
            } else {
                0
            };
            RawExchange {
                started_at: at,
                head_at: Some(at),
                status: Some(200),
                content_type: None,
                headers: Vec::new(),
                chunks: [Chunk {
                    at,
                    bytes: format!("job {n}").as_bytes(),
                }]
                .into_iter()
                .collect(),
                ended_at: at,
                error: None,
                trace: Some(HttpTrace {
                    connection_reused: true,
                    connect: None,
                    request_sent_at: Some(at),
                    request_bytes: 100,
                    response_head_bytes: 50,
                }),
                retries: 0,
            }
        })
    }
}

async fn run(endpoint: Ticket, transport: Arc<JobServer>, plan: PhasePlan) -> Vec<RequestRecord> {
    aiperf_core::Benchmark::builder(&common::config())
        .endpoint(Arc::new(endpoint))
        .transport(transport)
        .conversations(dataset(2), SamplingStrategy::Sequential)
        .phase(plan)
        .sink(CollectRecords::default())
        .unwrap()
        .run()
        .await
        .unwrap()
}

fn two_requests() -> PhasePlan {
    PhasePlan {
        concurrency: Some(1),
        request_count: Some(2),
        ..PhasePlan::new(Phase::Profiling, Box::new(ClosedLoop))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polled_job_is_one_record_from_the_submit_to_the_last_poll() {
    let transport = Arc::new(JobServer::default());
    let records = run(Ticket { polls: 3 }, Arc::clone(&transport), two_requests()).await;
    assert_eq!(records.len(), 2);
    assert_eq!(transport.gets.load(Ordering::SeqCst), 6);
    // One at a time: the answers are the third and the sixth GET's bodies.
    let mut answers: Vec<&str> = records
        .iter()
        .flat_map(|r| r.responses.iter().map(|r| r.response.text.as_str()))
        .collect();
    answers.sort_unstable();
    assert_eq!(answers, ["job 3", "job 6"]);
    for record in &records {
        assert_eq!(record.error, None);
        // Three 20 ms waits lie between the submit's start and the last poll's end.
        assert!(record.end_ns - record.start_ns >= 60_000_000);
        // The HTTP trace describes one exchange; this record stands for four.
        assert!(record.http.is_none());
    }
    let plain = run(Ticket { polls: 0 }, Arc::default(), two_requests()).await;
    assert!(plain.iter().all(|record| record.http.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cancellation_bounds_the_whole_job_from_the_submit() {
    let transport = Arc::new(JobServer::default());
    let plan = PhasePlan {
        cancellation: Some(Cancellation {
            probability: 1.0,
            delay: Duration::from_millis(150),
            seed: 1,
        }),
        ..two_requests()
    };
    let records = run(Ticket { polls: u32::MAX }, Arc::clone(&transport), plan).await;
    assert_eq!(records.len(), 2);
    for record in &records {
        let error = record.error.as_ref().unwrap();
        assert_eq!(error.code, Some(499));
        assert_eq!(error.message, "Request cancelled 0.150s after being sent");
        let span = record.end_ns - record.start_ns;
        assert!((150_000_000..5_000_000_000).contains(&span), "{span} ns");
    }
    // Polled every 20 ms for 150 ms: no more than 8 GETs a job.
    let gets = transport.gets.load(Ordering::SeqCst);
    assert!((2..=16).contains(&gets), "{gets} GETs");
}
