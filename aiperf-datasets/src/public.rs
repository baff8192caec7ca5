//! Public datasets (`--public-dataset`, docs/datasets.md#public-datasets) that are one
//! file outside the Hugging Face hub layout: ShareGPT and SpecBench.
//!
//! [`fetch_sharegpt`] downloads the ShareGPT file once to [`sharegpt_cache_path`];
//! [`load_sharegpt`] streams it (it is a ~650 MB JSON array) into conversations: every
//! `human` → `gpt` message pair is one turn, filtered by vLLM's length rule, with the
//! reply's token count as the turn's requested output length.

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aiperf_core::dataset::DatasetError;
use aiperf_core::transport::{HttpMethod, HttpRequest};
use aiperf_core::{Conversation, Dataset, DatasetSource, SamplingStrategy, Transport, Turn};
use serde::de::{Deserializer as _, SeqAccess, Visitor};
use serde::Deserialize;

use crate::custom::{DatasetFileError, DatasetFileErrorKind};
use crate::resolve::get_following_redirects;
use crate::Tokenizer;

/// Where ShareGPT is downloaded from.
pub const SHAREGPT_URL: &str = "https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/ShareGPT_V3_unfiltered_cleaned_split.json";
/// The file's name in the cache folder.
const SHAREGPT_FILE: &str = "ShareGPT_V3_unfiltered_cleaned_split.json";

/// vLLM's benchmark filter: shortest prompt and reply, longest prompt, longest total.
const MIN_TOKENS: usize = 4;
const MAX_PROMPT_TOKENS: usize = 1024;
const MAX_TOTAL_TOKENS: usize = 2048;

/// `.cache/aiperf/datasets/ShareGPT_V3_unfiltered_cleaned_split.json`, relative to the
/// current folder (where the Python AIPerf keeps it too).
pub fn sharegpt_cache_path() -> PathBuf {
    Path::new(".cache")
        .join("aiperf")
        .join("datasets")
        .join(SHAREGPT_FILE)
}

/// Downloads ShareGPT to `dest` (following the hub's redirects), bounded by `timeout`;
/// the file appears only when complete. The error says where to put the file by hand.
pub async fn fetch_sharegpt(
    transport: &dyn Transport,
    dest: &Path,
    timeout: Duration,
) -> Result<(), DatasetFileError> {
    let download = Download {
        what: "ShareGPT",
        url: SHAREGPT_URL,
        first_byte: b'[',
        shape: "a JSON array",
    };
    download.fetch(transport, dest, timeout).await
}

/// A public dataset file fetched once into `.cache/aiperf/datasets/`.
struct Download {
    what: &'static str,
    url: &'static str,
    /// The first non-blank byte of the file: a proxy's HTML page is not the dataset.
    first_byte: u8,
    /// What the file is, for the error when the first byte is wrong.
    shape: &'static str,
}

impl Download {
    async fn fetch(
        &self,
        transport: &dyn Transport,
        dest: &Path,
        timeout: Duration,
    ) -> Result<(), DatasetFileError> {
        let (what, url) = (self.what, self.url);
        let failed = |reason: String| {
            DatasetFileError::file(
                dest,
                DatasetFileErrorKind::Download,
                format!(
                    "could not download {what} from {url}: {reason}; put the file at {} \
                 or pass --input-file",
                    dest.display()
                ),
            )
        };
        let request = HttpRequest {
            method: HttpMethod::Get,
            url: url.to_string(),
            headers: vec![("User-Agent".to_string(), "aiperf-rs".to_string())],
            body: bytes::Bytes::new(),
            timeout: Some(timeout),
        };
        tracing::info!(url, dest = %dest.display(), "downloading {what}");
        let fetched = get_following_redirects(request, transport)
            .await
            .map_err(failed)?;
        let exchange = &fetched.exchange;
        if let Some(error) = &exchange.error {
            return Err(failed(format!("{error}{}", fetched.redirect_note())));
        }
        match exchange.status {
            Some(200) => {}
            Some(status) => {
                return Err(failed(format!("HTTP {status}{}", fetched.redirect_note())))
            }
            None => return Err(failed("no response from the server".to_string())),
        }
        // A proxy's HTML page must not be cached as the dataset.
        let first_byte = exchange.body().iter().find(|b| !b.is_ascii_whitespace());
        if first_byte != Some(&self.first_byte) {
            return Err(failed(format!("the response is not {}", self.shape)));
        }
        // Written from the received body as is: ShareGPT is ~650 MB, so no second copy in
        // memory.
        let partial = dest.with_extension("part");
        let write = || -> std::io::Result<()> {
            if let Some(parent) = partial.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut file = std::io::BufWriter::new(File::create(&partial)?);
            file.write_all(exchange.body())?;
            file.into_inner()
                .map_err(std::io::IntoInnerError::into_error)?
                .sync_all()?;
            std::fs::rename(&partial, dest)
        };
        write().map_err(|e| failed(format!("cannot write the file: {e}")))
    }
}

