//! Hugging Face datasets: from an id, config and split to local files, and from those
//! files to rows (feature `hub`).
//!
//! * [`resolve`] finds the split's files in the local Hugging Face hub cache (the layout
//!   `huggingface_hub` writes, see [`cache`]) and otherwise downloads them through the
//!   caller's [`aiperf_core::Transport`] into that layout, so the next run finds them
//!   offline. `HF_HUB_OFFLINE` never touches the network.
//! * [`read_rows`] streams the rows of those files (Parquet row group by row group, with
//!   column projection; JSON Lines line by line; JSON arrays), each row a JSON object.
//!
//! ```no_run
//! # async fn run(transport: &dyn aiperf_core::Transport) -> Result<(), aiperf_datasets::hub::HubError> {
//! use aiperf_datasets::hub::{read_rows, resolve, HubDataset, HubOptions};
//!
//! let gsm8k = HubDataset {
//!     id: "openai/gsm8k".into(),
//!     config: Some("main".into()),
//!     split: "test".into(),
//!     revision: None,
//! };
//! let files = resolve(&gsm8k, &HubOptions::from_env(), transport).await?;
//! for row in read_rows(&files, Some(&["question"])) {
//!     println!("{}", row?["question"]);
//! }
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::time::Duration;

pub mod cache;
mod download;
pub mod exgentic;
pub mod public;
mod rows;

pub use download::resolve;
pub use exgentic::HubExgenticDataset;
pub use public::{hub_dataset, HubPublicDataset, HubWekaDataset};
pub use rows::{read_rows, Row, Rows};

use crate::resolve::{HubEnv, DEFAULT_REVISION};

/// One split of a Hugging Face dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubDataset {
    /// The repository id, `org/name`.
    pub id: String,
    /// The config (subset); `None` is the dataset's only or `default` config.
    pub config: Option<String>,
    /// The split: `train`, `test`, `validation`, …
    pub split: String,
    /// Branch, tag or commit; `None` is `main`.
    pub revision: Option<String>,
}

impl HubDataset {
    /// The revision asked for: the given one, else `main`.
    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or(DEFAULT_REVISION)
    }
}

/// Where the hub cache is and whether and how to download: the `HF_*` environment.
#[derive(Clone, PartialEq, Eq)]
pub struct HubOptions {
    /// The hub cache root: `HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub` (see [`HubEnv::from_lookup`]); `None` when no home
    /// folder is known.
    pub cache_dir: Option<PathBuf>,
    /// `HF_HUB_OFFLINE` is set: never download.
    pub offline: bool,
    /// `HF_TOKEN`: sent to the hub's own hosts only. Never logged.
    pub token: Option<String>,
    /// The hub's base URL (`HF_ENDPOINT`, default `https://huggingface.co`), without a
    /// trailing slash. With `HF_ENDPOINT` set, the parquet listing is asked of this host
    /// too (a mirror or a test server answers both).
    pub endpoint: String,
    /// Bound on each download request.
    pub timeout: Duration,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("endpoint", &self.endpoint)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HubOptions {
    /// The bound on each download request unless changed: the Python AIPerf's
    /// `DATASET_PUBLIC_DATASET_TIMEOUT`.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    /// Reads the settings through `lookup` (a variable name to its value), so tests and
    /// embedders control them.
    ///
    /// ```
    /// use aiperf_datasets::hub::HubOptions;
    ///
    /// let options = HubOptions::from_lookup(|key| match key {
    ///     "HF_HOME" => Some("/data/hf".into()),
    ///     "HF_ENDPOINT" => Some("http://127.0.0.1:9000/".into()),
    ///     _ => None,
    /// });
    /// assert_eq!(options.cache_dir.unwrap(), std::path::Path::new("/data/hf/hub"));
    /// assert_eq!(options.endpoint, "http://127.0.0.1:9000");
    /// assert!(!options.offline);
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let env = HubEnv::from_lookup(lookup);
        Self {
            cache_dir: env.cache_dir,
            offline: env.offline,
            token: env.token,
            endpoint: env.endpoint,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// Why a dataset could not be found, downloaded or read.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// Offline (`HF_HUB_OFFLINE`) and not in the cache.
    #[error(
        "Hugging Face dataset {id} ({what}) is not in the local cache and HF_HUB_OFFLINE is \
         set: put its files in {folder}, or unset HF_HUB_OFFLINE to download them"
    )]
    Offline {
        /// The dataset id.
        id: String,
        /// Config and split, as `config/split`.
        what: String,
        /// Where the files belong.
        folder: PathBuf,
    },
    /// No cache folder is known (no `HF_HOME`, `HF_HUB_CACHE` or home folder).
    #[error("Hugging Face dataset {id}: no cache folder is known; set HF_HOME or HF_HUB_CACHE")]
    NoCacheDir {
        /// The dataset id.
        id: String,
    },
    /// The hub has no files for that config and split.
    #[error("Hugging Face dataset {id}: {reason}")]
    NotFound {
        /// The dataset id.
        id: String,
        /// What was missing, and what exists instead.
        reason: String,
    },
    /// A download failed.
    #[error("Hugging Face dataset {id}: could not download {url}: {reason}")]
    Download {
        /// The dataset id.
        id: String,
        /// The URL, without its query.
        url: String,
        /// What went wrong, and what to do.
        reason: String,
    },
    /// The cache could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A data file is malformed: `path:line: message` (the line is the JSON Lines line,
    /// or for Parquet the row counted from 1).
    #[error("{}:{line}: {message}", path.display())]
    Row {
        /// The data file.
        path: PathBuf,
        /// Its line (or row) number, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A data file cannot be opened as what its extension says.
    #[error("{}: {message}", path.display())]
    File {
        /// The data file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}
