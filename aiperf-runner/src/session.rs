//! What every run of one invocation shares (transport, tokenizer, endpoint, the embedded
//! mock server), and one run from workload to written files.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aiperf_core::config::ExportLevel;
use aiperf_core::{
    check_request_content_type, Benchmark, BenchmarkConfig, CancellationToken, DatasetSource,
    Endpoint, Progress, TokenCounter, ValidatedConfig,
};
use aiperf_datasets::chat_template::{ChatTemplate, ChatTemplateCounter};
use aiperf_datasets::{
    choose_tokenizer, find_cached_tokenizer, load_tokenizer, HubEnv, Tokenizer, TokenizerSpec,
};
use aiperf_endpoints::readiness::{wait_until_ready, ReadinessError, ReadinessEvent, Target};
use aiperf_endpoints::{endpoint_for, EndpointOptions, HttpTransport, VideoJobOptions};
use aiperf_metrics::digest::DIGEST_FILE;
use aiperf_metrics::export::{
    export_paths, resolve_artifact_dir, write_results_ready, write_summary_files,
};
use aiperf_metrics::live::LiveStats;
use aiperf_metrics::{MetricsSink, Summary};

use crate::clock_reference::{self, ClockOffset};
use crate::hooks::{self, Notice, PhaseTargets, RunHooks, RunWatch};
use crate::report::{Outcome, RunFiles, RunReport};
use crate::shard::{self, ShardManifest, ShardResults};
use crate::spec::{ConnectionReuse, RunSpec, TransportOptions};
use crate::{descriptors, inputs, telemetry, workload, RunError, RunParts};

/// What the runs of one invocation share.
pub(crate) struct Session {
    cancel: CancellationToken,
    transport: Arc<HttpTransport>,
    tokenizer: Tokenizer,
    /// What the metrics count tokens with: the tokenizer, applying the model's chat
    /// template to the input when asked.
    token_counter: Arc<dyn TokenCounter>,
    /// The embedded server's URL, which replaces [`MOCK_URL`](crate::MOCK_URL).
    mock_url: Option<String>,
    /// Kept only so that the embedded server lives as long as the session.
    #[cfg(feature = "mock")]
    _mock: Option<aiperf_mock_server::MockServer>,
    endpoint: Arc<dyn Endpoint>,
    /// An embedder's endpoint replaces the configured type: runs record its name.
    own_endpoint: bool,
    /// An embedder's dataset, loaded anew for every run.
    own_dataset: Option<Mutex<Box<dyn DatasetSource + Send>>>,
    streaming: bool,
    /// The shared start instant, until the first run has waited for it.
    start_barrier: Mutex<Option<SystemTime>>,
    /// This machine's clock against `RunSpec::clock_reference`, when one is given.
    clock_offset: Option<ClockOffset>,
}

