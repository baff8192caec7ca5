//! Turns parsed arguments into the runner's [`RunSpec`]: a validated benchmark
//! configuration per sweep point and the options around the runs.

use aiperf_core::clock::saturating_secs;

use aiperf_core::config::{parse_rate_series, ExportLevel, TracelabJoin};
use aiperf_core::{check_request_content_type, BenchmarkConfig, ValidatedConfig};

use aiperf_endpoints::{endpoint_for, EndpointOptions};
use aiperf_metrics::slo::{parse_slos, Slo};
use aiperf_metrics::{validate_goodput, MetricsContext};
use aiperf_runner::{
    ConnectionReuse, MultiRunOptions, ReadinessOptions, RecordOptions, RunSpec, Sweep, SweepPoint,
    SweepType, TransportOptions, MOCK_URL,
};

use clap::Parser;

use crate::args::{self, Cli, Command, ExportLevelArg, ProfileArgs, RunsArgs};
use crate::kv::{parse_headers, parse_key_values};
use crate::sweep;

/// The specification of `aiperf profile` as `argv` gives it (parsed as `args`): the
/// points of a sweep are parsed and assembled up front, so that a bad value fails
/// before anything runs. Errors are usage errors (exit status 2).
pub(crate) fn run_spec(
    argv: &[String],
    args: &ProfileArgs,
    command_line: String,
) -> anyhow::Result<RunSpec> {
    let benchmark = assemble(args)?;
    let mut spec = RunSpec::new(benchmark);
    spec.transport = transport_options(args);
    spec.readiness = args
        .endpoint
        .readiness()?
        .map(|readiness| ReadinessOptions {
            timeout: readiness.timeout,
            interval: readiness.interval,
            mode: readiness.mode,
        });
    spec.telemetry = args.telemetry.to_options()?;
    spec.records = RecordOptions {
        slice_duration: args.output.slice_duration.map(saturating_secs),
        export_http_trace: args.output.export_http_trace,
        export_outputs_json: args.output.export_outputs_json,
    };
    spec.runs = multi_run_options(&args.runs);
    spec.slos = slos(args)?;
    spec.command_line = Some(command_line);
    spec.start_at = args.load.start_at;
    spec.clock_reference.clone_from(&args.load.clock_reference);
    spec.sweep = sweep_points(argv, args)?;
    if let Some(first) = spec.sweep.as_ref().and_then(|sweep| sweep.points.first()) {
        // The shared set-up (tokenizer, readiness, the sweep's directory) is the first
        // point's, as the command line's own values are the first of each list.
        spec.benchmark = first.benchmark.clone();
    }
    Ok(spec)
}

pub(crate) fn transport_options(args: &ProfileArgs) -> TransportOptions {
    let endpoint = &args.endpoint;
    let verify_off_by_env = std::env::var("AIPERF_HTTP_SSL_VERIFY")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "false" | "0" | "no"));
    TransportOptions {
        connection_reuse: match endpoint.connection_reuse_strategy {
            args::ConnectionReuse::Pooled => ConnectionReuse::Pooled,
            args::ConnectionReuse::Never => ConnectionReuse::Never,
            args::ConnectionReuse::StickyUserSessions => ConnectionReuse::StickyUserSessions,
        },
        tls_ca_file: endpoint.tls_ca_file.clone(),
        tls_insecure_skip_verify: endpoint.tls_insecure_skip_verify || verify_off_by_env,
        http2: endpoint.http2,
        max_response_bytes: endpoint.max_response_mib * 1024 * 1024,
        socket_reader: match (endpoint.socket_reader, endpoint.no_socket_reader) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
    }
}

/// `AIPERF_HTTP_VIDEO_POLL_INTERVAL`, when set.
fn video_poll_interval_from_env() -> anyhow::Result<Option<std::time::Duration>> {
    std::env::var("AIPERF_HTTP_VIDEO_POLL_INTERVAL")
        .ok()
        .map(|text| video_poll_interval(&text))
        .transpose()
}

/// A poll interval given in seconds; the library checks its range.
fn video_poll_interval(text: &str) -> anyhow::Result<std::time::Duration> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            Ok(std::time::Duration::from_secs_f64(seconds))
        }
        _ => anyhow::bail!(
            "AIPERF_HTTP_VIDEO_POLL_INTERVAL must be a number of seconds from 0.001 to 10, \
             got {text:?}"
        ),
    }
}

