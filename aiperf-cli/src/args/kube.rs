//! `aiperf kube …`: Kubernetes manifests for a benchmark run as shards.

use clap::{Args, Subcommand};

use super::ProfileArgs;

/// `aiperf kube`.
#[derive(Debug, Subcommand)]
pub(crate) enum KubeCommand {
    /// Print the manifests that run one benchmark as N pods on a cluster and merge their
    /// results: a ConfigMap of the run's configuration, an Indexed Job of the shards and a
    /// suspended merge Job (docs/scale-out.md). Takes every `aiperf profile` option, or -f.
    #[command(allow_negative_numbers = true)]
    Generate(Box<KubeGenerateArgs>),
}

/// `aiperf kube generate`.
#[derive(Debug, Args)]
pub(crate) struct KubeGenerateArgs {
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// How the benchmark is laid out on the cluster.
#[derive(Debug, Args)]
#[command(next_help_heading = "Kubernetes")]
pub(crate) struct KubeArgs {
    /// How many pods share the load (the Indexed Job's completions and parallelism).
    #[arg(long = "shards", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: u32,
    /// Prefix of every object's name, and the run's directory on the results volume.
    #[arg(long = "name", default_value = "aiperf")]
    pub name: String,
    /// Namespace of every object.
    #[arg(long = "namespace", default_value = "default")]
    pub namespace: String,
    /// Container image holding the aiperf binary (default: aiperf-rs:<version>, as the
    /// repository's Dockerfile tags it; push it to a registry the cluster pulls from).
    #[arg(long = "image")]
    pub image: Option<String>,
    /// PersistentVolumeClaim mounted at /results in every pod (ReadWriteMany when the
    /// shards run on several nodes).
    #[arg(long = "results-pvc", default_value = "aiperf-results")]
    pub results_pvc: String,
    /// Seconds from now to the common start when --start-at (the instant every shard
    /// starts sending) is not given: time to apply
    /// the manifests, pull the image and start every pod.
    #[arg(long = "start-delay", value_name = "SECONDS", default_value_t = 120)]
    pub start_delay: u64,
    /// Do not ask the scheduler to put the shards on different nodes.
    #[arg(long = "no-anti-affinity")]
    pub no_anti_affinity: bool,
    /// Secret holding the API key under the key `api-key`, given to the shards as
    /// AIPERF_API_KEY (the key itself is never written into the manifests).
    #[arg(long = "api-key-secret", value_name = "SECRET")]
    pub api_key_secret: Option<String>,
    /// CPU request of each shard pod (default: sized from the concurrency per shard).
    #[arg(long = "cpu-request", value_name = "QUANTITY")]
    pub cpu_request: Option<String>,
    /// Memory request of each shard pod (default: sized from the concurrency and request
    /// count per shard).
    #[arg(long = "memory-request", value_name = "QUANTITY")]
    pub memory_request: Option<String>,
    /// Seconds the merge Job waits for every shard to finish before it gives up (a failed
    /// shard never finishes).
    #[arg(long = "merge-wait", value_name = "SECONDS", default_value_t = aiperf_runner::kube::DEFAULT_MERGE_WAIT_SECS)]
    pub merge_wait: u64,
}
