//! `aiperf analyze swim-lane` and `turn-messages`: the library's swim-lane picture
//! ([`aiperf_plot::swim_lane`]) and turn-messages page ([`aiperf_plot::turn_messages`])
//! for each run directory, with the Python AIPerf's output lines and exit codes (1 when
//! a directory could not be drawn, 2 for a usage error).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aiperf_plot::swim_lane::{write_swim_lane, write_swim_lane_html, SwimLaneOptions};
use aiperf_plot::turn_messages::{write_turn_messages, TurnMessagesOptions};
use aiperf_plot::PlotError;

use crate::args::AnalyzeCommand;

/// Runs the subcommand and says how it ended.
pub(crate) fn run(command: &AnalyzeCommand) -> ExitCode {
    match command {
        AnalyzeCommand::TurnMessages {
            run_dirs,
            out,
            limit_conversations,
            max_turns,
            content_cap,
        } => {
            let options = TurnMessagesOptions {
                output: out.clone(),
                limit_conversations: *limit_conversations,
                max_turns: *max_turns,
                content_cap: *content_cap,
            };
            for_each_run(run_dirs, out.is_some(), |run_dir| {
                let saved = write_turn_messages(run_dir, &options)?;
                let kb = std::fs::metadata(&saved).map_or(0, |m| m.len() / 1024);
                Ok(format!("saved {} ({kb} KB)", saved.display()))
            })
        }
        AnalyzeCommand::SwimLane {
            run_dirs,
            out,
            concurrency,
            ramp,
            html,
        } => {
            let options = SwimLaneOptions {
                output: out.clone(),
                target_concurrency: *concurrency,
                ramp_s: *ramp,
                ..SwimLaneOptions::default()
            };
            for_each_run(run_dirs, out.is_some(), |run_dir| {
                let saved = write_swim_lane(run_dir, &options)?;
                let mut lines = format!("saved {}", saved.display());
                if *html {
                    let page = write_swim_lane_html(run_dir, &options)?;
                    lines.push_str(&format!("\nsaved {}", page.display()));
                }
                Ok(lines)
            })
        }
    }
}

/// Runs `draw` on each directory, printing its line or `skip DIR: reason`; 1 when any
/// was skipped, 2 when `--out` is given with several directories (Python's codes).
fn for_each_run(
    run_dirs: &[PathBuf],
    out_given: bool,
    draw: impl Fn(&Path) -> Result<String, PlotError>,
) -> ExitCode {
    if out_given && run_dirs.len() > 1 {
        eprintln!("error: --out only valid with a single run dir");
        return ExitCode::from(2);
    }
    let mut failures = 0;
    for run_dir in run_dirs {
        match draw(run_dir) {
            Ok(line) => println!("{line}"),
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
