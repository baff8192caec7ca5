//! `aiperf analyze swim-lane`: the library's swim-lane picture
//! ([`aiperf_plot::swim_lane`]) for each run directory, with the Python AIPerf's output
//! lines and exit codes (1 when a directory could not be drawn, 2 for a usage error).

use std::process::ExitCode;

use aiperf_plot::swim_lane::{write_swim_lane, SwimLaneOptions};

use crate::args::AnalyzeCommand;

/// Runs the subcommand and says how it ended.
pub(crate) fn run(command: &AnalyzeCommand) -> ExitCode {
    match command {
        AnalyzeCommand::TurnMessages { .. } => {
            eprintln!(
                "error: aiperf analyze turn-messages is not available in aiperf-rs yet; \
                 profile_export_raw.jsonl (--export-level raw) holds every turn's messages"
            );
            ExitCode::from(2)
        }
        AnalyzeCommand::SwimLane {
            run_dirs,
            out,
            concurrency,
            ramp,
            html,
        } => {
            if *html {
                eprintln!(
                    "error: --html (the interactive viewer) is not available in aiperf-rs; \
                     drop it: the PNG is written"
                );
                return ExitCode::from(2);
            }
            if out.is_some() && run_dirs.len() > 1 {
                eprintln!("error: --out only valid with a single run dir");
                return ExitCode::from(2);
            }
            let options = SwimLaneOptions {
                output: out.clone(),
                target_concurrency: *concurrency,
                ramp_s: *ramp,
                ..SwimLaneOptions::default()
            };
            let mut failures = 0;
            for run_dir in run_dirs {
                match write_swim_lane(run_dir, &options) {
                    Ok(saved) => println!("saved {}", saved.display()),
                    Err(error) => {
                        eprintln!("skip {}: {error}", run_dir.display());
                        failures += 1;
                    }
                }
            }
            if failures > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}