/// Where SpecBench's questions are downloaded from (the commit 0.13 pins).
pub const SPEC_BENCH_URL: &str = "https://raw.githubusercontent.com/hemingkx/Spec-Bench/fd2c1cd7d2201ef71db4c5f4e455008f017967bf/data/spec_bench/question.jsonl";

/// `.cache/aiperf/datasets/spec_bench.jsonl`, relative to the current folder (where the
/// Python AIPerf keeps it too).
pub fn spec_bench_cache_path() -> PathBuf {
    Path::new(".cache")
        .join("aiperf")
        .join("datasets")
        .join("spec_bench.jsonl")
}

/// Downloads SpecBench's `question.jsonl` to `dest`, as [`fetch_sharegpt`] does.
/// `offline` (`HF_HUB_OFFLINE`) sends nothing: the error says where the file goes.
pub async fn fetch_spec_bench(
    transport: &dyn Transport,
    dest: &Path,
    timeout: Duration,
    offline: bool,
) -> Result<(), DatasetFileError> {
    if offline {
        return Err(DatasetFileError::file(
            dest,
            DatasetFileErrorKind::Download,
            format!(
                "SpecBench is not downloaded and HF_HUB_OFFLINE is set: put {SPEC_BENCH_URL} \
                 at {}, or pass it with --input-file",
                dest.display()
            ),
        ));
    }
    let download = Download {
        what: "SpecBench",
        url: SPEC_BENCH_URL,
        first_byte: b'{',
        shape: "JSON Lines",
    };
    download.fetch(transport, dest, timeout).await
}

/// SpecBench's questions as an [`aiperf_core::DatasetSource`]: one single-turn
/// conversation per question, in file order.
#[derive(Debug, Clone)]
pub struct SpecBenchDataset {
    path: PathBuf,
}

impl SpecBenchDataset {
    /// A source reading `path` (see [`load_spec_bench`]); nothing is read until it is
    /// loaded.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

impl DatasetSource for SpecBenchDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        Ok(Dataset {
            conversations: load_spec_bench(&self.path)?,
            preferred_sampling: SamplingStrategy::Sequential,
            timestamped: false,
        })
    }
}

/// The conversations of SpecBench's `question.jsonl`: each line's first `turns` entry
/// (trimmed) is one single-turn conversation, as the Python AIPerf 0.13 sends it (its
/// loader's multi-turn mode is not selectable). Lines without a usable first turn are
/// skipped; a line that is not a JSON object is an error naming it.
pub fn load_spec_bench(path: &Path) -> Result<Vec<Conversation>, DatasetFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| DatasetFileError::io(path, e))?;
    let mut conversations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).map_err(|e| {
                DatasetFileError::file(
                    path,
                    DatasetFileErrorKind::Syntax,
                    format!("not a SpecBench question (a JSON object): {e}"),
                )
                .at_line(index + 1)
            })?;
        let first = row
            .get("turns")
            .and_then(serde_json::Value::as_array)
            .and_then(|turns| turns.first());
        let prompt = match first {
            Some(serde_json::Value::String(text)) => text.trim().to_string(),
            Some(serde_json::Value::Null) | None => continue,
            Some(other) => other.to_string(),
        };
        if prompt.is_empty() {
            continue;
        }
        conversations.push(Conversation {
            session_id: crate::synthetic::session_id(conversations.len()),
            turns: vec![Turn {
                texts: vec![prompt],
                ..Turn::default()
            }],
            ..Conversation::default()
        });
    }
    if conversations.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "no SpecBench question has a first turn",
        ));
    }
    Ok(conversations)
}

/// A ShareGPT file as an [`aiperf_core::DatasetSource`]: its conversations in file
/// order, sent in order, without timestamps.
#[derive(Debug, Clone)]
pub struct ShareGptDataset {
    path: PathBuf,
    osl_given: bool,
    tokenizer: Tokenizer,
}

