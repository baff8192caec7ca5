//! The Hugging Face public datasets of the [catalogue](crate::catalogue): rows become
//! conversations as each entry's [`RowConversion`] says.

use std::path::PathBuf;

use aiperf_core::dataset::DatasetError;
use aiperf_core::{Conversation, Dataset, DatasetSource, SamplingStrategy, Turn};
use serde_json::Value;

use super::{read_rows, HubDataset, HubError, Row};
use crate::catalogue::{PublicDatasetEntry, RowConversion};
use crate::custom::CustomDatasetOptions;
use crate::media::clip_seconds;
use crate::Tokenizer;

/// The prompt of speech-recognition datasets, as the Python AIPerf sends it.
pub const SPEECH_PROMPT: &str = "Transcribe this audio.";

/// Longer speech clips are skipped, as 0.13 skips them (the ASR benchmark convention).
const MAX_SPEECH_SECONDS: f64 = 30.0;

/// The split `entry` loads, with `--hf-subset`'s config when given; `None` for entries
/// not on the hub.
pub fn hub_dataset(entry: &PublicDatasetEntry, hf_subset: Option<&str>) -> Option<HubDataset> {
    Some(HubDataset {
        id: entry.hub_id?.to_string(),
        config: hf_subset.or(entry.config).map(str::to_string),
        split: entry.split.to_string(),
        revision: match entry.rows {
            RowConversion::AgentTrace { version } => Some(version.revision().to_string()),
            _ => None,
        },
    })
}

/// A public dataset's resolved files as an [`aiperf_core::DatasetSource`]: one
/// conversation per usable row, in file order.
#[derive(Debug, Clone)]
pub struct HubPublicDataset {
    entry: &'static PublicDatasetEntry,
    files: Vec<PathBuf>,
    max_conversations: Option<usize>,
}

impl HubPublicDataset {
    /// A source reading `files` (from [`super::resolve`]) as `entry` says, at most
    /// `max_conversations` of them (see [`PublicDatasetEntry::row_limit`]); nothing is
    /// read until it is loaded.
    pub fn new(
        entry: &'static PublicDatasetEntry,
        files: Vec<PathBuf>,
        max_conversations: Option<usize>,
    ) -> Self {
        Self {
            entry,
            files,
            max_conversations,
        }
    }
}

impl DatasetSource for HubPublicDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        let conversations = conversations(
            self.entry,
            read_rows(&self.files, None),
            self.max_conversations,
        )?;
        Ok(Dataset {
            conversations,
            preferred_sampling: SamplingStrategy::Sequential,
            timestamped: false,
        })
    }
}

/// A Hugging Face weka corpus (a [`RowConversion::WekaTrace`] entry) as an
/// [`aiperf_core::DatasetSource`]: one session per row's trace, with its subagents, as
/// [`crate::custom::load_weka_corpus`] replays them.
#[derive(Debug, Clone)]
pub struct HubWekaDataset {
    files: Vec<PathBuf>,
    options: CustomDatasetOptions,
    tokenizer: Tokenizer,
}

impl HubWekaDataset {
    /// A source reading `files` (from [`super::resolve`]) with `options` (the seed,
    /// corpus, `--max-context-length` and `--use-think-time-only` apply); nothing is
    /// read until it is loaded.
    pub fn new(files: Vec<PathBuf>, options: CustomDatasetOptions, tokenizer: Tokenizer) -> Self {
        Self {
            files,
            options,
            tokenizer,
        }
    }
}

impl DatasetSource for HubWekaDataset {
    fn load(&mut self) -> Result<Dataset, DatasetError> {
        let conversations =
            crate::custom::load_weka_corpus(&self.files, &self.options, &self.tokenizer)?;
        Ok(Dataset {
            conversations,
            preferred_sampling: SamplingStrategy::Sequential,
            timestamped: false,
        })
    }
}

