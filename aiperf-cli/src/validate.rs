//! `aiperf validate TARGET INPUT`: the library's checks of a mooncake trace
//! ([`check_mooncake_trace`]) and of a run directory ([`check_run_directory`]), printed as
//! the Python AIPerf prints its trace check, with its exit codes (0 valid, 1 not).

use std::path::Path;

use aiperf_datasets::trace_check::check_mooncake_trace;
use aiperf_metrics::run_check::check_run_directory;

use crate::args::{ValidateArgs, ValidateTarget};

/// Whether the artifact passed.
pub(crate) enum Verdict {
    Valid,
    Invalid,
}

/// Runs the check and prints its result; an `Err` is an input that cannot be checked at
/// all (no such file, not a run directory).
pub(crate) fn run(args: &ValidateArgs) -> anyhow::Result<Verdict> {
    let target = args
        .target
        .or(args.target_flag)
        .ok_or_else(|| anyhow::anyhow!("no target given: pass TARGET or --target"))?;
    let input = args
        .input
        .as_deref()
        .or(args.input_flag.as_deref())
        .ok_or_else(|| anyhow::anyhow!("nothing to check: pass INPUT or --input"))?;
    match target {
        ValidateTarget::MooncakeTrace => mooncake_trace(input),
        ValidateTarget::Run => run_directory(input),
    }
}

fn mooncake_trace(input: &Path) -> anyhow::Result<Verdict> {
    if !input.is_file() {
        anyhow::bail!("{} is not a file", input.display());
    }
    match check_mooncake_trace(input) {
        Ok(rows) => {
            println!("Validation passed: {rows} rows are Mooncake-compatible.");
            Ok(Verdict::Valid)
        }
        Err(error) => {
            println!("Validation failed: {error}");
            Ok(Verdict::Invalid)
        }
    }
}

fn run_directory(input: &Path) -> anyhow::Result<Verdict> {
    let report = check_run_directory(input)?;
    let records = report
        .records
        .map(|n| format!(", {n} records"))
        .unwrap_or_default();
    if report.problems.is_empty() {
        println!(
            "Validation passed: {} files agree ({}){records}.",
            report.files_checked.len(),
            report.files_checked.join(", ")
        );
        return Ok(Verdict::Valid);
    }
    println!(
        "Validation failed with {} problem(s):",
        report.problems.len()
    );
    for problem in &report.problems {
        println!("  {problem}");
    }
    Ok(Verdict::Invalid)
}
