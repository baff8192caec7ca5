//! Configuration files: the Python AIPerf 0.13 YAML (`aiperf profile -f FILE.yaml`,
//! schema version "2.0") and our own `run_config.json`, read onto the library's
//! configuration: a [`BenchmarkConfig`] per run, and the [`RunSpec`] options around it.
//!
//! ```
//! let file = aiperf_runner::config_file::parse_config_file(
//!     "benchmark:\n  model: m\n  phases: {type: concurrency, concurrency: 4, requests: 20}\n",
//!     "bench.yaml",
//! )?;
//! assert_eq!(file.benchmark.load.concurrency, Some(4));
//! let spec = file.into_run_spec()?;
//! assert_eq!(spec.benchmark.load.request_count, Some(20));
//! # Ok::<(), aiperf_runner::config_file::ConfigFileError>(())
//! ```
//!
//! Keys are accepted in snake_case or camelCase. A key of the 0.13 schema that aiperf-rs
//! does not implement is refused by name, an unknown key with the nearest known one;
//! every error names the file, the line and the key path (docs/config-file.md).

use std::path::Path;
use std::time::Duration;

use aiperf_core::{BenchmarkConfig, ConfigError};
use aiperf_metrics::slo::Slo;
use serde::{Deserialize, Serialize};

use crate::spec::{
    MultiRunOptions, ReadinessOptions, RecordOptions, RunSpec, Sweep, SweepPoint, SweepType,
    TelemetryOptions, TransportOptions,
};

mod reader;
mod schema;
mod sweep;
mod templates;
mod yaml;

pub use templates::{template, Template, TEMPLATES};

/// A configuration file that cannot be used. Every variant's message starts with the
/// file's name (and line, where there is one).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigFileError {
    /// The file cannot be read.
    #[error("{file}: cannot read: {reason}")]
    Read {
        /// The file as named.
        file: String,
        /// The system's reason.
        reason: String,
    },
    /// Not YAML (or JSON) at all.
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The file as named.
        file: String,
        /// The 1-based line.
        line: usize,
        /// What the parser says.
        message: String,
    },
    /// A key that is unknown, refused, or whose value is wrong.
    #[error("{file}:{line}: {key}: {problem}")]
    Key {
        /// The file as named.
        file: String,
        /// The 1-based line of the key.
        line: usize,
        /// The key path as written, e.g. `benchmark.endpoint.ulr`.
        key: String,
        /// What is wrong, e.g. "unknown key; did you mean `url`?".
        problem: String,
    },
    /// The configuration read breaks a rule of [`BenchmarkConfig::validate`].
    #[error("{file}: {}{rule}", point.as_ref().map(|p| format!("sweep point {p}: ")).unwrap_or_default())]
    Invalid {
        /// The file as named.
        file: String,
        /// The sweep point, when the rule is broken by one.
        point: Option<String>,
        /// The rule broken (it names configuration fields).
        rule: ConfigError,
    },
}

impl ConfigFileError {
    pub(crate) fn at(file: &str, line: usize, key: &str, problem: &str) -> Self {
        Self::Key {
            file: file.to_owned(),
            line,
            key: key.trim_start_matches('.').to_owned(),
            problem: problem.to_owned(),
        }
    }
}

/// A configuration file read onto the library's configuration and not yet validated,
/// so that a caller (the command line) can change fields before
/// [`into_run_spec`](Self::into_run_spec) validates every run.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The file as named (for errors).
    pub file: String,
    /// The benchmark (without a sweep's values).
    pub benchmark: BenchmarkConfig,
    /// How requests reach the server.
    pub transport: TransportOptions,
    /// Waiting for the server (`endpoint.waitForModel*`).
    pub readiness: Option<ReadinessOptions>,
    /// Telemetry (`gpuTelemetry:`, `serverMetrics:`; `None`: the defaults).
    pub telemetry: Option<TelemetryOptions>,
    /// Extras of the per-record export.
    pub records: RecordOptions,
    /// Repetition for confidence intervals (`multiRun:`).
    pub runs: MultiRunOptions,
    /// Run-level SLOs (only `run_config.json` holds them; `slos:` in the YAML are the
    /// per-request goodput thresholds).
    pub slos: Vec<Slo>,
    /// The points of `sweep:`, if any.
    pub sweep: Option<FileSweep>,
}

