//! `docs/cli.md`: the command-line reference, generated from the clap definitions so it
//! never drifts from the binary. A test fails when the file is stale; regenerate it with
//! `AIPERF_UPDATE_DOCS=1 cargo test -p aiperf-cli cli_docs`.

use std::fmt::Write;

use clap::{Arg, Command};

/// The Markdown reference of `command` and its subcommands.
pub(crate) fn render(command: &Command) -> String {
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the clap definitions by `aiperf-cli/src/cli_docs.rs`; do not edit by \
         hand.\n",
    );
    for sub in command.get_subcommands() {
        render_subcommand(&mut out, command.get_name(), sub);
    }
    out
}

fn render_subcommand(out: &mut String, parent: &str, command: &Command) {
    let name = format!("{parent} {}", command.get_name());
    let _ = write!(out, "\n## `{name}`\n\n");
    if let Some(about) = command.get_about() {
        let _ = writeln!(out, "{about}\n");
    }
    let mut heading: Option<&str> = None;
    let mut table_open = false;
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        if arg.get_id() == "help" || arg.get_id() == "version" {
            continue;
        }
        if !table_open || arg.get_help_heading() != heading {
            heading = arg.get_help_heading();
            let _ = write!(
                out,
                "\n{}| option | default | description |\n| --- | --- | --- |\n",
                heading.map(|h| format!("### {h}\n\n")).unwrap_or_default()
            );
            table_open = true;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            spelling(arg),
            default(arg),
            help(arg)
        );
    }
}

/// `--flag` with its short form and aliases, or `<NAME>` for a positional argument.
fn spelling(arg: &Arg) -> String {
    let Some(long) = arg.get_long() else {
        return format!("`<{}>`", arg.get_id().as_str().to_uppercase());
    };
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("`-{short}`"));
    }
    names.push(format!("`--{long}`"));
    for alias in arg.get_visible_aliases().into_iter().flatten() {
        names.push(format!("`--{alias}`"));
    }
    names.join(", ")
}

fn default(arg: &Arg) -> String {
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    values.join(", ")
}

/// The help text on one line, pipes escaped, with the choices of an enum argument.
fn help(arg: &Arg) -> String {
    let mut text = arg
        .get_help()
        .map(std::string::ToString::to_string)
        .unwrap_or_default()
        .replace('\n', " ")
        .replace('|', "\\|");
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !choices.is_empty() && arg.get_action().takes_values() {
        if !text.is_empty() && !text.ends_with('.') {
            text.push('.');
        }
        let _ = write!(text, " One of {}.", choices.join(", "));
    }
    text
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::args::Cli;

    #[test]
    fn cli_docs_are_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
        let generated = super::render(&Cli::command());
        if std::env::var_os("AIPERF_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == generated,
            "docs/cli.md is stale: run `AIPERF_UPDATE_DOCS=1 cargo test -p aiperf-cli cli_docs`"
        );
    }
}
