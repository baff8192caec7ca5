//! `aiperf chat`: a conversation with a chat-completions server, one message at a time,
//! with each reply's speed — the sanity check before a benchmark. Replies stream to the
//! caller as they arrive ([`ChatSession::send`]'s `on_text`), stamped by the same
//! transport `aiperf profile` uses and parsed by the same chat format, so TTFT and
//! latency mean here what they mean in a benchmark's records.
//!
//! ```no_run
//! use aiperf_datasets::Tokenizer;
//! use aiperf_runner::chat::{ChatOptions, ChatSession};
//!
//! # async fn demo() -> Result<(), aiperf_runner::chat::ChatError> {
//! let options = ChatOptions::new("http://localhost:8000", "my-model");
//! let mut chat = ChatSession::new(options, Tokenizer::builtin())?;
//! let reply = chat.send("Hello!", |text| print!("{text}")).await?;
//! println!("\n{}", reply.stats);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::{
    Endpoint, HttpMethod, HttpRequest, ParsedExchange, RawExchange, SendControl, Transport,
};
use aiperf_datasets::Tokenizer;
use aiperf_endpoints::sse::SseDecoder;
use aiperf_endpoints::{ChatEndpoint, EndpointOptions, HttpTransport};
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// How much of an error body a failed request shows.
const ERROR_BODY_CHARS: usize = 500;

/// Where and how to chat.
#[derive(Clone)]
pub struct ChatOptions {
    /// The server: a base URL (`http://host:8000`, scheme optional), a `/v1` base, or
    /// the full `/chat/completions` URL.
    pub url: String,
    /// The model to address.
    pub model: String,
    /// Sent as a Bearer token. Never logged.
    pub api_key: Option<String>,
    /// A system message before the conversation.
    pub system_prompt: Option<String>,
    /// Resend the conversation so far with every message (the default); without it each
    /// message stands alone.
    pub history: bool,
    /// Bound on one reply, from sending to its last byte.
    pub timeout: Duration,
}

impl ChatOptions {
    /// Options with history on, no system prompt, no key and a 10-minute timeout.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            api_key: None,
            system_prompt: None,
            history: true,
            timeout: Duration::from_secs(600),
        }
    }
}

impl fmt::Debug for ChatOptions {
    /// Everything but the API key's value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatOptions")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("system_prompt", &self.system_prompt)
            .field("history", &self.history)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What stops a reply.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The HTTP client could not be built.
    #[error("cannot set up the HTTP client: {0}")]
    Transport(String),
    /// The request failed below HTTP, or the server answered with an error.
    #[error("request failed: {0}")]
    Request(String),
    /// The tokenizer could not be chosen or loaded.
    #[error(transparent)]
    Tokenizer(#[from] aiperf_datasets::TokenizerError),
}

/// The tokenizer `aiperf chat` counts output tokens with: `tokenizer` (a name, a path or
/// `builtin`), else the model's; a placeholder model name gets the builtin tokenizer.
/// Downloaded into the Hugging Face cache when it is not there yet.
pub async fn load_chat_tokenizer(
    tokenizer: Option<&str>,
    model: &str,
) -> Result<Tokenizer, ChatError> {
    let choice = aiperf_datasets::choose_tokenizer(tokenizer, model, None)?;
    let transport = HttpTransport::builder()
        .build()
        .map_err(|e| ChatError::Transport(e.to_string()))?;
    let hub = aiperf_datasets::HubEnv::from_process_env();
    Ok(aiperf_datasets::load_tokenizer(&choice.spec, &hub, Some(&transport)).await?)
}

/// One reply and its speed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// The reply's content.
    pub text: String,
    /// Its reasoning, when the server separates it.
    pub reasoning: String,
    /// How fast it came.
    pub stats: ChatStats,
}

/// A reply's speed, as `aiperf profile` defines each figure (docs/metrics.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChatStats {
    /// From sending to the first content or reasoning; `None` when nothing came.
    pub ttft: Option<Duration>,
    /// From sending to the last response.
    pub latency: Duration,
    /// Output tokens (content), counted with the session's tokenizer.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub reasoning_tokens: u64,
    /// The server's prompt tokens, when it reported usage.
    pub input_tokens: Option<u64>,
    /// Prompt tokens the server's prefix cache served, when it reported them.
    pub cached_tokens: Option<u64>,
}

impl ChatStats {
    /// Output sequence length: content and reasoning tokens.
    pub fn osl(&self) -> u64 {
        self.output_tokens + self.reasoning_tokens
    }

    /// Inter-token latency: (latency − TTFT) / (OSL − 1); `None` below two tokens.
    pub fn itl(&self) -> Option<Duration> {
        let ttft = self.ttft?;
        let gaps = u32::try_from(self.osl().checked_sub(1)?).ok()?;
        (gaps > 0).then(|| self.latency.saturating_sub(ttft) / gaps)
    }
}

