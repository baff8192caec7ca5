//! The GPU telemetry and server metrics flags of `aiperf profile` (docs/telemetry.md),
//! turned into the runner's telemetry options.

use std::time::Duration;

use aiperf_core::clock::saturating_secs;

use aiperf_runner::TelemetryOptions;
use aiperf_telemetry::export::ServerMetricsFormat;
use anyhow::Context;
use clap::{Args, ValueEnum};

/// GPU telemetry and server metrics flags.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Telemetry")]
pub(crate) struct TelemetryArgs {
    /// Show the GPU telemetry table at the end. DCGM exporters at localhost:9400 and
    /// :9401 are always tried; URLs given here are scraped too (`http://` and `/metrics`
    /// added as needed). `dashboard` is accepted; pynvml, amdsmi and custom metric CSV
    /// files are not supported yet.
    #[arg(long = "gpu-telemetry", num_args = 0.., value_name = "URL")]
    pub gpu_telemetry: Option<Vec<String>>,

    /// Do not collect GPU telemetry.
    #[arg(long = "no-gpu-telemetry", conflicts_with = "gpu_telemetry")]
    pub no_gpu_telemetry: bool,

    /// More Prometheus endpoints to scrape beside each --url's `/metrics` (scraped by
    /// default).
    #[arg(long = "server-metrics", num_args = 0.., value_name = "URL")]
    pub server_metrics: Option<Vec<String>>,

    /// Do not scrape server metrics.
    #[arg(long = "no-server-metrics", conflicts_with = "server_metrics")]
    pub no_server_metrics: bool,

    /// Server metrics files to write.
    #[arg(
        long = "server-metrics-formats",
        value_enum,
        num_args = 1..,
        value_delimiter = ',',
        default_values_t = [FormatArg::Json, FormatArg::Csv]
    )]
    pub server_metrics_formats: Vec<FormatArg>,
}

/// A `--server-metrics-formats` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// server_metrics_export.json
    Json,
    /// server_metrics_export.csv
    Csv,
    /// server_metrics_export.jsonl (every scrape)
    Jsonl,
    /// server_metrics_export.parquet (every scrape, one row per sample)
    Parquet,
}

impl From<FormatArg> for ServerMetricsFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Json => ServerMetricsFormat::Json,
            FormatArg::Csv => ServerMetricsFormat::Csv,
            FormatArg::Jsonl => ServerMetricsFormat::Jsonl,
            FormatArg::Parquet => ServerMetricsFormat::Parquet,
        }
    }
}

/// The values of a list flag: repeated occurrences and whitespace-separated words.
fn words(values: Option<&Vec<String>>) -> impl Iterator<Item = &str> {
    values
        .into_iter()
        .flatten()
        .flat_map(|v| v.split_whitespace())
}

impl TelemetryArgs {
    /// What the flags select, with the scrape intervals of the environment
    /// (docs/cli-rules.md#environment-variables).
    pub(crate) fn to_options(&self) -> anyhow::Result<TelemetryOptions> {
        let mut gpu_urls = Vec::new();
        for value in words(self.gpu_telemetry.as_ref()) {
            match value.to_ascii_lowercase().as_str() {
                "dashboard" => {}
                "pynvml" | "amdsmi" => anyhow::bail!(
                    "--gpu-telemetry {value}: local GPU libraries are not supported yet; \
                     run a DCGM exporter and pass its URL instead"
                ),
                v if std::path::Path::new(v)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("csv")) =>
                {
                    anyhow::bail!(
                        "--gpu-telemetry {value}: custom DCGM metric files are not supported yet"
                    )
                }
                _ => gpu_urls.push(value.to_owned()),
            }
        }
        Ok(TelemetryOptions {
            gpu: !self.no_gpu_telemetry,
            gpu_urls,
            server_metrics: !self.no_server_metrics,
            server_urls: words(self.server_metrics.as_ref())
                .map(str::to_owned)
                .collect(),
            server_metrics_formats: self
                .server_metrics_formats
                .iter()
                .map(|&f| f.into())
                .collect(),
            gpu_interval: env_interval("AIPERF_GPU_COLLECTION_INTERVAL")?,
            server_interval: env_interval("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL")?,
        })
    }
}

/// A scrape interval in seconds from the environment variable `name`, if set.
fn env_interval(name: &str) -> anyhow::Result<Option<Duration>> {
    match std::env::var(name) {
        Ok(value) => parse_interval(name, &value).map(Some),
        Err(_) => Ok(None),
    }
}

fn parse_interval(name: &str, value: &str) -> anyhow::Result<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(saturating_secs)
        .with_context(|| format!("{name}={value:?}: expected a positive number of seconds"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        telemetry: TelemetryArgs,
    }

    fn parse(line: &str) -> TelemetryArgs {
        Cli::try_parse_from(std::iter::once("aiperf").chain(line.split_whitespace()))
            .unwrap()
            .telemetry
    }

    #[test]
    fn flags_parse() {
        let none = parse("");
        assert_eq!(none.gpu_telemetry, None);
        assert_eq!(
            none.server_metrics_formats,
            [FormatArg::Json, FormatArg::Csv]
        );
        assert_eq!(parse("--gpu-telemetry").gpu_telemetry, Some(vec![]));
        let args =
            parse("--gpu-telemetry a:9400 b --gpu-telemetry c --server-metrics-formats json,jsonl");
        assert_eq!(args.gpu_telemetry.unwrap(), ["a:9400", "b", "c"]);
        assert_eq!(
            args.server_metrics_formats,
            [FormatArg::Json, FormatArg::Jsonl]
        );
        assert!(parse("--no-gpu-telemetry --no-server-metrics").no_server_metrics);
        let both = ["aiperf", "--gpu-telemetry", "--no-gpu-telemetry"];
        assert!(Cli::try_parse_from(both).is_err());
    }

    #[test]
    fn intervals_from_the_environment() {
        let name = "AIPERF_GPU_COLLECTION_INTERVAL";
        assert_eq!(
            parse_interval(name, " 0.5 ").unwrap(),
            Duration::from_millis(500)
        );
        for bad in ["0", "-1", "fast", "NaN"] {
            let error = parse_interval(name, bad).unwrap_err().to_string();
            assert!(error.contains("positive number of seconds"), "{error}");
        }
    }

    #[test]
    fn options_follow_the_flags() {
        let options = parse("--server-metrics x:1 s:8000").to_options().unwrap();
        assert_eq!(options.server_urls, ["x:1", "s:8000"]);
        assert!(options.gpu && options.server_metrics && options.gpu_urls.is_empty());

        let options = parse("--gpu-telemetry dashboard g:9500")
            .to_options()
            .unwrap();
        assert_eq!(options.gpu_urls, ["g:9500"]);

        let options = parse("--no-server-metrics --no-gpu-telemetry")
            .to_options()
            .unwrap();
        assert!(!options.gpu && !options.server_metrics);
        assert!(parse("--gpu-telemetry pynvml").to_options().is_err());
        assert!(parse("--gpu-telemetry metrics.csv").to_options().is_err());
    }
}
