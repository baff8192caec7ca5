//! `aiperf profile`: compose the library crates into one benchmark run.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aiperf_core::config::ExportLevel;
use aiperf_core::{
    derive_seed, Benchmark, BenchmarkConfig, CancellationToken, Endpoint, PhasePlan, Progress,
    RequestInput,
};
use aiperf_datasets::{choose_tokenizer, load_tokenizer, HubEnv, Tokenizer};
use aiperf_endpoints::readiness::{wait_until_ready, ReadinessError, ReadinessEvent, Target};
use aiperf_endpoints::{build_url, endpoint_for, request_headers, EndpointOptions, HttpTransport};
use aiperf_metrics::catalogue::ConsoleGroup;
use aiperf_metrics::export::{console, export_paths, resolve_artifact_dir, write_summary_files};
use aiperf_metrics::live::LiveStats;
use aiperf_metrics::slo::Slo;
use aiperf_metrics::{MetricsSink, Summary};
use aiperf_mock_server::{MockConfig, MockServer};
use anyhow::Context;
use serde_json::{json, Value};

use crate::args::{ConnectionReuse, EndpointArgs, ProfileArgs, UiType};
use crate::assemble::MOCK_URL;
use crate::ui;
use crate::workload;

/// How a profile run ended, as the process exit status says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// At least one request succeeded.
    Completed,
    /// Every request failed (the summary files still hold the error summary).
    AllFailed,
    /// Ctrl-C stopped the run; what finished was written.
    Cancelled,
    /// The run completed but missed at least one `--slo`.
    SlosMissed,
    /// Fewer than two runs of a multi-run succeeded, or a sweep point failed.
    RunsFailed,
}

/// Runs the benchmark `config` describes and writes its artifacts.
pub async fn profile(
    args: &ProfileArgs,
    mut config: BenchmarkConfig,
    slos: &[Slo],
    cli_command: String,
) -> anyhow::Result<Outcome> {
    let Some(session) = Session::start(args, &mut config).await? else {
        return Ok(Outcome::Cancelled);
    };
    let report = session
        .run_once(args, config, None, slos, cli_command)
        .await?;
    Ok(report.outcome)
}

/// What every run of one invocation shares: the Ctrl-C token, the transport, the
/// tokenizer, the embedded mock server (kept alive across runs) and the request target.
pub struct Session {
    cancel: CancellationToken,
    transport: Arc<HttpTransport>,
    tokenizer: Tokenizer,
    mock_url: Option<String>,
    /// Kept only so the embedded server lives as long as the session.
    _mock: Option<MockServer>,
    endpoint: Arc<dyn Endpoint>,
    streaming: bool,
    request_urls: Vec<String>,
    headers: Vec<(String, String)>,
}

/// One finished run: its summary and how it ended.
pub struct RunReport {
    /// The run's metrics.
    pub summary: Summary,
    /// How the run ended.
    pub outcome: Outcome,
}