pub(crate) fn multi_run_options(runs: &RunsArgs) -> MultiRunOptions {
    MultiRunOptions {
        count: runs.num_profile_runs,
        cooldown: saturating_secs(runs.profile_run_cooldown_seconds),
        confidence_level: runs.confidence_level,
        warmup_only_before_first_run: runs.warmup_only_before_first_run(),
        consistent_seed: runs.consistent_seed(),
    }
}

/// The sweep of `argv`'s comma lists, each point an ordinary command line parsed and
/// assembled; `None` without a list.
fn sweep_points(argv: &[String], args: &ProfileArgs) -> anyhow::Result<Option<Sweep>> {
    let expanded = sweep::expand(argv, args.runs.sweep_type)?;
    if expanded.is_empty() {
        return Ok(None);
    }
    let mut points = Vec::with_capacity(expanded.len());
    for point in expanded {
        let point_args = match Cli::try_parse_from(&point.argv) {
            Ok(Cli {
                command: Command::Profile(point_args),
            }) => point_args,
            Ok(_) => anyhow::bail!("a sweep point is not an `aiperf profile` command line"),
            Err(error) => error.exit(),
        };
        let benchmark = assemble(&point_args)
            .map_err(|error| error.context(format!("sweep point {}", point.label)))?;
        points.push(SweepPoint {
            label: point.label,
            parameters: point.parameters,
            benchmark,
        });
    }
    Ok(Some(Sweep {
        sweep_type: match args.runs.sweep_type {
            args::SweepType::Grid => SweepType::Grid,
            args::SweepType::Zip => SweepType::Zip,
        },
        points,
        cooldown: saturating_secs(args.runs.parameter_sweep_cooldown_seconds),
    }))
}

/// Builds and validates the configuration. Errors are usage errors (exit status 2).
pub(crate) fn assemble(args: &ProfileArgs) -> anyhow::Result<ValidatedConfig> {
    let config = build_config(args)?.validate()?;
    check_endpoint_options(&config)?;
    Ok(config)
}

/// The configuration the flags describe, not yet validated (a configuration file's
/// overrides take fields from it). Errors are usage errors (exit status 2).
pub(crate) fn build_config(args: &ProfileArgs) -> anyhow::Result<BenchmarkConfig> {
    let mut config = BenchmarkConfig::default();
    let endpoint = &mut config.endpoint;
    endpoint.models = args
        .endpoint
        .models
        .iter()
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect();
    endpoint.urls = args
        .endpoint
        .urls
        .iter()
        .map(|url| normalise_url(url))
        .collect();
    // The Python AIPerf 0.13's help spells endpoint types with hyphens
    // (`cohere-rankings`), its config files with underscores.
    endpoint.endpoint_type = args.endpoint.endpoint_type.replace('-', "_");
    endpoint.custom_endpoint = args.endpoint.custom_endpoint.clone();
    endpoint.streaming = args.endpoint.streaming;
    endpoint.api_key = args.endpoint.api_key.clone();
    endpoint.headers = parse_headers(&args.endpoint.headers)?;
    endpoint.extra_inputs = parse_key_values("--extra-inputs", &args.endpoint.extra_inputs)?;
    let timeout = args.endpoint.request_timeout_seconds;
    if !(timeout.is_finite() && timeout > 0.0) {
        anyhow::bail!("--request-timeout-seconds must be greater than 0, got {timeout}");
    }
    endpoint.request_timeout = saturating_secs(timeout);
    endpoint.use_legacy_max_tokens = args.endpoint.use_legacy_max_tokens;
    endpoint.use_server_token_count = args.endpoint.use_server_token_count;
    endpoint.per_chunk_usage = args.endpoint.per_chunk_usage;
    endpoint.session_header = args.endpoint.session_header.clone();
    endpoint.request_content_type = args
        .endpoint
        .request_content_type
        .map(args::RequestContentTypeArg::to_config);
    endpoint.download_video_content = args.endpoint.download_video_content;
    if let Some(interval) = video_poll_interval_from_env()? {
        endpoint.video_poll_interval = interval;
    }
    args.endpoint.readiness()?;
    if let Some(width) = args.output.slice_duration {
        if !(width.is_finite() && width > 0.0) {
            anyhow::bail!("--slice-duration must be greater than 0 seconds, got {width}");
        }
    }

    args.input.apply(&mut config.input)?;
    config.input.trace.tracelab_join = TracelabJoin::from_env()?;
    args.rankings.apply(&mut config.input);

    config.load = args.load.to_config();
    config.load.shard = args.load.shard()?;
    if let Some(path) = &args.load.request_rate_series {
        let text = std::fs::read_to_string(path).map_err(|error| {
            anyhow::anyhow!(
                "cannot read --request-rate-series {}: {error}",
                path.display()
            )
        })?;
        config.load.request_rate_series = Some(parse_rate_series(&text)?);
    }

    config.output.artifact_dir = args.output.artifact_dir.clone();
    config.output.export_prefix = args.output.profile_export_prefix.clone();
    config.output.export_level = match args.output.export_level {
        ExportLevelArg::Summary => ExportLevel::Summary,
        ExportLevelArg::Records => ExportLevel::Records,
        ExportLevelArg::Raw => ExportLevel::Raw,
    };
    if let Some(goodput) = &args.input.goodput {
        config.goodput = parse_goodput(goodput)?;
    }
    config.accuracy = args.accuracy.to_config()?;
    Ok(config)
}

