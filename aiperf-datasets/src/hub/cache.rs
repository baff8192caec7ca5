//! The hub cache layout of datasets, and which files of a snapshot hold a split.
//!
//! A dataset `org/name` lives in `<cache>/datasets--org--name/`: `refs/<revision>` holds
//! the commit a revision pointed at, `snapshots/<commit>/` the repository's files at that
//! commit. Downloads from the dataset server's parquet listing belong to the revision
//! `refs/convert/parquet` (the hub's Parquet conversion), so they are stored under
//! `refs/refs/convert/parquet` as `huggingface_hub` stores them.
//!
//! The files of `config`/`split` in a snapshot are, first match wins:
//! 1. every data file in `<config>/<split>/` (the Parquet conversion's layout; `config`
//!    defaults to `default`);
//! 2. the data files named after the split (`<split>.jsonl`, `<split>-00000-of-00002.parquet`,
//!    `<split>_v2.json`, …) in `<config>/`, then `data/<config>/`, then `data/`, then the
//!    snapshot's top folder.
//!
//! Data files end in `.parquet`, `.jsonl`, `.ndjson` or `.json`; files are taken in name
//! order.

use std::path::{Path, PathBuf};

use super::HubDataset;

/// The revision of the hub's Parquet conversion of a dataset.
pub const PARQUET_REVISION: &str = "refs/convert/parquet";

/// The config a dataset without named configs has.
pub const DEFAULT_CONFIG: &str = "default";

const DATA_EXTENSIONS: [&str; 4] = [".parquet", ".jsonl", ".ndjson", ".json"];

/// `<cache>/datasets--org--name`.
pub fn dataset_cache_dir(cache_root: &Path, id: &str) -> PathBuf {
    cache_root.join(format!("datasets--{}", id.replace('/', "--")))
}

/// The snapshot folder a revision points at (through `refs/<revision>`, or a snapshot
/// named after the revision itself, as a commit sha is), when it exists.
pub fn snapshot_dir(repo_dir: &Path, revision: &str) -> Option<PathBuf> {
    let by_ref = std::fs::read_to_string(repo_dir.join("refs").join(revision))
        .ok()
        .map(|commit| commit.trim().to_string())
        .filter(|commit| is_plain_name(commit))
        .map(|commit| repo_dir.join("snapshots").join(commit));
    let by_name = is_plain_name(revision).then(|| repo_dir.join("snapshots").join(revision));
    by_ref.into_iter().chain(by_name).find(|dir| dir.is_dir())
}

/// The cached files of `dataset`, or `None` when the cache holds none: the revision
/// asked for, then (when none was pinned) the Parquet conversion.
pub fn find_cached(cache_root: &Path, dataset: &HubDataset) -> Option<Vec<PathBuf>> {
    let repo_dir = dataset_cache_dir(cache_root, &dataset.id);
    let mut revisions = vec![dataset.revision()];
    if dataset.revision.is_none() {
        revisions.push(PARQUET_REVISION);
    }
    revisions.into_iter().find_map(|revision| {
        let snapshot = snapshot_dir(&repo_dir, revision)?;
        let files = select_split_files(&list_files(&snapshot), dataset);
        (!files.is_empty()).then(|| files.iter().map(|f| snapshot.join(f)).collect())
    })
}

/// Where a user puts the files of `dataset` by hand so that [`find_cached`] finds them.
pub fn manual_folder(cache_root: &Path, dataset: &HubDataset) -> PathBuf {
    let revision = dataset.revision().replace('/', "--");
    dataset_cache_dir(cache_root, &dataset.id)
        .join("snapshots")
        .join(revision)
        .join(dataset.config.as_deref().unwrap_or(DEFAULT_CONFIG))
        .join(&dataset.split)
}

