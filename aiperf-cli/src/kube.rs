//! `aiperf kube generate`: the `aiperf profile` options read as for a run, then turned
//! into manifests by the runner's kube module.

use std::time::{SystemTime, UNIX_EPOCH};

use aiperf_runner::config_file::RunConfig;
use aiperf_runner::kube::{self, KubeOptions, Resources};
use aiperf_runner::RunSpec;

use crate::args::KubeGenerateArgs;
use crate::{assemble, config_file, usage};

/// The manifests `args` describe, as YAML text. `argv` and `given` are what
/// `aiperf profile` would read its options from (comma lists are not sweeps here: one
/// value per flag). Errors are usage errors.
pub(crate) fn generate(
    argv: &[String],
    args: &KubeGenerateArgs,
    given: &[String],
) -> anyhow::Result<String> {
    let profile = &args.profile;
    if let Some(refusal) = &profile.refused.used {
        anyhow::bail!("{refusal}");
    }
    let spec = match &profile.config_file {
        Some(path) => config_file::run_spec(path, profile, given, false, String::new())?,
        None => assemble::run_spec(argv, profile, String::new())
            .map_err(|error| anyhow::anyhow!(usage::flag_words(&format!("{error:#}"))))?,
    };
    check_one_run(&spec, args)?;
    warn_of_local_files(&spec);
    let options = options(args, &spec)?;
    let run = RunConfig::of_run(&spec, &spec.benchmark);
    Ok(kube::generate(&run, &options)?)
}

/// What the shards cannot repeat: several runs, and secrets, which never go into
/// manifests.
fn check_one_run(spec: &RunSpec, args: &KubeGenerateArgs) -> anyhow::Result<()> {
    if spec.sweep.is_some() {
        anyhow::bail!(
            "aiperf kube generate runs one benchmark; generate the manifests of each sweep \
             point on its own, each with its own --name"
        );
    }
    if spec.runs.count > 1 {
        anyhow::bail!(
            "--num-profile-runs cannot be sharded; apply the manifests once per run, each \
             with its own --name"
        );
    }
    let endpoint = &spec.benchmark.endpoint;
    if endpoint.api_key.is_some() && args.kube.api_key_secret.is_none() {
        anyhow::bail!(
            "the API key is never written into manifests: store it in a Secret \
             (kubectl create secret generic NAME --from-literal={}=…) and name it with \
             --api-key-secret",
            kube::API_KEY_SECRET_KEY
        );
    }
    if !endpoint.headers.is_empty() {
        anyhow::bail!(
            "header values (-H) are not written into manifests, as they may be secrets; \
             put the server behind a key in a Secret (--api-key-secret) instead"
        );
    }
    Ok(())
}

/// The run's files are read inside the pods, from the same paths.
fn warn_of_local_files(spec: &RunSpec) {
    let files = [
        ("--input-file", spec.benchmark.input.input_file.as_deref()),
        ("--tls-ca-file", spec.transport.tls_ca_file.as_deref()),
    ];
    for (flag, path) in files {
        if let Some(path) = path {
            eprintln!(
                "warning: {flag} {}: the shard pods read it at this path; mount it there \
                 (docs/scale-out.md)",
                path.display()
            );
        }
    }
}

fn options(args: &KubeGenerateArgs, spec: &RunSpec) -> anyhow::Result<KubeOptions> {
    let kube = &args.kube;
    if spec.benchmark.load.shard.is_some() {
        anyhow::bail!(
            "--shard and --shard-count are set by the generated Job: give the number of \
             shards with --shards N"
        );
    }
    let start_at_unix_secs = if let Some(at) = spec.start_at {
        at.duration_since(UNIX_EPOCH)?.as_secs()
    } else {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        now + kube.start_delay
    };
    let sized = Resources::for_load(&spec.benchmark, kube.shards);
    let defaults = KubeOptions::new(kube.shards, start_at_unix_secs);
    Ok(KubeOptions {
        name: kube.name.clone(),
        namespace: kube.namespace.clone(),
        image: kube.image.clone().unwrap_or(defaults.image.clone()),
        results_pvc: kube.results_pvc.clone(),
        spread_over_nodes: !kube.no_anti_affinity,
        api_key_secret: kube.api_key_secret.clone(),
        resources: Some(Resources {
            cpu: kube.cpu_request.clone().unwrap_or(sized.cpu),
            memory: kube.memory_request.clone().unwrap_or(sized.memory),
        }),
        merge_wait_secs: kube.merge_wait,
        clock_reference: spec.clock_reference.clone(),
        ..defaults
    })
}
