//! Typed errors of the mock server library.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can go wrong when starting or running a [`crate::MockServer`].
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// A configuration value is out of range.
    #[error("invalid mock server configuration: {0}")]
    InvalidConfig(String),
    /// `host:port` could not be resolved to an address.
    #[error("cannot resolve listen address {host}:{port}: {source}")]
    Resolve {
        /// Host as given.
        host: String,
        /// Port as given.
        port: u16,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source} (is another server using this port? try --port 0)")]
    Bind {
        /// Address we tried.
        addr: SocketAddr,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The `--tokenizer` file could not be loaded.
    #[error("cannot load tokenizer {path}: {message}")]
    Tokenizer {
        /// Path given.
        path: PathBuf,
        /// What the tokenizers crate said.
        message: String,
    },
    /// The `--record-requests` file could not be opened for appending.
    #[error("cannot open request record file {path}: {source}")]
    RecordFile {
        /// Path given.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The accuracy mode's answer file could not be read.
    #[error("cannot read answer file {path}: {source}")]
    AnswerFileRead {
        /// Path given.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A line of the accuracy mode's answer file is not an answer.
    #[error("{path}:{line}: {message}")]
    AnswerFile {
        /// Path given.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field and what is wrong with it.
        message: String,
    },
}

/// Error a response body ends with when a fault deliberately cuts the connection.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by fault injection")]
pub struct DroppedByFault;