/// The conversations of `rows` as `entry` says (rows without a usable prompt are
/// skipped, as the Python AIPerf skips them), read until `max_conversations` are made:
/// the rows after them are never read. A dataset whose rows lack the entry's column, or
/// of which no row is usable, is an error naming the columns it has.
pub fn conversations(
    entry: &PublicDatasetEntry,
    mut rows: impl Iterator<Item = Result<Row, HubError>>,
    max_conversations: Option<usize>,
) -> Result<Vec<Conversation>, HubError> {
    let mut conversations = Vec::new();
    let mut columns_seen: Option<Vec<String>> = None;
    while max_conversations.is_none_or(|max| conversations.len() < max) {
        let Some(row) = rows.next() else { break };
        let row = row?;
        if columns_seen.is_none() {
            columns_seen = Some(row.keys().cloned().collect());
        }
        let turns = match entry.rows {
            RowConversion::Prompt {
                column,
                image_column,
                template,
            } => prompt_turn(&row, column, image_column, template)
                .into_iter()
                .collect(),
            RowConversion::FirstUserMessage {
                column,
                content_key,
                image_column,
            } => first_user_message(&row, column, content_key, image_column)
                .into_iter()
                .collect(),
            RowConversion::MtBench => mt_bench_turns(&row),
            RowConversion::Speech { column } => speech_turn(&row, column).into_iter().collect(),
            RowConversion::VideoQuestion => video_question(&row).into_iter().collect(),
            _ => {
                return Err(HubError::NotFound {
                    id: entry.name.to_string(),
                    reason: "aiperf-rs does not load this public dataset yet".to_string(),
                })
            }
        };
        if turns.is_empty() {
            continue;
        }
        conversations.push(Conversation {
            session_id: crate::synthetic::session_id(conversations.len()),
            turns,
            ..Conversation::default()
        });
    }
    if conversations.is_empty() {
        return Err(HubError::NotFound {
            id: entry.hub_id.unwrap_or(entry.name).to_string(),
            reason: format!(
                "no row holds what {} reads (the rows have the columns: {})",
                entry.name,
                columns_seen
                    .map_or_else(|| "none: the split is empty".to_string(), |c| c.join(", "))
            ),
        });
    }
    Ok(conversations)
}