impl Session {
    /// Sets up what the runs share and waits for the server when asked; `None` when the
    /// cancellation token ended that wait.
    pub(crate) async fn start(
        spec: &RunSpec,
        parts: RunParts,
        hooks: &mut dyn RunHooks,
        cancel: CancellationToken,
    ) -> Result<Option<Self>, RunError> {
        let config: &BenchmarkConfig = &spec.benchmark;
        if config.osl_without_length_control() {
            tracing::warn!("{}", aiperf_core::config::OSL_WITHOUT_LENGTH_CONTROL);
        }
        let readiness = spec
            .readiness
            .map(super::spec::ReadinessOptions::to_readiness)
            .transpose()?;
        let transport = Arc::new(build_transport(&spec.transport, config.endpoint.streaming)?);
        let (tokenizer, token_counter) = load_run_tokenizer(config, transport.as_ref()).await?;
        let mock = start_embedded_mock_if_asked(config, &tokenizer).await?;
        let mock_url = mock.as_ref().map(EmbeddedMock::url);
        let sweep_points = spec.sweep.iter().flat_map(|sweep| &sweep.points);
        let most_needed = std::iter::once(config)
            .chain(sweep_points.map(|point| &*point.benchmark))
            .filter_map(|config| descriptors::needed(config, mock_url.is_some()))
            .max();
        if let (Some(needed), Some(limit)) = (most_needed, descriptors::raise_open_file_limit()) {
            if needed > limit {
                hooks.notice(&Notice::OpenFileLimit { needed, limit });
            }
        }
        let own_endpoint = parts.endpoint.is_some();
        let endpoint = match parts.endpoint {
            Some(endpoint) => endpoint,
            None => endpoint_for(
                &config.endpoint.endpoint_type,
                EndpointOptions {
                    use_legacy_max_tokens: config.endpoint.use_legacy_max_tokens,
                    use_server_token_count: config.endpoint.use_server_token_count,
                    per_chunk_usage: config.endpoint.per_chunk_usage,
                    extra_inputs: config.endpoint.extra_inputs.clone(),
                    video: VideoJobOptions {
                        poll_interval: config.endpoint.video_poll_interval,
                        download_content: config.endpoint.download_video_content,
                    },
                },
            )?,
        };
        check_request_content_type(config.endpoint.request_content_type, endpoint.as_ref())?;
        let streaming = config.streams_with(endpoint.info());
        if config.endpoint.streaming && !streaming {
            hooks.notice(&Notice::StreamingUnsupported {
                endpoint: endpoint.info().name,
            });
        }
        let clock_offset = match &spec.clock_reference {
            Some(reference) => {
                let offset = clock_reference::measure(reference).await?;
                tracing::info!(
                    "This clock is {:+.3} ms off the clock reference {reference} (± {:.3} ms); \
                     the start instant and wall-clock stamps are in the reference's time",
                    -offset.offset_ms(),
                    offset.round_trip_ms() / 2.0
                );
                Some(offset)
            }
            None => None,
        };
        let session = Self {
            clock_offset,
            cancel,
            transport,
            tokenizer,
            token_counter,
            mock_url,
            #[cfg(feature = "mock")]
            _mock: mock,
            endpoint,
            own_endpoint,
            own_dataset: parts.dataset.map(Mutex::new),
            streaming,
            start_barrier: Mutex::new(spec.start_at),
        };

        let info = session.endpoint.info();
        let (headers, api_key_replaced) =
            info.request_headers(config.endpoint.api_key.as_deref(), &config.endpoint.headers);
        if api_key_replaced {
            hooks.notice(&Notice::ApiKeyHeaderReplaced);
        }
        if let Some(readiness) = readiness {
            // What the runs will send: the session's server, the endpoint's streaming.
            let adopted = session.adopt(&spec.benchmark)?;
            let request_urls = adopted.request_urls(info);
            let target = Target {
                base_urls: &adopted.endpoint.urls,
                request_urls: &request_urls,
                model: config.primary_model(),
                endpoint: session.endpoint.as_ref(),
                headers: &headers,
            };
            let show = &mut |event: ReadinessEvent<'_>| hooks.notice(&Notice::Readiness(event));
            let transport = session.transport.as_ref();
            match wait_until_ready(transport, &target, readiness, &session.cancel, show).await {
                Ok(()) => {}
                Err(ReadinessError::Cancelled { .. }) => {
                    tracing::warn!("Cancelled while waiting for the server; nothing was sent");
                    return Ok(None);
                }
                Err(other) => return Err(other.into()),
            }
        }
        Ok(Some(session))
    }

    /// The start instant the first run waits for; later runs get `None`.
    /// `local` in the clock reference's time (itself without a reference).
    fn reference_time(&self, local: SystemTime) -> SystemTime {
        self.clock_offset
            .as_ref()
            .map_or(local, |c| c.to_reference(local))
    }

