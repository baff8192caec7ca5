//! `profile_export_aiperf.json` (schema 1.4, as the Python AIPerf 0.13 writes it).
//!
//! Keys are written in a fixed order: the three header keys, every metric, then
//! `input_config`, `run_info`, `was_cancelled`, `is_complete`, `error_summary`,
//! `start_time`, `end_time`, and our own `connection_retries` and `schedule_lag`. Null
//! values are omitted; non-finite numbers are written as `null`, never as invalid JSON.

use std::io::Write;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use aiperf_core::config::ArrivalPattern;

use crate::summary::{MetricResult, Summary};
use crate::MetricsError;

/// The schema version written.
pub const SCHEMA_VERSION: &str = "1.4";
/// The AIPerf release whose file format we write.
pub const AIPERF_COMPAT_VERSION: &str = "0.13.0";

/// A finite number, or nothing (serialised as `null` only where a value is required).
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[derive(Serialize)]
pub(crate) struct MetricJson<'a> {
    unit: &'a str,
    avg: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p5: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p10: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p25: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p75: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p90: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p95: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p99: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    std: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sum: Option<f64>,
}

impl<'a> From<&'a MetricResult> for MetricJson<'a> {
    fn from(m: &'a MetricResult) -> Self {
        let f = |v: Option<f64>| v.and_then(finite);
        Self {
            unit: m.unit,
            avg: finite(m.avg),
            p1: f(m.p1),
            p5: f(m.p5),
            p10: f(m.p10),
            p25: f(m.p25),
            p50: f(m.p50),
            p75: f(m.p75),
            p90: f(m.p90),
            p95: f(m.p95),
            p99: f(m.p99),
            min: f(m.min),
            max: f(m.max),
            std: f(m.std),
            count: m.count,
            sum: f(m.sum),
        }
    }
}

/// Requests cut off in flight (our addition: the Python AIPerf drops them silently).
#[derive(Serialize)]
struct CancelledJson {
    count: u64,
    cause: &'static str,
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    error_details: ErrorDetailsJson<'a>,
    count: u64,
}

#[derive(Serialize)]
struct ErrorDetailsJson<'a> {
    code: Option<u16>,
    #[serde(rename = "type")]
    kind: Option<&'a str>,
    message: &'a str,
}

#[derive(Serialize)]
struct RunInfoJson<'a> {
    benchmark_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    random_seed: Option<u64>,
    trial: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    cli_command: Option<&'a str>,
}

#[derive(Serialize)]
struct ScheduleLagJson {
    unit: &'static str,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
    late_count: u64,
    late_threshold_ms: f64,
    count: u64,
}

// ---- input_config echo (the 0.13 YAML-style shape, as far as our config has fields) ----

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct Models<'a> {
    items: Vec<Named<'a>>,
}

#[derive(Serialize)]
struct EndpointEcho<'a> {
    urls: Vec<String>,
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    streaming: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    use_legacy_max_tokens: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    use_server_token_count: bool,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    extra: &'a serde_json::Map<String, serde_json::Value>,
    timeout: f64,
}

#[derive(Serialize)]
struct Dist {
    mean: f64,
    stddev: f64,
}

#[derive(Serialize)]
struct Prompts {
    isl: Dist,
    #[serde(skip_serializing_if = "Option::is_none")]
    osl: Option<Dist>,
}

/// The dataset as the Python AIPerf 0.13 echoes it: `synthetic` (entries and prompt
/// lengths), `file` (path and format) or `public` (the dataset's name).
#[derive(Serialize)]
struct DatasetEcho<'a> {
    name: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a std::path::Path>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dataset: Option<aiperf_core::config::PublicDataset>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    random_seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompts: Option<Prompts>,
}

#[derive(Serialize)]
struct PhaseEcho {
    name: &'static str,
    kind: &'static str,
    #[serde(rename = "type")]
    kind_of_load: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sessions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrival_pattern: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    smoothness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grace_period: Option<f64>,
}

#[derive(Serialize)]
struct ArtifactsEcho {
    dir: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    export_level: aiperf_core::config::ExportLevel,
}

#[derive(Serialize)]
pub(crate) struct InputConfigEcho<'a> {
    models: Models<'a>,
    endpoint: EndpointEcho<'a>,
    datasets: Vec<DatasetEcho<'a>>,
    phases: Vec<PhaseEcho>,
    artifacts: ArtifactsEcho,
    tokenizer: Named<'a>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    slos: std::collections::BTreeMap<&'a str, f64>,
}

