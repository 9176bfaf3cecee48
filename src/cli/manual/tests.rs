use super::*;

fn page() -> String {
    let mut out = Vec::new();
    man_page(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_page_has_a_section_for_each_subcommand_with_its_flags() {
    let page = page();
    for heading in [
        ".SH \"WORKER RUN\"",
        ".SH \"WORKER TRACE PERFETTO\"",
        ".SH \"WORKER COMPLETIONS\"",
        ".SH \"WORKER MAN\"",
    ] {
        assert!(page.contains(heading), "{heading} missing:\n{page}");
    }
    let run = &page[page.find(".SH \"WORKER RUN\"").unwrap()..];
    assert!(run.contains("\\-\\-model"), "{run}");
    assert!(run.contains("WORKER_MODEL"), "{run}");
}

#[test]
fn every_run_flag_of_the_parser_is_on_the_page() {
    let page = page();
    let mut command = Cli::command();
    command.build();
    let run = command.find_subcommand("run").unwrap();
    for arg in run.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(long) = arg.get_long() else { continue };
        let roff = format!("\\-\\-{}", long.replace('-', "\\-"));
        assert!(page.contains(&roff), "--{long} is not on the page");
    }
}

#[test]
fn completions_name_the_subcommands_and_flags_in_every_shell() {
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
        let script = String::from_utf8(completions(shell)).unwrap();
        for word in ["worker", "run", "--model", "--sandbox", "perfetto"] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
    }
}
