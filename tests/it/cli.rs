//! The command line: help, version, and every usage error (exit 2, stderr only, no stdout).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::mock_llm::{MockLlm, answer};
use crate::support::{Run, run_worker, worker_command};

fn usage_error(args: &[&str], stdin: &[u8]) -> (String, String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = worker_command(dir.path());
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // The process may exit (usage error) before reading stdin; a broken pipe is expected.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn assert_usage_error(args: &[&str], stdin: &[u8], message: &str) {
    let (stdout, stderr, code) = usage_error(args, stdin);
    assert_eq!(code, 2, "{args:?}: stderr {stderr}");
    assert_eq!(stdout, "", "{args:?}: nothing on stdout");
    assert!(
        stderr.contains(message),
        "{args:?}: expected {message:?} in {stderr:?}"
    );
}

#[test]
fn version_and_help_go_to_stdout_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = worker_command(dir.path())
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("worker {}\n", env!("CARGO_PKG_VERSION"))
    );

    let out = worker_command(dir.path())
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "--model <PROVIDER/ID>",
        "[env: WORKER_MODEL=]",
        "--max-retries <N>",
        "[default: 5]",
        "--timeout <DURATION>",
        "[env: WORKER_TIMEOUT=]",
        "--bash-timeout <DURATION>",
        "[default: 600s]",
        "--record <FILE>",
        "Exit codes:",
        "143  terminated by SIGTERM",
    ] {
        assert!(help.contains(expected), "help lacks {expected:?}:\n{help}");
    }
}

#[test]
fn bad_flags_and_models_are_usage_errors() {
    assert_usage_error(&["run"], b"q", "--model <PROVIDER/ID>");
    assert_usage_error(
        &["run", "--model", "gpt4"],
        b"q",
        "worker: --model must be 'provider/id', got 'gpt4'\n",
    );
    assert_usage_error(
        &["run", "--model", "vertex/gemini"],
        b"q",
        "worker: unknown provider 'vertex' in --model 'vertex/gemini'; expected dynamo, openai, anthropic, openrouter, replay, or a name from --providers\n",
    );
    assert_usage_error(
        &["run", "--model", "dynamo/m", "--timeout", "soon"],
        b"q",
        "invalid duration 'soon'",
    );
    assert_usage_error(
        &["run", "--model", "dynamo/m", "--max-turns", "0"],
        b"q",
        "worker: --max-turns must be at least 1\n",
    );
    assert_usage_error(
        &["run", "--model", "dynamo/m", "--cwd", "/no/such/dir"],
        b"q",
        "worker: --cwd /no/such/dir: no such directory\n",
    );
    assert_usage_error(
        &["run", "--model", "dynamo/m", "--tools", "read,teleport"],
        b"q",
        "worker: unknown tool in --tools: teleport. Available: read, write, edit, bash, grep, find, ls, hashline_edit, multi_grep\n",
    );
    assert_usage_error(
        &[
            "run",
            "--model",
            "dynamo/m",
            "--system-prompt",
            "@/no/such/file",
        ],
        b"q",
        "worker: --system-prompt @/no/such/file: No such file",
    );
    assert_usage_error(
        &["run", "--model", "replay/missing.jsonl"],
        b"q",
        "worker: --model: cannot read fixture missing.jsonl: ",
    );
    assert_usage_error(&["fly"], b"q", "unrecognized subcommand 'fly'");
}

#[test]
fn empty_blank_and_non_utf8_prompts_are_usage_errors() {
    let args = ["run", "--model", "dynamo/m"];
    assert_usage_error(
        &args,
        b"",
        "worker: empty prompt: pipe the prompt into stdin",
    );
    assert_usage_error(&args, b"  \n\t\n", "worker: empty prompt");
    assert_usage_error(
        &args,
        b"fix \xC3\x28 this",
        "worker: stdin is not valid UTF-8 (invalid byte at offset 4)\n",
    );
}

#[test]
fn a_prompt_argument_goes_before_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m", "review this"],
        "diff --git a b\n",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    assert_eq!(
        run.all("message_end")[0]["message"]["content"][0]["text"],
        "review this\n\n<stdin>\ndiff --git a b\n</stdin>"
    );
}

#[test]
fn a_prompt_argument_never_waits_forever_on_a_silent_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let mut cmd = worker_command(dir.path());
    cmd.args(["run", "--model", "dynamo/m", "just this"])
        .env("DYNAMO_BASE_URL", &mock.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    // Hold stdin open and never write to it.
    let held = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    drop(held);
    let run = Run::from_output(out);
    run.assert_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        run.all("message_end")[0]["message"]["content"][0]["text"],
        "just this"
    );
}

#[test]
fn a_bom_is_stripped_from_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run_worker(
        dir.path(),
        &["--model", "dynamo/m"],
        "\u{FEFF}hello",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    run.assert_code(0);
    assert_eq!(mock.requests()[0].body["messages"][1]["content"], "hello");
}

#[test]
fn a_terminal_on_stdin_is_a_usage_error_not_a_wait() {
    // `script` gives the command a pseudo-terminal as stdin (and stdout).
    if let Err(err) = Command::new("script").arg("--version").output() {
        panic!("script(1) is needed for this test (Debian: bsdutils, elsewhere util-linux): {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{} run --model dynamo/m", env!("CARGO_BIN_EXE_worker"));
    let started = Instant::now();
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("worker: empty prompt: pipe the prompt into stdin"),
        "{text}"
    );
    // Waiting for the terminal would never end on its own; 20 s is far beyond a start-up on a
    // loaded two-core machine, so only a wait can cross it.
    assert!(started.elapsed() < Duration::from_secs(20));
}
