//! Which runs the user pointed at: one run, or several to compare.
//!
//! A directory holding `profile_export.jsonl` (or only a summary) is a single run. Any other
//! directory is searched a few levels down for run directories — a sweep's
//! `concurrency_10/`, a multi-run's `profile_runs/run_0001/` — and each run found is
//! labelled by its path relative to the directory given. Several paths always compare.

use std::path::{Path, PathBuf};

use aiperf_metrics::artifacts::{RECORDS_FILE, SUMMARY_FILE};

use crate::PlotError;

/// How deep below a given directory runs are looked for: `sweep/concurrency_10/`,
/// `multi/profile_runs/run_0001/` and a sweep of multi-runs one level deeper.
const SEARCH_DEPTH: usize = 3;

/// What to plot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One run's artifact directory.
    Single(PathBuf),
    /// Several runs, each with its label, in natural order of the labels.
    Multi(Vec<LabelledRun>),
}

/// A run of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledRun {
    /// How charts name the run: its path relative to the directory the user gave.
    pub label: String,
    /// The run's artifact directory.
    pub dir: PathBuf,
}

/// Decides the mode for the paths given on the command line.
pub fn detect(paths: &[PathBuf]) -> Result<Mode, PlotError> {
    if let [only] = paths {
        if only.join(RECORDS_FILE).is_file() || only.join(SUMMARY_FILE).is_file() {
            return Ok(Mode::Single(only.clone()));
        }
        let mut runs = runs_below(only)?;
        return match runs.len() {
            0 => Err(PlotError::NoRuns(only.clone())),
            1 => Ok(Mode::Single(runs.remove(0).dir)),
            _ => Ok(Mode::Multi(runs)),
        };
    }
    let mut runs = Vec::new();
    for path in paths {
        if path.join(SUMMARY_FILE).is_file() {
            runs.push(LabelledRun {
                label: path.display().to_string(),
                dir: path.clone(),
            });
            continue;
        }
        let below = runs_below(path)?;
        if below.is_empty() {
            return Err(PlotError::NoRuns(path.clone()));
        }
        runs.extend(below.into_iter().map(|run| LabelledRun {
            label: format!("{}/{}", path.display(), run.label),
            dir: run.dir,
        }));
    }
    strip_common_prefix(&mut runs);
    Ok(Mode::Multi(runs))
}

/// Drops the leading path components all labels share (`/home/me/results/`), keeping at
/// least the last component of each: what is left is what tells the runs apart.
fn strip_common_prefix(runs: &mut [LabelledRun]) {
    let split: Vec<Vec<&str>> = runs.iter().map(|r| r.label.split('/').collect()).collect();
    let Some(shortest) = split.iter().map(Vec::len).min() else {
        return;
    };
    let common = (0..shortest.saturating_sub(1))
        .take_while(|&i| split.iter().all(|parts| parts[i] == split[0][i]))
        .count();
    let stripped: Vec<String> = split
        .iter()
        .map(|parts| parts[common..].join("/"))
        .collect();
    for (run, label) in runs.iter_mut().zip(stripped) {
        run.label = label;
    }
}

/// The run directories below `root`, labelled relative to it, in natural order.
fn runs_below(root: &Path) -> Result<Vec<LabelledRun>, PlotError> {
    let mut runs = Vec::new();
    collect_runs(root, root, SEARCH_DEPTH, &mut runs)?;
    runs.sort_by_cached_key(|run| natural_key(&run.label));
    Ok(runs)
}

fn collect_runs(
    root: &Path,
    dir: &Path,
    depth_left: usize,
    runs: &mut Vec<LabelledRun>,
) -> Result<(), PlotError> {
    if depth_left == 0 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|error| PlotError::io(dir, error))?;
    for entry in entries {
        let path = entry.map_err(|error| PlotError::io(dir, error))?.path();
        if !path.is_dir() {
            continue;
        }
        if path.join(SUMMARY_FILE).is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            runs.push(LabelledRun {
                label: relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
                dir: path,
            });
        } else {
            collect_runs(root, &path, depth_left - 1, runs)?;
        }
    }
    Ok(())
}

/// A sort key that orders digit runs by value: `concurrency_2` before `concurrency_10`.
pub(crate) fn natural_key(label: &str) -> Vec<(String, u128)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in label.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                key.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u128::MAX),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    key.push((text, digits.parse().unwrap_or(0)));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_dir(path: &Path) {
        std::fs::create_dir_all(path).expect("mkdir");
        std::fs::write(path.join(SUMMARY_FILE), "{}").expect("write");
    }

    #[test]
    fn a_directory_with_records_is_a_single_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(RECORDS_FILE), "").expect("write");
        let mode = detect(&[dir.path().to_path_buf()]).expect("detects");
        assert_eq!(mode, Mode::Single(dir.path().to_path_buf()));
    }

    #[test]
    fn a_sweep_and_a_multi_run_are_compared_by_relative_path_in_natural_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for sub in [
            "concurrency_10",
            "concurrency_2",
            "multi/profile_runs/run_0001",
        ] {
            run_dir(&root.join(sub));
        }
        // Aggregates are not runs.
        std::fs::create_dir_all(root.join("sweep_aggregate")).expect("mkdir");
        std::fs::write(
            root.join("sweep_aggregate/profile_export_aiperf_sweep.json"),
            "{}",
        )
        .expect("write");

        let Mode::Multi(runs) = detect(&[root.to_path_buf()]).expect("detects") else {
            panic!("expected a comparison");
        };
        let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "concurrency_2",
                "concurrency_10",
                "multi/profile_runs/run_0001"
            ]
        );
        assert_eq!(runs[1].dir, root.join("concurrency_10"));
    }

    #[test]
    fn several_paths_compare_even_two_plain_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        run_dir(&a);
        run_dir(&b);
        let Mode::Multi(runs) = detect(&[a.clone(), b.clone()]).expect("detects") else {
            panic!("expected a comparison");
        };
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].dir, a);
        // Labelled by what differs: the temporary folder's path is common to both.
        assert_eq!(runs[1].label, "b");
    }

    #[test]
    fn common_leading_components_are_dropped_from_labels() {
        let mut runs: Vec<LabelledRun> = ["/tmp/r/x", "/tmp/r/y/z", "/tmp/r/y/w"]
            .into_iter()
            .map(|label| LabelledRun {
                label: label.into(),
                dir: label.into(),
            })
            .collect();
        strip_common_prefix(&mut runs);
        let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["x", "y/z", "y/w"]);

        let mut same = vec![
            LabelledRun {
                label: "/a/b".into(),
                dir: "/a/b".into()
            };
            2
        ];
        strip_common_prefix(&mut same);
        assert_eq!(same[0].label, "b");
    }

    #[test]
    fn a_directory_without_runs_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = detect(&[dir.path().to_path_buf()]).expect_err("no runs");
        assert!(matches!(error, PlotError::NoRuns(ref p) if p == dir.path()));
    }
}