impl fmt::Display for ChatStats {
    /// The block `aiperf chat` prints after each reply (the Python tool's lines).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Some(ttft), osl) = (self.ttft, self.osl()) else {
            return write!(f, "(no tokens received)");
        };
        if osl == 0 {
            return write!(f, "(no tokens received)");
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let latency_s = self.latency.as_secs_f64();
        let tps = if latency_s > 0.0 {
            osl as f64 / latency_s
        } else {
            0.0
        };
        let mut tokens = format!("{osl} tokens");
        if self.reasoning_tokens > 0 {
            tokens.push_str(&format!(", {} reasoning", self.reasoning_tokens));
        }
        writeln!(f, "TTFT: {:.2} ms", ms(ttft))?;
        write!(f, "TPS:  {tps:.2} tokens/s ({tokens} in {latency_s:.2}s)")?;
        if let Some(itl) = self.itl().filter(|d| !d.is_zero()) {
            let decode = 1.0 / itl.as_secs_f64();
            write!(
                f,
                "\nITL:  {:.2} ms/token (decode {decode:.2} tokens/s)",
                ms(itl)
            )?;
        }
        if let (Some(isl), Some(cached)) =
            (self.input_tokens.filter(|n| *n > 0), self.cached_tokens)
        {
            let rate = 100.0 * cached as f64 / isl as f64;
            write!(
                f,
                "\nCache: {cached}/{isl} prompt tokens cached ({rate:.1}%)"
            )?;
        }
        Ok(())
    }
}

/// A conversation with one server.
#[derive(Debug)]
pub struct ChatSession {
    options: ChatOptions,
    url: String,
    transport: Arc<HttpTransport>,
    format: ChatEndpoint,
    tokenizer: Tokenizer,
    /// The user and assistant messages so far (empty without history).
    history: Vec<Value>,
}

