//! The live display: nothing, or a progress bar per phase that polls the engine's counters.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::{BenchmarkConfig, CancellationToken, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;

use crate::args::UiType;

/// `simple` on a terminal, `none` otherwise (a pipe or a CI log).
pub fn default_ui(requested: Option<UiType>) -> UiType {
    requested.unwrap_or(if std::io::stderr().is_terminal() {
        UiType::Simple
    } else {
        UiType::None
    })
}

/// A running progress display.
#[derive(Debug)]
pub struct ProgressDisplay {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl ProgressDisplay {
    /// Draws the final state and removes the bar.
    pub async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Draws a progress bar on stderr a few times a second until [`ProgressDisplay::finish`].
/// It only reads atomics: the benchmark never waits on it.
pub fn spawn_progress(
    ui: UiType,
    config: &BenchmarkConfig,
    progress: Arc<Progress>,
) -> Option<ProgressDisplay> {
    if ui == UiType::None {
        return None;
    }
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let total = config.load.request_count;
    let duration = config.load.benchmark_duration;
    let warmup_total = config.load.warmup.request_count;
    let task = tokio::spawn(async move {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr_with_hz(4));
        let style = ProgressStyle::with_template(
            "{prefix:>10} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        let mut profiling_since: Option<Instant> = None;
        let mut ticker = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = stopped.cancelled() => {
                    bar.finish_and_clear();
                    return;
                }
                _ = ticker.tick() => {}
            }
            let profiling = progress.profiling.load(Ordering::Relaxed);
            let completed = progress.completed.load(Ordering::Relaxed);
            let errors = progress.errors.load(Ordering::Relaxed);
            if profiling {
                let since = *profiling_since.get_or_insert_with(|| {
                    bar.reset();
                    Instant::now()
                });
                bar.set_prefix("Profiling");
                match (total, duration) {
                    (Some(total), _) => {
                        bar.set_length(total);
                        bar.set_position(completed);
                    }
                    (None, Some(secs)) => {
                        bar.set_length(secs.ceil() as u64);
                        bar.set_position(since.elapsed().as_secs().min(secs.ceil() as u64));
                    }
                    (None, None) => {}
                }
                let rate = completed as f64 / since.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{rate:.1} req/s, {errors} errors"));
            } else {
                bar.set_prefix("Warming up");
                bar.set_length(warmup_total.unwrap_or(0));
                bar.set_position(completed);
                bar.set_message(format!("{errors} errors"));
            }
        }
    });
    Some(ProgressDisplay { stop, task })
}
