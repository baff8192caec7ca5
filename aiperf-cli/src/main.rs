//! The `aiperf` command-line tool: a thin composition of the aiperf-rs library crates.
//!
//! Exit status: 0 when the run completed, 1 when it failed, no request succeeded or the
//! client ran out of open files (for `--num-profile-runs`: fewer than two runs
//! succeeded; for a sweep: a point failed), 2 for a usage or configuration error, 3 when the run missed an `--slo`, 4 when
//! `aiperf compare` found a regression beyond a `--fail-on-regression` limit, 130 when
//! Ctrl-C cut the run short.

// The binary is where results and errors reach the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod analyze;
mod analyze_trace;
mod args;
mod assemble;
mod chat;
#[cfg(test)]
mod cli_docs;
mod compare;
mod config_file;
mod kube;
mod kv;
mod logging;
mod merge;
mod plot;
mod plugins;
mod profile;
#[cfg(test)]
mod python_options;
mod speed_bench_report;
mod sweep;
mod synthesize;
mod telemetry;
mod ui;
mod usage;
mod validate;

use std::process::ExitCode;

use aiperf_runner::{ErrorKind, Outcome, Workers};
use clap::{CommandFactory, FromArgMatches};

use args::{Cli, Command, KubeCommand, ProfileArgs};

/// mimalloc instead of the system allocator: request tasks allocate response buffers on
/// the runtime's threads and the processing thread frees them, a pattern that fragments
/// glibc's per-thread arenas (hundreds of MB on a long run) and costs time in malloc.
/// Built without transparent huge pages (the workspace's `no_thp` feature): mimalloc
/// asks for them on its arenas, and every 2 MiB region the heap touches then counts
/// whole in the resident set (a 1,000-request run: 73 MB with them, 54 MB without).
/// The `heap-profile` feature keeps the system allocator, whose calls heap profilers
/// such as heaptrack intercept (bench/README.md: where a stream's memory goes).
#[cfg(not(feature = "heap-profile"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let argv = args::normalise_flag_spelling(std::env::args());
    let cli_command = redact_command_line(&argv);
    // A sweep's comma lists are checked point by point later; clap sees the first point.
    let first_point = match sweep::first_point(&argv) {
        Ok(first_point) => first_point,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let has_sweep_lists = first_point != argv;
    let matches = Cli::command().get_matches_from(first_point);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    match cli.command {
        Command::Config(command) => match config_file::run_config_command(&command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::from(2)
            }
        },
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "aiperf", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::AnalyzeTrace(args) => match analyze_trace::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        },
        Command::Synthesize(args) => match synthesize::run(&args) {
            Ok(_) => ExitCode::SUCCESS,
            Err(synthesize::Failure::Usage(error)) => {
                eprintln!("error: {error:#}");
                ExitCode::from(2)
            }
            Err(synthesize::Failure::Io(error)) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        },
        Command::Compare(args) => match compare::run(&args) {
            Ok(compare::Outcome::NoRegression) => ExitCode::SUCCESS,
            Ok(compare::Outcome::Regressed) => ExitCode::from(4),
            Err(error) => {
                eprintln!("error: {error:#}");
                match error.kind() {
                    ErrorKind::Usage => ExitCode::from(2),
                    ErrorKind::Failure => ExitCode::FAILURE,
                }
            }
        },
        Command::SpeedBenchReport(args) => speed_bench_report::run(&args),
        Command::Analyze(command) => analyze::run(&command),
        Command::Kube(KubeCommand::Generate(args)) => {
            let given = matches
                .subcommand_matches("kube")
                .and_then(|kube| kube.subcommand_matches("generate"))
                .map(flags_given)
                .unwrap_or_default();
            match kube::generate(&argv, &args, &given) {
                Ok(manifests) => {
                    print!("{manifests}");
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("error: {error:#}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Merge(args) => merge::run(&args),
        Command::Chat(args) => chat::run(&args),
        Command::Plugins(args) => match plugins::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::from(2)
            }
        },
        Command::Validate(args) => match validate::run(&args) {
            Ok(validate::Verdict::Valid) => ExitCode::SUCCESS,
            Ok(validate::Verdict::Invalid) => ExitCode::FAILURE,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        },
        Command::Plot(args) => match plot::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        },
        Command::Profile(args) => {
            if let Some(refusal) = &args.refused.used {
                eprintln!("error: {refusal}");
                return ExitCode::from(2);
            }
            logging::init(
                args.output.effective_log_level(),
                args.output.console_follows_log_level(),
            );
            tracing::info!("Starting aiperf {}", env!("CARGO_PKG_VERSION"));
            let given = matches
                .subcommand_matches("profile")
                .map(flags_given)
                .unwrap_or_default();
            run_profile(&argv, *args, &given, has_sweep_lists, cli_command)
        }
    }
}