    fn take_start_barrier(&self) -> Option<SystemTime> {
        self.start_barrier
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// True once the cancellation token fired: no further run should start.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Waits `pause`, or less when the run is cancelled meanwhile.
    pub(crate) async fn cool_down(&self, pause: Duration) {
        if !pause.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.cancel.cancelled() => {}
            }
        }
    }

    /// The configuration a run is given, pointed at the session's server, with the
    /// streaming the endpoint supports and the name of the endpoint that runs.
    pub(crate) fn adopt(&self, config: &ValidatedConfig) -> Result<ValidatedConfig, RunError> {
        let base_urls = self.base_urls(config);
        let streaming = self.streaming;
        let endpoint_type = if self.own_endpoint {
            self.endpoint.info().name
        } else {
            config.endpoint.endpoint_type.as_str()
        };
        if base_urls == config.endpoint.urls
            && streaming == config.endpoint.streaming
            && endpoint_type == config.endpoint.endpoint_type
        {
            return Ok(config.clone());
        }
        let endpoint_type = endpoint_type.to_owned();
        Ok(config.clone().modified(|config| {
            config.endpoint.urls = base_urls;
            config.endpoint.streaming = streaming;
            config.endpoint.endpoint_type = endpoint_type;
        })?)
    }

    /// The configured base URLs, the embedded server's in place of `mock`.
    fn base_urls(&self, config: &BenchmarkConfig) -> Vec<String> {
        config
            .endpoint
            .urls
            .iter()
            .map(|url| match &self.mock_url {
                Some(mock_url) if url == crate::MOCK_URL => mock_url.clone(),
                _ => url.clone(),
            })
            .collect()
    }

    /// Runs the benchmark once and writes its artifacts to `artifact_dir` (`None`: the
    /// directory the configuration names).
    pub(crate) async fn run_once(
        &self,
        spec: &RunSpec,
        config: ValidatedConfig,
        artifact_dir: Option<&Path>,
        hooks: &mut dyn RunHooks,
    ) -> Result<RunReport, RunError> {
        let config = self.adopt(&config)?.with_seed_drawn(rand::random::<u64>);
        let endpoint = &self.endpoint;
        // A poisoned lock only means an earlier run panicked while loading.
        let mut own_dataset = self.own_dataset.as_ref().map(|source| {
            source
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        let workload = workload::load(
            config,
            endpoint.info(),
            &self.tokenizer,
            self.transport.as_ref(),
            own_dataset
                .as_deref_mut()
                .map(|source| &mut **source as &mut (dyn DatasetSource + Send)),
            hooks,
        )
        .await?;
        drop(own_dataset);
        let config = workload.config;
        let conversations = workload.conversations;
        let answers = workload.answers;

        let artifact_dir = match artifact_dir {
            Some(dir) => dir.to_path_buf(),
            None => resolve_artifact_dir(&config),
        };
        std::fs::create_dir_all(&artifact_dir).map_err(RunError::write(&artifact_dir))?;
        hooks.artifacts_at(&artifact_dir);
        tracing::info!("Artifacts: {}", artifact_dir.display());
        let paths = export_paths(&artifact_dir, config.output.export_prefix.as_deref());
        let (inputs_json, stream) = match workload.stream {
            Some(stream) => {
                let (writer, stream) = inputs::InputsWriter::of_stream(
                    &paths.inputs_json,
                    endpoint,
                    &config,
                    stream,
                    &self.cancel,
                );
                (writer, Some(stream))
            }
            None => (
                inputs::InputsWriter::start(&paths.inputs_json, endpoint, &config, &conversations)?,
                None,
            ),
        };

        // Stops this run's sending at the first failed write of a record export, without
        // cancelling the whole invocation.
        let stop = self.cancel.child_token();
        let mut sink = MetricsSink::new(&config, endpoint.info(), Arc::clone(&self.token_counter))?
            .stop_sending_on_export_failure(stop.clone())
            .stop_sending_on_failure_threshold(stop.clone());
        if let Some(command_line) = &spec.command_line {
            tracing::info!("CLI command: {command_line}");
            sink = sink.with_cli_command(command_line.clone());
        }
        // Only a live display reads latencies as they come; otherwise the sink skips it.
        let live = hooks.wants_live_stats().then(|| Arc::new(LiveStats::new()));
        if let Some(live) = &live {
            sink = sink.with_live_stats(Arc::clone(live));
        }
        if let Some(width) = spec.records.slice_duration {
            sink = sink.with_time_slices(width);
        }
        if config.output.export_level != ExportLevel::Summary {
            sink = sink
                .export_records_to(&paths.jsonl)?
                .export_http_trace(spec.records.export_http_trace);
            #[cfg(feature = "parquet")]
            {
                sink = sink.export_parquet_to(&paths.parquet)?;
            }
        }
        if let Some(answers) = answers {
            sink = sink
                .grade_answers(answers)
                .export_grades_to(&paths.accuracy_jsonl)?;
        }
        if spec.records.export_outputs_json {
            sink = sink.export_outputs_to(&paths.outputs_json);
        }
        if config.load.shard.is_some() {
            // What `aiperf merge` recomputes the whole benchmark's summary from.
            sink = sink.export_digests_to(artifact_dir.join(DIGEST_FILE))?;
        }
        let raw_export = config.output.export_level == ExportLevel::Raw;
        if raw_export {
            sink = sink.export_raw_records_to(&paths.raw_jsonl)?;
        }

        let running_telemetry = telemetry::start(
            &spec.telemetry,
            &config.endpoint.urls,
            self.transport.clone(),
        );
        let progress = Arc::new(Progress::default());
        let builder = Benchmark::builder(&config);
        let builder = match stream {
            Some(stream) => builder.conversation_stream(stream),
            None => builder.conversations(conversations, workload.sampling),
        };
        let benchmark = builder
            .endpoint(Arc::clone(endpoint))
            .transport(self.transport.clone())
            .cancel_token(stop)
            .progress(Arc::clone(&progress))
            .wall_clock_offset(self.clock_offset.as_ref().map_or(0, |c| c.offset_ns))
            .sink(sink)?;

        let start_at = self.take_start_barrier();
        if let Some(at) = start_at {
            // The instant is the reference's time; this clock reaches it at another.
            let at = self.clock_offset.as_ref().map_or(at, |c| c.to_local(at));
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                hooks.notice(&Notice::WaitingForStart {
                    shard: config.load.shard,
                    wait,
                });
            }
            match shard::wait_for_start(at, &self.cancel).await {
                Some(late) if late > shard::LATE_START => hooks.notice(&Notice::LateStart {
                    shard: config.load.shard,
                    late,
                }),
                Some(_) => {}
                None => tracing::warn!("Cancelled while waiting for the start instant"),
            }
        }
        let started = self.reference_time(SystemTime::now());
        hooks.sending(&RunWatch {
            progress: Arc::clone(&progress),
            live,
            targets: PhaseTargets::from_config(&config),
            cancel: self.cancel.clone(),
            long_wait: spec.long_wait,
        });
        let reserve = descriptors::DescriptorReserve::hold();
        let parquet_after_run = (cfg!(feature = "parquet")
            && config.output.export_level != ExportLevel::Summary)
            .then_some(paths.parquet.as_path());
        let watched = Watched {
            progress: &progress,
            long_wait: spec.long_wait,
            parquet_after_run,
        };
        // Reads before the run (readiness checks, an earlier run) are not this run's.
        self.transport.take_read_lateness();
        let result = watched.run(benchmark.run(), hooks).await;
        reserve.release();
        if let Some(notice) = hooks::late_reads(self.transport.take_read_lateness()) {
            hooks.notice(&notice);
        }
        let mut summary = result?;
        let inputs_json = inputs_json.sending_ended(&self.cancel);
        if summary.connection_retries > 0 {
            tracing::info!(
                "{} requests were sent again on a fresh connection after the server closed a \
                 reused keep-alive connection before answering",
                summary.connection_retries
            );
        }
        // Finish right after the run: counters take the scrapes just after the window's end.
        // A file that cannot be written (a full disk) is reported with the summary, which
        // still reaches the hooks and the console.
        let telemetry = match running_telemetry {
            Some(running) => match running.finish(&summary, &artifact_dir).await {
                Ok(telemetry) => Some(telemetry),
                Err(error) => {
                    tracing::error!("{error}");
                    summary
                        .export_failure
                        .get_or_insert_with(|| error.to_string());
                    None
                }
            },
            None => None,
        };
        if let Some(telemetry) = &telemetry {
            summary.additions = telemetry.additions.clone();
        }
        match write_summary_files(&summary, &paths) {
            Ok(()) => {
                tracing::info!("Wrote {} and {}", paths.csv.display(), paths.json.display());
            }
            Err(error) => {
                tracing::error!("{error}");
                summary
                    .export_failure
                    .get_or_insert_with(|| error.to_string());
            }
        }
        if let Some(shard) = config.load.shard {
            let mut manifest = ShardManifest::new(&config, shard, start_at, started);
            manifest.clock.clone_from(&self.clock_offset);
            manifest.results = Some(ShardResults::of(
                &summary,
                spec.records.slice_duration,
                &spec.slos,
            ));
            if let Err(error) = manifest.write(&artifact_dir) {
                tracing::error!("{error}");
                summary
                    .export_failure
                    .get_or_insert_with(|| error.to_string());
            }
        }
        if let Err(error) = inputs_json.finish() {
            tracing::error!("{error}");
            summary
                .export_failure
                .get_or_insert_with(|| error.to_string());
        }
        // Last: the marker says every other file of the run is in place.
        let failed_exports: Vec<String> = summary.export_failure.iter().cloned().collect();
        if let Err(error) =
            write_results_ready(&artifact_dir, summary.was_cancelled, &failed_exports)
        {
            tracing::error!("{error}");
            summary
                .export_failure
                .get_or_insert_with(|| error.to_string());
        }

        let slo_report = (!spec.slos.is_empty()).then(|| summary.check_slos(&spec.slos));
        let slos_met = slo_report
            .as_ref()
            .is_none_or(aiperf_metrics::slo::SloReport::passed);
        let outcome = outcome(&summary, slos_met);
        let (gpu_tables, telemetry_files) = match telemetry {
            Some(telemetry) => (telemetry.console, telemetry.files),
            None => (None, Vec::new()),
        };
        Ok(RunReport {
            outcome,
            files: RunFiles {
                dir: artifact_dir,
                csv: paths.csv,
                json: paths.json,
                raw_records: raw_export.then_some(paths.raw_jsonl),
                telemetry: telemetry_files,
            },
            summary,
            gpu_tables,
            slo_report,
        })
    }
}

