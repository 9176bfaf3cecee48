//! The README's flag table, rendered from the clap definitions so the manual cannot drift from
//! `--help`: flag, environment variable, default and meaning all come from [`super::Cli`].
//! A test compares it with README.md; `WORKER_BLESS=README.md cargo test --lib flag_table` rewrites it
//! and prints the diff (see [`crate::bless`]).

use clap::{Arg, CommandFactory};

use super::Cli;

/// Marks the generated table in README.md.
pub const BEGIN: &str = "<!-- flags: generated from src/cli/mod.rs -->";
/// Marks the end of the generated table in README.md.
pub const END: &str = "<!-- /flags -->";

/// The Markdown table of `worker run`'s flags.
pub fn flag_table() -> String {
    let mut command = Cli::command();
    command.build();
    let run = command
        .get_subcommands()
        .find(|sub| sub.get_name() == "run")
        .cloned()
        .unwrap_or_default();
    let mut table = String::from("| flag | env | default | meaning |\n|---|---|---|---|\n");
    for arg in run.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(long) = arg.get_long() else { continue };
        if long == "help" {
            continue;
        }
        let (meaning, default) = meaning_and_default(arg);
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            code(&flag(arg, long)),
            arg.get_env()
                .map_or(String::new(), |env| code(&env.to_string_lossy())),
            default,
            meaning.replace('|', "\\|"),
        ));
    }
    table
}

fn flag(arg: &Arg, long: &str) -> String {
    let short = arg.get_short().map_or(String::new(), |s| format!("-{s}, "));
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let value = match arg.get_value_names() {
        Some(names) if takes_value => format!(" <{}>", names.join(" ")),
        _ => String::new(),
    };
    let aliases: String = arg
        .get_visible_aliases()
        .unwrap_or_default()
        .iter()
        .map(|alias| format!(", --{alias}"))
        .collect();
    format!("{short}--{long}{aliases}{value}")
}

/// The help text, and the default: clap's own, else one the text states as
/// `[default: …]`, else "—".
fn meaning_and_default(arg: &Arg) -> (String, String) {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(std::string::ToString::to_string)
        .unwrap_or_default();
    let mut help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let possible = arg.get_possible_values();
    if takes_value && !possible.is_empty() {
        let names: Vec<&str> = possible
            .iter()
            .map(clap::builder::PossibleValue::get_name)
            .collect();
        help.push_str(&format!(": {}", names.join(", ")));
    }
    // Markdown would take `<id>` for an HTML tag.
    let help = help.replace('<', "&lt;");
    if let Some(default) = arg.get_default_values().first() {
        return (help, code(&default.to_string_lossy()));
    }
    match help.split_once(" [default: ") {
        Some((text, rest)) => (text.to_string(), rest.trim_end_matches(']').to_string()),
        None if arg.is_required_set() => (help, "required".to_string()),
        None => (help, "—".to_string()),
    }
}

fn code(text: &str) -> String {
    format!("`{}`", text.replace('|', "\\|"))
}

#[cfg(test)]
mod tests;