impl Session {
    /// Sets up what the runs share and waits for the server when asked; `None` when
    /// Ctrl-C ended that wait. `config` is adjusted as every run needs it (see
    /// [`Session::adopt`]).
    pub async fn start(
        args: &ProfileArgs,
        config: &mut BenchmarkConfig,
    ) -> anyhow::Result<Option<Self>> {
        // First, so that Ctrl-C during a long dataset load also ends the run cleanly.
        let cancel = CancellationToken::new();
        spawn_ctrl_c_handler(cancel.clone());

        if config.osl_without_length_control() {
            tracing::warn!("{}", aiperf_core::config::OSL_WITHOUT_LENGTH_CONTROL);
        }
        let transport = Arc::new(build_transport(&args.endpoint)?);
        let tokenizer = load_run_tokenizer(config, transport.as_ref()).await?;
        let mock = start_embedded_mock_if_asked(config, &tokenizer).await?;
        let endpoint = endpoint_for(
            &config.endpoint.endpoint_type,
            EndpointOptions {
                use_legacy_max_tokens: config.endpoint.use_legacy_max_tokens,
                use_server_token_count: config.endpoint.use_server_token_count,
                extra_inputs: config.endpoint.extra_inputs.clone(),
            },
        )?;
        let streaming = config.endpoint.streaming && endpoint.info().supports_streaming;
        if config.endpoint.streaming && !streaming {
            tracing::warn!(
                "the {} endpoint does not stream; --streaming is ignored",
                endpoint.info().name
            );
        }
        config.endpoint.streaming = streaming;

        let request_urls: Vec<String> = config
            .endpoint
            .urls
            .iter()
            .map(|base| {
                build_url(
                    base,
                    config.endpoint.custom_endpoint.as_deref(),
                    endpoint.info().path(streaming),
                )
            })
            .collect();
        let (headers, api_key_replaced) = request_headers(
            endpoint.info(),
            config.endpoint.api_key.as_deref(),
            &config.endpoint.headers,
        );
        if api_key_replaced {
            tracing::warn!(
                "a header given with -H replaces the one --api-key would send; the --api-key \
                 value is not used"
            );
        }
        if let Some(readiness) = args.endpoint.readiness()? {
            let target = Target {
                base_urls: &config.endpoint.urls,
                request_urls: &request_urls,
                model: config.primary_model(),
                endpoint: endpoint.as_ref(),
                headers: &headers,
            };
            let show = &mut |event: ReadinessEvent<'_>| eprintln!("{event}");
            match wait_until_ready(transport.as_ref(), &target, readiness, &cancel, show).await {
                Ok(()) => {}
                Err(ReadinessError::Cancelled { .. }) => {
                    tracing::warn!("Cancelled while waiting for the server; nothing was sent");
                    return Ok(None);
                }
                Err(ReadinessError::NotReady {
                    base,
                    timeout,
                    problem,
                }) => anyhow::bail!(
                    "{base} was not ready within {} s (--wait-for-model-timeout): {problem}",
                    timeout.as_secs_f64()
                ),
                Err(other) => return Err(other.into()),
            }
        }
        Ok(Some(Self {
            cancel,
            transport,
            tokenizer,
            mock_url: mock.as_ref().map(MockServer::url),
            _mock: mock,
            endpoint,
            streaming,
            request_urls,
            headers,
        }))
    }

    /// Points another run's `config` (e.g. a sweep point's) at the session's server
    /// and streaming choice, as [`Session::start`] did for the first.
    pub fn adopt(&self, config: &mut BenchmarkConfig) {
        if let Some(mock_url) = &self.mock_url {
            for url in &mut config.endpoint.urls {
                if url == MOCK_URL {
                    url.clone_from(mock_url);
                }
            }
        }
        config.endpoint.streaming = self.streaming;
    }