/// What a run's watcher looks at while the run goes on.
struct Watched<'a> {
    progress: &'a Progress,
    /// Report requests on the wire longer than this, once per such interval.
    long_wait: Duration,
    /// `profile_export.parquet` when the sink writes it after the run.
    parquet_after_run: Option<&'a Path>,
}

/// From how many records the wait for the after-run Parquet file is announced: about a
/// second's worth.
const PARQUET_NOTICE_RECORDS: u64 = 150_000;

/// How often the watcher checks whether sending ended.
const FINISHING_CHECK: Duration = Duration::from_millis(50);

impl Watched<'_> {
    /// Runs `run`, reporting every `long_wait` the requests that have been on the wire
    /// longer than that; tells the hooks when sending ended (before the sink's after-run
    /// work, which [`Notice::WritingParquet`] announces when it is long).
    async fn run<T>(
        &self,
        run: impl std::future::Future<Output = T>,
        hooks: &mut dyn RunHooks,
    ) -> T {
        tokio::pin!(run);
        let mut checks = tokio::time::interval(self.long_wait.max(Duration::from_millis(10)));
        checks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        checks.tick().await; // the first tick is immediate
        let mut finishing_checks = tokio::time::interval(FINISHING_CHECK);
        finishing_checks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sending = true;
        let output = loop {
            tokio::select! {
                // The run last: when it ended right after it began finishing, the hooks
                // still hear that sending ended before the run's result.
                biased;
                _ = finishing_checks.tick(), if sending => {
                    if self.progress.finishing.load(Ordering::Relaxed) {
                        sending = false;
                        self.sending_ended(hooks);
                    }
                }
                _ = checks.tick(), if sending => {
                    if let Some(waiting) = self.progress.in_flight.waiting_longer_than(self.long_wait) {
                        hooks.notice(&Notice::LongWaits {
                            count: waiting.count,
                            longest: waiting.longest,
                            threshold: self.long_wait,
                        });
                    }
                }
                output = &mut run => break output,
            }
        };
        if sending {
            hooks.sending_ended();
        }
        output
    }

    fn sending_ended(&self, hooks: &mut dyn RunHooks) {
        hooks.sending_ended();
        let records = self.progress.completed.load(Ordering::Relaxed);
        if let Some(path) = self
            .parquet_after_run
            .filter(|_| records >= PARQUET_NOTICE_RECORDS)
        {
            hooks.notice(&Notice::WritingParquet { path, records });
        }
    }
}

