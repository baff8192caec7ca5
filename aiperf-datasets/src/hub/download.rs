//! [`resolve`]: the cache first, then a download into the cache.
//!
//! A dataset without a pinned revision is downloaded from the dataset server's parquet
//! listing (`https://datasets-server.huggingface.co/parquet?dataset=ID`, or
//! `$HF_ENDPOINT/parquet?dataset=ID` when `HF_ENDPOINT` is set, so one mirror or test
//! server answers both); when that listing is unavailable, and for a pinned revision, the
//! repository's own files are listed (`/api/datasets/ID/revision/REV`) and the split's
//! files picked by the rules of [`super::cache`].
//!
//! Each file is written to `blobs/<name>.incomplete` as it is received and moved into
//! `snapshots/<commit>/` when complete; a download cut short keeps what it received, and
//! the next run asks only for the rest (`Range`). `HF_TOKEN` goes only to the hub's own
//! hosts (`huggingface.co` and its subdomains, or the `HF_ENDPOINT` host), and is dropped
//! when a redirect leaves them (the hub serves large files from a CDN).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use aiperf_core::{HttpMethod, HttpRequest, Transport};
use serde::Deserialize;

use super::cache::{self, DEFAULT_CONFIG, PARQUET_REVISION};
use super::{HubDataset, HubError, HubOptions};
use crate::resolve::{
    display_url, encode_path_segment, get_following_redirects, host_and_port, is_commit_sha,
    split_url, DEFAULT_HF_ENDPOINT,
};

/// The dataset server that lists the hub's Parquet conversions.
const DATASET_SERVER: &str = "https://datasets-server.huggingface.co";

/// The local files of `dataset`'s split: from the hub cache when it holds them, else
/// downloaded into it (unless `options.offline`, which never touches the network).
///
/// Blocking file I/O happens inside (the cache is read and written with `std::fs`): call
/// it before the benchmark starts.
pub async fn resolve(
    dataset: &HubDataset,
    options: &HubOptions,
    transport: &dyn Transport,
) -> Result<Vec<PathBuf>, HubError> {
    let root = options
        .cache_dir
        .as_deref()
        .ok_or_else(|| HubError::NoCacheDir {
            id: dataset.id.clone(),
        })?;
    if let Some(files) = cache::find_cached(root, dataset) {
        tracing::debug!(id = %dataset.id, files = files.len(), "dataset found in the Hugging Face cache");
        return Ok(files);
    }
    if options.offline {
        return Err(HubError::Offline {
            id: dataset.id.clone(),
            what: describe(dataset),
            folder: cache::manual_folder(root, dataset),
        });
    }
    let download = Download {
        dataset,
        options,
        transport,
        repo_dir: cache::dataset_cache_dir(root, &dataset.id),
    };
    if dataset.revision.is_none() {
        match download.listed_parquet_files().await? {
            Some(remote) => return download.fetch(PARQUET_REVISION, None, remote).await,
            None => {
                tracing::info!(id = %dataset.id, "no parquet listing; downloading the repository's own files");
            }
        }
    }
    let (commit, remote) = download.repository_files().await?;
    download.fetch(dataset.revision(), commit, remote).await
}

/// `config/split`, for messages.
fn describe(dataset: &HubDataset) -> String {
    format!(
        "{}/{}",
        dataset.config.as_deref().unwrap_or(DEFAULT_CONFIG),
        dataset.split
    )
}

/// A file to download.
struct Remote {
    url: String,
    /// Its path in the snapshot.
    path: String,
    /// Its size, when the listing says.
    size: Option<u64>,
}

#[derive(Deserialize)]
struct ParquetListing {
    parquet_files: Vec<ParquetEntry>,
}

#[derive(Deserialize)]
struct ParquetEntry {
    config: String,
    split: String,
    url: String,
    filename: String,
    #[serde(default)]
    size: Option<u64>,
}

#[derive(Deserialize)]
struct RepositoryInfo {
    #[serde(default)]
    sha: Option<String>,
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
}