    /// True once Ctrl-C was pressed: no further run should start.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Waits `seconds`, or less when Ctrl-C is pressed meanwhile.
    pub async fn cool_down(&self, seconds: f64) {
        if seconds > 0.0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
                _ = self.cancel.cancelled() => {}
            }
        }
    }

    /// Runs the benchmark once and writes its artifacts to `artifact_dir` (`None`: the
    /// directory `--artifact-dir` and the run's load shape name).
    pub async fn run_once(
        &self,
        args: &ProfileArgs,
        mut config: BenchmarkConfig,
        artifact_dir: Option<&Path>,
        slos: &[Slo],
        cli_command: String,
    ) -> anyhow::Result<RunReport> {
        let seed = *config
            .input
            .random_seed
            .get_or_insert_with(rand::random::<u64>);
        let endpoint = &self.endpoint;
        let workload = workload::load(
            args,
            &mut config,
            endpoint.info(),
            &self.tokenizer,
            self.transport.as_ref(),
        )
        .await?;
        let conversations = workload.conversations;

        let artifact_dir = match artifact_dir {
            Some(dir) => dir.to_path_buf(),
            None => resolve_artifact_dir(&config),
        };
        std::fs::create_dir_all(&artifact_dir).with_context(|| {
            format!(
                "cannot create the artifact directory {}",
                artifact_dir.display()
            )
        })?;
        let log_file = crate::logging::open_log_file(&artifact_dir)
            .context("cannot create logs/aiperf.log in the artifact directory")?;
        tracing::info!("Artifacts: {}", artifact_dir.display());
        let paths = export_paths(&artifact_dir, config.output.export_prefix.as_deref());
        write_inputs_json(
            &artifact_dir.join("inputs.json"),
            endpoint.as_ref(),
            &config,
            &conversations,
        )?;

        tracing::info!("CLI command: {cli_command}");
        let mut sink =
            MetricsSink::new(&config, endpoint.info(), Arc::new(self.tokenizer.clone()))?
                .with_cli_command(cli_command);
        let ui_type = ui::default_ui(
            args.output.ui_type,
            std::io::stdout().is_terminal(),
            args.output.is_verbose(),
        );
        // Only the dashboard reads latencies live; otherwise the sink skips the bookkeeping.
        let live = Arc::new(LiveStats::new());
        if ui_type == UiType::Dashboard {
            sink = sink.with_live_stats(Arc::clone(&live));
        }
        if let Some(width) = args.output.slice_duration {
            sink = sink.with_time_slices(Duration::from_secs_f64(width));
        }
        if config.output.export_level != ExportLevel::Summary {
            sink = sink
                .export_records_to(&paths.jsonl)?
                .export_parquet_to(&paths.parquet)?
                .export_http_trace(args.output.export_http_trace);
        }
        let raw_export = config.output.export_level == ExportLevel::Raw;
        if raw_export {
            sink = sink.export_raw_records_to(&paths.raw_jsonl)?;
        }

        let plans = PhasePlan::for_dataset(&config, &conversations)?;
        let telemetry = crate::telemetry::start(
            &args.telemetry,
            &config.endpoint.urls,
            self.transport.clone(),
        )
        .await?;
        let progress = Arc::new(Progress::default());
        let mut builder = Benchmark::builder()
            .endpoint(Arc::clone(endpoint))
            .transport(self.transport.clone())
            .model(config.primary_model())
            .streaming(self.streaming)
            .request_timeout(config.endpoint.request_timeout)
            .conversations(
                conversations,
                workload.sampling,
                derive_seed(seed, "dataset.sampling"),
            )
            .cancel_token(self.cancel.clone())
            .progress(Arc::clone(&progress))
            .keep_raw_exchanges(raw_export);
        for url in &self.request_urls {
            builder = builder.url(url.clone());
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.clone(), value.clone());
        }
        builder = builder.phases(plans);

        // Each run of a sequence gets its own display, drawn until its tables print.
        let watched = ui::Watched {
            progress,
            live,
            targets: ui::PhaseTargets::from_config(&config),
            cancel: self.cancel.clone(),
        };
        let display = ui::spawn(ui_type, watched);
        let result = builder.sink(sink)?.run().await;
        if let Some(display) = display {
            display.finish();
        }
        let summary = result?;
        if summary.connection_retries > 0 {
            tracing::info!(
                "{} requests were sent again on a fresh connection after the server closed a \
                 reused keep-alive connection before answering",
                summary.connection_retries
            );
        }
        // Finish right after the run: counters take the scrapes just after the window's end.
        let telemetry = match telemetry {
            Some(running) => Some(
                running
                    .finish(
                        (
                            summary.start_time_ns.unwrap_or(0),
                            summary.end_time_ns.unwrap_or(0),
                        ),
                        &artifact_dir,
                        crate::telemetry::RunTotals::from_summary(&summary),
                    )
                    .await?,
            ),
            None => None,
        };

        write_summary_files(&summary, &paths)?;
        tracing::info!("Wrote {} and {}", paths.csv.display(), paths.json.display());
        if let Some(telemetry) = &telemetry {
            telemetry.patch_summary_files(&paths.json, &paths.csv)?;
        }
        print!("{}", console::render_console(&summary));
        if let Some(text) = telemetry.as_ref().and_then(|t| t.console.as_deref()) {
            print!("{text}");
        }
        if args.output.show_trace_timing {
            if let Some(table) = console::metrics_table(&summary, ConsoleGroup::HttpTrace) {
                print!("{}", table.render());
            }
        }
        let raw_records = raw_export.then_some(paths.raw_jsonl.as_path());
        let telemetry_files = telemetry.as_ref().map_or(&[][..], |t| t.files.as_slice());
        print_footer(
            &summary,
            &paths.csv,
            &paths.json,
            telemetry_files,
            raw_records,
            &artifact_dir,
            &log_file,
        );
        let slos_met = slos.is_empty() || {
            let report = summary.check_slos(slos);
            print!("{}", report.render());
            report.passed()
        };
        let outcome = outcome(&summary, slos_met);
        Ok(RunReport { summary, outcome })
    }
}

