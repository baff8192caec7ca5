//! Parameter sweeps from the command line: `--concurrency 1,2,4` (or `--concurrency=1,2,4`)
//! runs one benchmark per value. The command line is expanded before clap parses it:
//! each point is an ordinary command line with scalar values, so every flag keeps its
//! scalar type and its checks.

use clap::CommandFactory;

use crate::args::{Cli, SweepType};

/// The `aiperf profile` flags whose value may be a comma list.
pub(crate) const SWEEP_FLAGS: [&str; 10] = [
    "concurrency",
    "prefill-concurrency",
    "request-rate",
    "request-count",
    "benchmark-duration",
    "num-users",
    "isl",
    "isl-stddev",
    "osl",
    "osl-stddev",
];

/// A command line that cannot be expanded into sweep points (a usage error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SweepError {
    /// A list item is empty, e.g. `1,,2`.
    #[error("--{flag}: empty value in the list {list:?}")]
    EmptyValue {
        /// The flag as written.
        flag: String,
        /// The whole list.
        list: String,
    },
    /// `--sweep-type zip` with lists of different lengths.
    #[error("--sweep-type zip needs comma lists of the same length: {lengths}")]
    ZipLengths {
        /// Each list's flag and length, e.g. `--concurrency has 3 values, --isl has 2`.
        lengths: String,
    },
}

/// A comma list found on the command line.
#[derive(Debug)]
struct SweptList {
    /// The canonical flag name, e.g. `request-count` for `--num-requests`.
    name: &'static str,
    /// The argv index of the token holding the list.
    index: usize,
    /// `Some("--isl")` when written as `--isl=1,2` (the flag is in the same token).
    inline_flag: Option<String>,
    values: Vec<String>,
}

impl SweptList {
    fn set(&self, argv: &mut [String], value: &str) {
        argv[self.index] = match &self.inline_flag {
            Some(flag) => format!("{flag}={value}"),
            None => value.to_owned(),
        };
    }
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SweepPointArgv {
    /// Directory name, e.g. `concurrency_4_isl_128`.
    pub label: String,
    /// Each swept flag (underscored, e.g. `request_rate`) and its value as written.
    pub parameters: Vec<(String, String)>,
    /// The point's command line, every list replaced by one value.
    pub argv: Vec<String>,
}

/// Every spelling (long name and aliases) of the sweep flags, with its canonical name.
fn sweep_flag_spellings() -> Vec<(String, &'static str)> {
    let command = Cli::command();
    let Some(profile) = command.find_subcommand("profile") else {
        return Vec::new();
    };
    let mut spellings = Vec::new();
    for arg in profile.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let Some(&canonical) = SWEEP_FLAGS.iter().find(|&&flag| flag == long) else {
            continue;
        };
        spellings.push((format!("--{long}"), canonical));
        for alias in arg.get_all_aliases().unwrap_or_default() {
            spellings.push((format!("--{alias}"), canonical));
        }
    }
    spellings
}

/// The comma lists of an `aiperf profile` command line (flag spellings normalised).
fn find_lists(argv: &[String]) -> Result<Vec<SweptList>, SweepError> {
    if argv.get(1).map(String::as_str) != Some("profile") {
        return Ok(Vec::new());
    }
    let spellings = sweep_flag_spellings();
    let canonical = |flag: &str| {
        spellings
            .iter()
            .find(|(spelling, _)| spelling == flag)
            .map(|(_, name)| *name)
    };
    let mut lists = Vec::new();
    for (i, token) in argv.iter().enumerate().skip(2) {
        let (flag, index, inline_flag, list) = match token.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag, i, Some(flag.to_owned()), value)
            }
            _ => match argv.get(i + 1) {
                Some(value) if token.starts_with("--") => {
                    (token.as_str(), i + 1, None, value.as_str())
                }
                _ => continue,
            },
        };
        let Some(name) = canonical(flag) else {
            continue;
        };
        if !list.contains(',') {
            continue;
        }
        let values: Vec<String> = list.split(',').map(|v| v.trim().to_owned()).collect();
        if values.iter().any(String::is_empty) {
            return Err(SweepError::EmptyValue {
                flag: flag.trim_start_matches('-').to_owned(),
                list: list.to_owned(),
            });
        }
        lists.push(SweptList {
            name,
            index,
            inline_flag,
            values,
        });
    }
    Ok(lists)
}

