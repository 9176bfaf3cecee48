//! The command-line conventions agentic-pi users and packagers expect: shell completions and a
//! manual page generated from the same clap definitions as `--help`, and the committed
//! `man/worker.1` equal to what the binary prints (`WORKER_BLESS=man/worker.1` rewrites it); and tool
//! results whose `details` have the shapes of Pi's tools.

use std::process::{Command, Stdio};

use crate::support::mock_llm::{MockLlm, answer, call};
use crate::support::{Run, run_dynamo, worker_command};

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
    if worker::bless::bless(env!("CARGO_MANIFEST_DIR").as_ref(), "man/worker.1", &page)
        .unwrap_or_else(|err| panic!("{err}"))
    {
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == page,
        "man/worker.1 differs from `worker man`; run WORKER_BLESS=man/worker.1 cargo test --test it parity_cli and review the diff it prints"
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

// ── Tool result details, as Pi's tools shape them (agentic-pi's emitter.test.ts and
// run.integration.test.ts replay them from message_start/message_end and tool_execution_end).

/// The tool result's message_start, message_end and tool_execution_end, for one call.
fn tool_result_events(dir: &std::path::Path, tool: &str, args: &str) -> Run {
    let mock = MockLlm::start(vec![call("c1", tool, args), answer("done")]);
    let run = run_dynamo(dir, &mock.url, &[], "go");
    run.assert_code(0);
    run
}

fn result_messages<'a>(run: &'a Run, kind: &str) -> Vec<&'a serde_json::Value> {
    run.all(kind)
        .into_iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| &e["message"])
        .collect()
}

#[test]
fn emitter_test_edit_results_carry_pis_diff_patch_and_first_changed_line() {
    let dir = tempfile::tempdir().unwrap();
    let before: String = (1..=20).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), &before).unwrap();
    let run = tool_result_events(
        dir.path(),
        "edit",
        r#"{"path":"f.txt","edits":[{"oldText":"line 10\n","newText":"line ten\n"}]}"#,
    );
    let ends = result_messages(&run, "message_end");
    let starts = result_messages(&run, "message_start");
    assert_eq!((ends.len(), starts.len()), (1, 1));
    let details = &ends[0]["details"];
    assert_eq!(
        details["diff"],
        "    ...\n  6 line 6\n  7 line 7\n  8 line 8\n  9 line 9\n-10 line 10\n+10 line ten\n 11 line 11\n 12 line 12\n 13 line 13\n 14 line 14\n    ..."
    );
    let patch = details["patch"].as_str().unwrap();
    assert!(
        patch.starts_with("--- f.txt\n+++ f.txt\n@@ -6,9 +6,9 @@\n"),
        "{patch}"
    );
    assert!(patch.contains("\n-line 10\n+line ten\n"), "{patch}");
    assert_eq!(details["firstChangedLine"], 10);
    assert_eq!(
        details.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["diff", "patch", "firstChangedLine"]
    );
    // The same details on the message's start and end and on the tool's end.
    assert_eq!(&starts[0]["details"], details);
    assert_eq!(
        &run.first("tool_execution_end")["result"]["details"],
        details
    );
}

#[test]
fn run_integration_test_a_write_result_has_no_details_as_in_pis_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    let run = tool_result_events(
        dir.path(),
        "write",
        r#"{"path":"hello.txt","content":"hello from the sandbox vm\n"}"#,
    );
    let end = result_messages(&run, "message_end")[0];
    assert_eq!(
        end["content"][0]["text"],
        "Successfully wrote 26 bytes to hello.txt"
    );
    assert!(end.get("details").is_none(), "{end}");
    let tool_end = run.first("tool_execution_end");
    assert!(tool_end["result"].get("details").is_none(), "{tool_end}");
}

#[test]
fn emitter_test_a_truncated_read_reports_pis_truncation_details() {
    let dir = tempfile::tempdir().unwrap();
    let long: String = (1..=3000).map(|n| format!("{n}\n")).collect();
    std::fs::write(dir.path().join("long.txt"), long).unwrap();
    let run = tool_result_events(dir.path(), "read", r#"{"path":"long.txt"}"#);
    let details = &result_messages(&run, "message_end")[0]["details"];
    let truncation = &details["truncation"];
    for (field, expected) in [
        ("truncated", serde_json::json!(true)),
        ("truncatedBy", serde_json::json!("lines")),
        ("totalLines", serde_json::json!(3000)),
        ("outputLines", serde_json::json!(2000)),
        ("maxLines", serde_json::json!(2000)),
        ("maxBytes", serde_json::json!(50 * 1024)),
    ] {
        assert_eq!(truncation[field], expected, "{field}: {truncation}");
    }
    assert_eq!(
        &run.first("tool_execution_end")["result"]["details"],
        details
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_integration_test_a_github_result_has_empty_details_as_in_the_read_profile_fixture() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let github = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r/pulls"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!([])))
        .expect(1)
        .mount(&github)
        .await;
    let api = github.uri();
    let run = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockLlm::start(vec![
            call(
                "c1",
                "github_list_pull_requests",
                r#"{"owner":"o","repo":"r"}"#,
            ),
            answer("none open"),
        ]);
        crate::support::run_worker(
            dir.path(),
            &["--model", "dynamo/m", "--profile", "read"],
            "list the pull requests",
            &[
                ("DYNAMO_BASE_URL", &mock.url),
                ("GITHUB_TOKEN", "ghp_testtoken123"),
                ("GITHUB_API_URL", &api),
            ],
        )
    })
    .await
    .unwrap();
    run.assert_code(0);
    // As phase2-smoke-github-read-profile.jsonl records it.
    for kind in ["message_start", "message_end"] {
        let message = result_messages(&run, kind)[0];
        assert_eq!(message["content"][0]["text"], "[]", "{message}");
        assert_eq!(
            message["details"],
            serde_json::json!({}),
            "{kind}: {message}"
        );
    }
    let end = run.first("tool_execution_end");
    assert_eq!(end["result"]["details"], serde_json::json!({}), "{end}");
}
