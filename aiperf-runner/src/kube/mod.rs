//! Kubernetes manifests that run one benchmark as N shards on a cluster: what
//! `aiperf kube generate` prints (docs/scale-out.md).
//!
//! [`generate`] turns a [`RunConfig`] and [`KubeOptions`] into one multi-document YAML
//! text holding
//! - a ConfigMap with the run's `run_config.json` (never a secret: the API key comes
//!   from a Secret through the `AIPERF_API_KEY` environment variable),
//! - an Indexed Job of N pods (`completions = parallelism = N`), each running
//!   `aiperf profile -f run_config.json --shard-count N --start-at T` and writing its
//!   artifacts to `/results/<name>/shard-<index>` on a shared volume.
//!
//! - a merge Job of one pod, started with the shards, running `aiperf merge --wait` on
//!   their directories: once every shard has finished it writes the merged run to
//!   `/results/<name>/merged`.
//!
//! ```
//! use aiperf_core::BenchmarkConfig;
//! use aiperf_runner::config_file::RunConfig;
//! use aiperf_runner::kube::{generate, KubeOptions};
//! use aiperf_runner::RunSpec;
//!
//! let mut config = BenchmarkConfig::default();
//! config.endpoint.models = vec!["m".into()];
//! config.endpoint.urls = vec!["http://vllm.inference:8000".into()];
//! config.load.concurrency = Some(256);
//! config.load.request_count = Some(10_000);
//! let spec = RunSpec::new(config.validate()?);
//! let run = RunConfig::of_run(&spec, &spec.benchmark);
//! let yaml = generate(&run, &KubeOptions::new(4, 1_795_687_200))?;
//! assert!(yaml.contains("completionMode: Indexed"));
//! assert!(yaml.contains("- \"2026-11-26T10:00:00Z\""));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use aiperf_core::config::BenchmarkConfig;
use serde_json::{json, Value};

use crate::config_file::RunConfig;

mod yaml;

/// The environment variable `aiperf profile` reads the API key from.
pub const API_KEY_ENV: &str = "AIPERF_API_KEY";
/// The key of the API-key Secret that holds the key
/// (`kubectl create secret generic NAME --from-literal=api-key=…`).
pub const API_KEY_SECRET_KEY: &str = "api-key";
/// Where the results volume is mounted in every pod.
pub const RESULTS_MOUNT: &str = "/results";
/// Where the ConfigMap's `run_config.json` is mounted in every shard pod.
pub const CONFIG_MOUNT: &str = "/etc/aiperf";

/// How the benchmark is laid out on the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeOptions {
    /// The prefix of every object's name and the run's directory on the results volume
    /// (a DNS label of at most 40 characters).
    pub name: String,
    /// The namespace of every object.
    pub namespace: String,
    /// How many pods share the load.
    pub shards: u32,
    /// The container image holding the `aiperf` binary.
    pub image: String,
    /// The PersistentVolumeClaim every pod mounts at [`RESULTS_MOUNT`]; shards on
    /// several nodes need it ReadWriteMany.
    pub results_pvc: String,
    /// The wall-clock instant (Unix seconds) every shard waits for before its first
    /// request.
    pub start_at_unix_secs: u64,
    /// Ask the scheduler to put the shards on different nodes (preferred, not required:
    /// a cluster with fewer nodes than shards still runs them).
    pub spread_over_nodes: bool,
    /// The Secret whose [`API_KEY_SECRET_KEY`] holds the API key, if the server needs one.
    pub api_key_secret: Option<String>,
    /// Each shard pod's requests; `None` sizes them from the load (see [`Resources::for_load`]).
    pub resources: Option<Resources>,
    /// How long the merge Job waits for every shard to finish (from its own start, which
    /// is about when the shards' pods start) before it gives up.
    pub merge_wait_secs: u64,
    /// The SNTP server every shard measures its clock against (`--clock-reference`).
    pub clock_reference: Option<String>,
}

impl KubeOptions {
    /// `shards` pods starting at `start_at_unix_secs`, with the defaults of
    /// `aiperf kube generate`: name `aiperf`, namespace `default`, image
    /// `aiperf-rs:<version>`, results claim `aiperf-results`, spread over nodes.
    pub fn new(shards: u32, start_at_unix_secs: u64) -> Self {
        Self {
            name: "aiperf".into(),
            namespace: "default".into(),
            shards,
            image: format!("aiperf-rs:{}", env!("CARGO_PKG_VERSION")),
            results_pvc: "aiperf-results".into(),
            start_at_unix_secs,
            spread_over_nodes: true,
            api_key_secret: None,
            resources: None,
            merge_wait_secs: DEFAULT_MERGE_WAIT_SECS,
            clock_reference: None,
        }
    }
}

/// [`KubeOptions::merge_wait_secs`] of `aiperf kube generate`: a day.
pub const DEFAULT_MERGE_WAIT_SECS: u64 = 86_400;

/// A shard pod's resource requests, as Kubernetes quantities (`"500m"`, `"1Gi"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    /// CPU request.
    pub cpu: String,
    /// Memory request.
    pub memory: String,
}

