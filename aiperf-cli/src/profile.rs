//! `aiperf profile` on the console: the runner's hooks as the live display, progress
//! lines, result tables and file list; signals as cancellation.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use aiperf_core::CancellationToken;
use aiperf_metrics::catalogue::ConsoleGroup;
use aiperf_metrics::export::console;
use aiperf_metrics::live::LiveStats;
use aiperf_metrics::sweep::SweepSummary;
use aiperf_runner::{Notice, Outcome, RunHooks, RunReport, RunSpec, RunWatch};

use crate::args::{ProfileArgs, UiType};
use crate::ui::{self, LiveDisplay};

/// Runs `spec` with the console as its display; the report, or why nothing could run.
pub(crate) async fn profile(
    args: &ProfileArgs,
    spec: &RunSpec,
) -> Result<aiperf_runner::Report, aiperf_runner::RunError> {
    // First, so that Ctrl-C during a long dataset load also ends the run cleanly.
    let cancel = CancellationToken::new();
    spawn_signal_handler(cancel.clone());
    let mut hooks = ConsoleHooks::new(args);
    aiperf_runner::run(spec, &mut hooks, cancel).await
}

/// What the console shows of a run, and the choices behind it.
struct ConsoleHooks {
    ui_type: UiType,
    display: Option<LiveDisplay>,
    log_file: Option<PathBuf>,
    /// `--gpu-telemetry` was given: print the GPU tables.
    show_gpu_tables: bool,
    show_trace_timing: bool,
    show_sweep_table: bool,
}

impl ConsoleHooks {
    fn new(args: &ProfileArgs) -> Self {
        Self {
            ui_type: ui::default_ui(
                args.output.ui_type,
                std::io::stdout().is_terminal(),
                args.output.is_verbose(),
            ),
            display: None,
            log_file: None,
            show_gpu_tables: args.telemetry.gpu_telemetry.is_some(),
            show_trace_timing: args.output.show_trace_timing,
            show_sweep_table: !args.runs.no_sweep_table,
        }
    }
}

impl RunHooks for ConsoleHooks {
    fn notice(&mut self, notice: &Notice<'_>) {
        match notice {
            // Warnings go to the log file too, in the words of the flags.
            Notice::StreamingUnsupported { endpoint } => {
                tracing::warn!("the {endpoint} endpoint does not stream; --streaming is ignored");
            }
            Notice::OpenFileLimit { needed, limit } => tracing::warn!(
                "--concurrency needs about {needed} open files but this process may open \
                 {limit} (ulimit -n, already raised to the hard limit): requests beyond that \
                 will fail as ClientResourceError"
            ),
            Notice::ApiKeyHeaderReplaced => tracing::warn!(
                "a header given with -H replaces the one --api-key would send; the --api-key \
                 value is not used"
            ),
            Notice::LongWaits { .. } => tracing::warn!(
                "{notice}; each may wait up to --request-timeout-seconds (6 h by default)"
            ),
            Notice::LateReads(_) => tracing::warn!("{notice}"),
            Notice::ReplayingTimestamps => eprintln!(
                "The input trace has timestamps: replaying them (--no-fixed-schedule to not)."
            ),
            Notice::RunFailed { label, error } => {
                eprintln!("error: {label}: {}", crate::usage::message(error));
            }
            other => eprintln!("{other}"),
        }
    }

    fn wants_live_stats(&self) -> bool {
        self.ui_type == UiType::Dashboard
    }

    fn artifacts_at(&mut self, dir: &Path) {
        match crate::logging::open_log_file(dir) {
            Ok(path) => self.log_file = Some(path),
            Err(error) => {
                tracing::warn!(
                    "cannot create logs/aiperf.log in {}: {error}",
                    dir.display()
                );
            }
        }
    }

    fn sending(&mut self, watch: &RunWatch) {
        // Each run of a sequence gets its own display, drawn until its tables print.
        let watched = ui::Watched {
            progress: Arc::clone(&watch.progress),
            live: watch
                .live
                .clone()
                .unwrap_or_else(|| Arc::new(LiveStats::new())),
            targets: watch.targets,
            cancel: watch.cancel.clone(),
            long_wait: watch.long_wait,
        };
        self.display = ui::spawn(self.ui_type, watched);
    }

    fn sending_ended(&mut self) {
        if let Some(display) = self.display.take() {
            display.finish();
        }
    }

