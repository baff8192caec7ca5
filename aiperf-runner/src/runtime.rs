//! How many threads send requests, and the Tokio runtime that runs them.
//!
//! One thread is the most exact and the cheapest per request: every request task and
//! connection task share it, with no wake-up hop between threads. More threads serve
//! loads one core cannot drive. Stamps stay exact either way: a chunk's stamp is the
//! kernel's receive time of its bytes (see `aiperf-endpoints`' transport), not the time a
//! thread got round to reading it. Parsing and metrics run on their own thread
//! regardless.

use serde::{Deserialize, Serialize};

use crate::RunSpec;

/// What the Python AIPerf 0.13's automatic worker count takes of the CPUs
/// (`AIPERF_WORKER_CPU_UTILIZATION_FACTOR`).
const AUTO_CPU_SHARE: f64 = 0.75;
/// The most threads the automatic count chooses (`AIPERF_WORKER_MAX_WORKERS_CAP`).
const AUTO_MAX: usize = 32;

/// The sending threads (`--workers-max`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workers {
    /// As the Python AIPerf 0.13 chooses without `--workers-max`: three quarters of the
    /// CPUs less one, at least 1 and at most 32 (1 on a machine of 2 or 3 CPUs).
    #[default]
    Auto,
    /// At most this many (0 is taken as 1).
    Max(usize),
}

impl Workers {
    /// The thread count for a machine of `cpus` CPUs and a run whose concurrency is at
    /// most `concurrency` (`None`: no limit, as for request-rate runs): never more threads
    /// than requests in flight, as in the Python AIPerf.
    pub fn threads(self, cpus: usize, concurrency: Option<usize>) -> usize {
        let chosen = match self {
            // Truncated as the Python tool's int() does.
            Workers::Auto => ((cpus as f64 * AUTO_CPU_SHARE) as usize)
                .saturating_sub(1)
                .min(AUTO_MAX),
            Workers::Max(threads) => threads,
        };
        concurrency.map_or(chosen, |limit| chosen.min(limit)).max(1)
    }
}

impl RunSpec {
    /// The sending threads this run gets on this machine: [`RunSpec::workers`] for the
    /// CPUs available to the process, capped by the largest concurrency of the benchmark
    /// and its sweep points.
    pub fn worker_threads(&self) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        self.workers.threads(cpus, self.max_concurrency())
    }

    /// The runtime to [`run`](crate::run) this spec on: one thread or
    /// [`RunSpec::worker_threads`], timers and I/O enabled. Embedders that bring their own
    /// runtime may ignore it; stamps stay exact on any runtime.
    pub fn runtime(&self) -> std::io::Result<tokio::runtime::Runtime> {
        match self.worker_threads() {
            1 => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            threads => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build(),
        }
    }

    /// The most sessions any benchmark of the spec keeps in flight; `None` when one of
    /// them has no concurrency limit.
    fn max_concurrency(&self) -> Option<usize> {
        let points = self.sweep.iter().flat_map(|sweep| &sweep.points);
        std::iter::once(&self.benchmark)
            .chain(points.map(|point| &point.benchmark))
            .map(|benchmark| {
                let warmup = benchmark.load.warmup.concurrency.unwrap_or(0);
                benchmark.load.concurrency.map(|c| c.max(warmup))
            })
            .try_fold(0, |most, limit| limit.map(|limit| most.max(limit)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_three_quarters_of_the_cpus_less_one_within_1_to_32() {
        let auto = |cpus| Workers::Auto.threads(cpus, None);
        assert_eq!(auto(1), 1);
        assert_eq!(auto(2), 1);
        assert_eq!(auto(3), 1);
        assert_eq!(auto(4), 2);
        assert_eq!(auto(8), 5);
        assert_eq!(auto(16), 11);
        assert_eq!(auto(64), 32);
    }

    #[test]
    fn concurrency_caps_auto_and_a_given_count_alike() {
        assert_eq!(Workers::Auto.threads(16, Some(4)), 4);
        assert_eq!(Workers::Max(8).threads(2, Some(3)), 3);
        assert_eq!(Workers::Max(8).threads(2, None), 8);
        assert_eq!(Workers::Max(0).threads(2, None), 1);
    }
}
