//! `aiperf synthesize`: writes a synthesized workload (docs/datasets.md#trace-synthesis).
//! `trace` re-synthesizes a mooncake trace with the `--synthesis-*` options of
//! `profile`; `agentic-code` generates agentic coding sessions.

use std::path::{Path, PathBuf};

use anyhow::Context;

use aiperf_core::config::TraceSynthesis;
use aiperf_datasets::agentic_code::{synthesize_sessions, write_dataset, AgenticCodeConfig};
use aiperf_datasets::agentic_code_report::write_reports;
use aiperf_datasets::custom::synthesize_mooncake_trace;

use crate::args::{SynthesizeArgs, SynthesizeTarget};

/// Why `aiperf synthesize` failed: the user's input (exit 2) or writing the output
/// (exit 1).
#[derive(Debug)]
pub(crate) enum Failure {
    /// A bad option or a malformed input line.
    Usage(anyhow::Error),
    /// The output could not be written.
    Io(anyhow::Error),
}

/// Runs the subcommand; returns the written file.
pub(crate) fn run(args: &SynthesizeArgs) -> Result<PathBuf, Failure> {
    match args.target {
        SynthesizeTarget::Trace => run_trace(args),
        SynthesizeTarget::AgenticCode => run_agentic_code(args),
    }
}

fn run_trace(args: &SynthesizeArgs) -> Result<PathBuf, Failure> {
    let input = args
        .input_file
        .as_deref()
        .ok_or_else(|| Failure::Usage(anyhow::anyhow!("the trace target needs --input-file")))?;
    let synthesis = TraceSynthesis {
        speedup_ratio: args.speedup_ratio,
        prefix_len_multiplier: args.prefix_len_multiplier,
        prefix_root_multiplier: args.prefix_root_multiplier,
        prompt_len_multiplier: args.prompt_len_multiplier,
        output_len_multiplier: args.output_len_multiplier,
        max_isl: args.max_isl,
        max_osl: args.max_osl,
    };
    synthesis
        .validate()
        .map_err(|e| Failure::Usage(anyhow::anyhow!(crate::usage::flag_words(&e.to_string()))))?;
    let trace = synthesize_mooncake_trace(input, &synthesis, args.isl_block_size, args.seed)
        .map_err(|e| Failure::Usage(e.into()))?;
    let stem = input
        .file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let path = args.output.join(format!("{stem}.synthesized.jsonl"));
    write(&path, &trace.to_jsonl())?;
    println!(
        "Wrote {} requests to {} ({} skipped over --max-isl, {} output lengths capped to \
         --max-osl)",
        trace.lines.len(),
        path.display(),
        trace.summary.skipped_over_max_isl,
        trace.summary.capped_to_max_osl
    );
    Ok(path)
}

fn run_agentic_code(args: &SynthesizeArgs) -> Result<PathBuf, Failure> {
    let (config, config_name) = match &args.config {
        Some(path_or_name) => {
            AgenticCodeConfig::resolve(path_or_name).map_err(|e| Failure::Usage(e.into()))?
        }
        None => (AgenticCodeConfig::default(), "default".to_owned()),
    };
    let config = config.with_limits(args.max_isl, args.max_osl);
    let sessions = synthesize_sessions(&config, args.num_sessions, args.seed)
        .map_err(|e| Failure::Usage(e.into()))?;
    // `YYYYMMDD-HHMMSS` (UTC), as 0.13 names its run directories.
    let stamp: String = crate::logging::utc_timestamp(std::time::SystemTime::now())
        .chars()
        .take(19)
        .filter(|c| !matches!(c, '-' | ':'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect();
    let run_dir = args.output.join(format!(
        "{config_name}_{}s_seed{}_{stamp}",
        args.num_sessions, args.seed
    ));
    let dataset = write_dataset(&run_dir, &sessions, &config, args.seed, &config_name)
        .map_err(|e| Failure::Io(e.into()))?;
    let [quality, report] = write_reports(&run_dir, &sessions, &config, &config_name)
        .map_err(|e| Failure::Io(e.into()))?;
    let turns: usize = sessions.iter().map(|s| s.turns.len()).sum();
    println!("Run directory: {}", run_dir.display());
    println!("  JSONL:     {} ({turns} turns)", dataset.display());
    println!("  Manifest:  {}", run_dir.join("manifest.json").display());
    println!("  Quality:   {}", quality.display());
    println!("  Dashboard: {}", report.display());
    Ok(dataset)
}

/// Writes `text` to `path`, creating its parent folders.
fn write(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create folder {}", parent.display()))
            .map_err(Failure::Io)?;
    }
    std::fs::write(path, text)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::Io)
}