impl Resources {
    /// Requests sized for one shard's part of `benchmark`'s load, from the figures in
    /// bench/README.md:
    /// - CPU: 250m for the two threads of a process at rest, plus 1m per stream in
    ///   flight. A streamed request of 128 output tokens costs the client 0.2 ms of CPU;
    ///   a stream whose requests take half a second or more (any real model) therefore
    ///   needs at most 0.4m, and 1m leaves room for chattier streams.
    /// - Memory: 192Mi (the o200k tokenizer tables are 74 MB of a process's RSS), plus
    ///   1Mi per stream in flight (the 64-stream streaming run peaked at 160 MB), plus
    ///   256 bytes per request the shard will send (the exact metric values kept for
    ///   the summary, about 250 bytes a request), when the request count is known.
    ///
    /// Streams in flight per shard: the concurrency divided among the shards; without
    /// one, the request rate divided among them (requests of about a second each).
    pub fn for_load(benchmark: &BenchmarkConfig, shards: u32) -> Self {
        let shards = u64::from(shards.max(1));
        let load = &benchmark.load;
        let streams = match (load.concurrency, load.request_rate) {
            (Some(concurrency), _) => (concurrency as u64).div_ceil(shards),
            (None, Some(rate)) => (rate.ceil() as u64).div_ceil(shards),
            (None, None) => 1,
        }
        .max(1);
        let requests = load.request_count.unwrap_or(0).div_ceil(shards);
        let memory_mib = 192 + streams + (requests * 256).div_ceil(1024 * 1024);
        Self {
            cpu: format!("{}m", 250 + streams),
            memory: format!("{memory_mib}Mi"),
        }
    }
}

/// Options that cannot make valid manifests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// No shard at all.
    #[error("the shard count must be at least 1")]
    NoShards,
    /// A value Kubernetes would refuse.
    #[error("{field} `{value}`: {rule}")]
    Invalid {
        /// The option, as `aiperf kube generate` names it.
        field: &'static str,
        /// The value given.
        value: String,
        /// What it must be.
        rule: &'static str,
    },
}

/// The manifests of `run` laid out as `options` say: multi-document YAML (a ConfigMap, the
/// Indexed Job of the shards and the merge Job), the same text for the same input.
pub fn generate(run: &RunConfig, options: &KubeOptions) -> Result<String, KubeError> {
    check(options)?;
    let resources = match &options.resources {
        Some(resources) => resources.clone(),
        None => Resources::for_load(&run.benchmark, options.shards),
    };
    // A RunConfig is plain data with string keys: serialising it cannot fail.
    let run_config = serde_json::to_string_pretty(run).unwrap_or_default();
    let documents = [
        config_map(options, &run_config),
        shard_job(options, &resources),
        merge_job(options),
    ];
    Ok(documents.iter().map(yaml::document).collect())
}

fn check(options: &KubeOptions) -> Result<(), KubeError> {
    if options.shards == 0 {
        return Err(KubeError::NoShards);
    }
    let invalid = |field, value: &str, rule| KubeError::Invalid {
        field,
        value: value.to_owned(),
        rule,
    };
    if !is_dns_label(&options.name, 40) {
        return Err(invalid(
            "name",
            &options.name,
            "must be lowercase letters, digits and '-', start and end with a letter or \
             digit, at most 40 characters",
        ));
    }
    if !is_dns_label(&options.namespace, 63) {
        return Err(invalid(
            "namespace",
            &options.namespace,
            "must be a DNS label: lowercase letters, digits and '-', at most 63 characters",
        ));
    }
    let subdomains = [
        ("results-pvc", Some(&options.results_pvc)),
        ("api-key-secret", options.api_key_secret.as_ref()),
    ];
    for (field, value) in subdomains {
        if let Some(value) = value.filter(|value| !is_dns_subdomain(value)) {
            return Err(invalid(
                field,
                value,
                "must be a DNS subdomain: lowercase letters, digits, '-' and '.'",
            ));
        }
    }
    if options.image.is_empty() || options.image.contains(char::is_whitespace) {
        return Err(invalid(
            "image",
            &options.image,
            "must be an image reference without spaces",
        ));
    }
    if let Some(resources) = &options.resources {
        for (field, value) in [
            ("cpu-request", &resources.cpu),
            ("memory-request", &resources.memory),
        ] {
            if !is_quantity(value) {
                return Err(invalid(
                    field,
                    value,
                    "must be a Kubernetes quantity such as 500m, 2, 512Mi or 1Gi",
                ));
            }
        }
    }
    Ok(())
}

fn is_dns_label(text: &str, max_len: usize) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !text.is_empty()
        && text.len() <= max_len
        && text.chars().all(|c| alnum(c) || c == '-')
        && text.starts_with(alnum)
        && text.ends_with(alnum)
}

fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(|label| is_dns_label(label, 63))
}

