//! The live display: nothing, a progress bar per phase (`simple`) or a full-screen
//! dashboard. Either runs on its own thread and only reads the engine's atomic counters
//! and the metrics sink's [`LiveStats`]: the network thread never waits on it.

mod cpu;
mod dashboard;
mod simple;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use aiperf_core::{CancellationToken, Progress};
use aiperf_metrics::live::LiveStats;
use aiperf_runner::{PhaseTargets, StopCondition};

use crate::args::UiType;

/// How often a display redraws.
const REFRESH: Duration = Duration::from_millis(250);

/// The display to use: the one asked for, else the dashboard on a terminal (the simple
/// bars when verbose, as the Python AIPerf does), else none (a pipe or a CI log).
pub(crate) fn default_ui(requested: Option<UiType>, stdout_is_tty: bool, verbose: bool) -> UiType {
    match requested {
        Some(ui) => ui,
        None if !stdout_is_tty => UiType::None,
        None if verbose => UiType::Simple,
        None => UiType::Dashboard,
    }
}

/// What a display watches.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    /// The engine's counters for the current phase.
    pub progress: Arc<Progress>,
    /// Latencies and token counts of the profiling records processed so far.
    pub live: Arc<LiveStats>,
    /// What ends each phase.
    pub targets: PhaseTargets,
    /// Ctrl-C on the dashboard cancels the run through it.
    pub cancel: CancellationToken,
    /// Requests on the wire longer than this are shown as waiting.
    pub long_wait: Duration,
}

/// A running display; [`finish`](Self::finish) (or dropping it) stops it and gives the
/// terminal back.
#[derive(Debug)]
pub(crate) struct LiveDisplay {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LiveDisplay {
    /// Stops the display and waits until the terminal is restored.
    pub(crate) fn finish(self) {
        drop(self);
    }
}

impl Drop for LiveDisplay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Starts the `ui` display on its own thread; `None` for [`UiType::None`].
pub(crate) fn spawn(ui: UiType, watched: Watched) -> Option<LiveDisplay> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let body: Box<dyn FnOnce() + Send> = match ui {
        UiType::None => return None,
        UiType::Simple => Box::new(move || simple::run(&watched, &stopped)),
        UiType::Dashboard => Box::new(move || dashboard::run(&watched, &stopped)),
    };
    let thread = std::thread::Builder::new()
        .name("aiperf-ui".into())
        .spawn(body)
        .map_err(|error| tracing::warn!("cannot start the live display: {error}"))
        .ok()?;
    Some(LiveDisplay {
        stop,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dashboard_is_the_default_on_a_terminal_only() {
        assert_eq!(default_ui(None, true, false), UiType::Dashboard);
        assert_eq!(default_ui(None, true, true), UiType::Simple);
        assert_eq!(default_ui(None, false, false), UiType::None);
        assert_eq!(default_ui(None, false, true), UiType::None);
        assert_eq!(
            default_ui(Some(UiType::Dashboard), false, false),
            UiType::Dashboard
        );
        assert_eq!(default_ui(Some(UiType::None), true, false), UiType::None);
        assert_eq!(
            default_ui(Some(UiType::Simple), true, false),
            UiType::Simple
        );
    }
}
