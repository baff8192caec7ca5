//! Turns parsed arguments into the runner's [`RunSpec`]: a validated benchmark
//! configuration per sweep point and the options around the runs.

use aiperf_core::clock::saturating_secs;

use aiperf_core::config::ExportLevel;
use aiperf_core::{BenchmarkConfig, ValidatedConfig};

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
    };
    spec.runs = multi_run_options(&args.runs);
    spec.slos = slos(args)?;
    spec.command_line = Some(command_line);
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
    endpoint.endpoint_type = args.endpoint.endpoint_type.clone();
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
    args.endpoint.readiness()?;
    if let Some(width) = args.output.slice_duration {
        if !(width.is_finite() && width > 0.0) {
            anyhow::bail!("--slice-duration must be greater than 0 seconds, got {width}");
        }
    }

    args.input.apply(&mut config.input)?;
    args.rankings.apply(&mut config.input);

    config.load = args.load.to_config();

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
    Ok(config)
}

/// Rules that need the endpoint type: it must exist, and every --goodput tag must be a
/// metric this endpoint and streaming mode produce.
pub(crate) fn check_endpoint_options(config: &BenchmarkConfig) -> anyhow::Result<()> {
    let endpoint = endpoint_for(&config.endpoint.endpoint_type, EndpointOptions::default())?;
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
    fn bad_goodput_names_the_item() {
        let err = assemble_from(&["-m", "m", "--goodput", "ttft"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--goodput item \"ttft\" is not `metric_tag:threshold`"
        );
    }
}
