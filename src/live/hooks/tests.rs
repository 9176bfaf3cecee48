use super::*;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

const LONG: Duration = Duration::from_secs(20);

/// A tempdir that holds the hook script and is the hook's cwd.
struct Fixture {
    dir: tempfile::TempDir,
    tool_input: Value,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            tool_input: json!({"command": "ls -la"}),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cwd(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    /// A hook running `script` with `sh`, from a file in the tempdir.
    fn hook(&self, script: &str) -> HookProgram {
        let file = self.path("guard.sh");
        std::fs::write(&file, script).unwrap();
        HookProgram::new(format!("sh {}", file.display()))
    }

    fn input(&self) -> PreToolUse<'_> {
        PreToolUse {
            session_id: "session-1",
            cwd: self.cwd(),
            tool_name: "bash",
            tool_input: &self.tool_input,
            tool_use_id: "call-1",
        }
    }

    async fn pre(&self, script: &str) -> Verdict {
        self.hook(script)
            .pre_tool(&self.input(), self.dir.path(), LONG)
            .await
    }

    fn pid_in(&self, name: &str) -> i32 {
        let text = std::fs::read_to_string(self.path(name)).expect("the hook wrote its pid file");
        text.trim().parse().unwrap()
    }
}

fn failed(verdict: Verdict) -> String {
    match verdict {
        Verdict::Failed { reason } => reason,
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// Gone, or a zombie nobody reaped yet: either way it runs no more.
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

async fn dies_soon(pid: i32) -> bool {
    for _ in 0..40 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn exit_0_without_output_allows() {
    let f = Fixture::new();
    assert_eq!(
        f.pre("exit 0").await,
        Verdict::Allow {
            updated_input: None
        }
    );
}

#[tokio::test]
async fn plain_text_stdout_allows() {
    let f = Fixture::new();
    assert_eq!(
        f.pre("echo 'looks fine to me'").await,
        Verdict::Allow {
            updated_input: None
        }
    );
}

#[tokio::test]
async fn hook_specific_deny_carries_its_reason() {
    let f = Fixture::new();
    let verdict = f
        .pre(
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm here"}}'"#,
        )
        .await;
    assert_eq!(
        verdict,
        Verdict::Deny {
            reason: "no rm here".into()
        }
    );
}

#[tokio::test]
async fn a_deny_without_reason_names_the_hook() {
    let f = Fixture::new();
    let verdict = f
        .pre(r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'"#)
        .await;
    let Verdict::Deny { reason } = verdict else {
        panic!("expected Deny, got {verdict:?}");
    };
    assert!(
        reason.starts_with("denied by pre-tool hook `sh "),
        "{reason}"
    );
}

#[tokio::test]
async fn the_older_decision_block_denies() {
    let f = Fixture::new();
    let verdict = f
        .pre(r#"echo '{"decision":"block","reason":"not on main"}'"#)
        .await;
    assert_eq!(
        verdict,
        Verdict::Deny {
            reason: "not on main".into()
        }
    );
}

#[tokio::test]
async fn ask_asks_with_its_reason() {
    let f = Fixture::new();
    let verdict = f
        .pre(r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touches prod"}}'"#)
        .await;
    assert_eq!(
        verdict,
        Verdict::Ask {
            reason: Some("touches prod".into())
        }
    );
}

#[tokio::test]
async fn updated_input_replaces_the_arguments() {
    let f = Fixture::new();
    let verdict = f
        .pre(r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}}}'"#)
        .await;
    assert_eq!(
        verdict,
        Verdict::Allow {
            updated_input: Some(json!({"command": "ls"}))
        }
    );
}

#[tokio::test]
async fn a_non_object_updated_input_fails() {
    let f = Fixture::new();
    let reason = failed(
        f.pre(
            r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":"ls"}}'"#,
        )
        .await,
    );
    assert!(
        reason.contains("updatedInput is not a JSON object"),
        "{reason}"
    );
}

#[tokio::test]
async fn an_unknown_permission_decision_fails() {
    let f = Fixture::new();
    let reason = failed(
        f.pre(r#"echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'"#)
            .await,
    );
    assert!(
        reason.contains("unknown permissionDecision \"maybe\""),
        "{reason}"
    );
}

#[tokio::test]
async fn stdout_that_starts_like_json_but_does_not_parse_fails() {
    let f = Fixture::new();
    let reason = failed(f.pre("echo '{not json'").await);
    assert!(reason.starts_with("pre-tool hook `sh "), "{reason}");
    assert!(reason.contains("not a JSON object"), "{reason}");
}

#[tokio::test]
async fn exit_2_denies_with_stderr() {
    let f = Fixture::new();
    let verdict = f
        .pre("echo 'ignored' ; echo '  rm -rf is not allowed  ' >&2; exit 2")
        .await;
    assert_eq!(
        verdict,
        Verdict::Deny {
            reason: "rm -rf is not allowed".into()
        }
    );
    let Verdict::Deny { reason } = f.pre("exit 2").await else {
        panic!("exit 2 denies");
    };
    assert!(reason.ends_with("` (exit 2)"), "{reason}");
}

#[tokio::test]
async fn exit_1_fails_naming_the_status_and_stderr() {
    let f = Fixture::new();
    let reason = failed(f.pre("echo 'jq: command not found' >&2; exit 1").await);
    assert!(reason.starts_with("pre-tool hook `sh "), "{reason}");
    assert!(
        reason.ends_with("exited with status 1: jq: command not found"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_signal_fails_naming_the_signal() {
    let f = Fixture::new();
    // Inline, so the signal reaches the shell `sh -c` started.
    let reason = failed(
        HookProgram::new("kill -SEGV $$".into())
            .pre_tool(&f.input(), f.dir.path(), LONG)
            .await,
    );
    assert_eq!(
        reason,
        "pre-tool hook `kill -SEGV $$` was killed by signal 11 (SIGSEGV)"
    );
    // A command the shell runs is reported by the shell as 128 + the signal.
    let reason = failed(f.pre("kill -SEGV $$").await);
    assert!(
        reason.contains("exited with status 139 (128 + SIGSEGV)"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_timeout_fails_and_kills_what_the_hook_started() {
    let f = Fixture::new();
    let hook = f.hook("sleep 30 & echo $! > pidfile; wait");
    let started = Instant::now();
    let verdict = hook
        .pre_tool(&f.input(), f.dir.path(), Duration::from_millis(300))
        .await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let reason = failed(verdict);
    assert!(reason.ends_with("timed out after 300ms"), "{reason}");
    let grandchild = f.pid_in("pidfile");
    assert!(dies_soon(grandchild).await, "sleep {grandchild} survived");
}

#[tokio::test]
async fn dropping_the_future_kills_what_the_hook_started() {
    let f = Fixture::new();
    let hook = f.hook("sleep 30 & echo $! > pidfile; wait");
    let input = f.input();
    // The hook's own timeout is far off: only the drop can stop it.
    let outcome = tokio::time::timeout(
        Duration::from_millis(500),
        hook.pre_tool(&input, f.dir.path(), LONG),
    )
    .await;
    assert!(outcome.is_err(), "the hook finished: {outcome:?}");
    let grandchild = f.pid_in("pidfile");
    assert!(dies_soon(grandchild).await, "sleep {grandchild} survived");
}

#[tokio::test]
async fn the_hook_reads_the_call_and_its_environment() {
    let f = Fixture::new();
    let verdict = f
        .pre(
            "cat > input.json; printf '%s\\n%s\\n' \"$CLAUDE_PROJECT_DIR\" \"$WORKER_HOOK_EVENT\" > env.txt; pwd -P > cwd.txt",
        )
        .await;
    assert_eq!(
        verdict,
        Verdict::Allow {
            updated_input: None
        }
    );
    let read: Value =
        serde_json::from_str(&std::fs::read_to_string(f.path("input.json")).unwrap()).unwrap();
    assert_eq!(
        read,
        json!({
            "session_id": "session-1",
            "cwd": f.cwd(),
            "hook_event_name": "PreToolUse",
            "tool_name": "bash",
            "tool_input": {"command": "ls -la"},
            "tool_use_id": "call-1",
        })
    );
    assert_eq!(
        std::fs::read_to_string(f.path("env.txt")).unwrap(),
        format!("{}\nPreToolUse\n", f.cwd())
    );
    let real = std::fs::canonicalize(f.dir.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.path("cwd.txt")).unwrap().trim(),
        real.to_str().unwrap()
    );
}

#[tokio::test]
async fn a_hook_that_ignores_a_large_input_still_allows() {
    let mut f = Fixture::new();
    f.tool_input = json!({"content": "x".repeat(1024 * 1024)});
    assert_eq!(
        f.pre("exit 0").await,
        Verdict::Allow {
            updated_input: None
        }
    );
}

#[tokio::test]
async fn a_megabyte_of_output_is_capped_and_drained() {
    let f = Fixture::new();
    let script =
        "head -c 1048576 /dev/zero | tr '\\0' x; head -c 1048576 /dev/zero | tr '\\0' y >&2";
    let hook = f.hook(script);
    let finished = hook
        .run(Event::Pre, &f.input(), f.dir.path(), LONG)
        .await
        .unwrap();
    assert!(finished.status.success());
    assert_eq!(finished.stdout.len(), OUTPUT_CAP);
    assert_eq!(finished.stderr.len(), OUTPUT_CAP);
    assert_eq!(
        f.pre(script).await,
        Verdict::Allow {
            updated_input: None
        }
    );
}

#[tokio::test]
async fn post_tool_gets_the_response_and_reports_a_failure() {
    let f = Fixture::new();
    let response = json!({"output": "total 0", "exitCode": 0});
    let input = PostToolUse {
        call: PreToolUse {
            session_id: "session-1",
            cwd: f.cwd(),
            tool_name: "bash",
            tool_input: &f.tool_input,
            tool_use_id: "call-1",
        },
        tool_response: &response,
    };
    f.hook("cat > input.json")
        .post_tool(&input, f.dir.path(), LONG)
        .await
        .unwrap();
    let read: Value =
        serde_json::from_str(&std::fs::read_to_string(f.path("input.json")).unwrap()).unwrap();
    assert_eq!(read["hook_event_name"], "PostToolUse");
    assert_eq!(read["tool_response"], response);
    assert_eq!(read["tool_input"], f.tool_input);

    let failure = f
        .hook("echo 'audit log is full' >&2; exit 3")
        .post_tool(&input, f.dir.path(), LONG)
        .await
        .unwrap_err();
    assert!(matches!(failure, HookFailure::Exited { code: 3, .. }));
    let message = failure.to_string();
    assert!(message.starts_with("post-tool hook `sh "), "{message}");
    assert!(
        message.ends_with("exited with status 3: audit log is full"),
        "{message}"
    );
}

#[test]
fn the_stderr_tail_keeps_the_last_lines() {
    assert_eq!(stderr_tail(b"one\ntwo\nthree\nfour\n"), "…two\nthree\nfour");
    assert_eq!(stderr_tail(b"  only  \n"), "only");
    assert_eq!(
        stderr_tail(&vec![b'e'; 5000]).len(),
        "…".len() + STDERR_TAIL_BYTES
    );
}

#[test]
fn a_long_command_is_cut_in_reasons() {
    let hook = HookProgram::new(format!("{}\nsecond line", "a".repeat(200)));
    let named = hook.named(Event::Pre);
    assert!(named.len() < 120, "{named}");
    assert!(!named.contains('\n'));
}

#[test]
fn the_runs_can_be_spawned() {
    fn send<T: Send>(_: T) {}
    let f = Fixture::new();
    let hook = f.hook("exit 0");
    let response = json!(null);
    send(hook.pre_tool(&f.input(), f.dir.path(), LONG));
    send(hook.post_tool(
        &PostToolUse {
            call: PreToolUse {
                session_id: "s",
                cwd: "/",
                tool_name: "bash",
                tool_input: &response,
                tool_use_id: "c",
            },
            tool_response: &response,
        },
        f.dir.path(),
        LONG,
    ));
}
