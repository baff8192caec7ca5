//! `aiperf compare BASELINE_DIR CANDIDATE_DIR`: the comparison table on the console,
//! `compare.json` and `compare.md` in the output folder, and the exit status of the
//! `--fail-on-regression` gates.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use aiperf_metrics::artifacts::RunArtifacts;
use aiperf_metrics::compare::{self, render, CompareOptions, RegressionGate};
use aiperf_runner::ErrorKind;

use crate::args::CompareArgs;

/// The result of a comparison for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every gate held (or none was given).
    NoRegression,
    /// A gate failed: the candidate regressed beyond a limit.
    Regressed,
}

/// Why `aiperf compare` stopped; its [`kind`](CompareError::kind) decides the exit status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompareError {
    /// A flag value that cannot be used.
    #[error("{0}")]
    BadArguments(String),
    /// Reading the runs, writing the report or checking the gates failed. Transparent, so
    /// that `{:#}` prints the whole chain of causes.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl CompareError {
    /// A bad flag is a usage error (exit status 2); anything else a failure (1).
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            Self::BadArguments(_) => ErrorKind::Usage,
            Self::Failed(_) => ErrorKind::Failure,
        }
    }
}

/// Runs the subcommand.
pub(crate) fn run(args: &CompareArgs) -> Result<Outcome, CompareError> {
    let gates = parse_gates(&args.fail_on_regression)?;
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(CompareError::BadArguments(format!(
            "--alpha {} must lie strictly between 0 and 1",
            args.alpha
        )));
    }
    Ok(compare_runs(args, &gates)?)
}

/// Reads both runs, writes the report and checks the gates.
fn compare_runs(args: &CompareArgs, gates: &[RegressionGate]) -> anyhow::Result<Outcome> {
    let baseline = RunArtifacts::read(&args.baseline).context("cannot read the baseline run")?;
    let candidate = RunArtifacts::read(&args.candidate).context("cannot read the candidate run")?;
    let options = CompareOptions {
        alpha: args.alpha,
        seed: args.seed,
        resamples: args.bootstrap_resamples as usize,
    };
    let comparison = compare::compare(&baseline, &candidate, &options);
    let outcomes = comparison.check_gates(gates);

    // The files first: a reader that closes the pipe early (`| head`) still gets them.
    let output = args.output.as_deref().unwrap_or(&args.candidate);
    std::fs::create_dir_all(output)
        .with_context(|| format!("cannot create folder {}", output.display()))?;
    write(
        &output.join("compare.json"),
        &render::json(&comparison, &outcomes)?,
    )?;
    write(
        &output.join("compare.md"),
        &render::markdown(&comparison, &outcomes),
    )?;
    print_to_stdout(&format!(
        "{}Comparison saved to {}\n",
        render::console(&comparison, &outcomes),
        output.display()
    ))?;

    // A regression outranks a gate that could not be checked: it is the news CI needs.
    if outcomes.iter().any(|o| o.regressed) {
        return Ok(Outcome::Regressed);
    }
    if let Some(missing) = outcomes.iter().find(|o| o.missing()) {
        anyhow::bail!(
            "cannot check --fail-on-regression {}: the metric or statistic is not in both runs",
            missing.gate
        );
    }
    Ok(Outcome::NoRegression)
}

/// Every `--fail-on-regression` value, each possibly holding several items.
fn parse_gates(values: &[String]) -> Result<Vec<RegressionGate>, CompareError> {
    let mut gates = Vec::new();
    for value in values {
        gates.extend(
            compare::parse_gates(value).map_err(|e| CompareError::BadArguments(e.to_string()))?,
        );
    }
    Ok(gates)
}

/// Prints `text`; a closed pipe is not an error (the reader has seen enough).
fn print_to_stdout(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(error).context("cannot print the comparison")
        }
        _ => Ok(()),
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
