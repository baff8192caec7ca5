//! Waiting for the model: before benchmarking, probe every URL until the server serves
//! the model (a model list naming it, or a one-token request that succeeds), so a run
//! started together with the server does not record its start-up as errors.
//!
//! ```no_run
//! use std::time::Duration;
//! use aiperf_core::CancellationToken;
//! use aiperf_endpoints::readiness::{wait_until_ready, Readiness, Target, WaitMode};
//! use aiperf_endpoints::{ChatEndpoint, EndpointOptions, HttpTransport};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let transport = HttpTransport::builder().build()?;
//! let endpoint = ChatEndpoint::new(EndpointOptions::default());
//! let base = ["http://127.0.0.1:8000".to_string()];
//! let urls = ["http://127.0.0.1:8000/v1/chat/completions".to_string()];
//! let target = Target {
//!     base_urls: &base, request_urls: &urls, model: "my-model", endpoint: &endpoint,
//!     headers: &[],
//! };
//! let readiness = Readiness::new(Duration::from_secs(60), Duration::from_secs(1), WaitMode::Both)?;
//! wait_until_ready(&transport, &target, readiness, &CancellationToken::new(), &mut |event| {
//!     eprintln!("{event}");
//! })
//! .await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::{Duration, Instant};

use aiperf_core::url::redact_credentials;
use aiperf_core::{
    build_request, CancellationToken, Endpoint, HttpMethod, HttpRequest, RawExchange, RequestInput,
    Transport, Turn,
};
use serde::{Deserialize, Serialize};

use crate::build_url;

/// What counts as ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitMode {
    /// `GET /v1/models` lists the model.
    Models,
    /// A one-token request to the benchmarked endpoint succeeds.
    Inference,
    /// Both.
    Both,
}

/// How to wait.
#[derive(Debug, Clone, Copy)]
pub struct Readiness {
    /// Give up after this long.
    pub timeout: Duration,
    /// Pause between probes.
    pub interval: Duration,
    /// What to probe.
    pub mode: WaitMode,
}

impl Readiness {
    /// A wait of at most `timeout` with probes `interval` apart; both must be positive.
    pub fn new(
        timeout: Duration,
        interval: Duration,
        mode: WaitMode,
    ) -> Result<Readiness, ReadinessError> {
        if timeout.is_zero() || interval.is_zero() {
            return Err(ReadinessError::ZeroDuration);
        }
        Ok(Readiness {
            timeout,
            interval,
            mode,
        })
    }
}

/// Why the wait ended without every URL ready.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadinessError {
    /// A timeout or interval of zero.
    #[error("the readiness timeout and probe interval must be greater than 0")]
    ZeroDuration,
    /// A URL still failed its probe when the time was up (credentials in it hidden).
    #[error("{base} was not ready within {} s: {problem}", .timeout.as_secs_f64())]
    NotReady {
        /// The base URL.
        base: String,
        /// The whole wait.
        timeout: Duration,
        /// What its last probe found missing.
        problem: String,
    },
    /// The cancellation token fired (Ctrl-C).
    #[error("cancelled while waiting for {base}")]
    Cancelled {
        /// The URL being waited for.
        base: String,
    },
}

/// Progress of [`wait_until_ready`], for the caller to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadinessEvent<'a> {
    /// The first probe of `base` failed; probing goes on.
    Waiting {
        /// The base URL.
        base: &'a str,
        /// The model waited for.
        model: &'a str,
        /// What the probe found missing.
        problem: &'a str,
    },
    /// `base` became ready after more than one probe.
    Ready {
        /// The base URL.
        base: &'a str,
        /// Probes it took.
        probes: u32,
    },
}

impl fmt::Display for ReadinessEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadinessEvent::Waiting {
                base,
                model,
                problem,
            } => write!(
                f,
                "Waiting for {} to serve {model}: {problem}",
                redact_credentials(base)
            ),
            ReadinessEvent::Ready { base, probes } => {
                write!(
                    f,
                    "{} is ready (after {probes} probes)",
                    redact_credentials(base)
                )
            }
        }
    }
}

/// Where and what to probe.
pub struct Target<'a> {
    /// Base URLs as given (`--url`).
    pub base_urls: &'a [String],
    /// Full request URLs of the benchmarked endpoint, one per base URL.
    pub request_urls: &'a [String],
    /// The model that must be served.
    pub model: &'a str,
    /// The benchmarked endpoint, to build the one-token request.
    pub endpoint: &'a dyn Endpoint,
    /// Headers every request carries (the API key among them).
    pub headers: &'a [(String, String)],
}

/// Leaves out the endpoint and the headers: the headers may hold an API key.
impl fmt::Debug for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("base_urls", &self.base_urls)
            .field("request_urls", &self.request_urls)
            .field("model", &self.model)
            .field("endpoint", &self.endpoint.info().name)
            .finish_non_exhaustive()
    }
}