fn outcome(summary: &Summary, slos_met: bool) -> Outcome {
    if summary.was_cancelled {
        Outcome::Cancelled
    } else if summary.request_count() == 0 && summary.error_count() > 0 {
        Outcome::AllFailed
    } else if !slos_met {
        Outcome::SlosMissed
    } else {
        Outcome::Completed
    }
}

/// `never` keeps no idle connection, so every request opens its own (and pays the TCP
/// handshake inside its TTFT, as a client without keep-alive would).
fn build_transport(args: &EndpointArgs) -> anyhow::Result<HttpTransport> {
    let mut builder = match args.connection_reuse_strategy {
        ConnectionReuse::Pooled => HttpTransport::builder(),
        ConnectionReuse::Never => HttpTransport::builder().pool_max_idle_per_host(0),
        ConnectionReuse::StickyUserSessions => HttpTransport::builder().sticky_sessions(true),
    };
    if let Some(ca_file) = &args.tls_ca_file {
        builder = builder.ca_file(ca_file);
    }
    let verify_off_by_env = std::env::var("AIPERF_HTTP_SSL_VERIFY")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "false" | "0" | "no"));
    if args.tls_insecure_skip_verify || verify_off_by_env {
        tracing::warn!("TLS certificate verification is off: any server certificate is accepted");
        builder = builder.insecure_skip_verify(true);
    }
    Ok(builder.http2(args.http2).build()?)
}

/// `--url mock`: start the embedded mock server (TTFT 20 ms, ITL 5 ms, like the Python
/// AIPerf's mock server) and point the run at it. The server lives as long as the guard.
/// It counts prompt tokens with the run's tokenizer, so the usage it reports agrees with
/// the client's counts.
async fn start_embedded_mock_if_asked(
    config: &mut BenchmarkConfig,
    tokenizer: &Tokenizer,
) -> anyhow::Result<Option<MockServer>> {
    if !config.endpoint.urls.iter().any(|url| url == MOCK_URL) {
        return Ok(None);
    }
    let counter = tokenizer.clone();
    let server = MockServer::start_counting_prompts_with(
        MockConfig::default(),
        Arc::new(move |text: &str| counter.count(text)),
    )
    .await
    .context("cannot start the embedded mock server")?;
    tracing::info!("Benchmarking the embedded mock server at {}", server.url());
    for url in &mut config.endpoint.urls {
        if url == MOCK_URL {
            *url = server.url();
        }
    }
    Ok(Some(server))
}

async fn load_run_tokenizer(
    config: &BenchmarkConfig,
    transport: &HttpTransport,
) -> anyhow::Result<Tokenizer> {
    let choice = choose_tokenizer(
        config.input.tokenizer.as_deref(),
        config.primary_model(),
        None,
    )?;
    if choice.placeholder_substituted {
        tracing::warn!(
            "{:?} looks like a placeholder model name; counting tokens with the \
             builtin tokenizer (o200k_base). Pass --tokenizer for exact counts.",
            choice.requested
        );
    }
    Ok(load_tokenizer(&choice.spec, &HubEnv::from_process_env(), Some(transport)).await?)
}

