//! Permission errors through the real binary. Mode bits don't stop root, so when the tests run
//! as root the worker is started as `nobody` (setpriv), against files root owns.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::Run;
use serde_json::json;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn tool_turn(id: &str, name: &str, args: serde_json::Value) -> String {
    let events = json!([
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]"
    ]);
    json!({"response": {"events": events}}).to_string()
}

#[test]
fn permission_denied_names_the_path_for_read_write_edit_and_ls() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let as_root = unsafe { libc::geteuid() } == 0;
    chmod(&root, 0o755);
    std::fs::write(root.join("secret.txt"), "top secret\n").unwrap();
    chmod(&root.join("secret.txt"), 0o600);
    std::fs::create_dir(root.join("locked")).unwrap();
    std::fs::write(root.join("locked/inside.txt"), "x").unwrap();
    if as_root {
        // Owned by root, not writable by nobody.
        chmod(&root.join("locked"), 0o700);
        chmod(&root.join("secret.txt"), 0o600);
    } else {
        chmod(&root.join("locked"), 0o000);
        chmod(&root.join("secret.txt"), 0o000);
    }
    let fixture = [
        json!({"workerFixture": 1, "provider": "dynamo", "model": "m"}).to_string(),
        tool_turn("r", "read", json!({"path": "secret.txt"})),
        tool_turn("w", "write", json!({"path": "locked/new.txt", "content": "x"})),
        tool_turn("e", "edit", json!({"path": "secret.txt", "edits": [{"oldText": "top", "newText": "no"}]})),
        tool_turn("l", "ls", json!({"path": "locked"})),
        json!({"response": {"events": [{"choices": [{"index": 0, "delta": {"content": "denied"}, "finish_reason": "stop"}]}, "[DONE]"]}}).to_string(),
    ]
    .join("\n");
    std::fs::write(root.join("model.jsonl"), fixture).unwrap();
    chmod(&root.join("model.jsonl"), 0o644);

    let worker = env!("CARGO_BIN_EXE_worker");
    let mut cmd = if as_root {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", worker]);
        cmd
    } else {
        Command::new(worker)
    };
    let model = format!("replay/{}", root.join("model.jsonl").display());
    cmd.args(["run", "--model", &model, "--no-context-files"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &root)
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .expect("spawn (setpriv is needed when running as root)");
    {
        use std::io::Write;
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(b"try the locked files");
    }
    let run = Run::from_output(child.wait_with_output().unwrap());
    if !as_root {
        chmod(&root.join("locked"), 0o755);
        chmod(&root.join("secret.txt"), 0o644);
    }
    run.assert_code(0);
    let texts: Vec<(String, bool)> = run
        .all("tool_execution_end")
        .iter()
        .map(|e| {
            (
                e["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                e["isError"] == true,
            )
        })
        .collect();
    assert_eq!(
        texts,
        vec![
            ("Permission denied: secret.txt".to_string(), true),
            ("Permission denied: locked/new.txt".to_string(), true),
            ("Permission denied: secret.txt".to_string(), true),
            ("Permission denied: locked".to_string(), true),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("secret.txt")).unwrap(),
        "top secret\n"
    );
}
