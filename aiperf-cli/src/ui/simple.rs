//! `--ui-type simple`: one progress bar per phase (warmup, profiling) on stderr, with the
//! phase's request rate, error count and the requests waiting unusually long.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aiperf_core::Waiting;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{StopCondition, Watched, REFRESH};
use crate::logging;

/// The bar of one phase and when the phase started.
struct PhaseBar {
    bar: ProgressBar,
    target: StopCondition,
    since: Instant,
}

impl PhaseBar {
    fn new(bars: &MultiProgress, name: &'static str, target: StopCondition) -> Self {
        let (length, template) = match target {
            StopCondition::Requests(n) => (
                n,
                "{prefix:>10} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
            ),
            StopCondition::Seconds(secs) => (
                secs.ceil() as u64,
                "{prefix:>10} [{elapsed_precise}] {wide_bar} {pos}/{len} s {msg}",
            ),
            StopCondition::Open => (0, "{prefix:>10} [{elapsed_precise}] {spinner} {msg}"),
        };
        let bar = bars.add(ProgressBar::new(length));
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(name);
        Self {
            bar,
            target,
            since: Instant::now(),
        }
    }

    fn update_now(&self, completed: u64, errors: u64, waits: &str) {
        self.update(completed, errors, self.since.elapsed(), waits);
    }

    /// Shows `completed` requests (`errors` of them failed) `elapsed` into the phase, and
    /// `waits` (see [`long_waits`]).
    fn update(&self, completed: u64, errors: u64, elapsed: Duration, waits: &str) {
        match self.target {
            StopCondition::Requests(_) => self.bar.set_position(completed),
            StopCondition::Seconds(secs) => self
                .bar
                .set_position(elapsed.as_secs().min(secs.ceil() as u64)),
            StopCondition::Open => self.bar.tick(),
        }
        let rate = completed as f64 / elapsed.as_secs_f64().max(1e-3);
        let rate_and_errors = format!("{rate:.1} req/s, {errors} errors{waits}");
        self.bar.set_message(match self.target {
            StopCondition::Requests(_) => rate_and_errors,
            _ => format!("{completed} done, {rate_and_errors}"),
        });
    }
}

/// `, N waiting > T s` while requests have been on the wire longer than `threshold`.
pub(super) fn long_waits(waiting: Option<Waiting>, threshold: Duration) -> String {
    waiting.map_or_else(String::new, |w| {
        format!(", {} waiting > {} s", w.count, threshold.as_secs())
    })
}

/// Draws until `stop` is set; the finished bars stay on screen as last drawn (`abandon`,
/// not `finish`, which would fill them whatever the count).
pub(super) fn run(watched: &Watched, stop: &AtomicBool) {
    let bars = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    logging::print_above(Some(bars.clone()));
    let mut warmup = watched
        .targets
        .warmup
        .map(|target| PhaseBar::new(&bars, "Warming up", target));
    let mut profiling: Option<PhaseBar> = None;
    loop {
        let done = stop.load(Ordering::Relaxed);
        let progress = &watched.progress;
        let completed = progress.completed.load(Ordering::Relaxed);
        let errors = progress.errors.load(Ordering::Relaxed);
        let waits = long_waits(
            progress.in_flight.waiting_longer_than(watched.long_wait),
            watched.long_wait,
        );
        if progress.profiling.load(Ordering::Relaxed) {
            if let Some(finished) = warmup.take() {
                finished.bar.abandon();
            }
            profiling
                .get_or_insert_with(|| PhaseBar::new(&bars, "Profiling", watched.targets.profiling))
                .update_now(completed, errors, &waits);
        } else if let Some(warmup) = &warmup {
            warmup.update_now(completed, errors, &waits);
        }
        if done {
            for phase in [warmup, profiling].into_iter().flatten() {
                phase.bar.abandon();
            }
            logging::print_above(None);
            // The last draw leaves the cursor at the end of the bottom bar: what is printed
            // next (the console tables) starts on a line of its own.
            if std::io::stderr().is_terminal() {
                eprintln!();
            }
            return;
        }
        // `LiveDisplay::finish` unparks the thread: the final state is drawn at once.
        std::thread::park_timeout(REFRESH);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_bar_shows_its_count_rate_and_errors() {
        let bars = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        let profiling = PhaseBar::new(&bars, "Profiling", StopCondition::Requests(100));
        profiling.update(40, 2, Duration::from_secs(2), "");
        assert_eq!(profiling.bar.length(), Some(100));
        assert_eq!(profiling.bar.position(), 40);
        assert_eq!(profiling.bar.prefix(), "Profiling");
        assert_eq!(profiling.bar.message(), "20.0 req/s, 2 errors");

        let timed = PhaseBar::new(&bars, "Warming up", StopCondition::Seconds(9.5));
        let waits = long_waits(
            Some(Waiting {
                count: 3,
                longest: Duration::from_secs(75),
            }),
            Duration::from_secs(60),
        );
        timed.update(7, 0, Duration::from_millis(12_500), &waits);
        assert_eq!(timed.bar.length(), Some(10));
        assert_eq!(timed.bar.position(), 10, "capped at the phase's length");
        assert_eq!(
            timed.bar.message(),
            "7 done, 0.6 req/s, 0 errors, 3 waiting > 60 s"
        );
        assert_eq!(long_waits(None, Duration::from_secs(60)), "");
    }
}
