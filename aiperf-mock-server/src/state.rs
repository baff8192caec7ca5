//! State shared by every connection of one server.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Instant;

use crate::accuracy::AccuracyMode;
use crate::config::MockConfig;
use crate::record::Recorder;
use crate::routes::dcgm::DcgmState;
use crate::routes::videos::VideoJobs;
use crate::stats::Stats;
use crate::tokens::PromptCounter;

/// Configuration plus live counters; one per server, shared through an `Arc`.
#[derive(Debug)]
pub(crate) struct State {
    pub cfg: MockConfig,
    /// Effective seed (the configured one, or a random one picked at start).
    pub seed: u64,
    pub stats: Stats,
    pub prompts: PromptCounter,
    pub recorder: Option<Recorder>,
    /// Sequence number of the next inference request (drives fault decisions).
    pub next_seq: AtomicU64,
    pub started: Instant,
    /// Only touched by `/dcgmN/metrics` scrapes, never on the inference path.
    pub dcgm: Mutex<DcgmState>,
    /// The video jobs created so far (`/v1/videos`).
    pub videos: VideoJobs,
    /// Accuracy mode with its answer file loaded, when on.
    pub accuracy: Option<AccuracyMode>,
}