/// Waits until every URL is ready, reporting progress to `progress`; the error says which
/// URL was not ready in time and why. `cancel` ends the wait at once.
pub async fn wait_until_ready(
    transport: &dyn Transport,
    target: &Target<'_>,
    readiness: Readiness,
    cancel: &CancellationToken,
    progress: &mut dyn FnMut(ReadinessEvent<'_>),
) -> Result<(), ReadinessError> {
    let deadline = Instant::now() + readiness.timeout;
    if readiness.mode != WaitMode::Models && InferenceProbe::for_target(target).liveness_only {
        tracing::warn!(
            "the {} endpoint builds no one-token request of its own: the readiness probe \
             sends a chat-style one and only checks that the server answers below 500",
            target.endpoint.info().name
        );
    }
    for (base, request_url) in target.base_urls.iter().zip(target.request_urls) {
        let cancelled = || ReadinessError::Cancelled {
            base: redact_credentials(base),
        };
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let problem = tokio::select! {
                problem = probe(transport, target, base, request_url, readiness) => problem,
                () = cancel.cancelled() => return Err(cancelled()),
            };
            let Some(problem) = problem else {
                if attempts > 1 {
                    progress(ReadinessEvent::Ready {
                        base,
                        probes: attempts,
                    });
                }
                break;
            };
            if Instant::now() + readiness.interval > deadline {
                return Err(ReadinessError::NotReady {
                    base: redact_credentials(base),
                    timeout: readiness.timeout,
                    problem,
                });
            }
            if attempts == 1 {
                progress(ReadinessEvent::Waiting {
                    base,
                    model: target.model,
                    problem: &problem,
                });
            }
            tokio::select! {
                () = tokio::time::sleep(readiness.interval) => {}
                () = cancel.cancelled() => return Err(cancelled()),
            }
        }
    }
    Ok(())
}

/// One probe of one URL: `None` when ready, else what is missing.
async fn probe(
    transport: &dyn Transport,
    target: &Target<'_>,
    base: &str,
    request_url: &str,
    readiness: Readiness,
) -> Option<String> {
    let probe_timeout = readiness.interval.max(Duration::from_secs(1));
    if matches!(readiness.mode, WaitMode::Models | WaitMode::Both) {
        let exchange = transport
            .send(HttpRequest {
                method: HttpMethod::Get,
                url: build_url(base, None, "/v1/models"),
                headers: target.headers.to_vec(),
                body: bytes::Bytes::new(),
                timeout: Some(probe_timeout),
            })
            .await;
        if let Some(problem) = failure(&exchange) {
            return Some(format!("GET /v1/models: {problem}"));
        }
        if !lists_model(exchange.body(), target.model) {
            return Some(format!("GET /v1/models does not list {}", target.model));
        }
    }
    if matches!(readiness.mode, WaitMode::Inference | WaitMode::Both) {
        let probe = InferenceProbe::for_target(target);
        let mut headers = probe.headers;
        headers.extend(target.headers.iter().cloned());
        let exchange = transport
            .send(HttpRequest {
                method: HttpMethod::Post,
                url: request_url.to_owned(),
                headers,
                body: probe.body,
                timeout: Some(probe_timeout),
            })
            .await;
        let problem = match (failure(&exchange), exchange.status) {
            // A live server that refuses the stand-in body is ready: the benchmark's own
            // bodies are what it is asked for.
            (Some(_), Some(status)) if probe.liveness_only && status < 500 => None,
            (problem, _) => problem,
        };
        if let Some(problem) = problem {
            return Some(format!("a one-token request: {problem}"));
        }
    }
    None
}

/// The one-token request of the inference probe.
struct InferenceProbe {
    body: bytes::Bytes,
    headers: Vec<(String, String)>,
    /// The endpoint could not build a request of its own (the `raw` endpoint sends only
    /// the dataset's bodies), so a chat-style stand-in only proves that the server
    /// answers: any status below 500 counts, as in the Python AIPerf 0.13.
    liveness_only: bool,
}

impl InferenceProbe {
    fn for_target(target: &Target<'_>) -> Self {
        let turn = Turn {
            max_tokens: Some(1),
            ..Turn::text("Hello")
        };
        let input = RequestInput {
            model: target.model,
            system_message: None,
            user_context_message: None,
            turns: std::slice::from_ref(&turn),
            streaming: false,
        };
        match build_request(target.endpoint, &input) {
            Ok(built) => Self {
                body: built.body,
                headers: built.headers,
                liveness_only: false,
            },
            Err(_) => Self {
                body: serde_json::json!({
                    "model": target.model,
                    "messages": [{"role": "user", "content": "Hello"}],
                    "max_tokens": 1,
                })
                .to_string()
                .into(),
                headers: vec![("Content-Type".into(), "application/json".into())],
                liveness_only: true,
            },
        }
    }
}