fn text_of(value: Option<&Value>) -> Option<String> {
    let text = match value? {
        Value::String(text) => text.clone(),
        Value::Null => return None,
        other => other.to_string(),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// `{name}` placeholders filled from the row's fields (strings as they are).
fn fill_template(template: &str, row: &Row) -> String {
    let mut out = template.to_string();
    for (key, value) in row {
        let placeholder = format!("{{{key}}}");
        if out.contains(&placeholder) {
            out = out.replace(&placeholder, &text_of(Some(value)).unwrap_or_default());
        }
    }
    out
}

fn prompt_turn(
    row: &Row,
    column: &str,
    image_column: Option<&str>,
    template: Option<&str>,
) -> Option<Turn> {
    let text = match template {
        Some(template) => fill_template(template, row),
        None => text_of(row.get(column))?,
    };
    Some(Turn {
        texts: vec![text],
        images: image_column
            .and_then(|c| first_image(row.get(c)))
            .into_iter()
            .collect(),
        ..Turn::default()
    })
}

fn first_user_message(
    row: &Row,
    column: &str,
    content_key: &str,
    image_column: Option<&str>,
) -> Option<Turn> {
    let messages = row.get(column)?.as_array()?;
    let is_user = |m: &&Value| {
        let role = m
            .get("role")
            .or_else(|| m.get("from"))
            .and_then(Value::as_str);
        matches!(role, Some("user" | "human"))
    };
    let message = messages.iter().find(is_user)?;
    let text = text_of(message.get(content_key))?;
    Some(Turn {
        texts: vec![text.replace("<image>", "").trim().to_string()],
        images: image_column
            .and_then(|c| first_image(row.get(c)))
            .into_iter()
            .collect(),
        ..Turn::default()
    })
}

fn mt_bench_turns(row: &Row) -> Vec<Turn> {
    let Some(prompts) = row.get("prompt").and_then(Value::as_array) else {
        return Vec::new();
    };
    prompts
        .iter()
        .filter_map(|p| text_of(Some(p)))
        .map(|text| Turn {
            texts: vec![text.trim().to_string()],
            ..Turn::default()
        })
        .collect()
}

/// The first `{bytes, path}` image of a value (or of a list of them), as a `data:` URL.
fn first_image(value: Option<&Value>) -> Option<String> {
    let items = match value? {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    items.into_iter().find_map(|item| {
        let bytes = item.get("bytes")?.as_str().filter(|b| !b.is_empty())?;
        let mime = image_mime(bytes)?;
        Some(format!("data:{mime};base64,{bytes}"))
    })
}

/// The image type of base64 bytes, from their first bytes (PNG, JPEG, GIF, WebP).
fn image_mime(base64: &str) -> Option<&'static str> {
    [
        ("iVBORw0KGgo", "image/png"),
        ("/9j/", "image/jpeg"),
        ("R0lGOD", "image/gif"),
        ("UklGR", "image/webp"),
    ]
    .into_iter()
    .find(|(prefix, _)| base64.starts_with(prefix))
    .map(|(_, mime)| mime)
}

/// The clip of a `{bytes, path}` audio value: WAV and MP3 as they are (what chat
/// endpoints take), FLAC decoded to 16-bit WAV as 0.13 sends it; clips over 30 s are
/// skipped (0.13's ASR convention), as are other encodings and FLAC that does not
/// decode.
fn speech_turn(row: &Row, column: &str) -> Option<Turn> {
    let bytes = row.get(column)?.get("bytes")?.as_str()?;
    let clip = if bytes.starts_with("UklGR") {
        format!("wav,{bytes}")
    } else if bytes.starts_with("SUQz") || bytes.starts_with("//") {
        format!("mp3,{bytes}")
    } else if bytes.starts_with("ZkxhQ") {
        format!("wav,{}", flac_as_wav(bytes)?)
    } else {
        return None;
    };
    let seconds = clip_seconds(&clip);
    if seconds.is_some_and(|s| s > MAX_SPEECH_SECONDS) {
        return None;
    }
    Some(Turn {
        texts: vec![SPEECH_PROMPT.to_string()],
        audio_duration_s: seconds,
        audios: vec![clip],
        ..Turn::default()
    })
}

/// An MMVU row's question and choices with its video; `None` without either.
fn video_question(row: &Row) -> Option<Turn> {
    let question = row
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim();
    let choices = match row.get("choices") {
        Some(Value::Object(choices)) => choices
            .iter()
            .filter_map(|(letter, text)| Some(format!("{letter}.{}", text_of(Some(text))?)))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    let prompt = match (question.is_empty(), choices.is_empty()) {
        (false, false) => format!("{question} {choices}"),
        (false, true) => question.to_string(),
        (true, _) => choices,
    };
    if prompt.is_empty() {
        return None;
    }
    Some(Turn {
        texts: vec![prompt],
        videos: vec![video_url(row.get("video")?)?],
        ..Turn::default()
    })
}

/// A video value as the URL a request carries: a URL (or `data:` URL) as it is, a bare
/// path as a `file://` URL, `{bytes, path}` as a `data:` URL typed by the path's
/// extension (MP4 when it tells nothing).
fn video_url(value: &Value) -> Option<String> {
    match value {
        Value::String(url) if url.contains("://") || url.starts_with("data:") => Some(url.clone()),
        Value::String(path) if !path.is_empty() => Some(format!("file://{path}")),
        Value::Object(video) => {
            let bytes = video.get("bytes")?.as_str().filter(|b| !b.is_empty())?;
            let path = video
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let extension = path
                .rsplit_once('.')
                .map(|(_, ext)| ext.to_ascii_lowercase());
            let mime = match extension.as_deref() {
                Some("webm") => "video/webm",
                Some("mov") => "video/quicktime",
                Some("avi") => "video/x-msvideo",
                Some("mkv") => "video/x-matroska",
                _ => "video/mp4",
            };
            Some(format!("data:{mime};base64,{bytes}"))
        }
        _ => None,
    }
}

/// Base64 FLAC as base64 16-bit PCM WAV of the same channels and rate, as 0.13's
/// soundfile round trip writes it (samples of other depths scaled to 16 bits, rounded
/// and clipped); `None` when it does not decode.
#[cfg(feature = "media")]
fn flac_as_wav(base64_flac: &str) -> Option<String> {
    use base64::Engine as _;

    let engine = base64::engine::general_purpose::STANDARD;
    let flac = engine.decode(base64_flac).ok()?;
    let mut reader = claxon::FlacReader::new(std::io::Cursor::new(flac)).ok()?;
    let info = reader.streaminfo();
    let channels = u16::try_from(info.channels).ok()?;
    let bits = i32::try_from(info.bits_per_sample).ok()?;
    let to_16_bits = |sample: i32| -> i16 {
        let scaled = (f64::from(sample) * 2f64.powi(16 - bits)).round();
        scaled.clamp(f64::from(i16::MIN), f64::from(i16::MAX)) as i16
    };
    let samples = reader
        .samples()
        .map(|sample| sample.map(to_16_bits))
        .collect::<Result<Vec<i16>, _>>()
        .ok()?;
    let wav = crate::media::audio::pcm16_wav(&samples, info.sample_rate, channels);
    Some(engine.encode(wav))
}

/// Without the `media` feature there is no WAV writer: FLAC clips are skipped.
#[cfg(not(feature = "media"))]
fn flac_as_wav(_: &str) -> Option<String> {
    None
}
