//! From `--tokenizer` (or the model name) to a loaded [`Tokenizer`].
//!
//! 1. [`choose_tokenizer`] turns the flag (or, when it is unset, the primary model name)
//!    into a [`TokenizerSpec`]: an embedded tiktoken encoding, a local `tokenizer.json`,
//!    or a Hugging Face repository. Placeholder model names (`mock`, `my-model`, …) get the
//!    builtin tokenizer and the result says so, so the caller can warn.
//! 2. [`load_tokenizer`] loads it. Hugging Face repositories are looked up in the local
//!    Hugging Face cache (the same layout `huggingface_hub` writes); when missing, and
//!    `HF_HUB_OFFLINE` is not set, `tokenizer.json` is downloaded through the caller's
//!    [`Transport`] and stored in the cache for next time. The download follows the
//!    hub's redirects (large files are served from a CDN), at most
//!    [`MAX_REDIRECTS`] of them, and never sends `HF_TOKEN` to another host. A build
//!    without the `hf-tokenizers` feature loads only the embedded encodings and answers
//!    anything else with [`TokenizerError::HuggingFaceDisabled`].
//!
//! Environment lookups go through [`HubEnv`], so tests (and embedders) can supply their
//! own values instead of the process environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use aiperf_core::{HttpMethod, HttpRequest, RawExchange, Transport};

use crate::error::TokenizerError;
use crate::tokenizer::{TiktokenEncoding, Tokenizer};

/// The revision used when none is given.
pub const DEFAULT_REVISION: &str = "main";

/// The Hugging Face endpoint used when `HF_ENDPOINT` is unset.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// The file fetched from a Hugging Face repository.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// The most redirects a download follows (the hub sends one, to its CDN).
pub const MAX_REDIRECTS: usize = 5;

/// What a tokenizer name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenizerSpec {
    /// An embedded tiktoken encoding (`builtin` is `o200k_base`).
    Tiktoken(TiktokenEncoding),
    /// A local `tokenizer.json` file.
    File(PathBuf),
    /// A Hugging Face repository, looked up in the cache or downloaded.
    Hub {
        /// Repository id, `org/name` (or a legacy single-segment name).
        repo: String,
        /// Branch, tag or commit sha.
        revision: String,
    },
}

impl TokenizerSpec {
    /// The builtin tokenizer (`o200k_base`).
    pub fn builtin() -> Self {
        TokenizerSpec::Tiktoken(TiktokenEncoding::O200kBase)
    }

    /// Classifies a tokenizer name: `builtin` or a tiktoken encoding name; an existing
    /// local path (a `tokenizer.json` or a folder holding one); otherwise a Hugging Face
    /// id `org/name` at `revision` (default `main`). A local path wins over a Hugging
    /// Face id with the same spelling.
    pub fn parse(name: &str, revision: Option<&str>) -> Result<Self, TokenizerError> {
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(TokenizerError::InvalidName {
                name: name.to_string(),
            });
        }
        if let Some(encoding) = TiktokenEncoding::from_name(trimmed) {
            return Ok(TokenizerSpec::Tiktoken(encoding));
        }
        let path = Path::new(trimmed);
        if path.is_file() {
            return Ok(TokenizerSpec::File(path.to_path_buf()));
        }
        if path.is_dir() {
            let file = path.join(TOKENIZER_FILE);
            if file.is_file() {
                return Ok(TokenizerSpec::File(file));
            }
            return Err(TokenizerError::NoTokenizerJsonInDir {
                dir: path.to_path_buf(),
            });
        }
        if looks_like_path(trimmed) {
            return Err(TokenizerError::PathNotFound {
                path: path.to_path_buf(),
            });
        }
        if is_hub_repo_id(trimmed) {
            let revision = revision
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or(DEFAULT_REVISION);
            check_revision(revision)?;
            return Ok(TokenizerSpec::Hub {
                repo: trimmed.to_string(),
                revision: revision.to_string(),
            });
        }
        Err(TokenizerError::InvalidName {
            name: name.to_string(),
        })
    }
}

/// The outcome of [`choose_tokenizer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenizerChoice {
    /// What to load.
    pub spec: TokenizerSpec,
    /// The text the choice was made from: the `--tokenizer` value, or the model name.
    pub requested: String,
    /// True when `--tokenizer` was unset and the model name looked like a placeholder,
    /// so the builtin tokenizer was substituted. The caller should warn that token
    /// counts are approximate.
    pub placeholder_substituted: bool,
}

/// Decides which tokenizer to use: `tokenizer` (the `--tokenizer` flag) when set, else
/// the primary `model` name, except that a placeholder model name (see
/// [`is_placeholder_model_name`]) resolves to the builtin tokenizer.
///
/// ```
/// use aiperf_datasets::{choose_tokenizer, TokenizerSpec};
///
/// let choice = choose_tokenizer(None, "mock-llm", None).unwrap();
/// assert_eq!(choice.spec, TokenizerSpec::builtin());
/// assert!(choice.placeholder_substituted);
///
/// let choice = choose_tokenizer(None, "Qwen/Qwen3-0.6B", None).unwrap();
/// assert_eq!(
///     choice.spec,
///     TokenizerSpec::Hub { repo: "Qwen/Qwen3-0.6B".into(), revision: "main".into() }
/// );
/// ```
pub fn choose_tokenizer(
    tokenizer: Option<&str>,
    model: &str,
    revision: Option<&str>,
) -> Result<TokenizerChoice, TokenizerError> {
    if let Some(name) = tokenizer.filter(|t| !t.trim().is_empty()) {
        return Ok(TokenizerChoice {
            spec: TokenizerSpec::parse(name, revision)?,
            requested: name.to_string(),
            placeholder_substituted: false,
        });
    }
    if is_placeholder_model_name(model) {
        return Ok(TokenizerChoice {
            spec: TokenizerSpec::builtin(),
            requested: model.to_string(),
            placeholder_substituted: true,
        });
    }
    Ok(TokenizerChoice {
        spec: TokenizerSpec::parse(model, revision)?,
        requested: model.to_string(),
        placeholder_substituted: false,
    })
}