/// The files (paths relative to a snapshot, `/`-separated) that hold `dataset`'s
/// config and split, by the rules in this module's documentation, in name order.
pub fn select_split_files(files: &[String], dataset: &HubDataset) -> Vec<String> {
    let config = dataset.config.as_deref();
    let split = dataset.split.as_str();
    let in_folder = |folder: &str| -> Vec<String> {
        let mut found: Vec<String> = files
            .iter()
            .filter(|file| parent_of(file) == folder && is_data_file(file))
            .cloned()
            .collect();
        found.sort();
        found
    };
    let conversion = in_folder(&format!("{}/{split}", config.unwrap_or(DEFAULT_CONFIG)));
    if !conversion.is_empty() {
        return conversion;
    }
    let mut folders = Vec::new();
    if let Some(config) = config {
        folders.push(config.to_string());
        folders.push(format!("data/{config}"));
    }
    folders.push("data".to_string());
    folders.push(String::new());
    folders
        .iter()
        .map(|folder| {
            in_folder(folder)
                .into_iter()
                .filter(|file| names_split(file_name(file), split))
                .collect::<Vec<_>>()
        })
        .find(|found| !found.is_empty())
        .unwrap_or_default()
}

/// Every file below `snapshot`, relative and `/`-separated (three folders deep at most:
/// the deepest layout above is `data/<config>/<file>`).
fn list_files(snapshot: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let path = entry.path();
            if path.is_dir() {
                if depth > 0 {
                    walk(&path, &relative, depth - 1, out);
                }
            } else if path.is_file() {
                out.push(relative);
            }
        }
    }
    let mut files = Vec::new();
    walk(snapshot, "", 2, &mut files);
    files
}

fn parent_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(parent, _)| parent)
}

fn file_name(file: &str) -> &str {
    file.rsplit_once('/').map_or(file, |(_, name)| name)
}

fn is_data_file(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    DATA_EXTENSIONS.iter().any(|ext| lower.ends_with(ext))
}

/// `test.jsonl`, `test-00000-of-00001.parquet`, `test_v2.json` name the split `test`;
/// `testing.jsonl` does not.
fn names_split(name: &str, split: &str) -> bool {
    name.strip_prefix(split)
        .is_some_and(|rest| rest.starts_with(['.', '-', '_']))
}

/// A single path segment that stays inside its folder.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(config: Option<&str>, split: &str) -> HubDataset {
        HubDataset {
            id: "org/name".into(),
            config: config.map(Into::into),
            split: split.into(),
            revision: None,
        }
    }

    fn select(files: &[&str], config: Option<&str>, split: &str) -> Vec<String> {
        let files: Vec<String> = files.iter().map(|f| (*f).to_string()).collect();
        select_split_files(&files, &dataset(config, split))
    }

    #[test]
    fn the_parquet_conversion_folder_comes_first() {
        let files = [
            "default/test/0001.parquet",
            "default/test/0000.parquet",
            "default/train/0000.parquet",
            "test.jsonl",
        ];
        assert_eq!(
            select(&files, None, "test"),
            ["default/test/0000.parquet", "default/test/0001.parquet"]
        );
    }

    #[test]
    fn config_folders_hold_files_named_after_the_split() {
        let files = [
            "main/test-00000-of-00001.parquet",
            "main/train-00000-of-00001.parquet",
            "socratic/test-00000-of-00001.parquet",
            "README.md",
        ];
        assert_eq!(
            select(&files, Some("main"), "test"),
            ["main/test-00000-of-00001.parquet"]
        );
    }

    #[test]
    fn data_folder_then_top_level_and_no_prefix_lookalikes() {
        let files = [
            "data/train-00000.parquet",
            "data/training.jsonl",
            "validation.json",
            "README.md",
        ];
        assert_eq!(select(&files, None, "train"), ["data/train-00000.parquet"]);
        assert_eq!(select(&files, None, "validation"), ["validation.json"]);
        assert!(select(&files, None, "test").is_empty());
        assert!(select(&["test.md"], None, "test").is_empty());
    }
}