/// A decimal number with an optional SI or binary suffix (no exponents: rare in
/// requests, and easy to get wrong).
fn is_quantity(text: &str) -> bool {
    const SUFFIXES: [&str; 12] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P",
    ];
    let number = SUFFIXES
        .iter()
        .find_map(|suffix| text.strip_suffix(suffix))
        .unwrap_or(text);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, "0"));
    !whole.is_empty()
        && whole.chars().all(|c| c.is_ascii_digit())
        && !fraction.is_empty()
        && fraction.chars().all(|c| c.is_ascii_digit())
}

fn labels(options: &KubeOptions, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "aiperf",
        "app.kubernetes.io/instance": options.name,
        "app.kubernetes.io/component": component,
    })
}

fn metadata(options: &KubeOptions, suffix: &str, component: &str) -> Value {
    json!({
        "name": format!("{}-{suffix}", options.name),
        "namespace": options.namespace,
        "labels": labels(options, component),
    })
}

fn config_map(options: &KubeOptions, run_config: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(options, "config", "config"),
        "data": {"run_config.json": run_config},
    })
}

/// The directory of the run on the results volume.
fn run_dir(options: &KubeOptions) -> String {
    format!("{RESULTS_MOUNT}/{}", options.name)
}

fn shard_job(options: &KubeOptions, resources: &Resources) -> Value {
    let mut args = json!([
        "profile",
        "-f",
        format!("{CONFIG_MOUNT}/run_config.json"),
        "--shard-count",
        options.shards.to_string(),
        "--start-at",
        format_start_instant(options.start_at_unix_secs),
        "--artifact-dir",
        // Kubernetes expands $(VAR) in args from the container's environment, where the
        // Indexed Job puts JOB_COMPLETION_INDEX.
        format!("{}/shard-$(JOB_COMPLETION_INDEX)", run_dir(options)),
    ]);
    if let (Some(reference), Some(args)) = (&options.clock_reference, args.as_array_mut()) {
        args.extend([json!("--clock-reference"), json!(reference)]);
    }
    let mut container = json!({
        "name": "aiperf",
        "image": options.image,
        "command": ["aiperf"],
        "args": args,
        "resources": {"requests": {"cpu": resources.cpu, "memory": resources.memory}},
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": true},
            {"name": "results", "mountPath": RESULTS_MOUNT},
        ],
    });
    if let Some(secret) = &options.api_key_secret {
        container["env"] = json!([{
            "name": API_KEY_ENV,
            "valueFrom": {"secretKeyRef": {"name": secret, "key": API_KEY_SECRET_KEY}},
        }]);
    }
    let mut pod = json!({
        "restartPolicy": "Never",
        "securityContext": security_context(),
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": format!("{}-config", options.name)}},
            results_volume(options),
        ],
    });
    if options.spread_over_nodes {
        pod["affinity"] = json!({
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": labels(options, "shard")},
                    },
                }],
            },
        });
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(options, "shards", "shard"),
        "spec": {
            "completionMode": "Indexed",
            "completions": options.shards,
            "parallelism": options.shards,
            // A shard started again would miss the common start and send its part of the
            // load twice; a failed shard fails the run.
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels(options, "shard")},
                "spec": pod,
            },
        },
    })
}

/// One pod that waits for every shard's directory to hold a finished shard, then merges
/// them into `<run dir>/merged`. A failed shard never finishes, so the merge then fails
/// after its wait (`backoffLimit: 0`: waiting again would not help).
fn merge_job(options: &KubeOptions) -> Value {
    let run_dir = run_dir(options);
    let mut args = vec![json!("merge")];
    args.extend((0..options.shards).map(|k| json!(format!("{run_dir}/shard-{k}"))));
    args.extend([
        json!("--output"),
        json!(format!("{run_dir}/merged")),
        json!("--wait"),
        json!(options.merge_wait_secs.to_string()),
    ]);
    let container = json!({
        "name": "merge",
        "image": options.image,
        "command": ["aiperf"],
        "args": args,
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
        "volumeMounts": [{"name": "results", "mountPath": RESULTS_MOUNT}],
    });
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(options, "merge", "merge"),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels(options, "merge")},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": security_context(),
                    "containers": [container],
                    "volumes": [results_volume(options)],
                },
            },
        },
    })
}

/// The image's user (distroless `nonroot`); `fsGroup` makes the results volume writable
/// to it where the volume type supports ownership changes.
fn security_context() -> Value {
    json!({"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532})
}

fn results_volume(options: &KubeOptions) -> Value {
    json!({"name": "results", "persistentVolumeClaim": {"claimName": options.results_pvc}})
}

/// Unix seconds as RFC 3339 in UTC (`2026-11-26T10:00:00Z`).
pub fn format_start_instant(unix_secs: u64) -> String {
    // iso_time gives `YYYY-MM-DDTHH:MM:SS.ffffff`; whole seconds are enough here.
    let iso = aiperf_core::clock::iso_time(unix_secs.saturating_mul(1_000_000_000));
    format!("{}Z", &iso[..19])
}

#[cfg(test)]
mod tests;
