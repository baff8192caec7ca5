//! The runner's errors in the words of the command line: where a library message names
//! a configuration field, the console names the flag that sets it.

use aiperf_endpoints::readiness::ReadinessError;
use aiperf_runner::{RunError, WorkloadError};

/// `error`'s message as `aiperf profile` prints it.
pub fn message(error: &RunError) -> String {
    match error {
        RunError::Workload(WorkloadError::UserCentricNeedsSessions) => {
            "--user-centric-rate needs multi-turn conversations (--session-turns-mean 2 or \
             more); use --request-rate for single-turn workloads"
                .into()
        }
        RunError::Workload(WorkloadError::OffsetWithoutSchedule(flag)) => {
            format!("{flag} requires --fixed-schedule, or a trace whose entries have timestamps")
        }
        RunError::Workload(WorkloadError::EmptyReplayWindow) => {
            "no trace entry lies within --fixed-schedule-start-offset and \
             --fixed-schedule-end-offset"
                .into()
        }
        RunError::NotReady(ReadinessError::NotReady {
            base,
            timeout,
            problem,
        }) => format!(
            "{base} was not ready within {} s (--wait-for-model-timeout): {problem}",
            timeout.as_secs_f64()
        ),
        other => other.to_string(),
    }
}