/// The sweep of a configuration file, expanded.
#[derive(Debug, Clone)]
pub struct FileSweep {
    /// How the value lists combine.
    pub sweep_type: SweepType,
    /// Pause between points.
    pub cooldown: Duration,
    /// The points, in the order they run.
    pub points: Vec<FileSweepPoint>,
}

/// One point of a file's sweep.
#[derive(Debug, Clone)]
pub struct FileSweepPoint {
    /// The point's directory name, e.g. `isl_128__rate_10` (as the Python AIPerf 0.13
    /// names it: the parameters in the order of their key paths).
    pub label: String,
    /// Each swept key (its last path segment) and its value as written.
    pub parameters: Vec<(String, String)>,
    /// The point's benchmark.
    pub benchmark: BenchmarkConfig,
}

/// What `run_config.json` holds: the benchmark configuration of one run (its random
/// seed drawn, its warmup as that run had it) and the options around it, so that
/// `aiperf profile -f run_config.json` repeats the run. Secrets (the API key, header
/// values) are never written; give them again on the command line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    /// The benchmark, its fields at the top level.
    #[serde(flatten)]
    pub benchmark: BenchmarkConfig,
    /// How requests reached the server.
    #[serde(default)]
    pub transport: TransportOptions,
    /// Waiting for the server.
    #[serde(default)]
    pub readiness: Option<ReadinessOptions>,
    /// Telemetry.
    #[serde(default)]
    pub telemetry: TelemetryOptions,
    /// Extras of the per-record export.
    #[serde(default)]
    pub records: RecordOptions,
    /// Run-level SLOs.
    #[serde(default)]
    pub slos: Vec<Slo>,
}

impl RunConfig {
    /// The run configuration of `benchmark` as one run of `spec` (credentials in the
    /// telemetry URLs replaced by `***`, as in the benchmark's URLs).
    pub fn of_run(spec: &RunSpec, benchmark: &BenchmarkConfig) -> Self {
        let redacted = |urls: &[String]| -> Vec<String> {
            urls.iter()
                .map(|url| aiperf_core::url::redact_credentials(url))
                .collect()
        };
        Self {
            benchmark: benchmark.clone(),
            transport: spec.transport.clone(),
            readiness: spec.readiness,
            telemetry: TelemetryOptions {
                gpu_urls: redacted(&spec.telemetry.gpu_urls),
                server_urls: redacted(&spec.telemetry.server_urls),
                ..spec.telemetry.clone()
            },
            records: spec.records.clone(),
            slos: spec.slos.clone(),
        }
    }
}

/// Reads the configuration file at `path` (0.13 YAML, or a `run_config.json`).
pub fn load_config_file(path: &Path) -> Result<ConfigFile, ConfigFileError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ConfigFileError::Read {
        file: name.clone(),
        reason: error.to_string(),
    })?;
    parse_config_file(&text, &name)
}

/// Reads a configuration file's text; `file` names it in errors.
pub fn parse_config_file(text: &str, file: &str) -> Result<ConfigFile, ConfigFileError> {
    let root = yaml::parse(text).map_err(|error| ConfigFileError::Syntax {
        file: file.to_owned(),
        line: error.line,
        message: error.message,
    })?;
    if is_run_config(&root) {
        return parse_run_config(text, file);
    }
    let top = schema::read_top_level(file, &root)?;
    let parts = schema::read_benchmark(file, top.benchmark.node, top.random_seed)?;
    let sweep = match &top.sweep {
        None => None,
        Some(field) => {
            let section = sweep::read_sweep(field)?;
            let points = section
                .points(top.benchmark.node)?
                .into_iter()
                .map(|point| {
                    let parts = schema::read_benchmark(file, &point.benchmark, top.random_seed)?;
                    Ok(FileSweepPoint {
                        label: point.label,
                        parameters: point.parameters,
                        benchmark: parts.config,
                    })
                })
                .collect::<Result<_, ConfigFileError>>()?;
            Some(FileSweep {
                sweep_type: section.sweep_type,
                cooldown: section.cooldown,
                points,
            })
        }
    };
    Ok(ConfigFile {
        file: file.to_owned(),
        benchmark: parts.config,
        transport: parts.transport,
        readiness: parts.readiness,
        telemetry: parts.telemetry,
        records: parts.records,
        runs: top.runs,
        slos: Vec::new(),
        sweep,
    })
}

/// `run_config.json` has the benchmark's sections at the top level.
fn is_run_config(root: &yaml::Node) -> bool {
    let yaml::Value::Map(entries) = &root.value else {
        return false;
    };
    let has = |key: &str| entries.iter().any(|e| e.key == key);
    has("endpoint") && has("load") && !has("benchmark")
}