pub(crate) fn outcome(summary: &Summary, slos_met: bool) -> Outcome {
    if summary.export_failure.is_some() {
        Outcome::ExportFailed
    } else if summary.failure_threshold_exceeded.is_some() {
        Outcome::TooManyFailures
    } else if summary.was_cancelled {
        Outcome::Cancelled
    } else if summary.request_count() == 0
        && summary.error_count() + summary.cancelled_in_flight > 0
    {
        Outcome::AllFailed
    } else if summary.client_resource_errors() > 0 {
        Outcome::ClientLimited
    } else if !slos_met {
        Outcome::SlosMissed
    } else {
        Outcome::Completed
    }
}

/// `Never` keeps no idle connection, so every request opens its own (and pays the TCP
/// handshake inside its TTFT, as a client without keep-alive would). A streaming run
/// reads its connections on the socket reader, which asks for a higher priority: its
/// chunks' stamps need both under load. A non-streaming response's single chunk needs
/// neither (the kernel stamps its arrival however late it is read), so unless the options
/// ask for the reader there it would only cost capacity.
fn build_transport(options: &TransportOptions, streaming: bool) -> Result<HttpTransport, RunError> {
    let mut builder = match options.connection_reuse {
        ConnectionReuse::Pooled => HttpTransport::builder(),
        ConnectionReuse::Never => HttpTransport::builder().pool_max_idle_per_host(0),
        ConnectionReuse::StickyUserSessions => HttpTransport::builder().sticky_sessions(true),
    };
    if let Some(ca_file) = &options.tls_ca_file {
        builder = builder.ca_file(ca_file);
    }
    if options.tls_insecure_skip_verify {
        tracing::warn!("TLS certificate verification is off: any server certificate is accepted");
        builder = builder.insecure_skip_verify(true);
    }
    Ok(builder
        .http2(options.http2)
        .max_response_bytes(options.max_response_bytes)
        .socket_reader(options.uses_socket_reader(streaming))
        .raise_reader_priority(streaming)
        .build()?)
}