/// The clap ids of the `aiperf profile` flags given on the command line (or, for the API
/// key, in its environment variable), which override a configuration file; `matches` are
/// those of `profile` or of a command that takes its flags (`kube generate`).
fn flags_given(matches: &clap::ArgMatches) -> Vec<String> {
    let command = Cli::command();
    let is_argument = |id: &clap::Id| {
        command
            .find_subcommand("profile")
            .is_some_and(|profile| profile.get_arguments().any(|arg| arg.get_id() == id))
    };
    matches
        .ids()
        // Argument groups (one per flattened struct) are listed too.
        .filter(|id| is_argument(id))
        .filter(|id| {
            matches!(
                matches.value_source(id.as_str()),
                Some(
                    clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable
                )
            )
        })
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// `aiperf profile`: one run, or the runs of `--num-profile-runs` and of a sweep.
fn run_profile(
    argv: &[String],
    args: ProfileArgs,
    given: &[String],
    has_sweep_lists: bool,
    cli_command: String,
) -> ExitCode {
    let spec = match &args.config_file {
        Some(path) => config_file::run_spec(path, &args, given, has_sweep_lists, cli_command),
        None => assemble::run_spec(argv, &args, cli_command),
    };
    let mut spec = match spec {
        Ok(spec) => spec,
        // A file's rule errors name configuration fields, which are not flags there.
        Err(error) if args.config_file.is_some() => {
            eprintln!("error: {error:#}");
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("error: {}", usage::flag_words(&format!("{error:#}")));
            return ExitCode::from(2);
        }
    };
    spec.workers = args
        .load
        .workers_max
        .map_or(Workers::Auto, |threads| Workers::Max(threads.into()));
    let runtime = match spec.runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(profile::profile(&args, &spec));
    if let Err(error) = &result {
        // On stderr as `error: …` and in the log file.
        tracing::error!("{}", usage::message(error));
    }
    let plot_failed = match &result {
        Ok(report) if args.output.auto_plot => auto_plot(report, args.output.plot_required),
        _ => false,
    };
    logging::flush();
    match result {
        Ok(_) if plot_failed => ExitCode::FAILURE,
        Ok(report) => match report.outcome {
            Outcome::Completed => ExitCode::SUCCESS,
            Outcome::AllFailed
            | Outcome::RunsFailed
            | Outcome::ClientLimited
            | Outcome::ExportFailed
            | Outcome::TooManyFailures => ExitCode::FAILURE,
            Outcome::SlosMissed => ExitCode::from(3),
            Outcome::Cancelled => ExitCode::from(profile::cancel_status()),
        },
        Err(error) => match error.kind() {
            ErrorKind::Usage => ExitCode::from(2),
            ErrorKind::Failure => ExitCode::FAILURE,
        },
    }
}

/// `--auto-plot` on the finished runs; true when plotting failed and `--plot-required`
/// makes that fatal (otherwise a failure is a warning, as in the Python AIPerf 0.13).
fn auto_plot(report: &aiperf_runner::Report, required: bool) -> bool {
    if report.outcome == Outcome::Cancelled {
        return false;
    }
    match plot::plot_report(report) {
        Ok(()) => false,
        Err(error) if required => {
            tracing::error!("--auto-plot failed (--plot-required): {error:#}");
            true
        }
        Err(error) => {
            tracing::warn!("--auto-plot failed: {error:#}");
            false
        }
    }
}

/// The command line as artifacts record it, with secret values replaced by `***` and the
/// program named without its directory (`aiperf profile …`, as the Python tool records it).
fn redact_command_line(argv: &[String]) -> String {
    let mut redacted = Vec::with_capacity(argv.len());
    let Some((program, argv)) = argv.split_first() else {
        return String::new();
    };
    let program = std::path::Path::new(program).file_name().map_or_else(
        || program.clone(),
        |name| name.to_string_lossy().into_owned(),
    );
    redacted.push(program);
    let mut hide_next = false;
    for arg in argv {
        if hide_next {
            redacted.push(redact_header_or_key(arg));
            hide_next = false;
            continue;
        }
        match arg.split_once('=') {
            Some((flag, value)) if is_secret_flag(flag) => {
                redacted.push(format!("{flag}={}", redact_header_or_key(value)));
            }
            _ => {
                hide_next = is_secret_flag(arg);
                // Any URL, in any flag: a password in it is a secret too.
                redacted.push(aiperf_core::url::redact_credentials(arg));
            }
        }
    }
    redacted.join(" ")
}

fn is_secret_flag(flag: &str) -> bool {
    matches!(flag, "--api-key" | "-H" | "--header")
}

/// A header keeps its name (`Name:***`); anything else becomes `***`.
fn redact_header_or_key(value: &str) -> String {
    match value.split_once(':') {
        Some((name, _)) if !name.trim_start().starts_with('{') => format!("{name}:***"),
        _ => "***".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_from_the_command_line() {
        let argv: Vec<String> = [
            "/usr/local/bin/aiperf",
            "profile",
            "--api-key",
            "sk-1",
            "-H",
            "Authorization:Bearer x",
            "--header={\"X\":\"y\"}",
            "-m",
            "m",
            "--url=http://me:pw@h:1",
            "--server-metrics",
            "https://me:pw2@h:2/metrics",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            redact_command_line(&argv),
            "aiperf profile --api-key *** -H Authorization:*** --header=*** -m m \
             --url=http://***@h:1 --server-metrics https://***@h:2/metrics"
        );
    }
}