fn parse_run_config(text: &str, file: &str) -> Result<ConfigFile, ConfigFileError> {
    let run: RunConfig = serde_json::from_str(text).map_err(|error| ConfigFileError::Syntax {
        file: file.to_owned(),
        line: error.line(),
        message: error.to_string(),
    })?;
    Ok(ConfigFile {
        file: file.to_owned(),
        benchmark: run.benchmark,
        transport: run.transport,
        readiness: run.readiness,
        telemetry: Some(run.telemetry),
        records: run.records,
        runs: MultiRunOptions::default(),
        slos: run.slos,
        sweep: None,
    })
}

impl ConfigFile {
    /// Applies `change` (command-line overrides) to the benchmark and to every sweep
    /// point, each point keeping the values its sweep gives it: as in the Python AIPerf
    /// 0.13, where the sweep expands after the command line is merged into the file,
    /// `--concurrency 8` beside a concurrency sweep does not flatten the sweep.
    pub fn change_every_run(&mut self, change: impl Fn(&mut BenchmarkConfig)) {
        let base = to_json(&self.benchmark);
        change(&mut self.benchmark);
        for point in self.sweep.iter_mut().flat_map(|sweep| &mut sweep.points) {
            let swept = to_json(&point.benchmark);
            change(&mut point.benchmark);
            let mut changed = to_json(&point.benchmark);
            keep_swept_values(&base, &swept, &mut changed);
            // Secrets and URL credentials are not serialised: they come from `change`.
            if let Ok(mut kept) = serde_json::from_value::<BenchmarkConfig>(changed) {
                let endpoint = &mut point.benchmark.endpoint;
                kept.endpoint.api_key = endpoint.api_key.take();
                kept.endpoint.headers = std::mem::take(&mut endpoint.headers);
                kept.endpoint.urls = std::mem::take(&mut endpoint.urls);
                point.benchmark = kept;
            }
        }
    }

    /// Validates every run and returns what [`run`](crate::run) takes. With a sweep, the
    /// shared set-up comes from the first point, as for a command-line sweep.
    pub fn into_run_spec(self) -> Result<RunSpec, ConfigFileError> {
        let invalid = |point: Option<&str>| {
            let file = self.file.clone();
            let point = point.map(str::to_owned);
            move |rule| ConfigFileError::Invalid {
                file: file.clone(),
                point: point.clone(),
                rule,
            }
        };
        let mut spec = RunSpec::new(self.benchmark.clone().validate().map_err(invalid(None))?);
        spec.transport = self.transport;
        spec.readiness = self.readiness;
        if let Some(telemetry) = self.telemetry {
            spec.telemetry = telemetry;
        }
        spec.records = self.records;
        spec.runs = self.runs;
        spec.slos = self.slos;
        if let Some(sweep) = self.sweep {
            let mut points = Vec::with_capacity(sweep.points.len());
            for point in sweep.points {
                let benchmark = point
                    .benchmark
                    .validate()
                    .map_err(invalid(Some(&point.label)))?;
                points.push(SweepPoint {
                    label: point.label,
                    parameters: point.parameters,
                    benchmark,
                });
            }
            if let Some(first) = points.first() {
                spec.benchmark = first.benchmark.clone();
            }
            spec.sweep = Some(Sweep {
                sweep_type: sweep.sweep_type,
                points,
                cooldown: sweep.cooldown,
            });
        }
        Ok(spec)
    }
}

fn to_json(config: &BenchmarkConfig) -> serde_json::Value {
    serde_json::to_value(config).unwrap_or_default()
}

/// Where `swept` differs from `base` (a value the sweep set), `changed` takes `swept`'s.
fn keep_swept_values(
    base: &serde_json::Value,
    swept: &serde_json::Value,
    changed: &mut serde_json::Value,
) {
    use serde_json::Value;
    match (base, swept, changed) {
        (Value::Object(base), Value::Object(swept), Value::Object(changed)) => {
            for (key, swept_value) in swept {
                match (base.get(key), changed.get_mut(key)) {
                    (Some(base_value), Some(changed_value)) => {
                        keep_swept_values(base_value, swept_value, changed_value);
                    }
                    (None, _) => {
                        changed.insert(key.clone(), swept_value.clone());
                    }
                    (Some(_), None) => {}
                }
            }
        }
        (base, swept, changed) => {
            if base != swept {
                *changed = swept.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests;
