//! Lock-free counters behind `/metrics`, `/vllm/metrics` and the DCGM load model.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::faults::FaultKind;

/// Routes the server knows, for the `route` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Chat,
    Completions,
    Embeddings,
    Ranking,
    TeiRerank,
    CohereRerank,
    Responses,
    Messages,
    ImageGenerations,
    ImageRetrieval,
    ImageEdits,
    AudioTranscriptions,
    SolidoRag,
    VideoCreate,
    VideoStatus,
    VideoContent,
    TgiGenerate,
    TgiGenerateStream,
    Models,
    Health,
    Metrics,
    Dcgm,
    Vllm,
    Root,
    Unknown,
}

impl Route {
    pub(crate) const ALL: [Route; 25] = [
        Route::Chat,
        Route::Completions,
        Route::Embeddings,
        Route::Ranking,
        Route::TeiRerank,
        Route::CohereRerank,
        Route::Responses,
        Route::Messages,
        Route::ImageGenerations,
        Route::ImageRetrieval,
        Route::ImageEdits,
        Route::AudioTranscriptions,
        Route::SolidoRag,
        Route::VideoCreate,
        Route::VideoStatus,
        Route::VideoContent,
        Route::TgiGenerate,
        Route::TgiGenerateStream,
        Route::Models,
        Route::Health,
        Route::Metrics,
        Route::Dcgm,
        Route::Vllm,
        Route::Root,
        Route::Unknown,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Route::Chat => "/v1/chat/completions",
            Route::Completions => "/v1/completions",
            Route::Embeddings => "/v1/embeddings",
            Route::Ranking => "/v1/ranking",
            Route::TeiRerank => "/rerank",
            Route::CohereRerank => "/v2/rerank",
            Route::Responses => "/v1/responses",
            Route::Messages => "/v1/messages",
            Route::ImageGenerations => "/v1/images/generations",
            Route::ImageRetrieval => "/v1/infer",
            Route::ImageEdits => "/v1/images/edits",
            Route::AudioTranscriptions => "/v1/audio/transcriptions",
            Route::SolidoRag => "/rag/api/prompt",
            Route::VideoCreate => "/v1/videos",
            Route::VideoStatus => "/v1/videos/{id}",
            Route::VideoContent => "/v1/videos/{id}/content",
            Route::TgiGenerate => "/generate",
            Route::TgiGenerateStream => "/generate_stream",
            Route::Models => "/v1/models",
            Route::Health => "/health",
            Route::Metrics => "/metrics",
            Route::Dcgm => "/dcgm/metrics",
            Route::Vllm => "/vllm/metrics",
            Route::Root => "/",
            Route::Unknown => "unknown",
        }
    }

    /// Inference routes get auth, faults, recording and in-flight accounting.
    pub(crate) fn is_inference(self) -> bool {
        matches!(
            self,
            Route::Chat
                | Route::Completions
                | Route::Embeddings
                | Route::Ranking
                | Route::TeiRerank
                | Route::CohereRerank
                | Route::Responses
                | Route::Messages
                | Route::ImageGenerations
                | Route::ImageRetrieval
                | Route::ImageEdits
                | Route::AudioTranscriptions
                | Route::SolidoRag
                | Route::VideoCreate
                | Route::TgiGenerate
                | Route::TgiGenerateStream
        )
    }
}

const STATUSES: [u16; 9] = [200, 400, 401, 404, 405, 429, 500, 503, 0];

fn status_index(code: u16) -> usize {
    STATUSES
        .iter()
        .position(|s| *s == code)
        .unwrap_or(STATUSES.len() - 1)
}

/// Bucket upper bounds (seconds) shared by the latency histograms.
pub(crate) const BUCKETS: [f64; 24] = [
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5,
    5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0,
];

/// A fixed-bucket histogram of durations with atomic cells.
#[derive(Debug)]
pub(crate) struct Histogram {
    /// Non-cumulative counts; the last cell is +Inf.
    cells: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            cells: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(BUCKETS.len());
        self.cells[i].fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// Cumulative counts per bucket (last = +Inf = total count) and the sum in seconds.
    pub(crate) fn snapshot(&self) -> (Vec<u64>, f64) {
        let mut acc = 0;
        let cum = self
            .cells
            .iter()
            .map(|c| {
                acc += c.load(Relaxed);
                acc
            })
            .collect();
        (cum, self.sum_ns.load(Relaxed) as f64 / 1e9)
    }
}