impl ShareGptDataset {
    /// A source reading `path` (see [`load_sharegpt`] for `osl_given`); nothing is read
    /// until it is loaded.
    pub fn new(path: impl Into<PathBuf>, osl_given: bool, tokenizer: Tokenizer) -> Self {
        Self {
            path: path.into(),
            osl_given,
            tokenizer,
        }
    }
}

impl DatasetSource for ShareGptDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        Ok(Dataset {
            conversations: load_sharegpt(&self.path, self.osl_given, &self.tokenizer)?,
            preferred_sampling: SamplingStrategy::Sequential,
            timestamped: false,
        })
    }
}

/// The conversations of a ShareGPT file. With `osl_given` (`--osl`), replies shorter
/// than 4 tokens are kept (their length is not what will be asked for).
pub fn load_sharegpt(
    path: &Path,
    osl_given: bool,
    tokenizer: &Tokenizer,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let file = crate::text_file::open(path, 1 << 20).map_err(|e| DatasetFileError::io(path, e))?;
    let mut deserializer = serde_json::Deserializer::from_reader(file);
    let json_error = |e: serde_json::Error| {
        DatasetFileError::file(
            path,
            DatasetFileErrorKind::Syntax,
            format!("invalid ShareGPT JSON at column {}: {e}", e.column()),
        )
        .at_line(e.line())
    };
    let visitor = EntriesVisitor {
        tokenizer,
        osl_given,
    };
    let conversations = (&mut deserializer)
        .deserialize_seq(visitor)
        .map_err(json_error)?;
    deserializer.end().map_err(json_error)?;
    if conversations.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "no ShareGPT conversation passed the length filter",
        ));
    }
    tracing::info!(conversations = conversations.len(), "loaded ShareGPT");
    Ok(conversations)
}

/// One element of the ShareGPT array (other keys ignored).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    conversations: Vec<Message>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    from: Option<String>,
    /// A few entries hold `null`: an empty message.
    #[serde(default)]
    value: Option<String>,
}

impl Message {
    fn text(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}

/// Turns the array's elements into conversations one by one, so only the kept
/// conversations stay in memory.
struct EntriesVisitor<'a> {
    tokenizer: &'a Tokenizer,
    osl_given: bool,
}

impl<'de> Visitor<'de> for EntriesVisitor<'_> {
    type Value = Vec<Conversation>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array of ShareGPT entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut conversations = Vec::new();
        while let Some(entry) = seq.next_element::<Entry>()? {
            if let Some(turns) = self.turns(&entry.conversations) {
                conversations.push(Conversation {
                    session_id: crate::synthetic::session_id(conversations.len()),
                    turns,
                    ..Conversation::default()
                });
            }
        }
        Ok(conversations)
    }
}

impl EntriesVisitor<'_> {
    /// The turns of one entry, or `None` when it is skipped: fewer than two messages, no
    /// `human` → `gpt` pair, or a pair failing the length filter.
    fn turns(&self, messages: &[Message]) -> Option<Vec<Turn>> {
        if messages.len() < 2 {
            return None;
        }
        let pairs: Vec<(&str, &str)> = if messages.iter().any(|m| m.from.is_some()) {
            messages
                .windows(2)
                .filter(|w| {
                    w[0].from.as_deref() == Some("human") && w[1].from.as_deref() == Some("gpt")
                })
                .map(|w| (w[0].text(), w[1].text()))
                .collect()
        } else {
            vec![(messages[0].text(), messages[1].text())]
        };
        if pairs.is_empty() {
            return None;
        }
        pairs
            .into_iter()
            .map(|(prompt, reply)| self.turn(prompt, reply))
            .collect()
    }

    /// One turn, if the pair passes vLLM's filter.
    fn turn(&self, prompt: &str, reply: &str) -> Option<Turn> {
        let prompt_tokens = self.tokenizer.count(prompt);
        let reply_tokens = self.tokenizer.count(reply);
        let too_short =
            prompt_tokens < MIN_TOKENS || (!self.osl_given && reply_tokens < MIN_TOKENS);
        let too_long =
            prompt_tokens > MAX_PROMPT_TOKENS || prompt_tokens + reply_tokens > MAX_TOTAL_TOKENS;
        if too_short || too_long {
            return None;
        }
        Some(Turn {
            texts: vec![prompt.to_string()],
            max_tokens: Some(u32::try_from(reply_tokens).unwrap_or(u32::MAX)),
            ..Turn::default()
        })
    }
}