impl ChatSession {
    /// A session with `options`, counting output tokens with `tokenizer`.
    pub fn new(options: ChatOptions, tokenizer: Tokenizer) -> Result<Self, ChatError> {
        let transport = HttpTransport::builder()
            .build()
            .map_err(|e| ChatError::Transport(e.to_string()))?;
        Ok(Self {
            url: chat_completions_url(&options.url),
            options,
            transport: Arc::new(transport),
            format: ChatEndpoint::new(EndpointOptions::default()),
            tokenizer,
            history: Vec::new(),
        })
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends `message`, hands each piece of the reply to `on_text` as it arrives, and
    /// returns the whole reply with its speed. With history on, the exchange joins the
    /// conversation; a failed request leaves the conversation as it was.
    pub async fn send(
        &mut self,
        message: &str,
        mut on_text: impl FnMut(&str),
    ) -> Result<ChatReply, ChatError> {
        let request = self.request(message);
        let (tap, mut pieces) = mpsc::unbounded_channel::<Bytes>();
        let control = SendControl {
            chunk_tap: Some(tap),
            ..SendControl::default()
        };
        let send = self.transport.send_controlled(request, control);
        tokio::pin!(send);
        let mut decoder = SseDecoder::new();
        let mut show = |bytes: &Bytes, decoder: &mut SseDecoder| {
            let mut events = Vec::new();
            decoder.feed(bytes, Instant::now(), &mut events);
            for event in events {
                for text in delta_texts(&event.data) {
                    on_text(&text);
                }
            }
        };
        let exchange = loop {
            tokio::select! {
                exchange = &mut send => break exchange,
                Some(bytes) = pieces.recv() => show(&bytes, &mut decoder),
            }
        };
        while let Ok(bytes) = pieces.try_recv() {
            show(&bytes, &mut decoder);
        }
        let reply = self.reply(&exchange)?;
        if self.options.history {
            self.history
                .push(json!({"role": "user", "content": message}));
            let said = if reply.text.is_empty() {
                &reply.reasoning
            } else {
                &reply.text
            };
            self.history
                .push(json!({"role": "assistant", "content": said}));
        }
        Ok(reply)
    }

    fn request(&self, message: &str) -> HttpRequest {
        let mut messages = Vec::new();
        if let Some(system) = &self.options.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(self.history.iter().cloned());
        messages.push(json!({"role": "user", "content": message}));
        // include_usage brings the prompt and cached token counts; it does not change
        // the reply.
        let body = json!({
            "messages": messages,
            "model": self.options.model,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Accept".to_owned(), "text/event-stream".to_owned()),
        ];
        if let Some(key) = &self.options.api_key {
            headers.push(("Authorization".to_owned(), format!("Bearer {key}")));
        }
        HttpRequest {
            method: HttpMethod::Post,
            url: self.url.clone(),
            headers,
            body: Bytes::from(body.to_string()),
            timeout: Some(self.options.timeout),
        }
    }

    fn reply(&self, exchange: &RawExchange) -> Result<ChatReply, ChatError> {
        if let Some(error) = &exchange.error {
            return Err(ChatError::Request(error.to_string()));
        }
        let status = exchange.status.unwrap_or(0);
        if !(200..300).contains(&status) {
            let detail: String = String::from_utf8_lossy(exchange.body())
                .trim()
                .chars()
                .take(ERROR_BODY_CHARS)
                .collect();
            return Err(ChatError::Request(format!("HTTP {status}: {detail}")));
        }
        let ParsedExchange { responses, error } = self.format.parse(exchange);
        if let Some(error) = error {
            return Err(ChatError::Request(error.message));
        }
        let text: String = responses.iter().map(|r| r.text.as_str()).collect();
        let reasoning: String = responses.iter().map(|r| r.reasoning.as_str()).collect();
        let since_send = |at: Instant| at.saturating_duration_since(exchange.started_at);
        let generated = || {
            responses
                .iter()
                .filter(|r| !r.text.is_empty() || !r.reasoning.is_empty())
        };
        let usage = responses.iter().rev().find_map(|r| r.usage.as_ref());
        let count = |text: &str| {
            if text.is_empty() {
                0
            } else {
                self.tokenizer.count(text) as u64
            }
        };
        Ok(ChatReply {
            stats: ChatStats {
                ttft: generated().next().map(|r| since_send(r.at)),
                latency: generated()
                    .next_back()
                    .map_or_else(|| since_send(exchange.ended_at), |r| since_send(r.at)),
                output_tokens: count(&text),
                reasoning_tokens: count(&reasoning),
                input_tokens: usage.and_then(|u| u.field("prompt_tokens")),
                cached_tokens: usage.and_then(|u| u.field("prompt_tokens_details.cached_tokens")),
            },
            text,
            reasoning,
        })
    }
}

/// The content and reasoning pieces of one SSE event's `choices[0].delta`, for showing
/// them as they arrive (the exchange is parsed properly once it is complete).
fn delta_texts(data: &str) -> Vec<String> {
    let Ok(event) = serde_json::from_str::<Value>(data) else {
        return Vec::new();
    };
    let delta = &event["choices"][0]["delta"];
    ["reasoning_content", "reasoning", "content"]
        .iter()
        .filter_map(|key| delta[*key].as_str())
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A base URL as the chat-completions URL: `host:8000` and `http://host:8000` get
/// `/v1/chat/completions`, a `/v1` base gets `/chat/completions`, a full URL is kept —
/// so a server mounted under a sub-path resolves as `aiperf profile` resolves it.
pub fn chat_completions_url(url: &str) -> String {
    let base = aiperf_core::url::with_default_scheme(url);
    let base = base.trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_owned()
    } else if base.ends_with("/v1") {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_become_the_chat_completions_url() {
        for (given, expected) in [
            (
                "localhost:8000",
                "http://localhost:8000/v1/chat/completions",
            ),
            ("http://h:1/", "http://h:1/v1/chat/completions"),
            (
                "https://h/openai/v1",
                "https://h/openai/v1/chat/completions",
            ),
            (
                "http://h/x/v1/chat/completions",
                "http://h/x/v1/chat/completions",
            ),
        ] {
            assert_eq!(chat_completions_url(given), expected, "{given}");
        }
    }

    #[test]
    fn the_stats_block_reads_like_python_s() {
        let stats = ChatStats {
            ttft: Some(Duration::from_millis(20)),
            latency: Duration::from_millis(520),
            output_tokens: 101,
            reasoning_tokens: 0,
            input_tokens: Some(200),
            cached_tokens: Some(50),
        };
        assert_eq!(
            stats.to_string(),
            "TTFT: 20.00 ms\nTPS:  194.23 tokens/s (101 tokens in 0.52s)\n\
             ITL:  5.00 ms/token (decode 200.00 tokens/s)\n\
             Cache: 50/200 prompt tokens cached (25.0%)"
        );
        let nothing = ChatStats {
            ttft: None,
            output_tokens: 0,
            input_tokens: None,
            cached_tokens: None,
            ..stats
        };
        assert_eq!(nothing.to_string(), "(no tokens received)");
        let one = ChatStats {
            output_tokens: 1,
            reasoning_tokens: 0,
            input_tokens: None,
            ..stats
        };
        assert_eq!(one.itl(), None);
        assert_eq!(
            one.to_string(),
            "TTFT: 20.00 ms\nTPS:  1.92 tokens/s (1 tokens in 0.52s)"
        );
    }

    #[test]
    fn delta_texts_take_reasoning_then_content() {
        assert_eq!(
            delta_texts(r#"{"choices":[{"delta":{"reasoning_content":"hm","content":"Hi"}}]}"#),
            ["hm", "Hi"]
        );
        assert!(delta_texts("[DONE]").is_empty());
        assert!(delta_texts(r#"{"choices":[],"usage":{"prompt_tokens":3}}"#).is_empty());
    }
}