struct Download<'a> {
    dataset: &'a HubDataset,
    options: &'a HubOptions,
    transport: &'a dyn Transport,
    repo_dir: PathBuf,
}

impl Download<'_> {
    fn error(&self, url: &str, reason: impl Into<String>) -> HubError {
        HubError::Download {
            id: self.dataset.id.clone(),
            url: display_url(url).to_string(),
            reason: reason.into(),
        }
    }

    fn not_found(&self, reason: String) -> HubError {
        HubError::NotFound {
            id: self.dataset.id.clone(),
            reason,
        }
    }

    /// A GET of `url`, carrying `HF_TOKEN` only when `url` is on the hub's own hosts.
    fn request(&self, url: &str, range_from: u64) -> HttpRequest {
        let mut headers = vec![("User-Agent".to_string(), "aiperf-rs".to_string())];
        if let Some(token) = &self.options.token {
            if is_hub_host(url, &self.options.endpoint) {
                headers.push(("Authorization".to_string(), format!("Bearer {token}")));
            }
        }
        if range_from > 0 {
            headers.push(("Range".to_string(), format!("bytes={range_from}-")));
        }
        HttpRequest {
            method: HttpMethod::Get,
            url: url.to_string(),
            headers,
            body: bytes::Bytes::new(),
            timeout: Some(self.options.timeout),
        }
    }

    /// A small JSON answer, or `None` when the server does not answer it with 200.
    async fn get_json<T: for<'de> Deserialize<'de>>(
        &self,
        url: &str,
    ) -> Result<Option<T>, HubError> {
        let fetched = get_following_redirects(self.request(url, 0), self.transport)
            .await
            .map_err(|reason| self.error(url, reason))?;
        let exchange = fetched.exchange;
        if let Some(error) = &exchange.error {
            return Err(self.error(url, error.to_string()));
        }
        match exchange.status {
            Some(200) => serde_json::from_slice(exchange.body())
                .map(Some)
                .map_err(|e| self.error(url, format!("the answer is not the expected JSON: {e}"))),
            Some(401 | 403) => Err(self.error(url, access_hint(self.options))),
            status => {
                tracing::debug!(url = display_url(url), ?status, "no usable answer");
                Ok(None)
            }
        }
    }

    /// The parquet listing's files of the config and split, or `None` when the server
    /// has no listing of this dataset.
    async fn listed_parquet_files(&self) -> Result<Option<Vec<Remote>>, HubError> {
        let base = if self.options.endpoint == DEFAULT_HF_ENDPOINT {
            DATASET_SERVER
        } else {
            self.options.endpoint.as_str()
        };
        let url = format!("{base}/parquet?dataset={}", self.dataset.id);
        let Some(listing) = self.get_json::<ParquetListing>(&url).await? else {
            return Ok(None);
        };
        let mut configs: Vec<&str> = listing
            .parquet_files
            .iter()
            .map(|f| f.config.as_str())
            .collect();
        configs.sort_unstable();
        configs.dedup();
        let config = match self.dataset.config.as_deref() {
            Some(config) => config,
            None if configs.contains(&DEFAULT_CONFIG) => DEFAULT_CONFIG,
            None if configs.len() == 1 => configs[0],
            None => {
                return Err(self.not_found(format!(
                    "it has several configs ({}); choose one (--hf-subset)",
                    configs.join(", ")
                )))
            }
        };
        let split = self.dataset.split.as_str();
        let mut files: Vec<Remote> = listing
            .parquet_files
            .iter()
            .filter(|f| f.config == config && f.split == split)
            .filter(|f| is_plain_file_name(&f.filename))
            .map(|f| Remote {
                url: f.url.clone(),
                path: format!("{config}/{split}/{}", f.filename),
                size: f.size,
            })
            .collect();
        if files.is_empty() {
            let mut splits: Vec<String> = listing
                .parquet_files
                .iter()
                .filter(|f| f.config == config)
                .map(|f| f.split.clone())
                .collect();
            splits.sort();
            splits.dedup();
            return Err(self.not_found(format!(
                "no split {split} in config {config} (the hub lists {})",
                if splits.is_empty() {
                    format!("the configs {}", configs.join(", "))
                } else {
                    format!("the splits {}", splits.join(", "))
                }
            )));
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Some(files))
    }

    /// The commit and the split's files of the repository at the revision.
    async fn repository_files(&self) -> Result<(Option<String>, Vec<Remote>), HubError> {
        let endpoint = &self.options.endpoint;
        let id = &self.dataset.id;
        let revision = self.dataset.revision();
        let url = format!(
            "{endpoint}/api/datasets/{id}/revision/{}",
            encode_path_segment(revision)
        );
        let Some(info) = self.get_json::<RepositoryInfo>(&url).await? else {
            return Err(self.not_found(format!(
                "{endpoint} has no dataset {id} at revision {revision}"
            )));
        };
        let commit = info
            .sha
            .filter(|sha| is_commit_sha(sha))
            .map(|sha| sha.to_ascii_lowercase());
        let names: Vec<String> = info
            .siblings
            .into_iter()
            .map(|s| s.rfilename)
            .filter(|name| name.split('/').all(is_plain_file_name))
            .collect();
        let chosen = cache::select_split_files(&names, self.dataset);
        if chosen.is_empty() {
            return Err(self.not_found(format!(
                "no data files for {} at revision {revision} (looked for `<config>/<split>/*`, \
                 and files named after the split in `<config>/`, `data/` and the top folder)",
                describe(self.dataset)
            )));
        }
        let at = commit
            .clone()
            .unwrap_or_else(|| encode_path_segment(revision));
        let remote = chosen
            .into_iter()
            .map(|path| Remote {
                url: format!("{endpoint}/datasets/{id}/resolve/{at}/{path}"),
                path,
                size: None,
            })
            .collect();
        Ok((commit, remote))
    }

    /// Downloads every file, then moves them into `snapshots/<commit>/` and points
    /// `refs/<revision>` at it. The commit is the given one, else the one the hub names
    /// in `x-repo-commit`, else the revision itself (`/` written as `--`).
    async fn fetch(
        &self,
        revision: &str,
        mut commit: Option<String>,
        remote: Vec<Remote>,
    ) -> Result<Vec<PathBuf>, HubError> {
        let mut partials = Vec::with_capacity(remote.len());
        for file in &remote {
            let partial = self.repo_dir.join("blobs").join(format!(
                "{}--{}.incomplete",
                revision.replace('/', "--"),
                file.path.replace('/', "--")
            ));
            let header_commit = self.fetch_one(file, &partial).await?;
            commit = commit.or(header_commit);
            partials.push(partial);
        }
        let commit = commit.unwrap_or_else(|| revision.replace('/', "--"));
        let snapshot = self.repo_dir.join("snapshots").join(&commit);
        let mut files = Vec::with_capacity(remote.len());
        for (file, partial) in remote.iter().zip(partials) {
            let dest = snapshot.join(&file.path);
            create_parent(&dest)?;
            std::fs::rename(&partial, &dest).map_err(|source| HubError::Io {
                path: dest.clone(),
                source,
            })?;
            files.push(dest);
        }
        if commit != revision {
            let reference = self.repo_dir.join("refs").join(revision);
            create_parent(&reference)?;
            std::fs::write(&reference, &commit).map_err(|source| HubError::Io {
                path: reference,
                source,
            })?;
        }
        tracing::info!(id = %self.dataset.id, snapshot = %snapshot.display(), files = files.len(), "stored the dataset in the Hugging Face cache");
        Ok(files)
    }

    /// Downloads one file into `partial`, resuming what an earlier run left there.
    /// Returns the commit the hub named in `x-repo-commit`, if any.
    async fn fetch_one(&self, file: &Remote, partial: &Path) -> Result<Option<String>, HubError> {
        let have = std::fs::metadata(partial).map_or(0, |m| m.len());
        if have > 0 && Some(have) == file.size {
            return Ok(None);
        }
        tracing::info!(id = %self.dataset.id, url = display_url(&file.url), resume_from = have, "downloading");
        let fetched = get_following_redirects(self.request(&file.url, have), self.transport)
            .await
            .map_err(|reason| self.error(&file.url, reason))?;
        let exchange = &fetched.exchange;
        let append = match exchange.status {
            Some(206) if have > 0 => true,
            Some(200) => false,
            // The partial file already holds everything the server has.
            Some(416) if have > 0 && exchange.error.is_none() => return Ok(fetched.repo_commit),
            Some(401 | 403) => return Err(self.error(&file.url, access_hint(self.options))),
            Some(status) => return Err(self.error(&file.url, format!("HTTP {status}"))),
            None => {
                let reason = exchange
                    .error
                    .as_ref()
                    .map_or_else(|| "no response".to_string(), ToString::to_string);
                return Err(self.error(&file.url, reason));
            }
        };
        create_parent(partial)?;
        let io_error = |source| HubError::Io {
            path: partial.to_path_buf(),
            source,
        };
        let mut out = if append {
            OpenOptions::new().append(true).open(partial)
        } else {
            File::create(partial)
        }
        .map_err(io_error)?;
        out.write_all(exchange.body()).map_err(io_error)?;
        out.sync_all().map_err(io_error)?;
        let now = std::fs::metadata(partial).map_err(io_error)?.len();
        if let Some(error) = &exchange.error {
            return Err(self.error(
                &file.url,
                format!(
                    "the download stopped after {now} bytes ({error}); run again to resume \
                     from there"
                ),
            ));
        }
        if let Some(size) = file.size.filter(|size| *size != now) {
            return Err(self.error(
                &file.url,
                format!("received {now} bytes of {size}; run again to resume from there"),
            ));
        }
        Ok(fetched.repo_commit)
    }
}

