//! The per-turn keys shared by `single_turn`, `multi_turn` and `random_pool` lines:
//! the modalities (`text`/`texts`, `image`/`images`, `audio`/`audios`,
//! `video`/`videos`) and, outside random pools, timing, role, session, output length and
//! extra body fields.

use aiperf_core::Turn;
use serde_json::Value;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::media::{self, Modality};
use super::record::Record;
use crate::media::clip_seconds;

/// Keys of a `random_pool` line: the modalities only.
pub(crate) const MODALITY_KEYS: [&str; 8] = [
    "text", "texts", "image", "images", "audio", "audios", "video", "videos",
];

/// Keys of a `single_turn` line (and of each turn of a `multi_turn` line).
pub(crate) const TURN_KEYS: [&str; 14] = [
    "text",
    "texts",
    "image",
    "images",
    "audio",
    "audios",
    "video",
    "videos",
    "timestamp",
    "delay",
    "role",
    "session_id",
    "output_length",
    "extra",
];

/// A parsed turn and the session it names, if any.
#[derive(Debug)]
pub(crate) struct ParsedTurn {
    pub(crate) turn: Turn,
    pub(crate) session_id: Option<String>,
}

/// Parses a turn object. With `pool_only`, only the modality keys are allowed.
pub(crate) fn parse_turn(
    mut record: Record<'_>,
    pool_only: bool,
) -> Result<ParsedTurn, DatasetFileError> {
    let mut turn = Turn {
        texts: take_modality(&mut record, "text", "texts", None)?,
        images: take_modality(&mut record, "image", "images", Some(Modality::Image))?,
        audios: take_modality(&mut record, "audio", "audios", Some(Modality::Audio))?,
        videos: take_modality(&mut record, "video", "videos", Some(Modality::Video))?,
        ..Turn::default()
    };
    turn.audio_duration_s = turn.audios.first().and_then(|clip| clip_seconds(clip));
    if turn.texts.is_empty()
        && turn.images.is_empty()
        && turn.audios.is_empty()
        && turn.videos.is_empty()
    {
        return Err(record.record_error(
            DatasetFileErrorKind::MissingField,
            format!("at least one of {} is required", MODALITY_KEYS.join(", ")),
        ));
    }
    if pool_only {
        record.finish(&MODALITY_KEYS)?;
        return Ok(ParsedTurn {
            turn,
            session_id: None,
        });
    }
    if record.has("timestamp") && record.has("delay") {
        return Err(record.error(
            "delay",
            DatasetFileErrorKind::Invalid,
            "timestamp and delay cannot both be set",
        ));
    }
    turn.timestamp_ms = record.take_ms("timestamp")?;
    turn.delay_ms = record.take_ms("delay")?;
    turn.role = record.take_str("role")?;
    turn.max_tokens = record.take_positive_u32("output_length")?;
    turn.extra = record.take_object("extra")?;
    let session_id = record.take_id("session_id")?;
    record.finish(&TURN_KEYS)?;
    Ok(ParsedTurn { turn, session_id })
}

/// The values of one modality: the singular key (a string) or the plural one (a list of
/// strings or of `{name, contents}` groups, flattened), never both. Media values are
/// resolved (`media == None` for text).
fn take_modality(
    record: &mut Record<'_>,
    singular: &str,
    plural: &str,
    media: Option<Modality>,
) -> Result<Vec<String>, DatasetFileError> {
    if record.has(singular) && record.has(plural) {
        return Err(record.error(
            singular,
            DatasetFileErrorKind::Invalid,
            format!("{singular} and {plural} cannot both be set"),
        ));
    }
    let mut values = Vec::new();
    if let Some(value) = record.take_str(singular)? {
        values.push(value);
    }
    let mut field = singular.to_string();
    if let Some(items) = record.take_array(plural)? {
        field = plural.to_string();
        for (index, item) in items.into_iter().enumerate() {
            collect_item(record, &format!("{plural}[{index}]"), item, &mut values)?;
        }
    }
    match media {
        None => Ok(values),
        Some(modality) => values
            .iter()
            .map(|value| {
                media::resolve(modality, value)
                    .map_err(|message| record.error(&field, DatasetFileErrorKind::Invalid, message))
            })
            .collect(),
    }
}

/// One element of a plural modality list: a string, or a `{name, contents}` group.
fn collect_item(
    record: &Record<'_>,
    field: &str,
    item: Value,
    out: &mut Vec<String>,
) -> Result<(), DatasetFileError> {
    let mut group = match item {
        Value::String(value) => {
            out.push(value);
            return Ok(());
        }
        other @ Value::Object(_) => record.nested(field, other)?,
        _ => {
            return Err(record.error(
                field,
                DatasetFileErrorKind::WrongType,
                "expected a string or a {name, contents} object",
            ))
        }
    };
    // The group's name labels texts for some endpoints (rankings); a turn keeps only
    // the contents.
    group.take_str("name")?;
    let contents = group.require("contents")?;
    let Value::Array(contents) = contents else {
        return Err(group.error(
            "contents",
            DatasetFileErrorKind::WrongType,
            "expected a list of strings",
        ));
    };
    for content in contents {
        match content {
            Value::String(value) => out.push(value),
            _ => {
                return Err(group.error(
                    "contents",
                    DatasetFileErrorKind::WrongType,
                    "expected a list of strings",
                ))
            }
        }
    }
    group.finish(&["name", "contents"])
}