    fn run_finished(&mut self, run: &RunReport) {
        let summary = &run.summary;
        print!("{}", console::render_console(summary));
        if let Some(tables) = run.gpu_tables.as_deref().filter(|_| self.show_gpu_tables) {
            print!("{tables}");
        }
        if self.show_trace_timing {
            if let Some(table) = console::metrics_table(summary, ConsoleGroup::HttpTrace) {
                print!("{}", table.render());
            }
        }
        self.print_files(run);
        if let Some(report) = &run.slo_report {
            print!("{}", report.render());
        }
    }

    fn sweep_finished(&mut self, sweep: &SweepSummary, dir: &Path) {
        if self.show_sweep_table {
            print!("{}", sweep.render_table());
        }
        println!("Sweep Summary: {}", absolute(dir).display());
    }
}

impl ConsoleHooks {
    fn print_files(&self, run: &RunReport) {
        let files = &run.files;
        println!("CSV Export: {}", absolute(&files.csv).display());
        println!("JSON Export: {}", absolute(&files.json).display());
        for (label, path) in aiperf_telemetry::export::console_exports(&files.telemetry) {
            println!("{label}: {}", absolute(path).display());
        }
        if let Some(raw) = &files.raw_records {
            println!("Raw Records: {}", absolute(raw).display());
        }
        println!("Artifacts: {}", absolute(&files.dir).display());
        if let Some(log_file) = &self.log_file {
            println!("Log File: {}", log_file.display());
        }
        let summary = &run.summary;
        if let Some(failure) = &summary.export_failure {
            eprintln!(
                "error: {failure}. Sending stopped at the first failed write; every line \
                 written before it is whole, and the summary above covers the requests that \
                 finished."
            );
        } else if summary.was_cancelled {
            println!(
                "The profile run was cancelled early: the results cover the requests that \
                 finished."
            );
        }
        if run.outcome == Outcome::ClientLimited {
            println!(
                "{} request(s) failed because this client ran out of open files \
                 (ClientResourceError): the results do not measure the server. Raise the \
                 limit (ulimit -n) or lower --concurrency.",
                summary.client_resource_errors()
            );
        }
        if run.outcome == Outcome::AllFailed {
            match (summary.error_count(), summary.cancelled_in_flight) {
                (failed, 0) => {
                    println!("All {failed} request(s) failed: see the Error Summary above.");
                }
                (0, cut_off) => println!(
                    "No request completed: all {cut_off} were still in flight when the run ended."
                ),
                (failed, cut_off) => println!(
                    "No request succeeded: {failed} failed (see the Error Summary above) and \
                     {cut_off} were still in flight when the run ended."
                ),
            }
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The exit status of a run a signal cancelled: 130 for Ctrl-C (SIGINT), 143 for SIGTERM,
/// 129 for SIGHUP, as a shell reports a process those signals ended.
static CANCEL_STATUS: AtomicU8 = AtomicU8::new(130);

/// The exit status of a cancelled run (see [`CANCEL_STATUS`]).
pub(crate) fn cancel_status() -> u8 {
    CANCEL_STATUS.load(Ordering::Relaxed)
}

/// Ctrl-C, SIGTERM (`docker stop`, Kubernetes, Slurm, `timeout`) and SIGHUP all end the
/// run the same way: stop sending, write everything for what finished. A second signal
/// exits at once, whatever is still being written.
fn spawn_signal_handler(cancel: CancellationToken) {
    tokio::spawn(async move {
        let Some(status) = next_signal().await else {
            return;
        };
        CANCEL_STATUS.store(status, Ordering::Relaxed);
        eprintln!(
            "\nCancelling: writing the results of the requests that finished… (again to \
             exit at once)"
        );
        cancel.cancel();
        if let Some(status) = next_signal().await {
            eprintln!("Interrupted again: exiting now; the artifacts may be incomplete.");
            crate::logging::flush();
            std::process::exit(i32::from(status));
        }
    });
}

/// Waits for the next of Ctrl-C, SIGTERM and SIGHUP; its exit status, or `None` when
/// no handler could be installed.
#[cfg(unix)]
async fn next_signal() -> Option<u8> {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return tokio::signal::ctrl_c().await.ok().map(|()| 130);
    };
    tokio::select! {
        interrupted = tokio::signal::ctrl_c() => interrupted.ok().map(|()| 130),
        _ = term.recv() => Some(143),
        _ = hangup.recv() => Some(129),
    }
}

#[cfg(not(unix))]
async fn next_signal() -> Option<u8> {
    tokio::signal::ctrl_c().await.ok().map(|()| 130)
}
