//! Why a run could not be done, and whether that was the request's fault or the run's.

use std::path::PathBuf;

use aiperf_core::{ConfigError, EndpointError, EngineError};
use aiperf_datasets::TokenizerError;
use aiperf_endpoints::readiness::ReadinessError;
use aiperf_endpoints::{TransportBuildError, UnknownEndpoint};
use aiperf_metrics::aggregate::AggregateError;
use aiperf_metrics::MetricsError;

use crate::workload::WorkloadError;

/// Whose problem an error is, which is what a process exit status reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// What was asked for cannot run as given (a bad configuration or dataset): fix the
    /// request and try again.
    Usage,
    /// The run was valid but failed (server unreachable, disk full, …).
    Failure,
}

/// Why [`run`](crate::run) stopped before finishing.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The benchmark configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The endpoint type does not exist.
    #[error(transparent)]
    UnknownEndpoint(#[from] UnknownEndpoint),
    /// The workload could not be built from the configuration and the data.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The HTTP client could not be configured (e.g. an unreadable CA file).
    #[error(transparent)]
    Transport(#[from] TransportBuildError),
    /// The tokenizer could not be loaded.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// The embedded mock server did not start.
    #[cfg(feature = "mock")]
    #[error("cannot start the embedded mock server: {0}")]
    MockServer(aiperf_mock_server::MockError),
    /// The server was not ready in time, or the readiness options are invalid.
    #[error(transparent)]
    NotReady(#[from] ReadinessError),
    /// A request body could not be built for `inputs.json`.
    #[error(transparent)]
    Request(#[from] EndpointError),
    /// A file or directory could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The engine stopped (a schedule that cannot be built, a failing record sink).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Computing or writing the metrics failed.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// Writing the telemetry files failed.
    #[error(transparent)]
    Telemetry(#[from] aiperf_telemetry::export::ExportError),
    /// The multi-run aggregate could not be computed.
    #[error(transparent)]
    Aggregate(#[from] AggregateError),
    /// The clock reference (`RunSpec::clock_reference`) did not give an offset.
    #[error(transparent)]
    ClockReference(#[from] crate::clock_reference::ClockReferenceError),
}

impl RunError {
    /// Whose problem this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RunError::Config(_) | RunError::UnknownEndpoint(_) | RunError::Workload(_) => {
                ErrorKind::Usage
            }
            RunError::NotReady(ReadinessError::ZeroDuration) => ErrorKind::Usage,
            RunError::Tokenizer(error) => tokenizer_kind(error),
            _ => ErrorKind::Failure,
        }
    }

    pub(crate) fn write(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| RunError::Write { path, source }
    }
}

/// A tokenizer that cannot be loaded is a configuration problem (`--tokenizer` or the
/// model names a missing path, an invalid file, an unknown name, or a hub repository that
/// cannot be had here): the message says what to pass instead. Writing the cache and
/// encoding are failures of the run.
fn tokenizer_kind(error: &TokenizerError) -> ErrorKind {
    match error {
        TokenizerError::PathNotFound { .. }
        | TokenizerError::NoTokenizerJsonInDir { .. }
        | TokenizerError::InvalidFile { .. }
        | TokenizerError::InvalidChatTemplate { .. }
        | TokenizerError::InvalidName { .. }
        | TokenizerError::InvalidRevision { .. }
        | TokenizerError::Offline { .. }
        | TokenizerError::NotCachedNoTransport { .. }
        | TokenizerError::Download { .. }
        | TokenizerError::NoCacheDir { .. }
        | TokenizerError::HuggingFaceDisabled { .. } => ErrorKind::Usage,
        TokenizerError::CacheWrite { .. }
        | TokenizerError::Encode { .. }
        | TokenizerError::Decode { .. } => ErrorKind::Failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokenizer_that_cannot_be_loaded_is_a_usage_error() {
        let missing = RunError::from(TokenizerError::PathNotFound {
            path: "/nope/tokenizer.json".into(),
        });
        assert_eq!(missing.kind(), ErrorKind::Usage);
        let invalid = RunError::from(TokenizerError::InvalidFile {
            path: "t.json".into(),
            reason: "expected value".into(),
        });
        assert_eq!(invalid.kind(), ErrorKind::Usage);
        let offline = RunError::from(TokenizerError::Offline {
            repo: "org/name".into(),
            revision: "main".into(),
            looked_for: "x".into(),
        });
        assert_eq!(offline.kind(), ErrorKind::Usage);
        let encode = RunError::from(TokenizerError::Encode {
            tokenizer: "t".into(),
            reason: "r".into(),
        });
        assert_eq!(encode.kind(), ErrorKind::Failure);
    }
}
