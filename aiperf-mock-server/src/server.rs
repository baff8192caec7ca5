//! The server: bind, accept loop (counts connections, sets TCP_NODELAY), routing, and the
//! common path of every inference request (auth, recording, faults, pacing).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ACCEPT, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER,
};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::accuracy::{AccuracyMode, ANSWER_HEADER};
use crate::body::{InFlight, MockBody};
use crate::config::{ms, MockConfig};
use crate::error::{DroppedByFault, MockError};
use crate::faults::{self, FaultKind};
use crate::record::Recorder;
use crate::routes::{self, dcgm::DcgmState, error_body, videos::VideoJobs, ApiError, Ctx, Reply};
use crate::state::State;
use crate::stats::{MockStats, Route, Stats};
use crate::tokens::{PromptCounter, PromptTokenCounter};

/// How long [`MockServer::shutdown`] lets in-flight responses finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

type Resp = Response<MockBody>;

/// A running mock server. Dropping it stops accepting and asks connections to close.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop: watch::Sender<bool>,
    accept_task: Option<JoinHandle<()>>,
    record_task: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Validate `config`, load the tokenizer if any, bind, and start serving.
    pub async fn start(config: MockConfig) -> Result<MockServer, MockError> {
        Self::start_inner(config, None).await
    }

    /// Like [`MockServer::start`], counting prompt tokens with `counter` (e.g. the
    /// benchmark's tokenizer, so the usage the mock reports matches the client's counts).
    pub async fn start_counting_prompts_with(
        config: MockConfig,
        counter: PromptTokenCounter,
    ) -> Result<MockServer, MockError> {
        Self::start_inner(config, Some(counter)).await
    }

    async fn start_inner(
        config: MockConfig,
        counter: Option<PromptTokenCounter>,
    ) -> Result<MockServer, MockError> {
        config.validate()?;
        let tokenizer =
            match &config.tokenizer {
                Some(path) => Some(tokenizers::Tokenizer::from_file(path).map_err(|e| {
                    MockError::Tokenizer {
                        path: path.clone(),
                        message: e.to_string(),
                    }
                })?),
                None => None,
            };
        let accuracy = config
            .accuracy
            .as_ref()
            .map(AccuracyMode::load)
            .transpose()?;
        let addr = resolve(&config.host, config.port).await?;
        let listener = listen(addr).map_err(|source| MockError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| MockError::Bind { addr, source })?;
        let (recorder, record_task) = match &config.record_requests {
            Some(path) => {
                let (r, t) = Recorder::start(path)?;
                (Some(r), Some(t))
            }
            None => (None, None),
        };
        let seed = config.random_seed.unwrap_or_else(|| {
            use rand::RngExt;
            rand::rng().random()
        });
        let started = Instant::now();
        let state = Arc::new(State {
            dcgm: Mutex::new(DcgmState::new(&config.dcgm, started)),
            cfg: config,
            seed,
            stats: Stats::new(),
            prompts: PromptCounter::new(tokenizer, counter),
            recorder,
            next_seq: AtomicU64::new(0),
            started,
            videos: VideoJobs::default(),
            accuracy,
        });
        let (stop, stop_rx) = watch::channel(false);
        let accept_task = tokio::spawn(accept_loop(listener, state.clone(), stop_rx));
        tracing::info!(%addr, seed, "aiperf-mock-server started");
        Ok(MockServer {
            addr,
            state,
            stop,
            accept_task: Some(accept_task),
            record_task,
        })
    }

    /// The bound address (with the real port when the config asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`, without a trailing slash (append `/v1` for OpenAI clients).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The effective random seed (the configured one, or the one picked at start).
    pub fn seed(&self) -> u64 {
        self.state.seed
    }

    /// The configuration the server runs with.
    pub fn config(&self) -> &MockConfig {
        &self.state.cfg
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> MockStats {
        self.state.stats.snapshot()
    }

    /// Stop accepting, let in-flight responses finish (up to [`SHUTDOWN_GRACE`]), and flush the
    /// request record file.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.accept_task.take() {
            let _ = t.await;
        }
        if let Some(r) = &self.state.recorder {
            r.close();
        }
        if let Some(t) = self.record_task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(r) = &self.state.recorder {
            r.close();
        }
    }
}

/// Connections the kernel queues for the server before it accepts them (capped by
/// `net.core.somaxconn`). `TcpListener::bind` asks for 128: 512 clients connecting at once
/// (`bench/profile.sh` section 9) overflowed it, and the dropped ones waited out a 1-s SYN
/// retransmission, which no real server's queue causes (uvicorn asks for 2048).
const ACCEPT_BACKLOG: u32 = 4096;