/// A `mock` URL starts the embedded mock server (TTFT 20 ms, ITL 5 ms, like the Python
/// AIPerf's mock server). It counts prompt tokens with the run's tokenizer, so the usage
/// it reports agrees with the client's counts.
#[cfg(feature = "mock")]
async fn start_embedded_mock_if_asked(
    config: &BenchmarkConfig,
    tokenizer: &Tokenizer,
) -> Result<Option<aiperf_mock_server::MockServer>, RunError> {
    use aiperf_mock_server::{MockConfig, MockServer};
    if !config
        .endpoint
        .urls
        .iter()
        .any(|url| url == crate::MOCK_URL)
    {
        return Ok(None);
    }
    let counter = tokenizer.clone();
    let server = MockServer::start_counting_prompts_with(
        MockConfig::default(),
        Arc::new(move |text: &str| counter.count(text)),
    )
    .await
    .map_err(RunError::MockServer)?;
    tracing::info!("Benchmarking the embedded mock server at {}", server.url());
    Ok(Some(server))
}

/// Without the `mock` feature, `mock` is an ordinary (unreachable) host name.
#[cfg(not(feature = "mock"))]
async fn start_embedded_mock_if_asked(
    _config: &BenchmarkConfig,
    _tokenizer: &Tokenizer,
) -> Result<Option<NoMock>, RunError> {
    Ok(None)
}

/// The embedded mock server, when the `mock` feature builds it.
#[cfg(feature = "mock")]
type EmbeddedMock = aiperf_mock_server::MockServer;
#[cfg(not(feature = "mock"))]
type EmbeddedMock = NoMock;

/// The type of an embedded server that cannot exist without the `mock` feature.
#[cfg(not(feature = "mock"))]
enum NoMock {}

#[cfg(not(feature = "mock"))]
impl NoMock {
    fn url(&self) -> String {
        match *self {}
    }
}

