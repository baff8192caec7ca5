//! `--ui-type simple`: one progress bar per phase (warmup, profiling) on stderr, with the
//! phase's request rate and error count.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{StopCondition, Watched, REFRESH};

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

    fn update(&self, completed: u64, errors: u64) {
        let elapsed = self.since.elapsed();
        match self.target {
            StopCondition::Requests(_) => self.bar.set_position(completed),
            StopCondition::Seconds(secs) => self
                .bar
                .set_position(elapsed.as_secs().min(secs.ceil() as u64)),
            StopCondition::Open => self.bar.tick(),
        }
        let rate = completed as f64 / elapsed.as_secs_f64().max(1e-3);
        self.bar.set_message(format!(
            "{completed} done, {rate:.1} req/s, {errors} errors"
        ));
    }
}

/// Draws until `stop` is set; the finished bars stay on screen.
pub fn run(watched: &Watched, stop: &AtomicBool) {
    let bars = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
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
        if progress.profiling.load(Ordering::Relaxed) {
            if let Some(finished) = warmup.take() {
                finished.bar.finish();
            }
            profiling
                .get_or_insert_with(|| PhaseBar::new(&bars, "Profiling", watched.targets.profiling))
                .update(completed, errors);
        } else if let Some(warmup) = &warmup {
            warmup.update(completed, errors);
        }
        if done {
            for phase in [warmup, profiling].into_iter().flatten() {
                phase.bar.finish();
            }
            return;
        }
        // `LiveDisplay::finish` unparks the thread: the final state is drawn at once.
        std::thread::park_timeout(REFRESH);
    }
}
