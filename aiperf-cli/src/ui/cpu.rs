//! The client's own CPU use, from `/proc/self/stat`, as a share of the machine's cores,
//! and its busiest thread's, from `/proc/self/task/*/stat`: requests are sent from one
//! runtime thread by default, so that thread saturating one core distorts the stamps
//! long before the machine as a whole looks busy.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `/proc` reports CPU time in USER_HZ ticks, which Linux fixes at 100 per second for
/// user space on every architecture it exposes `/proc` on.
const TICKS_PER_SECOND: f64 = 100.0;

/// Measures CPU use between successive samples.
#[derive(Debug)]
pub(super) struct CpuSampler {
    cores: usize,
    last: Option<(Instant, u64)>,
    /// Each thread's ticks at the last sample, by thread id.
    threads: HashMap<u32, u64>,
}

/// CPU use over the last interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct CpuUse {
    /// Percent of all the machine's cores (100 = every core busy).
    pub percent_of_machine: f64,
    /// How many cores the machine offers this process.
    pub cores: usize,
    /// The busiest thread's use, in percent of one core.
    pub busiest_thread_percent: f64,
}

impl CpuSampler {
    /// A sampler; the first [`sample`](Self::sample) only sets the baseline.
    pub(super) fn new() -> Self {
        Self {
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            last: None,
            threads: HashMap::new(),
        }
    }

    /// CPU use since the previous sample (at least `min_interval` ago), or `None` when
    /// there is no previous sample yet or `/proc` cannot be read.
    pub(super) fn sample(&mut self, min_interval: Duration) -> Option<CpuUse> {
        let now = Instant::now();
        if let Some((at, _)) = self.last {
            if now.duration_since(at) < min_interval {
                return None;
            }
        }
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let ticks = cpu_ticks(&stat)?;
        let threads = thread_ticks();
        let busiest_ticks = busiest_delta(&self.threads, &threads);
        self.threads = threads;
        let (at, before) = self.last.replace((now, ticks))?;
        let wall_secs = now.duration_since(at).as_secs_f64();
        let percent_of_one_core = |ticks: u64| 100.0 * ticks as f64 / TICKS_PER_SECOND / wall_secs;
        Some(CpuUse {
            percent_of_machine: percent_of_one_core(ticks.saturating_sub(before))
                / self.cores as f64,
            cores: self.cores,
            busiest_thread_percent: percent_of_one_core(busiest_ticks),
        })
    }
}

/// Every thread's ticks now; threads whose file vanished mid-read are skipped.
fn thread_ticks() -> HashMap<u32, u64> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return HashMap::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            Some((tid, cpu_ticks(&stat)?))
        })
        .collect()
}

/// The largest tick increase of a thread seen in both samples (a thread new since the
/// last sample has no baseline, and its lifetime total would overstate it).
fn busiest_delta(before: &HashMap<u32, u64>, now: &HashMap<u32, u64>) -> u64 {
    now.iter()
        .filter_map(|(tid, ticks)| Some(ticks.saturating_sub(*before.get(tid)?)))
        .max()
        .unwrap_or(0)
}

/// User plus system ticks (fields 14 and 15) of a `/proc/<pid>/stat` line. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_system_ticks_are_read_after_the_command_name() {
        let stat = "4242 (my (odd) cmd) R 1 4242 4242 0 -1 4194560 1200 0 0 0 731 269 0 0 \
                    20 0 5 0 100 1000000 500 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some(1000));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn the_first_sample_sets_the_baseline() {
        let mut sampler = CpuSampler::new();
        assert_eq!(sampler.sample(Duration::ZERO), None);
        let busy_until = Instant::now() + Duration::from_millis(50);
        while Instant::now() < busy_until {
            std::hint::black_box(0u64);
        }
        let use_ = sampler.sample(Duration::ZERO).expect("a second sample");
        assert!(use_.cores >= 1);
        assert!(use_.percent_of_machine >= 0.0);
        assert!(use_.busiest_thread_percent >= 0.0);
    }

    #[test]
    fn the_busiest_thread_is_the_largest_increase_among_threads_seen_twice() {
        let before = HashMap::from([(1, 100), (2, 50)]);
        let now = HashMap::from([(1, 130), (2, 95), (3, 10_000)]);
        // Thread 3 is new: its 10,000 lifetime ticks are not an increase.
        assert_eq!(busiest_delta(&before, &now), 45);
        assert_eq!(busiest_delta(&HashMap::new(), &now), 0);
    }
}