/// All counters of one server.
#[derive(Debug)]
pub(crate) struct Stats {
    requests: [[AtomicU64; STATUSES.len()]; Route::ALL.len()],
    pub connections_accepted: AtomicU64,
    pub connections_active: AtomicI64,
    pub tokens_generated: AtomicU64,
    pub reasoning_tokens: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub in_flight: AtomicI64,
    /// Prompt + planned output tokens of in-flight requests (the "KV cache" in use).
    pub active_tokens: AtomicI64,
    pub finished_length: AtomicU64,
    pub finished_stop: AtomicU64,
    faults: [AtomicU64; FaultKind::ALL.len()],
    pub ttft: Histogram,
    pub e2e: Histogram,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Self {
            requests: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            connections_accepted: AtomicU64::new(0),
            connections_active: AtomicI64::new(0),
            tokens_generated: AtomicU64::new(0),
            reasoning_tokens: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            in_flight: AtomicI64::new(0),
            active_tokens: AtomicI64::new(0),
            finished_length: AtomicU64::new(0),
            finished_stop: AtomicU64::new(0),
            faults: std::array::from_fn(|_| AtomicU64::new(0)),
            ttft: Histogram::new(),
            e2e: Histogram::new(),
        }
    }

    pub(crate) fn count_request(&self, route: Route, status: u16) {
        let r = Route::ALL.iter().position(|x| *x == route).unwrap_or(0);
        self.requests[r][status_index(status)].fetch_add(1, Relaxed);
    }

    pub(crate) fn count_fault(&self, kind: FaultKind) {
        self.faults[kind.index()].fetch_add(1, Relaxed);
    }

    pub(crate) fn fault_count(&self, kind: FaultKind) -> u64 {
        self.faults[kind.index()].load(Relaxed)
    }

    /// `(route label, status, count)` for every non-zero cell.
    pub(crate) fn request_counts(&self) -> Vec<(&'static str, String, u64)> {
        let mut out = Vec::new();
        for (r, route) in Route::ALL.iter().enumerate() {
            for (s, status) in STATUSES.iter().enumerate() {
                let n = self.requests[r][s].load(Relaxed);
                if n > 0 {
                    let status = if *status == 0 {
                        "other".to_string()
                    } else {
                        status.to_string()
                    };
                    out.push((route.label(), status, n));
                }
            }
        }
        out
    }

    pub(crate) fn snapshot(&self) -> MockStats {
        let requests_total = self
            .requests
            .iter()
            .flat_map(|row| row.iter())
            .map(|c| c.load(Relaxed))
            .sum();
        let mut requests_by_route: Vec<(&'static str, u64)> = Vec::new();
        for (route, row) in Route::ALL.iter().zip(&self.requests) {
            let n: u64 = row.iter().map(|c| c.load(Relaxed)).sum();
            if n > 0 {
                requests_by_route.push((route.label(), n));
            }
        }
        MockStats {
            requests_total,
            requests_by_route,
            connections_accepted: self.connections_accepted.load(Relaxed),
            tokens_generated: self.tokens_generated.load(Relaxed),
            reasoning_tokens: self.reasoning_tokens.load(Relaxed),
            prompt_tokens: self.prompt_tokens.load(Relaxed),
            in_flight: u64::try_from(self.in_flight.load(Relaxed)).unwrap_or(0),
            faults: FaultKind::ALL
                .iter()
                .map(|k| (*k, self.fault_count(*k)))
                .collect(),
        }
    }
}

/// A snapshot of a running server's counters (see [`crate::MockServer::stats`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockStats {
    /// Responses sent (or started), every route and status.
    pub requests_total: u64,
    /// Responses by route (its path pattern, e.g. `/v1/videos/{id}`), routes that had any.
    pub requests_by_route: Vec<(&'static str, u64)>,
    /// TCP connections accepted since start (compare with requests to check connection reuse).
    pub connections_accepted: u64,
    /// Output tokens sent, reasoning included.
    pub tokens_generated: u64,
    /// Of which reasoning tokens.
    pub reasoning_tokens: u64,
    /// Prompt tokens of the requests served.
    pub prompt_tokens: u64,
    /// Inference requests currently in flight.
    pub in_flight: u64,
    /// Faults injected, by kind (every kind listed, in [`FaultKind::ALL`] order).
    pub faults: Vec<(FaultKind, u64)>,
}

impl MockStats {
    /// How many responses `route` (a path pattern such as `/v1/videos/{id}`) sent.
    pub fn requests_to(&self, route: &str) -> u64 {
        self.requests_by_route
            .iter()
            .find(|(r, _)| *r == route)
            .map_or(0, |(_, n)| *n)
    }

    /// How many faults of `kind` were injected.
    pub fn faults_of(&self, kind: FaultKind) -> u64 {
        self.faults
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n)
    }
}
