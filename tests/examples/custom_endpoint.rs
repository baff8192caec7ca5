//! An API format of your own, run with everything `aiperf profile` offers (readiness,
//! telemetry, multi-run, sweeps, every artifact): implement `Endpoint` and hand it to
//! `aiperf_runner::run_with`.
//!
//! The format here is a minimal JSON "generate" API: `{"model", "prompt", "max_tokens"}`
//! in, `{"text": "…"}` out, answered by a tiny server in this example so it runs anywhere:
//! `cargo run -p aiperf-tests --example custom_endpoint`.
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example reports its result on the terminal

use std::sync::Arc;

use aiperf_core::{
    ApiKeyHeader, BenchmarkConfig, BuiltRequest, CancellationToken, Endpoint, EndpointError,
    EndpointInfo, ParsedExchange, ParsedResponse, RawExchange, RequestInput,
};
use aiperf_endpoints::exchange_failure;
use aiperf_runner::{run_with, NoHooks, RunParts, RunSpec, TelemetryOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `POST /generate` with a prompt; the reply's `text` is the whole output.
struct Generate(EndpointInfo);

impl Generate {
    fn new() -> Self {
        Self(EndpointInfo {
            name: "my_generate",
            default_path: "/generate",
            streaming_path: None,
            supports_streaming: false,
            produces_tokens: true,
            tokenizes_input: true,
            takes_rankings: false,
            api_key_header: ApiKeyHeader::Bearer,
        })
    }
}

impl Endpoint for Generate {
    fn info(&self) -> &EndpointInfo {
        &self.0
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        let turn = input.turns.last().ok_or_else(|| EndpointError {
            endpoint: "my_generate",
            reason: "a request needs a turn".into(),
        })?;
        let body = json!({
            "model": input.model,
            "prompt": turn.joined_text(),
            "max_tokens": turn.max_tokens,
        });
        Ok(BuiltRequest {
            body: body.to_string().into(),
            headers: vec![],
            json_view: None,
        })
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        // HTTP errors, timeouts and dropped connections: the built-in classification.
        if let Some(error) = exchange_failure(exchange) {
            return ParsedExchange {
                responses: Vec::new(),
                error: Some(error),
            };
        }
        let body: Value = serde_json::from_slice(exchange.body()).unwrap_or(Value::Null);
        let text = body["text"].as_str().unwrap_or_default().to_owned();
        ParsedExchange {
            responses: vec![ParsedResponse::text(exchange.ended_at, text)],
            error: None,
        }
    }
}

/// Answers every request with a fixed text, over HTTP/1.1 with keep-alive.
async fn serve(listener: tokio::net::TcpListener) {
    while let Ok((mut socket, _)) = listener.accept().await {
        tokio::spawn(async move {
            let mut buffer = vec![0u8; 64 * 1024];
            let mut filled = 0;
            loop {
                let Ok(read) = socket.read(&mut buffer[filled..]).await else {
                    return;
                };
                if read == 0 {
                    return;
                }
                filled += read;
                let Some(head_end) = find(&buffer[..filled], b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse().ok())
                    .unwrap_or(0);
                if filled < head_end + 4 + length {
                    continue;
                }
                let body = r#"{"text": "a short answer from the example server"}"#;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if socket.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
                buffer.copy_within(head_end + 4 + length..filled, 0);
                filled -= head_end + 4 + length;
            }
        });
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(serve(listener));

    let mut config = BenchmarkConfig::default();
    config.endpoint.models = vec!["my-model".into()];
    config.endpoint.urls = vec![url];
    config.input.isl_mean = 64;
    config.input.osl_mean = Some(8);
    config.load.concurrency = Some(4);
    config.load.request_count = Some(40);
    config.output.artifact_dir = Some(std::env::temp_dir().join("aiperf-custom-endpoint"));
    let mut spec = RunSpec::new(config.validate()?);
    spec.telemetry = TelemetryOptions {
        gpu: false,
        server_metrics: false,
        ..TelemetryOptions::default()
    };
    let parts = RunParts {
        endpoint: Some(Arc::new(Generate::new())),
        ..RunParts::default()
    };

    let report = run_with(&spec, parts, &mut NoHooks, CancellationToken::new()).await?;
    let summary = &report.runs[0].summary;
    let latency = summary.metric("request_latency").ok_or("no latency")?;
    let osl = summary.metric("output_sequence_length").ok_or("no OSL")?;
    println!(
        "{} requests to my_generate: latency avg {:.2} ms, {} output tokens each",
        summary.request_count(),
        latency.avg,
        osl.avg
    );
    assert_eq!(summary.request_count(), 40);
    Ok(())
}
