//! The in-memory endpoints and transport the engine tests drive.
#![allow(dead_code)] // each test file uses its own subset

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aiperf_core::{
    ApiKeyHeader, BenchmarkConfig, BodyChunks, BoxFuture, BuiltRequest, Conversation, Endpoint,
    EndpointError, EndpointInfo, HttpRequest, ParsedExchange, ParsedResponse, RawExchange,
    RequestInput, SendControl, Transport, TransportError, Turn, ValidatedConfig,
};

/// A valid configuration of model `m` at a URL the in-memory transports ignore, with the
/// changes `change` makes.
pub(crate) fn config_with(change: impl FnOnce(&mut BenchmarkConfig)) -> ValidatedConfig {
    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["m".into()];
    config.endpoint.urls = vec!["http://127.0.0.1:1".into()];
    config.input.random_seed = Some(1);
    change(&mut config);
    config.validate().expect("a valid test configuration")
}

/// [`config_with`] without changes.
pub(crate) fn config() -> ValidatedConfig {
    config_with(|_| {})
}

pub(crate) const INFO: EndpointInfo = EndpointInfo {
    name: "echo",
    default_path: "/echo",
    streaming_path: None,
    supports_streaming: false,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// Sends the current (last) turn's text as the body; every chunk parses to one response.
pub(crate) struct Echo;

impl Endpoint for Echo {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }
    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        Ok(BuiltRequest {
            body: input
                .turns
                .last()
                .map(Turn::joined_text)
                .unwrap_or_default()
                .into_bytes()
                .into(),
            headers: vec![],
            json_view: None,
        })
    }
    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        ParsedExchange {
            responses: exchange
                .chunks
                .iter()
                .map(|c| ParsedResponse {
                    at: c.at,
                    text: String::from_utf8_lossy(c.bytes).into_owned(),
                    reasoning: String::new(),
                    has_other_data: false,
                    usage: None,
                    video: None,
                })
                .collect(),
            error: None,
        }
    }
}

/// Sends `role=text` of every turn, joined by `|`; replies `re:` + the last entry.
pub(crate) struct Transcript;

impl Endpoint for Transcript {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }
    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let entries: Vec<String> = input
            .turns
            .iter()
            .map(|t| {
                format!(
                    "{}={}",
                    t.role.as_deref().unwrap_or("user"),
                    t.joined_text()
                )
            })
            .collect();
        Ok(BuiltRequest {
            body: entries.join("|").into_bytes().into(),
            headers: vec![],
            json_view: None,
        })
    }
    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        let body = String::from_utf8_lossy(exchange.body()).into_owned();
        let last = body.rsplit('|').next().unwrap_or_default();
        ParsedExchange {
            responses: vec![ParsedResponse {
                at: exchange.ended_at,
                text: format!("re:{last}"),
                reasoning: String::new(),
                has_other_data: false,
                usage: None,
                video: None,
            }],
            error: None,
        }
    }
}

/// Answers every request with its body: a first chunk after `ttft` (when set), the
/// whole body after `latency`. Honours the engine's cancellation and first-chunk
/// controls and tracks peak concurrency, overall and before the first chunk.
#[derive(Default)]
pub(crate) struct SlowEcho {
    pub latency: Duration,
    /// Each request takes `latency` times 1, 2, 3 or 4 in turn, so requests finish out
    /// of the order they started.
    pub staggered: bool,
    pub calls: AtomicUsize,
    pub ttft: Option<Duration>,
    pub in_flight: AtomicUsize,
    pub peak: AtomicUsize,
    pub in_prefill: AtomicUsize,
    pub peak_prefill: AtomicUsize,
}

impl SlowEcho {
    async fn exchange(&self, request: HttpRequest, control: SendControl) -> RawExchange {
        let started_at = Instant::now();
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let mut exchange = RawExchange {
            started_at,
            head_at: None,
            status: None,
            content_type: None,
            headers: Vec::new(),
            chunks: BodyChunks::new(),
            ended_at: started_at,
            error: None,
            trace: None,
            retries: 0,
        };
        if let Some(cancel_after) = control.cancel_after.filter(|c| *c < self.latency) {
            tokio::time::sleep(cancel_after).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            exchange.ended_at = Instant::now();
            exchange.error = Some(TransportError::CancelledByClient(cancel_after));
            return exchange;
        }
        let mut body = request.body;
        if let Some(ttft) = self.ttft {
            let prefilling = self.in_prefill.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak_prefill.fetch_max(prefilling, Ordering::SeqCst);
            tokio::time::sleep(ttft).await;
            self.in_prefill.fetch_sub(1, Ordering::SeqCst);
            let at = Instant::now();
            exchange.head_at = Some(at);
            exchange.chunks.push(at, &body.split_to(body.len().min(1)));
            if let Some(notify) = &control.first_chunk {
                notify.notify_one();
            }
        }
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let latency = if self.staggered {
            self.latency * (1 + (call % 4) as u32)
        } else {
            self.latency
        };
        tokio::time::sleep_until((started_at + latency).into()).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let at = Instant::now();
        exchange.head_at.get_or_insert(at);
        exchange.status = Some(200);
        if !body.is_empty() {
            exchange.chunks.push(at, &body);
        }
        exchange.ended_at = at;
        exchange
    }
}

impl Transport for SlowEcho {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        Box::pin(self.exchange(request, SendControl::default()))
    }

    fn send_controlled(
        &self,
        request: HttpRequest,
        control: SendControl,
    ) -> BoxFuture<'_, RawExchange> {
        Box::pin(self.exchange(request, control))
    }
}

/// `n` single-turn conversations `c0`… saying `hello <i>`.
pub(crate) fn dataset(n: usize) -> Vec<Conversation> {
    (0..n)
        .map(|i| Conversation {
            session_id: format!("c{i}"),
            turns: vec![Turn::text(format!("hello {i}"))],
            ..Conversation::default()
        })
        .collect()
}