/// Rules that need the endpoint type: it must exist, --request-content-type must be the
/// encoding it sends, and every --goodput tag must be a metric this endpoint and streaming
/// mode produce.
pub(crate) fn check_endpoint_options(config: &BenchmarkConfig) -> anyhow::Result<()> {
    let endpoint = endpoint_for(&config.endpoint.endpoint_type, EndpointOptions::default())?;
    check_request_content_type(config.endpoint.request_content_type, endpoint.as_ref())?;
    let context = MetricsContext::new(config, endpoint.info());
    validate_goodput(&config.goodput, &context)?;
    Ok(())
}

/// The run-level SLOs of `--slo` (empty without the flag).
pub(crate) fn slos(args: &ProfileArgs) -> anyhow::Result<Vec<Slo>> {
    Ok(match &args.input.slo {
        Some(text) => parse_slos(text)?,
        None => Vec::new(),
    })
}

/// `http://` is prepended when a URL has no scheme; `mock` is kept as is.
fn normalise_url(url: &str) -> String {
    if url.trim() == MOCK_URL {
        MOCK_URL.to_owned()
    } else {
        aiperf_core::url::with_default_scheme(url)
    }
}

/// `"tag:number tag:number"` → pairs, in the metric's display unit.
fn parse_goodput(text: &str) -> anyhow::Result<Vec<(String, f64)>> {
    text.split_whitespace()
        .map(|item| {
            let (tag, value) = item.split_once(':').ok_or_else(|| {
                anyhow::anyhow!("--goodput item {item:?} is not `metric_tag:threshold`")
            })?;
            let value: f64 = value.parse().map_err(|_| {
                anyhow::anyhow!("--goodput threshold {value:?} of {tag} is not a number")
            })?;
            Ok((tag.to_owned(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn assemble_from(args: &[&str]) -> anyhow::Result<ValidatedConfig> {
        let argv = ["aiperf", "profile"]
            .iter()
            .chain(args)
            .map(std::string::ToString::to_string);
        let Command::Profile(args) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("expected the profile subcommand");
        };
        assemble(&args)
    }

    #[test]
    fn urls_get_a_scheme_and_goodput_parses() {
        let config = assemble_from(&[
            "-m",
            "m",
            "-u",
            "localhost:9000",
            "--streaming",
            "--goodput",
            "time_to_first_token:200 request_latency:1000.5",
        ])
        .unwrap();
        assert_eq!(config.endpoint.urls, ["http://localhost:9000"]);
        assert_eq!(
            config.goodput,
            [
                ("time_to_first_token".to_string(), 200.0),
                ("request_latency".to_string(), 1000.5)
            ]
        );
    }

    #[test]
    fn validation_errors_surface() {
        let err = assemble_from(&["-m", "m", "--benchmark-grace-period", "3"]).unwrap_err();
        assert_eq!(
            crate::usage::flag_words(&err.to_string()),
            "--benchmark-grace-period requires --benchmark-duration"
        );
    }

    #[test]
    fn goodput_tags_are_checked_against_the_endpoint_before_anything_runs() {
        let err = assemble_from(&["-m", "m", "--goodput", "time_to_frist_token:5"]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Unknown metric tag(s) in --goodput"),
            "{err}"
        );
        // TTFT exists only for streaming runs.
        let err = assemble_from(&["-m", "m", "--goodput", "time_to_first_token:5"]).unwrap_err();
        assert!(err.to_string().contains("not applicable"), "{err}");
        assert!(assemble_from(&[
            "-m",
            "m",
            "--streaming",
            "--goodput",
            "time_to_first_token:5"
        ])
        .is_ok());
    }

    #[test]
    fn an_unknown_endpoint_type_is_a_usage_error() {
        let err = assemble_from(&["-m", "m", "--endpoint-type", "nope"]).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }

    #[test]
    fn huge_durations_saturate_instead_of_panicking() {
        let config = assemble_from(&[
            "-m",
            "m",
            "--request-timeout-seconds",
            "1e300",
            "--benchmark-duration",
            "1e300",
            "--benchmark-grace-period",
            "1e300",
        ])
        .unwrap();
        assert_eq!(config.endpoint.request_timeout, Duration::MAX);
        assert_eq!(config.grace_period(), Duration::MAX);
    }

    #[test]
    fn raw_export_level_reaches_the_config() {
        let config = assemble_from(&["-m", "m", "--export-level", "raw"]).unwrap();
        assert_eq!(config.output.export_level, ExportLevel::Raw);
    }

    #[test]
    fn python_hyphenated_values_are_accepted() {
        let config = assemble_from(&[
            "-m",
            "m",
            "--endpoint-type",
            "cohere-rankings",
            "--model-selection-strategy",
            "round-robin",
            "--arrival-pattern",
            "concurrency-burst",
            "--url-strategy",
            "round_robin",
            "--connection-reuse-strategy",
            "sticky_user_sessions",
            "--request-content-type",
            "application-json",
            "--transport",
            "http",
        ])
        .unwrap();
        assert_eq!(config.endpoint.endpoint_type, "cohere_rankings");
        assert_eq!(
            config.input.model_selection,
            aiperf_core::config::ModelSelectionStrategy::RoundRobin
        );
        assert_eq!(
            config.load.arrival_pattern,
            Some(aiperf_core::config::ArrivalPattern::ConcurrencyBurst)
        );
    }

    #[test]
    fn endpoint_flags_reach_the_config() {
        let config = assemble_from(&[
            "-m",
            "m",
            "--streaming",
            "--use-server-token-count",
            "--per-chunk-usage",
            "--session-header",
            "X-Session-ID",
        ])
        .unwrap();
        assert!(config.endpoint.per_chunk_usage);
        assert_eq!(
            config.endpoint.session_header.as_deref(),
            Some("X-Session-ID")
        );
    }

    #[test]
    fn the_socket_reader_is_the_runs_choice_unless_a_flag_says() {
        let transport = |extra: &[&str]| {
            let argv = ["aiperf", "profile", "-m", "m"]
                .iter()
                .chain(extra)
                .map(std::string::ToString::to_string);
            let Command::Profile(args) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("expected the profile subcommand");
            };
            transport_options(&args)
        };
        assert_eq!(transport(&[]).socket_reader, None);
        assert_eq!(
            transport(&["--no-socket-reader"]).socket_reader,
            Some(false)
        );
        assert_eq!(transport(&["--socket-reader"]).socket_reader, Some(true));
    }

    #[test]
    fn per_chunk_usage_names_what_it_needs() {
        let error = |extra: &[&str]| {
            let mut argv = vec!["-m", "m", "--per-chunk-usage"];
            argv.extend(extra);
            crate::usage::flag_words(&assemble_from(&argv).unwrap_err().to_string())
        };
        assert_eq!(
            error(&["--streaming"]),
            "--per-chunk-usage requires --use-server-token-count"
        );
        assert_eq!(
            error(&["--use-server-token-count"]),
            "--per-chunk-usage requires --streaming"
        );
        assert_eq!(
            error(&[
                "--use-server-token-count",
                "--streaming",
                "--endpoint-type",
                "completions"
            ]),
            "--per-chunk-usage requires --endpoint-type chat"
        );
    }

    #[test]
    fn a_bad_session_header_name_is_refused() {
        let err = assemble_from(&["-m", "m", "--session-header", "X Session"]).unwrap_err();
        assert_eq!(
            crate::usage::flag_words(&err.to_string()),
            "invalid --session-header \"X Session\": the name contains ' '; a header name is \
             letters, digits and !#$%&'*+-.^_`|~ only"
        );
    }

    #[test]
    fn multipart_bodies_only_go_to_the_types_that_send_forms() {
        let upload = assemble_from(&[
            "-m",
            "m",
            "--endpoint-type",
            "image_edit",
            "--request-content-type",
            "multipart/form-data",
        ])
        .unwrap();
        assert_eq!(
            upload.endpoint.request_content_type,
            Some(aiperf_core::RequestContentType::MultipartFormData)
        );
        let chat = assemble_from(&["-m", "m", "--request-content-type", "multipart-form-data"])
            .unwrap_err();
        assert_eq!(
            chat.to_string(),
            "invalid endpoint.request_content_type: endpoint type chat sends application/json, \
             not multipart/form-data (multipart/form-data is for the types that send forms: \
             audio_transcription, image_edit, video_generation)"
        );
        let video = ["-m", "m", "--endpoint-type", "video-generation"];
        let form = [
            &video[..],
            &["--request-content-type", "multipart-form-data"],
        ]
        .concat();
        assert!(assemble_from(&form).is_ok());
        let json = [&video[..], &["--request-content-type", "application-json"]].concat();
        assert!(assemble_from(&json).unwrap_err().to_string().contains(
            "endpoint type video_generation sends multipart/form-data, not application/json"
        ));
        let json_upload = assemble_from(&[
            "-m",
            "m",
            "--endpoint-type",
            "audio_transcription",
            "--request-content-type",
            "application-json",
        ])
        .unwrap_err();
        assert!(json_upload.to_string().contains(
            "endpoint type audio_transcription sends multipart/form-data, not application/json"
        ));
    }

    #[test]
    fn weighted_models_are_refused_with_a_sentence() {
        let err =
            assemble_from(&["-m", "a,b", "--model-selection-strategy", "weighted"]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--model-selection-strategy weighted needs a weight for every model"),
            "{err}"
        );
    }

    #[test]
    fn video_jobs_take_the_download_flag_and_a_poll_interval_in_seconds() {
        let args = ["-m", "m", "--endpoint-type", "video_generation"];
        let config = assemble_from(&[&args[..], &["--download-video-content"]].concat()).unwrap();
        assert!(config.endpoint.download_video_content);
        assert_eq!(
            config.endpoint.video_poll_interval,
            Duration::from_millis(100)
        );
        assert!(
            !assemble_from(&args)
                .unwrap()
                .endpoint
                .download_video_content
        );
        assert_eq!(
            video_poll_interval(" 0.25 ").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            video_poll_interval("fast").unwrap_err().to_string(),
            "AIPERF_HTTP_VIDEO_POLL_INTERVAL must be a number of seconds from 0.001 to 10, \
             got \"fast\""
        );
    }

    #[test]
    fn a_request_rate_series_is_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_owned()
        };
        let good = file(
            "good.json",
            r#"[{"time_s": 0, "qps": 2}, {"time_s": 5, "qps": 4}]"#,
        );
        let config = assemble_from(&["-m", "m", "--request-rate-series", &good]).unwrap();
        assert_eq!(config.load.initial_request_rate(), Some(2.0));
        assert_eq!(
            config.load.arrival_pattern,
            Some(aiperf_core::config::ArrivalPattern::Poisson)
        );
        let error = |args: &[&str]| {
            let mut argv = vec!["-m", "m"];
            argv.extend(args);
            crate::usage::flag_words(&assemble_from(&argv).unwrap_err().to_string())
        };
        assert_eq!(
            error(&["--request-rate-series", &good, "--request-rate", "3"]),
            "--request-rate-series cannot be combined with --request-rate"
        );
        let backwards = file(
            "back.json",
            r#"[{"time_s": 5, "qps": 2}, {"time_s": 5, "qps": 4}]"#,
        );
        assert_eq!(
            error(&["--request-rate-series", &backwards]),
            "--request-rate-series time_s values must be strictly increasing"
        );
        let one = file("one.json", r#"{"points": [{"time_s": 0, "qps": 2}]}"#);
        assert_eq!(
            error(&["--request-rate-series", &one]),
            "--request-rate-series needs at least two points"
        );
        let zero = file(
            "zero.json",
            r#"[{"time_s": 0, "qps": 0}, {"time_s": 1, "qps": 4}]"#,
        );
        assert_eq!(
            error(&["--request-rate-series", &zero]),
            "--request-rate-series must be greater than 0, got 0"
        );
        let typo = file(
            "typo.json",
            r#"[{"t": 0, "qps": 2}, {"time_s": 1, "qps": 4}]"#,
        );
        assert!(error(&["--request-rate-series", &typo])
            .starts_with("invalid --request-rate-series: expected a JSON array"));
    }

    #[test]
    fn the_failed_request_threshold_is_a_fraction() {
        let config = assemble_from(&["-m", "m", "--failed-request-threshold", "0.25"]).unwrap();
        assert_eq!(config.load.failed_request_threshold, Some(0.25));
        let err = assemble_from(&["-m", "m", "--failed-request-threshold", "1.5"]).unwrap_err();
        assert_eq!(
            crate::usage::flag_words(&err.to_string()),
            "--failed-request-threshold must be between 0 and 1, got 1.5"
        );
    }

    #[test]
    fn bad_goodput_names_the_item() {
        let err = assemble_from(&["-m", "m", "--goodput", "ttft"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--goodput item \"ttft\" is not `metric_tag:threshold`"
        );
    }
}
