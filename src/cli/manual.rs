//! Shell completions and the manual page, generated from the clap definitions in
//! [`super::Cli`] (like `--help` and the README's flag table), so none of them can drift from
//! the parser. `man/worker.1` in the repository is this page; a test compares the two.
//!
//! The page is one file, so `man worker` shows every flag of `worker run`: clap_mangen's
//! sections for `worker` itself, then one section per subcommand (its synopsis, description
//! and options as subsections), then the exit codes.

use std::io::{self, Write};

use clap::CommandFactory;
use clap_mangen::Man;

pub use clap_complete::Shell;

use super::Cli;

/// The name completions and the page are written for, whatever the binary was invoked as.
const NAME: &str = "worker";

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    // Generated into memory: the generators panic on a failed write.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), NAME, &mut script);
    script
}

/// The manual page, as roff.
pub fn man_page(out: &mut dyn Write) -> io::Result<()> {
    let mut page = Vec::new();
    render(&mut page)?;
    out.write_all(&once_preamble(&String::from_utf8_lossy(&page)).into_bytes())
}

fn render(out: &mut dyn Write) -> io::Result<()> {
    let mut command = Cli::command().name(NAME);
    command.build();
    let page = Man::new(command.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    for sub in leaves(&command) {
        let path = sub.get_bin_name().unwrap_or_else(|| sub.get_name());
        writeln!(out, ".SH \"{}\"", path.to_uppercase())?;
        let page = Man::new(with_aliases_in_help(sub.clone()));
        let mut section = Vec::new();
        page.render_synopsis_section(&mut section)?;
        page.render_description_section(&mut section)?;
        if sub.get_arguments().any(|arg| !arg.is_hide_set()) {
            page.render_options_section(&mut section)?;
        }
        // The subcommand's own headings are subsections of its section.
        out.write_all(&demote_headings(&section))?;
    }
    // The after-help text is the list of exit codes.
    let mut exit_codes = Vec::new();
    page.render_extra_section(&mut exit_codes)?;
    let exit_codes =
        String::from_utf8_lossy(&exit_codes).replacen(".SH EXTRA", ".SH \"EXIT STATUS\"", 1);
    out.write_all(exit_codes.as_bytes())?;
    page.render_version_section(out)
}

/// Every subcommand that takes no further subcommand, depth first, in definition order.
fn leaves(command: &clap::Command) -> Vec<&clap::Command> {
    let mut found = Vec::new();
    // clap's generated `help` subcommands only repeat the others.
    let shown = |sub: &&clap::Command| !sub.is_hide_set() && sub.get_name() != "help";
    for sub in command.get_subcommands().filter(shown) {
        if sub.has_subcommands() {
            found.extend(leaves(sub));
        } else {
            found.push(sub);
        }
    }
    found
}

/// clap_mangen leaves visible aliases out (`--variant` for `--thinking`); the help says them,
/// as `--help` does.
fn with_aliases_in_help(command: clap::Command) -> clap::Command {
    command.mut_args(|arg| {
        let aliases: Vec<String> = arg
            .get_visible_aliases()
            .unwrap_or_default()
            .iter()
            .map(|alias| format!("--{alias}"))
            .collect();
        if aliases.is_empty() {
            return arg;
        }
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        arg.long_help(format!("{help} [aliases: {}]", aliases.join(", ")))
    })
}

/// Every part clap_mangen renders starts with the same two-line string definition; the page
/// needs it once, at the top.
fn once_preamble(page: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    page.lines()
        .filter(|line| {
            !(line.starts_with(".ie ") || line.starts_with(".el ")) || seen.insert(*line)
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

fn demote_headings(roff: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(roff);
    text.lines()
        .map(|line| match line.strip_prefix(".SH ") {
            Some(heading) => format!(".SS {heading}\n"),
            None => format!("{line}\n"),
        })
        .collect::<String>()
        .into_bytes()
}

#[cfg(test)]
mod tests;