/// True for model names that are obviously not real models (`mock`, `test-model`,
/// `your-model`, …): exactly one of `test, mock, fake, dummy, example, sample,
/// placeholder`, or containing `mock-`, `-mock`, `fake-`, `-fake`, `test-model`,
/// `your-model`, `my-model`, `model-name` or `model-id` (case-insensitive). Names with
/// `/` or `\`, or starting with `.` or `~`, are never placeholders: they are paths or
/// Hugging Face ids.
pub fn is_placeholder_model_name(name: &str) -> bool {
    const EXACT: [&str; 7] = [
        "test",
        "mock",
        "fake",
        "dummy",
        "example",
        "sample",
        "placeholder",
    ];
    const CONTAINS: [&str; 9] = [
        "mock-",
        "-mock",
        "fake-",
        "-fake",
        "test-model",
        "your-model",
        "my-model",
        "model-name",
        "model-id",
    ];
    let name = name.trim();
    if name.contains('/') || name.contains('\\') || name.starts_with('.') || name.starts_with('~') {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    EXACT.contains(&lower.as_str()) || CONTAINS.iter().any(|p| lower.contains(p))
}

fn looks_like_path(name: &str) -> bool {
    name.starts_with('/')
        || name.starts_with('.')
        || name.starts_with('~')
        || name.contains('\\')
        || Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || name.matches('/').count() > 1
        || (name.len() > 1 && name.as_bytes()[1] == b':')
}

fn is_hub_repo_id(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 2 {
        return false;
    }
    parts.iter().all(|part| {
        !part.is_empty()
            && part.len() <= 96
            && !part.starts_with(['-', '.'])
            && !part.ends_with(['-', '.'])
            && !part.contains("--")
            && !part.contains("..")
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    })
}

/// The Hugging Face settings the resolver uses, read from the environment once.
#[derive(Clone, PartialEq, Eq)]
pub struct HubEnv {
    /// The hub cache root (`HF_HUB_CACHE` or the legacy `HUGGINGFACE_HUB_CACHE`, else
    /// `$HF_HOME/hub`, else
    /// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`); `None` when
    /// none can be determined.
    pub cache_dir: Option<PathBuf>,
    /// `HF_HUB_OFFLINE` is `1`, `true`, `yes` or `on`: never download.
    pub offline: bool,
    /// Base URL of the hub (`HF_ENDPOINT`, default `https://huggingface.co`), without a
    /// trailing slash.
    pub endpoint: String,
    /// Bearer token (`HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`). Never logged.
    pub token: Option<String>,
    /// Bound on each download request.
    pub timeout: Duration,
}

impl std::fmt::Debug for HubEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubEnv")
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HubEnv {
    /// The download timeout used unless changed.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// Reads the process environment.
    pub fn from_process_env() -> Self {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    /// Reads settings through `lookup` (a variable name to its value), so callers and
    /// tests control the environment.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use aiperf_datasets::HubEnv;
    ///
    /// let vars = HashMap::from([("HF_HOME", "/data/hf"), ("HF_HUB_OFFLINE", "1")]);
    /// let env = HubEnv::from_lookup(|k| vars.get(k).map(|v| v.to_string()));
    /// assert_eq!(env.cache_dir.unwrap(), std::path::Path::new("/data/hf/hub"));
    /// assert!(env.offline);
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        let cache_dir = get("HF_HUB_CACHE")
            .or_else(|| get("HUGGINGFACE_HUB_CACHE"))
            .map(PathBuf::from)
            .or_else(|| get("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .or_else(|| {
                get("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("huggingface").join("hub"))
            })
            .or_else(|| {
                get("HOME").or_else(|| get("USERPROFILE")).map(|home| {
                    PathBuf::from(home)
                        .join(".cache")
                        .join("huggingface")
                        .join("hub")
                })
            });
        let offline = get("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        let endpoint = get("HF_ENDPOINT").map_or_else(
            || DEFAULT_HF_ENDPOINT.to_string(),
            |e| e.trim().trim_end_matches('/').to_string(),
        );
        let token = get("HF_TOKEN").or_else(|| get("HUGGING_FACE_HUB_TOKEN"));
        Self {
            cache_dir,
            offline,
            endpoint,
            token,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// The cache folder of `repo` under `cache_root`: `models--org--name`.
pub fn repo_cache_dir(cache_root: &Path, repo: &str) -> PathBuf {
    cache_root.join(format!("models--{}", repo.replace('/', "--")))
}

/// A revision becomes a path below the cache (`refs/<revision>`): keep it inside.
fn check_revision(revision: &str) -> Result<(), TokenizerError> {
    let bad = revision.is_empty()
        || revision.starts_with('/')
        || revision.contains('\\')
        || revision
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        Err(TokenizerError::InvalidRevision {
            revision: revision.to_string(),
        })
    } else {
        Ok(())
    }
}

pub(crate) fn is_commit_sha(revision: &str) -> bool {
    revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit())
}

/// The places a cached `tokenizer.json` of `repo` at `revision` may be, in lookup
/// order, and the first that exists.
fn cache_candidates(cache_root: &Path, repo: &str, revision: &str) -> Vec<PathBuf> {
    let repo_dir = repo_cache_dir(cache_root, repo);
    let mut candidates = Vec::with_capacity(2);
    if let Ok(commit) = std::fs::read_to_string(repo_dir.join("refs").join(revision)) {
        let commit = commit.trim();
        if !commit.is_empty() && !commit.contains(['/', '\\']) && commit != ".." {
            candidates.push(repo_dir.join("snapshots").join(commit).join(TOKENIZER_FILE));
        }
    }
    if !revision.contains(['/', '\\']) {
        candidates.push(
            repo_dir
                .join("snapshots")
                .join(revision)
                .join(TOKENIZER_FILE),
        );
    }
    candidates
}

/// Finds the cached `tokenizer.json` of `repo` at `revision` in a Hugging Face cache:
/// `refs/<revision>` names a commit whose `snapshots/<commit>/tokenizer.json` is the
/// file; a revision that is itself a snapshot folder (a commit sha) is accepted too.
pub fn find_cached_tokenizer(cache_root: &Path, repo: &str, revision: &str) -> Option<PathBuf> {
    cache_candidates(cache_root, repo, revision)
        .into_iter()
        .find(|p| p.is_file())
}

fn describe_lookup(cache_root: &Path, repo: &str, revision: &str) -> String {
    let repo_dir = repo_cache_dir(cache_root, repo);
    format!(
        "{} (via {})",
        repo_dir
            .join("snapshots")
            .join("<commit>")
            .join(TOKENIZER_FILE)
            .display(),
        repo_dir.join("refs").join(revision).display()
    )
}

/// Loads what `spec` names without any network access: embedded encodings, local
/// files, and Hugging Face repositories already in the cache. A repository missing
/// from the cache is an error that says where it was looked for. Without the
/// `hf-tokenizers` feature a local file or a repository is
/// [`TokenizerError::HuggingFaceDisabled`], before any cache lookup.
pub fn load_tokenizer_offline(
    spec: &TokenizerSpec,
    hub: &HubEnv,
) -> Result<Tokenizer, TokenizerError> {
    match spec {
        TokenizerSpec::Tiktoken(encoding) => Ok(Tokenizer::tiktoken(*encoding)),
        // Refused here, not by the Tokenizer constructors, so that no cache is searched and
        // nothing is downloaded for a tokenizer this build cannot load.
        TokenizerSpec::File(path) if !cfg!(feature = "hf-tokenizers") => {
            Err(TokenizerError::HuggingFaceDisabled {
                tokenizer: path.display().to_string(),
            })
        }
        TokenizerSpec::Hub { repo, .. } if !cfg!(feature = "hf-tokenizers") => {
            Err(TokenizerError::HuggingFaceDisabled {
                tokenizer: repo.clone(),
            })
        }
        TokenizerSpec::File(path) => Tokenizer::from_file(path),
        TokenizerSpec::Hub { repo, revision } => {
            check_revision(revision)?;
            let root = hub
                .cache_dir
                .as_deref()
                .ok_or_else(|| TokenizerError::NoCacheDir { repo: repo.clone() })?;
            if let Some(path) = find_cached_tokenizer(root, repo, revision) {
                tracing::debug!(%repo, %revision, path = %path.display(), "tokenizer found in Hugging Face cache");
                return Tokenizer::from_file_named(&path, repo.clone());
            }
            let looked_for = describe_lookup(root, repo, revision);
            if hub.offline {
                Err(TokenizerError::Offline {
                    repo: repo.clone(),
                    revision: revision.clone(),
                    looked_for,
                })
            } else {
                Err(TokenizerError::NotCachedNoTransport {
                    repo: repo.clone(),
                    revision: revision.clone(),
                    looked_for,
                })
            }
        }
    }
}

/// Loads what `spec` names, downloading a Hugging Face `tokenizer.json` through
/// `transport` when it is not cached (and `HF_HUB_OFFLINE` is not set). The download
/// follows up to [`MAX_REDIRECTS`] redirects (`HF_TOKEN` is only sent to the hub's own
/// host) and is stored in the cache layout under the commit the hub names in
/// `x-repo-commit` (else the one its API reports, else the revision), so the next run
/// finds it offline. With `transport` = `None` this behaves like
/// [`load_tokenizer_offline`], and so does a build without the `hf-tokenizers` feature,
/// which never downloads.
///
/// Blocking file I/O happens inside (reading and parsing `tokenizer.json`); call it
/// before the benchmark starts.
pub async fn load_tokenizer(
    spec: &TokenizerSpec,
    hub: &HubEnv,
    transport: Option<&dyn Transport>,
) -> Result<Tokenizer, TokenizerError> {
    let offline_result = load_tokenizer_offline(spec, hub);
    let (Err(TokenizerError::NotCachedNoTransport { .. }), TokenizerSpec::Hub { repo, revision }) =
        (&offline_result, spec)
    else {
        return offline_result;
    };
    let Some(transport) = transport else {
        return offline_result;
    };
    let root = hub
        .cache_dir
        .as_deref()
        .ok_or_else(|| TokenizerError::NoCacheDir { repo: repo.clone() })?;
    download_tokenizer(root, repo, revision, hub, transport).await
}

/// Percent-encodes a revision for a URL path segment (`refs/pr/1` → `refs%2Fpr%2F1`).
pub(crate) fn encode_path_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn hub_request(url: String, hub: &HubEnv, timeout: Duration) -> HttpRequest {
    let mut headers = vec![("User-Agent".to_string(), "aiperf-rs".to_string())];
    if let Some(token) = &hub.token {
        headers.push(("Authorization".to_string(), format!("Bearer {token}")));
    }
    HttpRequest {
        method: HttpMethod::Get,
        url,
        headers,
        body: bytes::Bytes::new(),
        timeout: Some(timeout),
    }
}

fn status_reason(status: u16, body: &[u8], hub: &HubEnv, revision: &str) -> String {
    let snippet: String = String::from_utf8_lossy(body)
        .chars()
        .take(200)
        .collect::<String>()
        .trim()
        .to_string();
    let hint = match status {
        401 | 403 if hub.token.is_some() => {
            "the repository is gated, private or missing, and HF_TOKEN does not grant access to it"
                .to_string()
        }
        401 | 403 => {
            "the repository is gated, private or missing; set HF_TOKEN to a token that can read it"
                .to_string()
        }
        404 => format!(
            "no tokenizer.json at revision {revision}; check the model id and \
             --tokenizer-revision (repositories that ship only tokenizer.model, or a tokenizer \
             defined by Python code that --tokenizer-trust-remote-code would run, are not \
             supported)"
        ),
        300..=399 => "the hub answered with a redirect that cannot be followed".to_string(),
        _ => "unexpected answer from the hub".to_string(),
    };
    if snippet.is_empty() {
        format!("HTTP {status}: {hint}")
    } else {
        format!("HTTP {status}: {hint} (server said: {snippet})")
    }
}

async fn download_tokenizer(
    cache_root: &Path,
    repo: &str,
    revision: &str,
    hub: &HubEnv,
    transport: &dyn Transport,
) -> Result<Tokenizer, TokenizerError> {
    let url = format!(
        "{}/{}/resolve/{}/{}",
        hub.endpoint,
        repo,
        encode_path_segment(revision),
        TOKENIZER_FILE
    );
    let download_error = |reason: String| TokenizerError::Download {
        repo: repo.to_string(),
        url: url.clone(),
        reason,
    };
    tracing::info!(%repo, %revision, %url, "downloading tokenizer.json");
    let fetched = get_following_redirects(hub_request(url.clone(), hub, hub.timeout), transport)
        .await
        .map_err(download_error)?;
    let exchange = &fetched.exchange;
    if let Some(error) = &exchange.error {
        return Err(download_error(format!(
            "{error}{}",
            fetched.redirect_note()
        )));
    }
    let body = exchange.body();
    match exchange.status {
        Some(200) => {}
        Some(status) => {
            return Err(download_error(format!(
                "{}{}",
                status_reason(status, body, hub, revision),
                fetched.redirect_note()
            )))
        }
        None => return Err(download_error("no response from the server".to_string())),
    }
    // Validate before storing anything: a proxy's HTML page must not poison the cache.
    let check = Tokenizer::from_json_bytes(body, repo)
        .map_err(|e| download_error(format!("the response is not a valid tokenizer.json ({e})")))?;
    drop(check);

    let commit = if is_commit_sha(revision) {
        revision.to_string()
    } else if let Some(commit) = fetched.repo_commit {
        commit
    } else {
        resolve_commit(repo, revision, hub, transport)
            .await
            .unwrap_or_else(|| revision.replace(['/', '\\'], "--"))
    };
    let repo_dir = repo_cache_dir(cache_root, repo);
    let file = repo_dir
        .join("snapshots")
        .join(&commit)
        .join(TOKENIZER_FILE);
    write_atomically(&file, body)?;
    if commit != revision {
        write_atomically(&repo_dir.join("refs").join(revision), commit.as_bytes())?;
    }
    tracing::info!(%repo, path = %file.display(), "stored tokenizer.json in the Hugging Face cache");
    Tokenizer::from_file_named(&file, repo)
}

/// Asks the hub API for the commit sha `revision` points at; `None` when the endpoint
/// does not answer (mirrors often lack the API): the snapshot is then named after the
/// revision.
async fn resolve_commit(
    repo: &str,
    revision: &str,
    hub: &HubEnv,
    transport: &dyn Transport,
) -> Option<String> {
    let url = format!(
        "{}/api/models/{}/revision/{}",
        hub.endpoint,
        repo,
        encode_path_segment(revision)
    );
    let request = hub_request(url, hub, hub.timeout.min(Duration::from_secs(10)));
    let exchange = match get_following_redirects(request, transport).await {
        Ok(fetched) => fetched.exchange,
        Err(reason) => {
            tracing::debug!(%repo, %revision, %reason, "could not resolve the revision's commit; naming the snapshot after the revision");
            return None;
        }
    };
    if exchange.error.is_some() || exchange.status != Some(200) {
        tracing::debug!(%repo, %revision, status = ?exchange.status, "could not resolve the revision's commit; naming the snapshot after the revision");
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(exchange.body()).ok()?;
    let sha = value.get("sha")?.as_str()?;
    is_commit_sha(sha).then(|| sha.to_ascii_lowercase())
}

/// The outcome of [`get_following_redirects`].
pub(crate) struct Fetched {
    /// The last exchange: not a redirect (or a failed one).
    pub(crate) exchange: RawExchange,
    /// The URLs requested, in order: the original first.
    visited: Vec<String>,
    /// The commit sha in the first response's `x-repo-commit` header, when valid.
    pub(crate) repo_commit: Option<String>,
}

impl Fetched {
    /// `""`, or where the redirects led, for error messages.
    pub(crate) fn redirect_note(&self) -> String {
        match self.visited.get(1..) {
            Some(rest) if !rest.is_empty() => {
                format!(" (after redirects to {})", describe_urls(rest))
            }
            _ => String::new(),
        }
    }
}

/// Sends `request`, following 301/302/303/307/308 redirects (at most [`MAX_REDIRECTS`]).
/// The `Authorization` header is dropped once a redirect leaves the original host (or
/// changes scheme or port, except an upgrade from `http` to `https`), so a token is never
/// sent to a CDN. `Err` is a reason for an error message: a redirect without a
/// `Location`, a loop, or too many hops. A transport failure or any other status comes
/// back in [`Fetched::exchange`].
pub(crate) async fn get_following_redirects(
    mut request: HttpRequest,
    transport: &dyn Transport,
) -> Result<Fetched, String> {
    let mut visited = vec![request.url.clone()];
    let mut repo_commit = None;
    loop {
        let exchange = transport.send(request.clone()).await;
        if visited.len() == 1 {
            repo_commit = exchange
                .header("x-repo-commit")
                .map(str::trim)
                .filter(|sha| is_commit_sha(sha))
                .map(str::to_ascii_lowercase);
        }
        let status = match exchange.status {
            Some(status @ (301 | 302 | 303 | 307 | 308)) if exchange.error.is_none() => status,
            _ => {
                return Ok(Fetched {
                    exchange,
                    visited,
                    repo_commit,
                })
            }
        };
        let Some(location) = exchange.header("location").filter(|l| !l.trim().is_empty()) else {
            return Err(format!(
                "HTTP {status} redirect without a Location header from {}",
                display_url(&request.url)
            ));
        };
        let next = resolve_location(&request.url, location);
        if visited.contains(&next) {
            visited.push(next);
            return Err(format!("redirect loop: {}", describe_urls(&visited)));
        }
        if visited.len() > MAX_REDIRECTS {
            visited.push(next);
            return Err(format!(
                "too many redirects (more than {MAX_REDIRECTS}): {}",
                describe_urls(&visited)
            ));
        }
        if !keeps_credentials(&request.url, &next) {
            request
                .headers
                .retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
        }
        tracing::debug!(
            status,
            from = display_url(&request.url),
            to = display_url(&next),
            "following redirect"
        );
        request.url.clone_from(&next);
        visited.push(next);
    }
}

/// A URL without its query (signed CDN URLs carry credentials there) or fragment.
pub(crate) fn display_url(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// `a → b → c`, without queries.
fn describe_urls(urls: &[String]) -> String {
    urls.iter()
        .map(|u| display_url(u))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Splits an absolute URL into its scheme (lowercase), authority and the rest (path,
/// query, fragment; may be empty). `None` when it has no `scheme://`.
pub(crate) fn split_url(url: &str) -> Option<(String, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some((scheme.to_ascii_lowercase(), &rest[..end], &rest[end..]))
}

/// The host (lowercase) and port (the scheme's default when absent) of an authority.
pub(crate) fn host_and_port(scheme: &str, authority: &str) -> (String, Option<u16>) {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, rest)) => (host, rest.strip_prefix(':')),
            None => (v6, None),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    let default = match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    let port = match port.filter(|p| !p.is_empty()) {
        Some(p) => p.parse().ok(),
        None => default,
    };
    (host.to_ascii_lowercase(), port)
}

/// True when a request redirected from `from` to `to` may keep its `Authorization`
/// header: same scheme, host and port, or an upgrade from `http` to `https` on the same
/// host with default ports.
fn keeps_credentials(from: &str, to: &str) -> bool {
    let (Some((from_scheme, from_authority, _)), Some((to_scheme, to_authority, _))) =
        (split_url(from), split_url(to))
    else {
        return false;
    };
    let (from_host, from_port) = host_and_port(&from_scheme, from_authority);
    let (to_host, to_port) = host_and_port(&to_scheme, to_authority);
    if from_host != to_host {
        return false;
    }
    (from_scheme == to_scheme && from_port == to_port)
        || (from_scheme == "http"
            && to_scheme == "https"
            && from_port == Some(80)
            && to_port == Some(443))
}

/// Resolves a `Location` against the URL that answered with it (RFC 3986, section 5.2):
/// absolute, scheme-relative (`//host/p`), absolute-path (`/p`), query-only (`?q`) and
/// relative-path (`p`, `../p`) references. The fragment is dropped.
fn resolve_location(base: &str, location: &str) -> String {
    let location = location.trim();
    let location = location.split('#').next().unwrap_or(location);
    if split_url(location).is_some() {
        return location.to_string();
    }
    let Some((scheme, authority, base_rest)) = split_url(base) else {
        return location.to_string();
    };
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let base_path_query = base_rest.split('#').next().unwrap_or(base_rest);
    let base_path = base_path_query.split('?').next().unwrap_or(base_path_query);
    if location.is_empty() {
        return format!("{scheme}://{authority}{base_path_query}");
    }
    if location.starts_with('?') {
        return format!("{scheme}://{authority}{base_path}{location}");
    }
    let (path, query) = match location.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (location, None),
    };
    let merged = if path.starts_with('/') {
        path.to_string()
    } else {
        let dir = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
        format!("{dir}{path}")
    };
    let mut url = format!("{scheme}://{authority}{}", remove_dot_segments(&merged));
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    url
}

/// Removes `.` and `..` segments from an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." | ".." => {
                if *segment == ".." {
                    out.pop();
                }
                // A trailing `.` or `..` leaves a folder: keep the final slash.
                if i == last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    format!("/{}", out.join("/"))
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename,
/// so a reader never sees a half-written file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), TokenizerError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let cache_error = |source| TokenizerError::CacheWrite {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(parent).map_err(cache_error)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = parent.join(format!(".{file_name}.{}.tmp", std::process::id()));
    std::fs::write(&temp, bytes).map_err(cache_error)?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        cache_error(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::Instant;

    use aiperf_core::transport::BoxFuture;
    use aiperf_core::{BodyChunks, Chunk, RawExchange, TransportError};

    /// A tiny word-level tokenizer.json, built by the test.
    fn tiny_tokenizer_json() -> String {
        let words = ["[UNK]", "hello", "world", "the", "tokenizer", "works"];
        let vocab: serde_json::Map<String, serde_json::Value> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
            .collect();
        serde_json::json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [],
            "normalizer": null,
            "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": null,
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        })
        .to_string()
    }

    #[cfg(feature = "hf-tokenizers")]
    /// The Qwen3 tokenizer when `AIPERF_TEST_TOKENIZER_DIR` is set, else the tiny one.
    fn test_tokenizer_bytes() -> Vec<u8> {
        if let Ok(dir) = std::env::var("AIPERF_TEST_TOKENIZER_DIR") {
            let path = Path::new(&dir).join("qwen3").join(TOKENIZER_FILE);
            if let Ok(bytes) = std::fs::read(&path) {
                return bytes;
            }
        }
        tiny_tokenizer_json().into_bytes()
    }

    fn env_with(vars: &[(&str, &str)]) -> HubEnv {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HubEnv::from_lookup(|k| map.get(k).cloned())
    }

    #[cfg(feature = "hf-tokenizers")]
    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    #[cfg(feature = "hf-tokenizers")]
    fn lay_out_cache(root: &Path, repo: &str, revision: &str, sha: &str) -> PathBuf {
        let repo_dir = repo_cache_dir(root, repo);
        std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
        std::fs::write(repo_dir.join("refs").join(revision), format!("{sha}\n")).unwrap();
        let snapshot = repo_dir.join("snapshots").join(sha);
        std::fs::create_dir_all(&snapshot).unwrap();
        let file = snapshot.join(TOKENIZER_FILE);
        std::fs::write(&file, test_tokenizer_bytes()).unwrap();
        file
    }

    #[test]
    fn placeholder_names() {
        for name in [
            "test",
            "MOCK",
            "fake",
            "dummy",
            "example",
            "sample",
            "placeholder",
            "mock-llm",
            "llm-mock",
            "fake-gpt",
            "gpt-fake",
            "my-test-model",
            "your-model",
            "my-model-7b",
            "model-name",
            "the-model-id",
        ] {
            assert!(is_placeholder_model_name(name), "{name}");
        }
        for name in [
            "gpt2",
            "testing",
            "mockingbird",
            "org/mock-llm",
            "./mock",
            "~mock",
            "a\\mock-x",
            "Qwen/Qwen3-0.6B",
            "llama-3-8b",
        ] {
            assert!(!is_placeholder_model_name(name), "{name}");
        }
    }

    #[test]
    fn choose_prefers_flag_then_placeholder_then_model() {
        let c = choose_tokenizer(Some("cl100k_base"), "mock", None).unwrap();
        assert_eq!(
            c.spec,
            TokenizerSpec::Tiktoken(TiktokenEncoding::Cl100kBase)
        );
        assert!(!c.placeholder_substituted);

        let c = choose_tokenizer(None, "test-model", None).unwrap();
        assert_eq!(c.spec, TokenizerSpec::builtin());
        assert!(c.placeholder_substituted);
        assert_eq!(c.requested, "test-model");

        let c = choose_tokenizer(None, "meta-llama/Llama-3.1-8B", Some("v1")).unwrap();
        assert_eq!(
            c.spec,
            TokenizerSpec::Hub {
                repo: "meta-llama/Llama-3.1-8B".into(),
                revision: "v1".into()
            }
        );
        let c = choose_tokenizer(Some("builtin"), "x", None).unwrap();
        assert_eq!(c.spec, TokenizerSpec::builtin());
    }

    #[test]
    fn parse_paths_and_names() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(TOKENIZER_FILE);
        std::fs::write(&file, tiny_tokenizer_json()).unwrap();
        let as_str = |p: &Path| p.to_str().unwrap().to_string();
        assert_eq!(
            TokenizerSpec::parse(&as_str(&file), None).unwrap(),
            TokenizerSpec::File(file.clone())
        );
        assert_eq!(
            TokenizerSpec::parse(&as_str(dir.path()), None).unwrap(),
            TokenizerSpec::File(file.clone())
        );
        let empty = tempfile::tempdir().unwrap();
        let err = TokenizerSpec::parse(&as_str(empty.path()), None).unwrap_err();
        assert!(matches!(err, TokenizerError::NoTokenizerJsonInDir { .. }));
        let err = TokenizerSpec::parse("/no/such/dir/tokenizer.json", None).unwrap_err();
        assert!(matches!(err, TokenizerError::PathNotFound { .. }), "{err}");
        for bad in ["../x", "a/../b", "/abs", "a\\b", "a//b"] {
            let err = TokenizerSpec::parse("org/name", Some(bad)).unwrap_err();
            assert!(
                matches!(err, TokenizerError::InvalidRevision { .. }),
                "{bad}"
            );
        }
        let err = TokenizerSpec::parse("./relative/missing", None).unwrap_err();
        assert!(matches!(err, TokenizerError::PathNotFound { .. }), "{err}");
        assert!(matches!(
            TokenizerSpec::parse("not a name!", None).unwrap_err(),
            TokenizerError::InvalidName { .. }
        ));
        assert_eq!(
            TokenizerSpec::parse("gpt2", None).unwrap(),
            TokenizerSpec::Hub {
                repo: "gpt2".into(),
                revision: "main".into()
            }
        );
    }

    #[test]
    fn hub_env_precedence() {
        let e = env_with(&[("HF_HUB_CACHE", "/a"), ("HF_HOME", "/b"), ("HOME", "/h")]);
        assert_eq!(e.cache_dir.unwrap(), Path::new("/a"));
        let e = env_with(&[("HF_HOME", "/b"), ("HOME", "/h")]);
        assert_eq!(e.cache_dir.unwrap(), Path::new("/b/hub"));
        let e = env_with(&[("HOME", "/h")]);
        assert_eq!(e.cache_dir.unwrap(), Path::new("/h/.cache/huggingface/hub"));
        assert!(!e.offline);
        assert_eq!(e.endpoint, DEFAULT_HF_ENDPOINT);
        assert!(e.token.is_none());
        for v in ["1", "true", "YES", "on"] {
            assert!(env_with(&[("HF_HUB_OFFLINE", v)]).offline, "{v}");
        }
        for v in ["0", "false", "no", ""] {
            assert!(!env_with(&[("HF_HUB_OFFLINE", v)]).offline, "{v}");
        }
        let e = env_with(&[
            ("HF_ENDPOINT", "http://mirror:8080/"),
            ("HF_TOKEN", "s3cret"),
        ]);
        assert_eq!(e.endpoint, "http://mirror:8080");
        assert_eq!(e.token.as_deref(), Some("s3cret"));
        assert!(!format!("{e:?}").contains("s3cret"));
        assert!(env_with(&[]).cache_dir.is_none());
    }

    #[cfg(feature = "hf-tokenizers")]
    #[test]
    fn finds_tokenizer_through_refs_and_by_sha() {
        let root = tempfile::tempdir().unwrap();
        let file = lay_out_cache(root.path(), "org/name", "main", SHA);
        assert_eq!(
            find_cached_tokenizer(root.path(), "org/name", "main"),
            Some(file.clone())
        );
        assert_eq!(
            find_cached_tokenizer(root.path(), "org/name", SHA),
            Some(file)
        );
        assert_eq!(find_cached_tokenizer(root.path(), "org/name", "v2"), None);
        assert_eq!(
            find_cached_tokenizer(root.path(), "org/other", "main"),
            None
        );

        let hub = env_with(&[("HF_HUB_CACHE", root.path().to_str().unwrap())]);
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        let tokenizer = load_tokenizer_offline(&spec, &hub).unwrap();
        assert_eq!(tokenizer.name(), "org/name");
        assert!(!tokenizer.encode("hello world").is_empty());
    }

    #[cfg(feature = "hf-tokenizers")]
    #[test]
    fn offline_miss_says_where_and_what_to_do() {
        let root = tempfile::tempdir().unwrap();
        let hub = env_with(&[
            ("HF_HUB_CACHE", root.path().to_str().unwrap()),
            ("HF_HUB_OFFLINE", "1"),
        ]);
        let spec = TokenizerSpec::parse("org/absent", Some("v1")).unwrap();
        let err = load_tokenizer_offline(&spec, &hub).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, TokenizerError::Offline { .. }));
        assert!(text.contains("org/absent"), "{text}");
        assert!(text.contains("models--org--absent"), "{text}");
        assert!(text.contains("refs/v1"), "{text}");
        assert!(
            text.contains("--tokenizer /path/to/tokenizer.json"),
            "{text}"
        );
        assert!(text.contains("HF_HUB_OFFLINE=0"), "{text}");
    }

    /// A fake hub: answers by URL (with the route's headers), records every request.
    #[derive(Default)]
    struct FakeHub {
        routes: HashMap<String, (u16, Vec<u8>)>,
        headers: HashMap<String, Vec<(String, String)>>,
        fail_with: Option<TransportError>,
        seen: Mutex<Vec<HttpRequest>>,
    }

    impl Transport for FakeHub {
        fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
            Box::pin(async move {
                let now = Instant::now();
                let answer = self.routes.get(&request.url).cloned();
                let headers = self.headers.get(&request.url).cloned().unwrap_or_default();
                self.seen.lock().unwrap().push(request);
                if let Some(error) = &self.fail_with {
                    return RawExchange {
                        started_at: now,
                        head_at: None,
                        status: None,
                        content_type: None,
                        headers: Vec::new(),
                        chunks: BodyChunks::new(),
                        ended_at: now,
                        error: Some(error.clone()),
                        trace: None,
                        retries: 0,
                    };
                }
                let (status, body) = answer.unwrap_or((404, b"Entry not found".to_vec()));
                RawExchange {
                    started_at: now,
                    head_at: Some(now),
                    status: Some(status),
                    content_type: Some("application/json".into()),
                    headers,
                    chunks: [Chunk {
                        at: now,
                        bytes: &body,
                    }]
                    .into_iter()
                    .collect(),
                    ended_at: now,
                    error: None,
                    trace: None,
                    retries: 0,
                }
            })
        }
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn downloads_stores_in_cache_layout_and_reuses() {
        let root = tempfile::tempdir().unwrap();
        let hub = env_with(&[
            ("HF_HUB_CACHE", root.path().to_str().unwrap()),
            ("HF_ENDPOINT", "http://hub.test/"),
            ("HF_TOKEN", "tok"),
        ]);
        let mut fake = FakeHub::default();
        fake.routes.insert(
            "http://hub.test/org/name/resolve/main/tokenizer.json".into(),
            (200, test_tokenizer_bytes()),
        );
        fake.routes.insert(
            "http://hub.test/api/models/org/name/revision/main".into(),
            (
                200,
                format!(r#"{{"id":"org/name","sha":"{SHA}"}}"#).into_bytes(),
            ),
        );
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        let tokenizer = load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        assert_eq!(tokenizer.name(), "org/name");
        assert!(!tokenizer.encode("hello world").is_empty());
        {
            let seen = fake.seen.lock().unwrap();
            assert_eq!(seen.len(), 2);
            assert_eq!(seen[0].method, HttpMethod::Get);
            assert_eq!(seen[0].timeout, Some(HubEnv::DEFAULT_TIMEOUT));
            assert!(seen[0]
                .headers
                .iter()
                .any(|(k, v)| k == "Authorization" && v == "Bearer tok"));
        }
        let repo_dir = repo_cache_dir(root.path(), "org/name");
        assert_eq!(
            std::fs::read_to_string(repo_dir.join("refs/main")).unwrap(),
            SHA
        );
        let stored = repo_dir.join("snapshots").join(SHA).join(TOKENIZER_FILE);
        assert_eq!(std::fs::read(&stored).unwrap(), test_tokenizer_bytes());
        // No temporary files left behind.
        let leftovers: Vec<_> = std::fs::read_dir(stored.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");

        // Second load: served from the cache, even offline, without the transport.
        let offline = HubEnv {
            offline: true,
            ..hub.clone()
        };
        load_tokenizer(&spec, &offline, None).await.unwrap();
        load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        assert_eq!(fake.seen.lock().unwrap().len(), 2);
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn download_without_commit_api_names_snapshot_after_revision() {
        let root = tempfile::tempdir().unwrap();
        let hub = env_with(&[("HF_HUB_CACHE", root.path().to_str().unwrap())]);
        let mut fake = FakeHub::default();
        fake.routes.insert(
            "https://huggingface.co/org/name/resolve/refs%2Fpr%2F3/tokenizer.json".into(),
            (200, tiny_tokenizer_json().into_bytes()),
        );
        let spec = TokenizerSpec::parse("org/name", Some("refs/pr/3")).unwrap();
        load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        assert!(fake.seen.lock().unwrap()[0]
            .headers
            .iter()
            .all(|(k, _)| k != "Authorization"));
        assert_eq!(
            find_cached_tokenizer(root.path(), "org/name", "refs/pr/3"),
            Some(
                repo_cache_dir(root.path(), "org/name")
                    .join("snapshots/refs--pr--3")
                    .join(TOKENIZER_FILE)
            )
        );
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn download_failures_are_explained() {
        let root = tempfile::tempdir().unwrap();
        let hub = env_with(&[("HF_HUB_CACHE", root.path().to_str().unwrap())]);
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        let url = "https://huggingface.co/org/name/resolve/main/tokenizer.json";

        let offline_machine = FakeHub {
            fail_with: Some(TransportError::Connect("dns error".into())),
            ..FakeHub::default()
        };
        let text = load_tokenizer(&spec, &hub, Some(&offline_machine))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("could not download tokenizer for org/name"),
            "{text}"
        );
        assert!(text.contains(url), "{text}");
        assert!(text.contains("dns error"), "{text}");
        assert!(text.contains("may be offline"), "{text}");
        assert!(text.contains("--tokenizer"), "{text}");

        let gated = FakeHub {
            routes: HashMap::from([(url.to_string(), (401, b"Unauthorized".to_vec()))]),
            ..FakeHub::default()
        };
        let text = load_tokenizer(&spec, &hub, Some(&gated))
            .await
            .unwrap_err()
            .to_string();
        assert!(text.contains("HTTP 401"), "{text}");
        assert!(text.contains("HF_TOKEN"), "{text}");

        let html = FakeHub {
            routes: HashMap::from([(url.to_string(), (200, b"<html>proxy</html>".to_vec()))]),
            ..FakeHub::default()
        };
        let text = load_tokenizer(&spec, &hub, Some(&html))
            .await
            .unwrap_err()
            .to_string();
        assert!(text.contains("not a valid tokenizer.json"), "{text}");
        // Nothing was stored.
        assert!(!repo_cache_dir(root.path(), "org/name").exists());

        // Offline flag: no request at all.
        let offline = HubEnv {
            offline: true,
            ..hub.clone()
        };
        let err = load_tokenizer(&spec, &offline, Some(&gated))
            .await
            .unwrap_err();
        assert!(matches!(err, TokenizerError::Offline { .. }));
        assert_eq!(gated.seen.lock().unwrap().len(), 1);
    }

    #[cfg(feature = "hf-tokenizers")]
    impl FakeHub {
        /// Answers `from` with `status` and a `Location: to`.
        fn redirect(&mut self, from: &str, status: u16, to: &str) {
            self.routes.insert(from.into(), (status, Vec::new()));
            self.headers
                .entry(from.into())
                .or_default()
                .push(("location".into(), to.into()));
        }

        fn seen_urls(&self) -> Vec<String> {
            self.seen
                .lock()
                .unwrap()
                .iter()
                .map(|r| r.url.clone())
                .collect()
        }

        fn sent_token(&self, i: usize) -> bool {
            self.seen.lock().unwrap()[i]
                .headers
                .iter()
                .any(|(k, v)| k == "Authorization" && v == "Bearer tok")
        }
    }

    #[cfg(feature = "hf-tokenizers")]
    fn hub_with_token(root: &Path) -> HubEnv {
        env_with(&[
            ("HF_HUB_CACHE", root.to_str().unwrap()),
            ("HF_ENDPOINT", "https://hub.test"),
            ("HF_TOKEN", "tok"),
        ])
    }

    #[cfg(feature = "hf-tokenizers")]
    const RESOLVE_URL: &str = "https://hub.test/org/name/resolve/main/tokenizer.json";

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn follows_a_redirect_to_a_cdn_without_the_token_and_uses_x_repo_commit() {
        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        let cdn = "https://cdn-lfs.test/repos/ab/cd/blob?Expires=1&Signature=zzz";
        let mut fake = FakeHub::default();
        fake.redirect(RESOLVE_URL, 302, cdn);
        fake.headers
            .get_mut(RESOLVE_URL)
            .unwrap()
            .push(("x-repo-commit".into(), SHA.to_ascii_uppercase()));
        fake.routes
            .insert(cdn.into(), (200, test_tokenizer_bytes()));
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        let tokenizer = load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        assert_eq!(tokenizer.name(), "org/name");

        // Two requests: no `/api/models/...` lookup, since the header named the commit.
        assert_eq!(fake.seen_urls(), [RESOLVE_URL, cdn]);
        assert!(fake.sent_token(0));
        assert!(!fake.sent_token(1));
        assert!(fake.seen.lock().unwrap()[1]
            .headers
            .iter()
            .any(|(k, v)| k == "User-Agent" && v == "aiperf-rs"));
        let repo_dir = repo_cache_dir(root.path(), "org/name");
        assert_eq!(
            std::fs::read_to_string(repo_dir.join("refs/main")).unwrap(),
            SHA
        );
        let stored = repo_dir.join("snapshots").join(SHA).join(TOKENIZER_FILE);
        assert_eq!(std::fs::read(&stored).unwrap(), test_tokenizer_bytes());
        assert_eq!(
            find_cached_tokenizer(root.path(), "org/name", "main"),
            Some(stored)
        );
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn x_repo_commit_on_a_direct_answer_names_the_snapshot() {
        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        let mut fake = FakeHub::default();
        fake.routes.insert(
            RESOLVE_URL.into(),
            (200, tiny_tokenizer_json().into_bytes()),
        );
        fake.headers.insert(
            RESOLVE_URL.into(),
            vec![("X-Repo-Commit".into(), SHA.into())],
        );
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        assert_eq!(fake.seen_urls(), [RESOLVE_URL]);
        assert!(repo_cache_dir(root.path(), "org/name")
            .join("snapshots")
            .join(SHA)
            .join(TOKENIZER_FILE)
            .is_file());

        // A malformed header is ignored: the API names the commit instead.
        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        fake.headers.insert(
            RESOLVE_URL.into(),
            vec![("x-repo-commit".into(), "../../etc".into())],
        );
        fake.seen.lock().unwrap().clear();
        load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        assert_eq!(
            fake.seen_urls(),
            [
                RESOLVE_URL,
                "https://hub.test/api/models/org/name/revision/main"
            ]
        );
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn follows_relative_redirects_on_the_same_host_with_the_token() {
        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        let renamed = "https://hub.test/org/new-name/resolve/main/tokenizer.json";
        let mut fake = FakeHub::default();
        fake.redirect(
            RESOLVE_URL,
            307,
            "/org/new-name/resolve/main/tokenizer.json",
        );
        fake.redirect(renamed, 302, "../v2/./tokenizer.json?download=true");
        let final_url = "https://hub.test/org/new-name/resolve/v2/tokenizer.json?download=true";
        fake.routes
            .insert(final_url.into(), (200, tiny_tokenizer_json().into_bytes()));
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap();
        let seen = fake.seen_urls();
        assert_eq!(seen[..3], [RESOLVE_URL, renamed, final_url]);
        assert!(fake.sent_token(0) && fake.sent_token(1) && fake.sent_token(2));
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn redirect_loops_and_long_chains_are_errors_naming_the_urls() {
        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        let spec = TokenizerSpec::parse("org/name", None).unwrap();

        let mut chain = FakeHub::default();
        let hop = |i: usize| format!("https://cdn.test/hop{i}?sig=secret");
        chain.redirect(RESOLVE_URL, 302, &hop(1));
        for i in 1..=MAX_REDIRECTS {
            chain.redirect(&hop(i), 302, &hop(i + 1));
        }
        chain.routes.insert(
            hop(MAX_REDIRECTS + 1),
            (200, tiny_tokenizer_json().into_bytes()),
        );
        let err = load_tokenizer(&spec, &hub, Some(&chain)).await.unwrap_err();
        assert!(matches!(err, TokenizerError::Download { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("too many redirects (more than 5)"), "{text}");
        assert!(text.contains(RESOLVE_URL), "{text}");
        assert!(
            text.contains("https://cdn.test/hop1 → https://cdn.test/hop2"),
            "{text}"
        );
        assert!(text.contains("https://cdn.test/hop6"), "{text}");
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(chain.seen_urls().len(), MAX_REDIRECTS + 1);
        assert!(!repo_cache_dir(root.path(), "org/name").exists());

        // Exactly MAX_REDIRECTS hops are fine.
        let mut five = FakeHub::default();
        five.redirect(RESOLVE_URL, 301, &hop(1));
        for i in 1..MAX_REDIRECTS {
            five.redirect(&hop(i), 308, &hop(i + 1));
        }
        five.routes.insert(
            hop(MAX_REDIRECTS),
            (200, tiny_tokenizer_json().into_bytes()),
        );
        load_tokenizer(&spec, &hub, Some(&five)).await.unwrap();

        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        let mut looping = FakeHub::default();
        looping.redirect(RESOLVE_URL, 302, "https://cdn.test/a");
        looping.redirect(
            "https://cdn.test/a",
            303,
            "https://hub.test/org/name/resolve/main/tokenizer.json",
        );
        let text = load_tokenizer(&spec, &hub, Some(&looping))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            text.contains(&format!(
                "redirect loop: {RESOLVE_URL} → https://cdn.test/a → {RESOLVE_URL}"
            )),
            "{text}"
        );
        assert_eq!(looping.seen_urls().len(), 2);

        let mut no_location = FakeHub::default();
        no_location
            .routes
            .insert(RESOLVE_URL.into(), (302, Vec::new()));
        let text = load_tokenizer(&spec, &hub, Some(&no_location))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("HTTP 302 redirect without a Location header"),
            "{text}"
        );
    }

    #[cfg(feature = "hf-tokenizers")]
    #[tokio::test]
    async fn a_failure_after_a_redirect_says_where() {
        let root = tempfile::tempdir().unwrap();
        let hub = hub_with_token(root.path());
        let spec = TokenizerSpec::parse("org/name", None).unwrap();
        let mut fake = FakeHub::default();
        fake.redirect(RESOLVE_URL, 302, "https://cdn.test/blob?sig=secret");
        fake.routes.insert(
            "https://cdn.test/blob?sig=secret".into(),
            (403, b"expired".to_vec()),
        );
        let text = load_tokenizer(&spec, &hub, Some(&fake))
            .await
            .unwrap_err()
            .to_string();
        assert!(text.contains("HTTP 403"), "{text}");
        assert!(
            text.contains("(after redirects to https://cdn.test/blob)"),
            "{text}"
        );
        assert!(!text.contains("secret"), "{text}");
    }

    #[cfg(not(feature = "hf-tokenizers"))]
    #[tokio::test]
    async fn without_hf_tokenizers_files_and_repositories_name_the_feature_and_send_nothing() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join(TOKENIZER_FILE);
        std::fs::write(&file, "{}").unwrap();
        let hub = env_with(&[
            ("HF_HUB_CACHE", root.path().to_str().unwrap()),
            ("HF_ENDPOINT", "http://hub.test"),
        ]);
        let fake = FakeHub::default();
        for (name, shown) in [
            ("org/name", "org/name".to_string()),
            (file.to_str().unwrap(), file.display().to_string()),
        ] {
            let spec = TokenizerSpec::parse(name, None).unwrap();
            let err = load_tokenizer(&spec, &hub, Some(&fake)).await.unwrap_err();
            assert!(
                matches!(&err, TokenizerError::HuggingFaceDisabled { tokenizer } if *tokenizer == shown),
                "{err:?}"
            );
            assert!(err.to_string().contains("\"hf-tokenizers\""), "{err}");
        }
        assert!(fake.seen.lock().unwrap().is_empty());
        let builtin = load_tokenizer(&TokenizerSpec::builtin(), &hub, Some(&fake)).await;
        assert_eq!(builtin.unwrap().name(), "o200k_base");
    }

    #[test]
    fn locations_resolve_against_the_current_url() {
        let base = "https://hub.test/org/name/resolve/main/tokenizer.json?x=1#f";
        for (location, expected) in [
            ("https://cdn.test/a?b=c", "https://cdn.test/a?b=c"),
            ("HTTP://Other/a", "HTTP://Other/a"),
            ("//cdn.test/p", "https://cdn.test/p"),
            ("/api/x", "https://hub.test/api/x"),
            (
                "other.json",
                "https://hub.test/org/name/resolve/main/other.json",
            ),
            (
                "../v2/t.json?q",
                "https://hub.test/org/name/resolve/v2/t.json?q",
            ),
            ("./", "https://hub.test/org/name/resolve/main/"),
            ("..", "https://hub.test/org/name/resolve/"),
            ("../../../../../../x", "https://hub.test/x"),
            (
                "?y=2",
                "https://hub.test/org/name/resolve/main/tokenizer.json?y=2",
            ),
            ("/p#frag", "https://hub.test/p"),
            ("  /trimmed ", "https://hub.test/trimmed"),
        ] {
            assert_eq!(resolve_location(base, location), expected, "{location}");
        }
        assert_eq!(
            resolve_location("http://127.0.0.1:8080", "a/b"),
            "http://127.0.0.1:8080/a/b"
        );
    }

    #[test]
    fn credentials_stay_on_the_same_origin() {
        for (from, to, keep) in [
            ("https://hub.test/a", "https://hub.test/b", true),
            ("https://HUB.test/a", "https://hub.test:443/b", true),
            ("https://hub.test/a", "https://cdn.test/b", false),
            ("https://hub.test/a", "https://hub.test.evil/b", false),
            ("https://hub.test/a", "http://hub.test/b", false),
            ("http://hub.test/a", "https://hub.test/b", true),
            ("http://hub.test:8080/a", "https://hub.test/b", false),
            ("http://127.0.0.1:1/a", "http://127.0.0.1:2/b", false),
            ("http://[::1]:1/a", "http://[::1]:1/b", true),
            ("https://user@hub.test/a", "https://hub.test/b", true),
            ("https://hub.test/a", "ftp://hub.test/b", false),
        ] {
            assert_eq!(keeps_credentials(from, to), keep, "{from} -> {to}");
        }
    }

    #[test]
    fn path_segment_encoding() {
        assert_eq!(encode_path_segment("main"), "main");
        assert_eq!(encode_path_segment("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(encode_path_segment("v1.0_a-b"), "v1.0_a-b");
    }
}