/// The command line with every comma list replaced by its first value: what clap parses
/// to check the flags (and read `--sweep-type`) before the points are expanded.
pub(crate) fn first_point(argv: &[String]) -> Result<Vec<String>, SweepError> {
    let mut first = argv.to_vec();
    for list in find_lists(argv)? {
        list.set(&mut first, &list.values[0]);
    }
    Ok(first)
}

/// The sweep points of `argv`, or none when it holds no comma list. Grid points vary
/// the last list fastest.
pub(crate) fn expand(
    argv: &[String],
    sweep_type: SweepType,
) -> Result<Vec<SweepPointArgv>, SweepError> {
    let lists = find_lists(argv)?;
    if lists.is_empty() {
        return Ok(Vec::new());
    }
    let combinations: Vec<Vec<usize>> = match sweep_type {
        SweepType::Zip => {
            let len = lists[0].values.len();
            if lists.iter().any(|l| l.values.len() != len) {
                let lengths: Vec<String> = lists
                    .iter()
                    .map(|l| format!("--{} has {} values", l.name, l.values.len()))
                    .collect();
                return Err(SweepError::ZipLengths {
                    lengths: lengths.join(", "),
                });
            }
            (0..len).map(|i| vec![i; lists.len()]).collect()
        }
        SweepType::Grid => lists.iter().fold(vec![Vec::new()], |partial, list| {
            partial
                .iter()
                .flat_map(|prefix| {
                    (0..list.values.len()).map(move |i| {
                        let mut next = prefix.clone();
                        next.push(i);
                        next
                    })
                })
                .collect()
        }),
    };
    Ok(combinations
        .into_iter()
        .map(|choice| {
            let mut point_argv = argv.to_vec();
            let mut parameters = Vec::with_capacity(lists.len());
            for (list, &i) in lists.iter().zip(&choice) {
                list.set(&mut point_argv, &list.values[i]);
                parameters.push((list.name.replace('-', "_"), list.values[i].clone()));
            }
            let label = parameters
                .iter()
                .map(|(name, value)| format!("{name}_{value}"))
                .collect::<Vec<_>>()
                .join("_");
            SweepPointArgv {
                label,
                parameters,
                argv: point_argv,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_command_line_without_lists_is_no_sweep() {
        let line = argv("aiperf profile -m m --concurrency 4 --extra-inputs a:1,b:2");
        assert!(expand(&line, SweepType::Grid).unwrap().is_empty());
        assert_eq!(first_point(&line).unwrap(), line);
    }

    #[test]
    fn grid_points_vary_the_last_list_fastest() {
        let line = argv("aiperf profile -m m --concurrency 1,2 --isl=64,128 --osl 8");
        let points = expand(&line, SweepType::Grid).unwrap();
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "concurrency_1_isl_64",
                "concurrency_1_isl_128",
                "concurrency_2_isl_64",
                "concurrency_2_isl_128"
            ]
        );
        assert_eq!(
            points[2].argv,
            argv("aiperf profile -m m --concurrency 2 --isl=64 --osl 8")
        );
        assert_eq!(
            points[2].parameters,
            [
                ("concurrency".into(), "2".into()),
                ("isl".into(), "64".into())
            ]
        );
        assert_eq!(
            first_point(&line).unwrap(),
            argv("aiperf profile -m m --concurrency 1 --isl=64 --osl 8")
        );
    }

    #[test]
    fn zip_pairs_the_lists_and_aliases_get_the_canonical_name() {
        let line = argv("aiperf profile --num-requests 10,20 --request-rate 2.5,5");
        let points = expand(&line, SweepType::Zip).unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!(points[1].label, "request_count_20_request_rate_5");
        assert_eq!(
            points[1].argv,
            argv("aiperf profile --num-requests 20 --request-rate 5")
        );
    }

    #[test]
    fn zip_lists_of_different_lengths_are_a_usage_error() {
        let line = argv("aiperf profile --concurrency 1,2,4 --isl 64,128");
        let error = expand(&line, SweepType::Zip).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--sweep-type zip needs comma lists of the same length: \
             --concurrency has 3 values, --isl has 2 values"
        );
    }

    #[test]
    fn an_empty_list_item_is_a_usage_error() {
        let line = argv("aiperf profile --concurrency 1,,2");
        assert_eq!(
            first_point(&line).unwrap_err().to_string(),
            "--concurrency: empty value in the list \"1,,2\""
        );
    }
}
