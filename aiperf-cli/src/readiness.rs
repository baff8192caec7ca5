//! `--wait-for-model-timeout`: before benchmarking, probe every URL until the server
//! serves the model (a model list naming it, or a one-token request that succeeds), so a
//! run started together with the server does not record its start-up as errors.

use std::time::{Duration, Instant};

use aiperf_core::{
    build_request, Endpoint, HttpMethod, HttpRequest, RawExchange, RequestInput, Transport, Turn,
};
use aiperf_endpoints::build_url;
use serde::Deserialize;

use crate::args::EndpointArgs;

/// What counts as ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
    /// The wait `--wait-for-model-*` asks for, if any (checked before the run starts).
    pub fn from_args(args: &EndpointArgs) -> anyhow::Result<Option<Readiness>> {
        let timeout = args.wait_for_model_timeout;
        if timeout == 0.0 {
            return Ok(None);
        }
        if !(timeout.is_finite() && timeout > 0.0) {
            anyhow::bail!("--wait-for-model-timeout must be 0 or more seconds, got {timeout}");
        }
        let interval = args.wait_for_model_interval;
        if !(interval.is_finite() && interval > 0.0) {
            anyhow::bail!("--wait-for-model-interval must be greater than 0, got {interval}");
        }
        Ok(Some(Readiness {
            timeout: Duration::from_secs_f64(timeout),
            interval: Duration::from_secs_f64(interval),
            mode: args.wait_for_model_mode,
        }))
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

/// Waits until every URL is ready, printing progress to stderr; the error says which URL
/// was not ready in time and why.
pub async fn wait_until_ready(
    transport: &dyn Transport,
    target: &Target<'_>,
    readiness: Readiness,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + readiness.timeout;
    for (base, request_url) in target.base_urls.iter().zip(target.request_urls) {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let problem = probe(transport, target, base, request_url, readiness).await;
            let Some(problem) = problem else {
                if attempts > 1 {
                    eprintln!("{base} is ready (after {attempts} probes)");
                }
                break;
            };
            if Instant::now() + readiness.interval > deadline {
                anyhow::bail!(
                    "{base} was not ready within {} s (--wait-for-model-timeout): {problem}",
                    readiness.timeout.as_secs_f64()
                );
            }
            if attempts == 1 {
                eprintln!("Waiting for {base} to serve {}: {problem}", target.model);
            }
            tokio::time::sleep(readiness.interval).await;
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
                body: Default::default(),
                timeout: Some(probe_timeout),
            })
            .await;
        if let Some(problem) = failure(&exchange) {
            return Some(format!("GET /v1/models: {problem}"));
        }
        if !lists_model(&exchange.body(), target.model) {
            return Some(format!("GET /v1/models does not list {}", target.model));
        }
    }
    if matches!(readiness.mode, WaitMode::Inference | WaitMode::Both) {
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
        let built = match build_request(target.endpoint, &input) {
            Ok(built) => built,
            Err(error) => return Some(error.to_string()),
        };
        let mut headers = built.headers;
        headers.extend(target.headers.iter().cloned());
        let exchange = transport
            .send(HttpRequest {
                method: HttpMethod::Post,
                url: request_url.to_owned(),
                headers,
                body: built.body,
                timeout: Some(probe_timeout),
            })
            .await;
        if let Some(problem) = failure(&exchange) {
            return Some(format!("a one-token request: {problem}"));
        }
    }
    None
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

    #[test]
    fn a_model_list_must_name_the_model() {
        let body = br#"{"object":"list","data":[{"id":"a"},{"id":"b"}]}"#;
        assert!(lists_model(body, "b"));
        assert!(!lists_model(body, "c"));
        assert!(!lists_model(b"not json", "a"));
    }
}