fn create_parent(path: &Path) -> Result<(), HubError> {
    match path.parent() {
        Some(parent) => std::fs::create_dir_all(parent).map_err(|source| HubError::Io {
            path: parent.to_path_buf(),
            source,
        }),
        None => Ok(()),
    }
}

fn access_hint(options: &HubOptions) -> String {
    if options.token.is_some() {
        "the dataset is gated, private or missing, and HF_TOKEN does not grant access to it"
            .to_string()
    } else {
        "the dataset is gated, private or missing; set HF_TOKEN to a token that can read it"
            .to_string()
    }
}

/// One path segment that stays inside its folder.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

/// True for the hosts that may see `HF_TOKEN`: the `HF_ENDPOINT` host and port, and,
/// with the default endpoint, `huggingface.co` and its subdomains over HTTPS.
fn is_hub_host(url: &str, endpoint: &str) -> bool {
    let Some((scheme, authority, _)) = split_url(url) else {
        return false;
    };
    let (host, port) = host_and_port(&scheme, authority);
    let same_as_endpoint = split_url(endpoint).is_some_and(|(e_scheme, e_authority, _)| {
        e_scheme == scheme && host_and_port(&e_scheme, e_authority) == (host.clone(), port)
    });
    same_as_endpoint
        || (endpoint == DEFAULT_HF_ENDPOINT
            && scheme == "https"
            && (host == "huggingface.co" || host.ends_with(".huggingface.co")))
}

#[cfg(test)]
mod tests {
    use super::is_hub_host;

    #[test]
    fn the_token_goes_to_the_hub_hosts_only() {
        let hub = "https://huggingface.co";
        assert!(is_hub_host("https://huggingface.co/api/x", hub));
        assert!(is_hub_host(
            "https://datasets-server.huggingface.co/parquet",
            hub
        ));
        assert!(!is_hub_host("http://huggingface.co/api/x", hub));
        assert!(!is_hub_host("https://cdn-lfs.hf.co/x", hub));
        assert!(!is_hub_host("https://huggingface.co.evil.com/x", hub));
        let mirror = "http://127.0.0.1:9000";
        assert!(is_hub_host(
            "http://127.0.0.1:9000/parquet?dataset=a/b",
            mirror
        ));
        assert!(!is_hub_host("http://127.0.0.1:9001/x", mirror));
        assert!(!is_hub_host("https://huggingface.co/api/x", mirror));
    }
}
