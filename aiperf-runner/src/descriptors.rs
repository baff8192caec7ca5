//! The process's open-file limit: raised to the hard limit before a run, and compared
//! with what the planned concurrency needs, so running out of file descriptors is said
//! before sending instead of looking like a failing server.

use aiperf_core::BenchmarkConfig;

/// Descriptors a run holds besides its connections: the runtime, log and artifact files,
/// telemetry scrapes, the tokenizer.
const RESERVED: u64 = 64;

/// Raises the soft limit on open files as far as the hard limit allows and returns the
/// limit now in force (`None` where it cannot be read).
pub(crate) fn raise_open_file_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => {
            tracing::debug!(limit, "open-file limit");
            Some(limit)
        }
        Err(error) => {
            tracing::debug!(%error, "cannot read or raise the open-file limit");
            None
        }
    }
}

/// About how many descriptors the planned concurrency needs: a connection per concurrent
/// request (two when the embedded mock server answers in this process), plus what the
/// run holds anyway. `None` when nothing bounds the requests in flight (a request rate
/// without `concurrency`).
pub(crate) fn needed(config: &BenchmarkConfig, embedded_mock: bool) -> Option<u64> {
    let concurrency = u64::try_from(config.load.concurrency?).unwrap_or(u64::MAX);
    let per_request = if embedded_mock { 2 } else { 1 };
    Some(
        concurrency
            .saturating_mul(per_request)
            .saturating_add(RESERVED),
    )
}

/// Descriptors set aside while a run sends, so the files written after it (the summary,
/// the console text, the ready marker) can still be opened when the connections took every
/// other descriptor: requests fail for want of descriptors, the run's results do not.
pub(crate) struct DescriptorReserve(Vec<std::fs::File>);

/// Descriptors in a [`DescriptorReserve`]: the closing files are written one at a time.
const SET_ASIDE: usize = 4;

impl DescriptorReserve {
    /// Holds [`SET_ASIDE`] descriptors (as many as can be opened).
    pub(crate) fn hold() -> Self {
        let files = (0..SET_ASIDE)
            .map_while(|_| std::fs::File::open(NULL_DEVICE).ok())
            .collect();
        Self(files)
    }

    /// Gives the descriptors back, for the files written after the run.
    pub(crate) fn release(self) {
        drop(self.0);
    }
}

#[cfg(unix)]
const NULL_DEVICE: &str = "/dev/null";
#[cfg(windows)]
const NULL_DEVICE: &str = "NUL";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_need_grows_with_the_concurrency_and_the_embedded_mock() {
        let mut config = BenchmarkConfig::default();
        assert_eq!(needed(&config, false), None);
        config.load.concurrency = Some(2000);
        assert_eq!(needed(&config, false), Some(2064));
        assert_eq!(needed(&config, true), Some(4064));
    }

    #[test]
    fn a_reserve_holds_descriptors_until_released() {
        let reserve = DescriptorReserve::hold();
        assert_eq!(reserve.0.len(), SET_ASIDE);
        reserve.release();
    }

    #[test]
    fn the_limit_is_readable_and_at_least_what_it_was() {
        let before = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap().0;
        let now = raise_open_file_limit().unwrap();
        assert!(now >= before, "{now} < {before}");
    }
}