/// The run's tokenizer, and the counter the metrics use: the tokenizer itself, or with
/// `--apply-chat-template` one that renders chat inputs with the template of the
/// `tokenizer_config.json` beside the tokenizer's `tokenizer.json`.
async fn load_run_tokenizer(
    config: &BenchmarkConfig,
    transport: &HttpTransport,
) -> Result<(Tokenizer, Arc<dyn TokenCounter>), RunError> {
    let input = &config.input;
    let choice = choose_tokenizer(
        input.tokenizer.as_deref(),
        config.primary_model(),
        input.tokenizer_revision.as_deref(),
    )?;
    if input.tokenizer_trust_remote_code {
        tracing::warn!(
            "--tokenizer-trust-remote-code has no effect: aiperf runs no Python, so it loads \
             the repository's tokenizer.json and cannot load a tokenizer defined only by \
             its custom Python code"
        );
    }

    if choice.placeholder_substituted {
        tracing::warn!(
            "{:?} looks like a placeholder model name; counting tokens with the \
             builtin tokenizer (o200k_base). Set a tokenizer for exact counts.",
            choice.requested
        );
    }
    let hub = HubEnv::from_process_env();
    let tokenizer = load_tokenizer(&choice.spec, &hub, Some(transport)).await?;
    if !input.apply_chat_template {
        return Ok((tokenizer.clone(), Arc::new(tokenizer)));
    }
    let tokenizer_file = match &choice.spec {
        TokenizerSpec::File(path) => Some(path.clone()),
        TokenizerSpec::Hub { repo, revision } => hub
            .cache_dir
            .as_deref()
            .and_then(|root| find_cached_tokenizer(root, repo, revision)),
        TokenizerSpec::Tiktoken(_) => None,
    };
    let template = match &tokenizer_file {
        Some(file) => ChatTemplate::beside(file)?,
        None => None,
    };
    let Some(template) = template else {
        tracing::warn!(
            "--apply-chat-template has no effect: {:?} has no chat template \
             (tokenizer_config.json beside its tokenizer.json); counting the bare input text",
            choice.requested
        );
        return Ok((tokenizer.clone(), Arc::new(tokenizer)));
    };
    let counter = ChatTemplateCounter::new(tokenizer.clone(), template);
    Ok((tokenizer, Arc::new(counter)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    /// The hook calls and the run's own events, in one log.
    struct Log(Arc<Mutex<Vec<String>>>);

    impl RunHooks for Log {
        fn notice(&mut self, notice: &Notice<'_>) {
            self.0.lock().unwrap().push(format!("notice: {notice}"));
        }
        fn sending_ended(&mut self) {
            self.0.lock().unwrap().push("sending_ended".into());
        }
    }

    /// Watches a run of `records` records that starts finishing (when `finishing`) and
    /// returns 200 ms later.
    async fn watch(records: u64, parquet: Option<&Path>, finishing: bool) -> Vec<String> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let progress = Progress {
            completed: AtomicU64::new(records),
            ..Progress::default()
        };
        let run = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            progress.finishing.store(finishing, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(200)).await;
            log.lock().unwrap().push("run returned".into());
        };
        let watched = Watched {
            progress: &progress,
            long_wait: Duration::from_secs(60),
            parquet_after_run: parquet,
        };
        watched.run(run, &mut Log(Arc::clone(&log))).await;
        let calls = log.lock().unwrap().clone();
        calls
    }

    #[tokio::test]
    async fn sending_ends_when_the_sink_starts_finishing_and_a_long_parquet_wait_is_said() {
        let parquet = Path::new("out/profile_export.parquet");
        assert_eq!(
            watch(PARQUET_NOTICE_RECORDS, Some(parquet), true).await,
            [
                "sending_ended",
                "notice: Writing out/profile_export.parquet from 150000 records (about 0.9 s)…",
                "run returned",
            ]
        );
    }

    #[tokio::test]
    async fn a_short_wait_or_no_parquet_file_is_not_announced() {
        let parquet = Path::new("out/profile_export.parquet");
        let expected = ["sending_ended", "run returned"];
        assert_eq!(
            watch(PARQUET_NOTICE_RECORDS - 1, Some(parquet), true).await,
            expected
        );
        assert_eq!(watch(PARQUET_NOTICE_RECORDS, None, true).await, expected);
    }

    #[tokio::test]
    async fn a_run_that_returns_without_finishing_still_ends_sending_once() {
        assert_eq!(
            watch(PARQUET_NOTICE_RECORDS, Some(Path::new("p")), false).await,
            ["run returned", "sending_ended"]
        );
    }
}
