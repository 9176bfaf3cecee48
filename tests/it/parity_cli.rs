//! The command-line conventions agentic-pi users and packagers expect: shell completions and a
//! manual page generated from the same clap definitions as `--help`, and the committed
//! `man/worker.1` equal to what the binary prints (`WORKER_BLESS=1` rewrites it).

use std::process::{Command, Stdio};

use crate::support::worker_command;

fn worker(args: &[&str]) -> (String, String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = worker_command(dir.path()).args(args).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn the_committed_man_page_is_the_one_worker_man_prints() {
    let (page, stderr, code) = worker(&["man"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/man/worker.1");
    if std::env::var_os("WORKER_BLESS").is_some() {
        std::fs::write(path, &page).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == page,
        "man/worker.1 differs from `worker man`; run WORKER_BLESS=1 cargo test --test it parity_cli and review"
    );
}

#[test]
fn the_man_page_documents_every_run_flag_that_help_shows() {
    let (page, _, _) = worker(&["man"]);
    let (help, _, code) = worker(&["run", "--help"]);
    assert_eq!(code, 0);
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .map(|word| word.trim_end_matches([',', '.', ')', ']', ';', ':']))
        .filter(|flag| {
            flag[2..]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-')
        })
        .collect();
    assert!(flags.len() > 50, "{flags:?}");
    for flag in flags {
        let roff = flag.replace('-', "\\-");
        assert!(
            page.contains(&roff),
            "{flag} is in --help but not in `worker man`"
        );
    }
    for section in [".SH \"WORKER RUN\"", ".SH \"EXIT STATUS\"", "WORKER_MODEL"] {
        assert!(page.contains(section), "{section} missing from the page");
    }
}

#[test]
fn the_man_page_does_not_show_the_environment_it_was_made_in() {
    let dir = tempfile::tempdir().unwrap();
    let out = worker_command(dir.path())
        .arg("man")
        .env("WORKER_MODEL", "openai/secret-model-name")
        .env("OPENAI_API_KEY", "sk-never-in-the-manual")
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(!page.contains("secret-model-name") && !page.contains("sk-never"));
    let (clean, _, _) = worker(&["man"]);
    assert_eq!(page, clean);
}

/// What bash completes after `words`, with the script `worker completions bash` printed.
fn bash_completes(words: &str) -> Vec<String> {
    let (script, stderr, code) = worker(&["completions", "bash"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("worker.bash");
    std::fs::write(&script_path, script).unwrap();
    let driver = format!(
        "source {}\nCOMP_WORDS=({words})\nCOMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\nCOMP_POINT=${{#COMP_LINE}}\n\
         _worker worker \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script_path.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &driver])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_run_flags() {
    let subcommands = bash_completes("worker ''");
    for expected in ["run", "trace", "completions", "man"] {
        assert!(
            subcommands.contains(&expected.to_string()),
            "{subcommands:?}"
        );
    }
    let flags = bash_completes("worker run --otel-");
    for expected in [
        "--otel-endpoint",
        "--otel-service-name",
        "--otel-include-content",
    ] {
        assert!(flags.contains(&expected.to_string()), "{flags:?}");
    }
    assert!(
        flags.iter().all(|flag| flag.starts_with("--otel-")),
        "{flags:?}"
    );
    let shells = bash_completes("worker completions ''");
    for expected in ["bash", "zsh", "fish", "powershell"] {
        assert!(shells.contains(&expected.to_string()), "{shells:?}");
    }
}

#[test]
fn completions_exist_for_zsh_fish_and_powershell() {
    for (shell, marker) in [
        ("zsh", "#compdef worker"),
        ("fish", "complete -c worker"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (script, stderr, code) = worker(&["completions", shell]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{shell}");
        assert!(script.contains(marker), "{shell}: {marker} missing");
        assert!(script.contains("--sandbox"), "{shell}: run's flags missing");
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let (stdout, stderr, code) = worker(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert!(stderr.contains("invalid value 'tcsh'"), "{stderr}");
    assert!(
        stderr.contains("bash, elvish, fish, powershell, zsh"),
        "{stderr}"
    );
}

#[test]
fn a_reader_that_goes_away_ends_the_man_page_with_141() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = worker_command(dir.path())
        .arg("man")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    // The page may fit in the pipe before the reader closes it; a write after that is 141.
    assert!(matches!(out.status.code(), Some(0 | 141)), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("internal error"));
}
