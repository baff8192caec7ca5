//! `random_pool`: pools of turn contents (a file is one pool, a folder one pool per
//! file) from which conversations of one turn are drawn with replacement.

use std::path::{Path, PathBuf};

use aiperf_core::{Conversation, Turn};
use rand::RngExt;

use super::error::{DatasetFileError, DatasetFileErrorKind};
use super::record::for_each_record;
use super::turn_fields::parse_turn;
use crate::seed::derive_rng;
use crate::synthetic::session_id;

/// Random stream of the pool draws.
const POOL_STREAM: &str = "dataset.loader.random_pool";

/// `count` conversations, each of one turn holding one entry drawn from every pool
/// (contents of several pools are appended in pool order).
pub(crate) fn load(
    path: &Path,
    count: usize,
    seed: u64,
) -> Result<Vec<Conversation>, DatasetFileError> {
    let pools = pool_files(path)?
        .iter()
        .map(|file| load_pool(file))
        .collect::<Result<Vec<_>, _>>()?;
    let mut draws = derive_rng(seed, POOL_STREAM);
    let mut conversations = Vec::with_capacity(count);
    for index in 0..count {
        let mut turn = Turn::default();
        for pool in &pools {
            let entry = &pool[draws.random_range(0..pool.len())];
            if turn.audios.is_empty() {
                turn.audio_duration_s = entry.audio_duration_s;
            }
            turn.texts.extend_from_slice(&entry.texts);
            turn.images.extend_from_slice(&entry.images);
            turn.audios.extend_from_slice(&entry.audios);
            turn.videos.extend_from_slice(&entry.videos);
        }
        conversations.push(Conversation {
            session_id: session_id(index),
            turns: vec![turn],
            ..Conversation::default()
        });
    }
    Ok(conversations)
}

/// The pool files: the file itself, or the folder's files sorted by name.
fn pool_files(path: &Path) -> Result<Vec<PathBuf>, DatasetFileError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| DatasetFileError::io(path, e))? {
        let entry = entry.map_err(|e| DatasetFileError::io(path, e))?;
        let file = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if file.is_file() && !hidden {
            files.push(file);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(DatasetFileError::file(
            path,
            DatasetFileErrorKind::Empty,
            "the folder holds no pool files",
        ));
    }
    Ok(files)
}

/// The entries of one pool file (never empty).
fn load_pool(path: &Path) -> Result<Vec<Turn>, DatasetFileError> {
    let mut entries = Vec::new();
    for_each_record(path, |record| {
        entries.push(parse_turn(record, true)?.turn);
        Ok(())
    })?;
    Ok(entries)
}
