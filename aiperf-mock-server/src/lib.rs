//! An OpenAI-compatible mock inference server with exact timing and fault injection.
//!
//! `aiperf-mock-server` answers the inference APIs a benchmark client talks to (OpenAI chat,
//! completions, embeddings, responses, image generation; Anthropic messages; NIM/TEI/Cohere
//! rankings; Hugging Face TGI) with
//! deterministic text, and paces streamed tokens on an absolute schedule: token `k` leaves at
//! `arrival + TTFT + k × ITL`, whatever else the server is doing. It also serves its own
//! Prometheus metrics, vLLM-style server metrics and fake DCGM GPU exporters that follow the
//! token rate it serves, and it can inject faults (HTTP errors, dropped connections, malformed
//! or error SSE events, stalls, slow headers) at reproducible, seeded rates.
//!
//! Output text is chosen so client-side token counts are exact: output token `k` is
//! `" " + CORPUS[k % CORPUS.len()]` (see [`CORPUS`]), a single token in tiktoken `o200k_base`,
//! `cl100k_base` and the Qwen3 tokenizer. Prompt tokens are counted with a `tokenizer.json`
//! when one is configured, otherwise as whitespace-separated words (at least 1).
//!
//! [`SntpServer`] is a time server whose clock is off by a known amount, for tests of
//! the clock-offset measurement of sharded runs.
//!
//! In accuracy mode ([`AccuracyConfig`]) chat and completions replies answer benchmark
//! questions instead, right with a seeded probability ([`answers_correctly`]), so a test
//! knows the exact accuracy its client must report.
//!
//! Use it in-process from tests:
//!
//! ```
//! use aiperf_mock_server::{MockConfig, MockServer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = MockServer::start(MockConfig::fast()).await?;
//! let url = format!("{}/v1/chat/completions", server.url());
//! assert!(url.starts_with("http://127.0.0.1:"));
//! // … point a client at `url` …
//! assert_eq!(server.stats().requests_total, 0);
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! or run the `aiperf-mock-server` binary (see its `--help` and the README).
//!
//! Cargo feature `bin` (on by default) builds the binary and brings its flag parser
//! (clap) and log output (tracing-subscriber); a test that only starts the server
//! in-process can depend on this crate with `default-features = false`.

mod accuracy;
mod body;
mod closing;
mod config;
mod error;
mod faults;
mod form;
mod record;
mod routes;
mod server;
mod sntp;
mod state;
mod stats;
mod timing;
mod tokens;

pub use accuracy::{
    accuracy_reply, answers_correctly, wrong_answer, AccuracyConfig, ANSWER_HEADER,
    ANSWER_PLACEHOLDER,
};
pub use config::{DcgmConfig, FaultConfig, GpuModel, GpuSpec, MockConfig, Quirks};
pub use error::{DroppedByFault, MockError};
pub use faults::{decide as decide_fault, FaultKind};
pub use record::MASKED_HEADERS;
pub use routes::embeddings::{embedding, EMBEDDING_DIMS};
pub use routes::images::TINY_PNG_B64;
pub use routes::metrics::KV_CACHE_TOKENS;
pub use routes::rankings::logit as ranking_logit;
pub use routes::videos::VIDEO_BYTES;
pub use server::{MockServer, SHUTDOWN_GRACE};
pub use sntp::SntpServer;
pub use stats::MockStats;
pub use tokens::{count_words, output_text, PromptTokenCounter, CORPUS, MAX_DEFAULT_OUTPUT};