fn failure(exchange: &RawExchange) -> Option<String> {
    if let Some(error) = &exchange.error {
        return Some(error.to_string());
    }
    match exchange.status {
        Some(status) if (200..300).contains(&status) => None,
        Some(status) => Some(format!("HTTP {status}")),
        None => Some("no response".into()),
    }
}

/// Whether an OpenAI-style model list names `model`.
fn lists_model(body: &[u8], model: &str) -> bool {
    #[derive(Deserialize)]
    struct ModelList {
        data: Vec<ModelEntry>,
    }
    #[derive(Deserialize)]
    struct ModelEntry {
        id: String,
    }
    serde_json::from_slice::<ModelList>(body)
        .is_ok_and(|list| list.data.iter().any(|entry| entry.id == model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatEndpoint, EndpointOptions, HttpTransport};

    /// A chat endpoint at a base URL where nothing listens (a port bound, read and
    /// released): `(base URLs, request URLs, endpoint)` for a [`Target`].
    fn closed_port() -> ([String; 1], [String; 1], ChatEndpoint) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let url = format!("{base}/v1/chat/completions");
        ([base], [url], ChatEndpoint::new(EndpointOptions::default()))
    }

    fn target((base, urls, endpoint): &([String; 1], [String; 1], ChatEndpoint)) -> Target<'_> {
        Target {
            base_urls: base,
            request_urls: urls,
            model: "m",
            endpoint,
            headers: &[],
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_not_ready_in_time_and_the_wait_was_reported() {
        let transport = HttpTransport::builder().build().unwrap();
        let closed = closed_port();
        let (base, target) = (&closed.0, target(&closed));
        let readiness = Readiness::new(
            Duration::from_millis(300),
            Duration::from_millis(50),
            WaitMode::Inference,
        )
        .unwrap();
        let mut events = Vec::new();
        let error = wait_until_ready(
            &transport,
            &target,
            readiness,
            &CancellationToken::new(),
            &mut |event| events.push(event.to_string()),
        )
        .await
        .unwrap_err();
        let ReadinessError::NotReady { base: url, .. } = &error else {
            panic!("{error:?}")
        };
        assert_eq!(url, &base[0]);
        assert!(
            error
                .to_string()
                .contains("was not ready within 0.3 s: a one-token request: cannot connect"),
            "{error}"
        );
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(events[0].starts_with(&format!("Waiting for {} to serve m: ", base[0])));
    }

    #[tokio::test]
    async fn cancelling_ends_the_wait_at_once() {
        let transport = HttpTransport::builder().build().unwrap();
        let closed = closed_port();
        let (base, target) = (&closed.0, target(&closed));
        let readiness = Readiness::new(
            Duration::from_secs(3600),
            Duration::from_secs(60),
            WaitMode::Both,
        )
        .unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        let error = wait_until_ready(&transport, &target, readiness, &cancel, &mut |_| {})
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ReadinessError::Cancelled {
                base: base[0].clone()
            }
        );
    }

    #[tokio::test]
    async fn the_raw_endpoint_is_probed_with_a_stand_in_that_only_needs_an_answer() {
        let server = aiperf_mock_server::MockServer::start(
            aiperf_mock_server::MockConfig::with_timing(0.0, 0.0),
        )
        .await
        .unwrap();
        let transport = HttpTransport::builder().build().unwrap();
        let raw = crate::raw::RawEndpoint::new(crate::EndpointOptions::default());
        let readiness = Readiness::new(
            Duration::from_secs(5),
            Duration::from_millis(50),
            WaitMode::Inference,
        )
        .unwrap();
        // The chat route answers the stand-in; an unknown path answers 404: both live.
        for path in ["/v1/chat/completions", "/no/such/route"] {
            let base = [server.url()];
            let urls = [format!("{}{path}", server.url())];
            let target = Target {
                base_urls: &base,
                request_urls: &urls,
                model: "m",
                endpoint: &raw,
                headers: &[],
            };
            let waited = wait_until_ready(
                &transport,
                &target,
                readiness,
                &CancellationToken::new(),
                &mut |_| {},
            )
            .await;
            assert_eq!(waited, Ok(()), "{path}");
        }
        // One probe each: both answers counted as ready at once.
        assert_eq!(server.stats().requests_total, 2);
    }

    #[test]
    fn zero_durations_are_refused() {
        assert_eq!(
            Readiness::new(Duration::ZERO, Duration::from_secs(1), WaitMode::Models).unwrap_err(),
            ReadinessError::ZeroDuration
        );
    }

    #[test]
    fn a_model_list_must_name_the_model() {
        let body = br#"{"object":"list","data":[{"id":"a"},{"id":"b"}]}"#;
        assert!(lists_model(body, "b"));
        assert!(!lists_model(body, "c"));
        assert!(!lists_model(b"not json", "a"));
    }
}