fn dataset_echo(config: &aiperf_core::BenchmarkConfig) -> DatasetEcho<'_> {
    let input = &config.input;
    let empty = DatasetEcho {
        name: "main",
        kind: "synthetic",
        path: None,
        format: None,
        dataset: None,
        entries: None,
        random_seed: input.random_seed,
        prompts: None,
    };
    if let Some(public) = &input.public_dataset {
        return DatasetEcho {
            kind: "public",
            dataset: Some(public.clone()),
            ..empty
        };
    }
    // A SPEED-Bench variant without --input-file reads the hub, but is still a file
    // format (which is how `aiperf speed-bench-report` finds its category).
    if input.input_file.is_some() || input.custom_dataset_type.is_some() {
        return DatasetEcho {
            kind: "file",
            path: input.input_file.as_deref(),
            format: input.custom_dataset_type.map(|t| t.as_str()),
            ..empty
        };
    }
    DatasetEcho {
        entries: Some(config.dataset_entries()),
        prompts: Some(Prompts {
            isl: Dist {
                mean: f64::from(input.isl_mean),
                stddev: input.isl_stddev,
            },
            osl: input.osl_mean.map(|m| Dist {
                mean: f64::from(m),
                stddev: input.osl_stddev,
            }),
        }),
        ..empty
    }
}

pub(crate) fn input_config(summary: &Summary) -> InputConfigEcho<'_> {
    let c = &summary.config;
    let load = &c.load;
    let kind_of_load = if load.fixed_schedule.is_enabled() {
        "fixed_schedule"
    } else if load.user_centric.is_some() {
        "user_centric"
    } else if load.initial_request_rate().is_some() {
        "request_rate"
    } else {
        "concurrency"
    };
    let mut phases = Vec::new();
    let warmup = &load.warmup;
    if warmup.is_enabled() {
        let rate = warmup.request_rate.or(load.request_rate);
        phases.push(PhaseEcho {
            name: "warmup",
            kind: "warmup",
            kind_of_load: if rate.is_some() {
                "request_rate"
            } else {
                "concurrency"
            },
            requests: warmup.request_count,
            sessions: warmup.num_sessions,
            duration: warmup.duration,
            concurrency: warmup.concurrency.or(load.concurrency),
            rate,
            arrival_pattern: None,
            smoothness: None,
            grace_period: Some(warmup.grace_period_secs()).filter(|g| g.is_finite()),
        });
    }
    phases.push(PhaseEcho {
        name: "profiling",
        kind: "profiling",
        kind_of_load,
        requests: load.request_count,
        sessions: load.num_sessions,
        duration: load.benchmark_duration,
        concurrency: load.concurrency,
        rate: load
            .initial_request_rate()
            .or(load.user_centric.map(|user| user.rate)),
        arrival_pattern: load
            .arrival_pattern
            .filter(|p| *p != ArrivalPattern::ConcurrencyBurst)
            .map(|p| p.as_str()),
        smoothness: load.arrival_smoothness,
        grace_period: load.benchmark_duration.map(|_| {
            load.benchmark_grace_period
                .unwrap_or(aiperf_core::config::DEFAULT_GRACE_PERIOD_SECS)
        }),
    });
    let tokenizer = c
        .input
        .tokenizer
        .as_deref()
        .unwrap_or_else(|| c.primary_model());
    InputConfigEcho {
        models: Models {
            items: c
                .endpoint
                .models
                .iter()
                .map(|m| Named { name: m })
                .collect(),
        },
        endpoint: EndpointEcho {
            urls: c
                .endpoint
                .urls
                .iter()
                .map(|url| aiperf_core::url::redact_credentials(url))
                .collect(),
            kind: &c.endpoint.endpoint_type,
            path: c.endpoint.custom_endpoint.as_deref(),
            streaming: c.endpoint.streaming,
            use_legacy_max_tokens: c.endpoint.use_legacy_max_tokens,
            use_server_token_count: c.endpoint.use_server_token_count,
            extra: &c.endpoint.extra_inputs,
            timeout: c.endpoint.request_timeout.as_secs_f64(),
        },
        datasets: vec![dataset_echo(c)],
        phases,
        artifacts: ArtifactsEcho {
            dir: crate::export::resolve_artifact_dir(c).display().to_string(),
            prefix: c.output.export_prefix.clone(),
            export_level: c.output.export_level,
        },
        tokenizer: Named { name: tokenizer },
        slos: c.goodput.iter().map(|(t, v)| (t.as_str(), *v)).collect(),
    }
}

struct SummaryJson<'a>(&'a Summary);