/// `inputs.json`: the exact body each conversation's turns are sent with.
fn write_inputs_json(
    path: &Path,
    endpoint: &dyn Endpoint,
    config: &BenchmarkConfig,
    conversations: &[aiperf_core::Conversation],
) -> anyhow::Result<()> {
    let mut data = Vec::with_capacity(conversations.len());
    for conversation in conversations {
        let mut payloads = Vec::with_capacity(conversation.turns.len());
        for turn in conversation.turns.chunks(1) {
            let built = aiperf_core::build_request(
                endpoint,
                &RequestInput {
                    model: turn[0].model.as_deref().unwrap_or(config.primary_model()),
                    system_message: conversation.system_message.as_deref(),
                    user_context_message: conversation.user_context_message.as_deref(),
                    turns: turn,
                    streaming: config.endpoint.streaming,
                },
            )?;
            payloads.push(serde_json::from_slice::<Value>(&built.body)?);
        }
        data.push(json!({"session_id": conversation.session_id, "payloads": payloads}));
    }
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    serde_json::to_writer_pretty(std::io::BufWriter::new(file), &json!({ "data": data }))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Ctrl-C cancels the run once; the engine keeps what finished.
/// The exit status of a run a signal cancelled: 130 for Ctrl-C (SIGINT), 143 for SIGTERM,
/// 129 for SIGHUP, as a shell reports a process those signals ended.
static CANCEL_STATUS: AtomicU8 = AtomicU8::new(130);

/// The exit status of a cancelled run (see [`CANCEL_STATUS`]).
pub fn cancel_status() -> u8 {
    CANCEL_STATUS.load(Ordering::Relaxed)
}

/// Ctrl-C, SIGTERM (`docker stop`, Kubernetes, Slurm, `timeout`) and SIGHUP all end the
/// run the same way: stop sending, write everything for what finished.
fn spawn_ctrl_c_handler(cancel: CancellationToken) {
    tokio::spawn(async move {
        let Some(status) = first_signal().await else {
            return;
        };
        CANCEL_STATUS.store(status, Ordering::Relaxed);
        eprintln!("\nCancelling: writing the results of the requests that finished…");
        cancel.cancel();
    });
}

/// Waits for the first of Ctrl-C, SIGTERM and SIGHUP; its exit status, or `None` when
/// no handler could be installed.
#[cfg(unix)]
async fn first_signal() -> Option<u8> {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return tokio::signal::ctrl_c().await.ok().map(|()| 130);
    };
    tokio::select! {
        interrupted = tokio::signal::ctrl_c() => interrupted.ok().map(|()| 130),
        _ = term.recv() => Some(143),
        _ = hangup.recv() => Some(129),
    }
}

#[cfg(not(unix))]
async fn first_signal() -> Option<u8> {
    tokio::signal::ctrl_c().await.ok().map(|()| 130)
}

fn print_footer(
    summary: &Summary,
    csv: &Path,
    json: &Path,
    telemetry_files: &[std::path::PathBuf],
    raw_records: Option<&Path>,
    dir: &Path,
    log_file: &Path,
) {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    println!("CSV Export: {}", absolute(csv).display());
    println!("JSON Export: {}", absolute(json).display());
    for (label, path) in aiperf_telemetry::export::console_exports(telemetry_files) {
        println!("{label}: {}", absolute(path).display());
    }
    if let Some(raw) = raw_records {
        println!("Raw Records: {}", absolute(raw).display());
    }
    println!("Artifacts: {}", absolute(dir).display());
    println!("Log File: {}", log_file.display());
    if summary.was_cancelled {
        println!(
            "The profile run was cancelled early: the results cover the requests that finished."
        );
    }
    if summary.request_count() == 0 && summary.error_count() > 0 {
        println!(
            "All {} request(s) failed: see the Error Summary above.",
            summary.error_count()
        );
    }
}
