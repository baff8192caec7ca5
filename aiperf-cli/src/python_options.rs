//! Every option of the Python AIPerf 0.13's `aiperf profile` is either a real flag here or
//! deliberately refused (see `args/refused.rs`): a 0.13 command line never meets clap's
//! "unexpected argument". The option list is a fixture generated from 0.13's `--help`.

use std::collections::BTreeSet;

use clap::{ArgAction, CommandFactory, Parser};

use crate::args::refused::REFUSED;
use crate::args::Cli;

/// `section<TAB>names` lines, `#` comments.
const PYTHON_OPTIONS: &str =
    include_str!("../../tests/fixtures/python_aiperf_0.13_profile_options.tsv");

/// The option names of the fixture, e.g. `--model-names`, `-m`.
fn python_option_names() -> Vec<String> {
    PYTHON_OPTIONS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .flat_map(|line| {
            let (_section, names) = line.split_once('\t').expect("section<TAB>names");
            names.split_whitespace().map(str::to_owned)
        })
        .collect()
}

/// The names `aiperf profile` offers as real flags: `--long`, its aliases, `-s`, and
/// `-ss…` for a counted short flag (`-vv`).
fn supported_names() -> BTreeSet<String> {
    let cli = Cli::command();
    let profile = cli
        .find_subcommand("profile")
        .expect("a profile subcommand");
    let refused: BTreeSet<&str> = REFUSED.iter().map(|option| option.name).collect();
    let mut names = BTreeSet::new();
    for arg in profile.get_arguments() {
        if refused.contains(arg.get_id().as_str()) {
            continue;
        }
        let longs = arg
            .get_long()
            .into_iter()
            .chain(arg.get_all_aliases().unwrap_or_default());
        names.extend(longs.map(|long| format!("--{long}")));
        let shorts = arg
            .get_short()
            .into_iter()
            .chain(arg.get_all_short_aliases().unwrap_or_default());
        for short in shorts {
            names.insert(format!("-{short}"));
            if matches!(arg.get_action(), ArgAction::Count) {
                names.insert(format!("-{short}{short}"));
            }
        }
    }
    names
}

#[test]
fn every_python_option_is_supported_or_refused() {
    let supported = supported_names();
    let refused: BTreeSet<String> = REFUSED
        .iter()
        .map(|option| format!("--{}", option.name))
        .collect();
    let python = python_option_names();
    assert_eq!(python.len(), 317, "the fixture's option names");
    let unhandled: Vec<&String> = python
        .iter()
        .filter(|name| !supported.contains(*name) && !refused.contains(*name))
        .collect();
    assert!(
        unhandled.is_empty(),
        "Python AIPerf 0.13 options neither supported nor refused: {unhandled:?}"
    );
}

#[test]
fn only_python_options_are_refused_and_none_is_also_supported() {
    let python: BTreeSet<String> = python_option_names().into_iter().collect();
    let supported = supported_names();
    for option in REFUSED {
        let name = format!("--{}", option.name);
        assert!(python.contains(&name), "{name} is not a 0.13 option");
        assert!(
            !supported.contains(&name),
            "{name} is both supported and refused"
        );
    }
}

#[test]
fn a_refused_option_is_parsed_with_its_values_and_named_with_its_reason() {
    let argv = [
        "aiperf",
        "profile",
        "-m",
        "m",
        "--mlflow-tag",
        "team=a",
        "env=b",
        "--zmq-dual-bind",
        "--isl",
        "5",
    ];
    let crate::args::Command::Profile(args) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("expected the profile subcommand");
    };
    assert_eq!(args.input.isl, 5);
    assert_eq!(
        args.refused.used.expect("a refused option").to_string(),
        "--mlflow-tag (a Python AIPerf option) is not available in aiperf-rs: the \
         OpenTelemetry, MLflow and Weights & Biases exporters are not available; upload the \
         run's JSON, CSV or Parquet artifacts (profile_export_aiperf.json, \
         profile_export_aiperf.csv, profile_export.parquet) instead."
    );
}

#[test]
fn a_command_line_without_refused_options_has_no_refusal() {
    let argv = ["aiperf", "profile", "-m", "m", "--streaming"];
    let crate::args::Command::Profile(args) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("expected the profile subcommand");
    };
    assert!(args.refused.used.is_none());
}