impl Serialize for SummaryJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema_version", SCHEMA_VERSION)?;
        map.serialize_entry("aiperf_version", AIPERF_COMPAT_VERSION)?;
        map.serialize_entry("aiperf_rs_version", env!("CARGO_PKG_VERSION"))?;
        map.serialize_entry("benchmark_id", &s.benchmark_id)?;
        for m in &s.metrics {
            map.serialize_entry(m.tag, &MetricJson::from(m))?;
        }
        map.serialize_entry("input_config", &input_config(s))?;
        map.serialize_entry(
            "run_info",
            &RunInfoJson {
                benchmark_id: &s.benchmark_id,
                random_seed: s.config.input.random_seed,
                trial: 0,
                cli_command: s.cli_command.as_deref(),
            },
        )?;
        map.serialize_entry("was_cancelled", &s.was_cancelled)?;
        map.serialize_entry("is_complete", &s.is_complete)?;
        let errors: Vec<ErrorJson<'_>> = s
            .errors
            .iter()
            .map(|e| ErrorJson {
                error_details: ErrorDetailsJson {
                    code: e.error.code,
                    kind: e.error.kind.as_deref(),
                    message: &e.error.message,
                },
                count: e.count,
            })
            .collect();
        map.serialize_entry("error_summary", &errors)?;
        if s.cancelled_in_flight > 0 {
            map.serialize_entry(
                "cancelled_in_flight",
                &CancelledJson {
                    count: s.cancelled_in_flight,
                    cause: if s.grace_period_expired {
                        "grace_period_expired"
                    } else {
                        "run_cancelled"
                    },
                },
            )?;
        }
        if let Some(t) = s.start_time_ns {
            map.serialize_entry("start_time", &crate::export::iso_time(t))?;
        }
        if let Some(t) = s.end_time_ns {
            map.serialize_entry("end_time", &crate::export::iso_time(t))?;
        }
        map.serialize_entry("connection_retries", &s.connection_retries)?;
        if let Some(lag) = &s.schedule_lag {
            map.serialize_entry(
                "schedule_lag",
                &ScheduleLagJson {
                    unit: "ms",
                    p50: finite(lag.p50_ms),
                    p99: finite(lag.p99_ms),
                    max: finite(lag.max_ms),
                    late_count: lag.late_count,
                    late_threshold_ms: crate::summary::LATE_THRESHOLD_NS as f64 / 1e6,
                    count: lag.count,
                },
            )?;
        }
        let additions = &s.additions;
        for m in &additions.metrics {
            map.serialize_entry(
                &m.tag,
                &serde_json::json!({ "unit": m.unit, "avg": m.value }),
            )?;
        }
        for (key, value) in &additions.json_sections {
            map.serialize_entry(key, value)?;
        }
        if let Some(accuracy) = &s.accuracy {
            map.serialize_entry("accuracy", &crate::accuracy::accuracy_json(accuracy))?;
        }
        map.end()
    }
}

/// Writes `profile_export_aiperf.json` (pretty-printed, 2-space indent) to `out`.
pub fn write_json(summary: &Summary, out: &mut impl Write) -> Result<(), MetricsError> {
    serde_json::to_writer_pretty(&mut *out, &SummaryJson(summary))?;
    Ok(())
}

/// The summary JSON as a string.
pub fn to_json_string(summary: &Summary) -> Result<String, MetricsError> {
    Ok(serde_json::to_string_pretty(&SummaryJson(summary))?)
}

#[cfg(test)]
mod tests {
    use aiperf_core::config::{CustomDatasetType, PublicDataset};
    use aiperf_core::BenchmarkConfig;

    use super::*;
    use crate::MetricsContext;

    fn datasets_echo(change: impl FnOnce(&mut BenchmarkConfig)) -> serde_json::Value {
        let mut config = BenchmarkConfig::default();
        config.input.random_seed = Some(7);
        change(&mut config);
        let summary = Summary::new(config, MetricsContext::default());
        serde_json::to_value(input_config(&summary)).unwrap()["datasets"].clone()
    }

    #[test]
    fn the_dataset_echo_says_which_dataset_ran() {
        let synthetic = datasets_echo(|_| {});
        assert_eq!(synthetic[0]["type"], "synthetic");
        assert_eq!(synthetic[0]["prompts"]["isl"]["mean"], 550.0);
        assert_eq!(synthetic[0]["entries"], 100);
        let sized_by_count = datasets_echo(|c| c.load.request_count = Some(1000));
        assert_eq!(sized_by_count[0]["entries"], 1000);

        let file = datasets_echo(|c| {
            c.input.input_file = Some("trace.jsonl".into());
            c.input.custom_dataset_type = Some(CustomDatasetType::MooncakeTrace);
        });
        assert_eq!(
            file,
            serde_json::json!([{
                "name": "main", "type": "file", "path": "trace.jsonl",
                "format": "mooncake_trace", "random_seed": 7
            }])
        );

        let public = datasets_echo(|c| c.input.public_dataset = Some(PublicDataset::Sharegpt));
        assert_eq!(
            public,
            serde_json::json!([{
                "name": "main", "type": "public", "dataset": "sharegpt", "random_seed": 7
            }])
        );
    }
}
