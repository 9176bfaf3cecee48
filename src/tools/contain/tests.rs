//! The containment starts a command as std would have: the same program, arguments and
//! environment, and the same error when the program cannot be started.

use super::*;
use crate::tools::POSIX_SHELL;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

/// `command` run to its end, contained or not.
fn output(mut command: Command, contained: bool) -> std::io::Result<Output> {
    if contained {
        Containment::new().apply(&mut command);
    }
    command.output()
}

/// `/bin/sh` printing its arguments and its whole environment, which holds two variables
/// only (and the few a shell adds by itself, alike in both runs).
fn reporting_shell() -> Command {
    let mut command = Command::new(POSIX_SHELL);
    command
        .args([
            "-c",
            "printf '%s|' \"$0\" \"$1\" \"$#\"; echo; env | sort",
            "zero",
            "one",
        ])
        .env_clear()
        .env("WORKER_TEST_A", "1")
        .env("WORKER_TEST_B", "two words");
    command
}

#[test]
fn a_contained_shell_gets_the_arguments_and_environment_std_would_give_it() {
    let direct = output(reporting_shell(), false).unwrap();
    let contained = output(reporting_shell(), true).unwrap();
    let text = String::from_utf8_lossy(&contained.stdout);
    assert!(contained.status.success(), "{contained:?}");
    assert!(text.starts_with("zero|one|1|\n"), "{text}");
    assert!(text.contains("WORKER_TEST_A=1\n"), "{text}");
    assert!(text.contains("WORKER_TEST_B=two words\n"), "{text}");
    assert_eq!(text, String::from_utf8_lossy(&direct.stdout));
}

#[test]
fn a_program_that_cannot_be_started_fails_the_spawn_with_the_error_std_gives() {
    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("script");
    std::fs::write(&not_executable, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&not_executable, std::fs::Permissions::from_mode(0o644)).unwrap();
    for program in [dir.path().join("missing"), not_executable] {
        let spawn = |contained| {
            let mut command = Command::new(&program);
            command.env_clear();
            output(command, contained)
        };
        let direct = spawn(false).unwrap_err();
        let contained = spawn(true).unwrap_err();
        assert_eq!(
            contained.raw_os_error(),
            direct.raw_os_error(),
            "{program:?}: {contained} against {direct}"
        );
    }
}

#[test]
fn a_program_found_on_path_is_started_by_std_and_still_contained() {
    let mut command = Command::new("sh");
    command
        .args(["-c", "echo $PPID"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    let contained = output(command, true).unwrap();
    assert!(contained.status.success(), "{contained:?}");
    // The shell's parent is the containment's init (pid 1 in a namespace of its own, a pid of
    // the host's as a subreaper), never the process that spawned it.
    let parent: u32 = String::from_utf8_lossy(&contained.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_ne!(parent, std::process::id(), "started without containment");
}

#[test]
fn the_exit_status_and_a_deadly_signal_come_back_as_the_shells() {
    use std::os::unix::process::ExitStatusExt;
    let run = |script: &str| {
        let mut command = Command::new(POSIX_SHELL);
        command.args(["-c", script]).env_clear();
        output(command, true).unwrap().status
    };
    assert_eq!(run("exit 7").code(), Some(7));
    assert_eq!(run("kill -TERM $$").signal(), Some(libc::SIGTERM));
}