/// A listening socket on `addr` with an accept queue of [`ACCEPT_BACKLOG`].
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restarted mock can take its port back at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr, MockError> {
    let err = |source| MockError::Resolve {
        host: host.to_string(),
        port,
        source,
    };
    tokio::net::lookup_host((host, port))
        .await
        .map_err(err)?
        .next()
        .ok_or_else(|| {
            err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no address",
            ))
        })
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, mut stop: watch::Receiver<bool>) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).keep_alive(true);
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    state.stats.connections_accepted.fetch_add(1, Relaxed);
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                    }
                    if state.cfg.quirks.close_after_response {
                        tokio::spawn(crate::closing::serve(stream, state.clone()));
                        continue;
                    }
                    let st = state.clone();
                    let svc = service_fn(move |req| handle(st.clone(), req));
                    let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), svc).into_owned());
                    let st = state.clone();
                    tokio::spawn(async move {
                        st.stats.connections_active.fetch_add(1, Relaxed);
                        if let Err(e) = conn.await {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        st.stats.connections_active.fetch_sub(1, Relaxed);
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("grace period over; leaving remaining connections");
    }
}

/// Where a request goes.
enum Target {
    Route(Route),
    Dcgm(u32),
    WrongMethod(&'static str),
    NotFound,
}

fn target(method: &Method, path: &str) -> Target {
    let (route, allowed) = match path {
        "/v1/chat/completions" => (Route::Chat, Method::POST),
        "/v1/completions" => (Route::Completions, Method::POST),
        "/v1/embeddings" => (Route::Embeddings, Method::POST),
        "/v1/ranking" => (Route::Ranking, Method::POST),
        "/rerank" => (Route::TeiRerank, Method::POST),
        "/v2/rerank" => (Route::CohereRerank, Method::POST),
        "/v1/responses" => (Route::Responses, Method::POST),
        "/v1/messages" => (Route::Messages, Method::POST),
        "/v1/images/generations" => (Route::ImageGenerations, Method::POST),
        "/v1/infer" => (Route::ImageRetrieval, Method::POST),
        "/v1/images/edits" => (Route::ImageEdits, Method::POST),
        "/v1/audio/transcriptions" => (Route::AudioTranscriptions, Method::POST),
        "/rag/api/prompt" => (Route::SolidoRag, Method::POST),
        "/v1/videos" => (Route::VideoCreate, Method::POST),
        "/generate" => (Route::TgiGenerate, Method::POST),
        "/generate_stream" => (Route::TgiGenerateStream, Method::POST),
        "/v1/models" => (Route::Models, Method::GET),
        "/health" => (Route::Health, Method::GET),
        "/metrics" => (Route::Metrics, Method::GET),
        "/vllm/metrics" => (Route::Vllm, Method::GET),
        "/" => (Route::Root, Method::GET),
        p if p.starts_with("/v1/videos/") && p.ends_with("/content") => {
            (Route::VideoContent, Method::GET)
        }
        p if p.starts_with("/v1/videos/") => (Route::VideoStatus, Method::GET),
        p => {
            let n = p
                .strip_prefix("/dcgm")
                .and_then(|r| r.strip_suffix("/metrics"))
                .and_then(|n| n.parse::<u32>().ok());
            return match n {
                Some(n) if method == Method::GET || method == Method::HEAD => Target::Dcgm(n),
                Some(_) => Target::WrongMethod("GET"),
                None => Target::NotFound,
            };
        }
    };
    let ok = *method == allowed || (allowed == Method::GET && *method == Method::HEAD);
    if ok {
        Target::Route(route)
    } else if allowed == Method::POST {
        Target::WrongMethod("POST")
    } else {
        Target::WrongMethod("GET")
    }
}

fn json_response(status: StatusCode, body: Bytes) -> Resp {
    let mut r = Response::new(MockBody::full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn text_response(body: String) -> Resp {
    let mut r = Response::new(MockBody::full(body));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

fn api_error(state: &State, e: &ApiError) -> Resp {
    json_response(e.status, e.body(&state.cfg.quirks))
}

/// Entry point of every request.
pub(crate) async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Resp, DroppedByFault> {
    let arrival = Instant::now();
    let path = req.uri().path().to_string();
    let (route, result) = match target(req.method(), &path) {
        Target::Route(route) if route.is_inference() => {
            (route, inference(&state, route, req, arrival).await)
        }
        Target::Route(route @ (Route::VideoStatus | Route::VideoContent)) => {
            (route, Ok(video_job(&state, route, &req, &path)))
        }
        Target::Route(route) => (route, Ok(info_route(&state, route))),
        Target::Dcgm(n) => match routes::dcgm::render(&state, n) {
            Some(text) => (Route::Dcgm, Ok(text_response(text))),
            None => (Route::Unknown, Ok(not_found(&state, req.method(), &path))),
        },
        Target::WrongMethod(allow) => {
            let msg = format!(
                "Method {} not allowed for {path}; use {allow}",
                req.method()
            );
            let mut r = json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                error_body(
                    &state.cfg.quirks,
                    &msg,
                    "invalid_request_error",
                    StatusCode::METHOD_NOT_ALLOWED,
                ),
            );
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static(allow));
            (Route::Unknown, Ok(r))
        }
        Target::NotFound => (Route::Unknown, Ok(not_found(&state, req.method(), &path))),
    };
    match &result {
        Ok(r) => state.stats.count_request(route, r.status().as_u16()),
        Err(_) => state.stats.count_request(route, 0),
    }
    result
}

/// A video job's status or content: authorised and recorded like inference requests,
/// but never faulted (a fault applies to the job's creation).
fn video_job(state: &Arc<State>, route: Route, req: &Request<Incoming>, path: &str) -> Resp {
    if !authorized(state, route, req) {
        return api_error(state, &unauthorized());
    }
    if let Some(rec) = &state.recorder {
        rec.record(req.method(), path, req.headers(), Bytes::new());
    }
    match routes::videos::lookup(state, path) {
        Ok((body, content_type)) => {
            let mut r = Response::new(MockBody::full(body));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        }
        Err(e) => api_error(state, &e),
    }
}

fn unauthorized() -> ApiError {
    ApiError {
        status: StatusCode::UNAUTHORIZED,
        kind: "invalid_request_error",
        message: "Incorrect or missing API key: send 'Authorization: Bearer <key>'".into(),
    }
}

fn not_found(state: &State, method: &Method, path: &str) -> Resp {
    let msg = format!("No route for {method} {path}");
    json_response(
        StatusCode::NOT_FOUND,
        error_body(
            &state.cfg.quirks,
            &msg,
            "not_found_error",
            StatusCode::NOT_FOUND,
        ),
    )
}

fn info_route(state: &State, route: Route) -> Resp {
    match route {
        Route::Models => {
            let v = serde_json::json!({
                "object": "list",
                "data": [{
                    "id": state.cfg.default_model,
                    "object": "model",
                    "created": routes::unix_now(),
                    "owned_by": "aiperf-mock-server",
                }],
            });
            json_response(StatusCode::OK, Bytes::from(v.to_string()))
        }
        Route::Health => json_response(
            StatusCode::OK,
            Bytes::from_static(b"{\"status\":\"healthy\"}"),
        ),
        Route::Metrics => text_response(routes::metrics::own(state)),
        Route::Vllm => text_response(routes::metrics::vllm(state)),
        _ => {
            let v = serde_json::json!({
                "name": "aiperf-mock-server",
                "version": env!("CARGO_PKG_VERSION"),
                "default_model": state.cfg.default_model,
            });
            json_response(StatusCode::OK, Bytes::from(v.to_string()))
        }
    }
}

/// The API key in `Authorization: Bearer`, or in `x-api-key` on the Anthropic route (where
/// the real API expects it).
fn authorized(state: &State, route: Route, req: &Request<Incoming>) -> bool {
    let Some(key) = &state.cfg.api_key else {
        return true;
    };
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let bearer = header(AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "));
    let anthropic = header("x-api-key").filter(|_| route == Route::Messages);
    bearer.or(anthropic).is_some_and(|v| v.trim() == key)
}

fn status_fault(kind: FaultKind) -> Option<(StatusCode, &'static str, &'static str)> {
    match kind {
        FaultKind::Error => Some((
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "Injected internal server error (aiperf-mock-server --error-rate)",
        )),
        FaultKind::RateLimit => Some((
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "Injected rate limit (aiperf-mock-server --rate-limit-rate)",
        )),
        FaultKind::Unavailable => Some((
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable_error",
            "Injected service unavailable (aiperf-mock-server --unavailable-rate)",
        )),
        _ => None,
    }
}

/// Sleep until `due` unless it has passed (zero-length sleeps are skipped).
async fn sleep_until(due: Instant) {
    if due > Instant::now() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
    }
}

async fn inference(
    state: &Arc<State>,
    route: Route,
    req: Request<Incoming>,
    arrival: Instant,
) -> Result<Resp, DroppedByFault> {
    if !authorized(state, route, &req) {
        return Ok(api_error(state, &unauthorized()));
    }
    let seq = state.next_seq.fetch_add(1, Relaxed);
    let cfg = &state.cfg;
    let fault = faults::decide(&cfg.faults, state.seed, seq);
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(api_error(
                state,
                &ApiError::bad_request(format!("cannot read request body: {e}")),
            ))
        }
    };
    if let Some(rec) = &state.recorder {
        rec.record(
            &parts.method,
            parts.uri.path(),
            &parts.headers,
            body.clone(),
        );
    }
    if let Some((status, kind, message)) = fault.and_then(status_fault) {
        state.stats.count_fault(fault.unwrap_or(FaultKind::Error));
        let mut r = json_response(status, error_body(&cfg.quirks, message, kind, status));
        if status != StatusCode::INTERNAL_SERVER_ERROR {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        return Ok(r);
    }
    // As a real server, which cannot start on a prompt (or an upload) before its last
    // byte: the schedule starts once the body is read, not when the head arrived.
    let mut start = Instant::now();
    if fault == Some(FaultKind::SlowHeaders) {
        state.stats.count_fault(FaultKind::SlowHeaders);
        start += ms(cfg.faults.slow_headers_ms);
    }
    let (guard, in_flight_before) = InFlight::enter(state.clone(), arrival);
    let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let ctx = Ctx {
        state: state.clone(),
        seq,
        start,
        in_flight_before,
        fault,
        guard,
        answer: parts
            .headers
            .get(ANSWER_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    let reply = match route {
        Route::Chat => routes::chat::handle(ctx, &body),
        Route::Completions => routes::completions::handle(ctx, &body),
        Route::Responses => routes::responses::handle(ctx, &body),
        Route::Messages => routes::messages::handle(ctx, &body),
        Route::ImageGenerations => routes::images::handle(ctx, &body),
        Route::ImageRetrieval => routes::images::retrieve(ctx, &body),
        Route::ImageEdits => routes::images::edit(ctx, header(CONTENT_TYPE), &body),
        Route::AudioTranscriptions => routes::audio::transcribe(ctx, header(CONTENT_TYPE), &body),
        Route::SolidoRag => routes::solido::handle(
            ctx,
            &body,
            header(ACCEPT).is_some_and(|accept| accept.contains("text/event-stream")),
        ),
        Route::VideoCreate => routes::videos::create(ctx, &body),
        Route::TgiGenerate => routes::tgi::handle(ctx, &body, false),
        Route::TgiGenerateStream => routes::tgi::handle(ctx, &body, true),
        Route::Embeddings => routes::embeddings::handle(ctx, &body),
        Route::Ranking => routes::rankings::handle(ctx, &body, routes::rankings::Flavor::Nim),
        Route::TeiRerank => routes::rankings::handle(ctx, &body, routes::rankings::Flavor::Tei),
        _ => routes::rankings::handle(ctx, &body, routes::rankings::Flavor::Cohere),
    };
    match reply {
        Err(e) => Ok(api_error(state, &e)),
        Ok(Reply::Stream(stream)) => {
            sleep_until(start).await;
            let mut r = Response::new(MockBody::Stream(stream));
            let h = r.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            Ok(r)
        }
        Ok(Reply::Json {
            body,
            due,
            plan,
            guard,
        }) => {
            let mut due = due.unwrap_or(start);
            if fault == Some(FaultKind::Stall) {
                state.stats.count_fault(FaultKind::Stall);
                due += ms(cfg.faults.stall_ms);
            }
            sleep_until(due).await;
            if let Some(plan) = &plan {
                guard.first_token();
                guard.emitted(plan.reasoning, true);
                guard.emitted(plan.content, false);
            }
            match fault {
                Some(FaultKind::Drop) => {
                    state.stats.count_fault(FaultKind::Drop);
                    return Err(DroppedByFault);
                }
                Some(FaultKind::Malformed) => {
                    state.stats.count_fault(FaultKind::Malformed);
                    let cut = body.slice(..body.len() / 2);
                    return Ok(json_response(StatusCode::OK, cut));
                }
                Some(FaultKind::Oversized) => {
                    state.stats.count_fault(FaultKind::Oversized);
                    let padding = usize::try_from(cfg.faults.oversized_bytes).unwrap_or(0);
                    let mut padded = vec![b' '; padding];
                    padded.extend_from_slice(&body);
                    return Ok(json_response(StatusCode::OK, padded.into()));
                }
                _ => {}
            }
            if let Some(plan) = &plan {
                guard.finished(plan.finish);
            }
            drop(guard);
            Ok(json_response(StatusCode::OK, body))
        }
    }
}
