use super::*;
use crate::events::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage, UserMessage};
use serde_json::Value;

fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![TextContent::text(text)],
        timestamp: 1,
    })
}

fn assistant_calling(ids: &[&str]) -> Message {
    Message::Assistant(AssistantMessage {
        content: ids
            .iter()
            .map(|id| {
                AssistantContent::ToolCall(ToolCall {
                    id: id.to_string().into(),
                    name: "bash".into(),
                    raw_arguments: serde_json::json!({"command": "touch x"}).to_string(),
                    arguments_error: None,
                })
            })
            .collect(),
        api: crate::events::ASSISTANT_API,
        provider: "dynamo".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        timestamp: 2,
        response_id: None,
        error_message: None,
    })
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![TextContent::text("ok")],
        details: None,
        is_error: false,
        timestamp: 3,
    })
}

#[test]
fn a_written_session_reads_back_and_a_resumed_one_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let secrets = crate::secrets::Secrets::from_values(["sk-secret-value".to_string()]);
    let mut writer =
        SessionWriter::create(dir.path(), "phase-1", cwd, None, secrets.clone()).unwrap();
    writer
        .append(&user("go, the key is sk-secret-value"))
        .unwrap();
    writer.append(&assistant_calling(&["c1"])).unwrap();
    writer.append(&result("c1")).unwrap();
    writer.sync().unwrap();
    writer.synced().unwrap();
    let path = writer.path().to_path_buf();
    assert!(
        path.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("_phase-1.jsonl")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("sk-secret-value"), "redacted on the way in");
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (header["type"].as_str(), header["version"].as_u64()),
        (Some("session"), Some(3))
    );

    let loaded = load(&path).unwrap();
    assert_eq!(loaded.id.as_str(), "phase-1");
    assert_eq!(loaded.messages.len(), 3);
    assert_eq!(loaded.interrupted, 0);
    let mut again = SessionWriter::append_to(&loaded, secrets).unwrap();
    again.append(&user("next phase")).unwrap();
    let reloaded = load(&path).unwrap();
    assert_eq!(reloaded.messages.len(), 4);
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Pi's documented shape: `message` entries with an 8-hex-digit id, the parent's id (null
    // for the first), an ISO timestamp, and the message with its role.
    for entry in &lines {
        assert_eq!(entry["type"], "message");
        let id = entry["id"].as_str().unwrap();
        assert!(
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        let stamp = entry["timestamp"].as_str().unwrap();
        assert!(
            stamp.len() == 24 && stamp.ends_with('Z') && &stamp[10..11] == "T",
            "{stamp}"
        );
        assert!(
            ["user", "assistant", "toolResult"]
                .contains(&entry["message"]["role"].as_str().unwrap())
        );
    }
    for key in ["type", "version", "id", "timestamp", "cwd"] {
        assert!(header.get(key).is_some(), "header {key}");
    }
    assert_eq!(lines[0]["parentId"], Value::Null);
    for pair in lines.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "one chain");
    }
}

#[test]
fn a_crash_leaves_a_readable_file_and_unanswered_calls_are_not_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    writer.append(&user("go")).unwrap();
    writer.append(&assistant_calling(&["c1", "c2"])).unwrap();
    writer.append(&result("c1")).unwrap();
    let path = writer.path().to_path_buf();
    drop(writer);
    // The run died while writing the next line.
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"type":"message","id":"deadbeef","parentId":"#)
        .unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.interrupted, 1);
    assert_eq!(loaded.messages.len(), 4);
    match &loaded.messages[3] {
        Message::ToolResult(r) => {
            assert_eq!(r.tool_call_id.as_str(), "c2");
            assert!(r.is_error);
            assert!(r.content[0].as_str().contains("was not run again"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_compaction_entry_stands_for_what_it_summarized() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pi.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"pi-made","timestamp":"t","cwd":"/r"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"old question","timestamp":1}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"old answer"}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"kept question"}],"timestamp":3}}"#,
        r#"{"type":"compaction","id":"a4","parentId":"a3","timestamp":"t","summary":"They talked about X.","firstKeptEntryId":"a3","tokensBefore":5000}"#,
        r#"{"type":"model_change","id":"a5","parentId":"a4","timestamp":"t","provider":"openai","modelId":"gpt"}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(
        user_texts(&loaded),
        [
            "The conversation so far, summarized:\n\nThey talked about X.",
            "kept question"
        ]
    );
    assert_eq!(loaded.leaf.as_deref(), Some("a5"));
    let missing = dir.path().join("missing.jsonl");
    assert_eq!(
        load(&missing).unwrap_err().to_string(),
        format!("{}: No such file or directory", missing.display())
    );
    std::fs::write(&path, "{}\n").unwrap();
    assert!(
        load(&path)
            .unwrap_err()
            .to_string()
            .ends_with("not a session file (no session header)")
    );
    // The id names files and travels in headers: a file cannot smuggle in one that the
    // command line would refuse.
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"version\":3,\"id\":\"a\\r\\nX-Evil: 1\"}\n",
    )
    .unwrap();
    assert_eq!(
        load(&path).unwrap_err().to_string(),
        format!(
            "{}: 'a\r\nX-Evil: 1' is not a session id: 1 to 128 of A-Z a-z 0-9 - _ . :, not starting with .",
            path.display()
        )
    );
}

#[test]
fn dirs_and_lookups() {
    assert_eq!(
        default_dir(None, Some(Path::new("/home/me")), Path::new("/work/repo")),
        Some(PathBuf::from(
            "/home/me/.local/state/worker/sessions/--work-repo--"
        ))
    );
    assert_eq!(
        default_dir(Some(Path::new("/state")), None, Path::new("/r")),
        Some(PathBuf::from("/state/worker/sessions/--r--"))
    );
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let first =
        SessionWriter::create(dir.path(), "one", dir.path(), None, secrets.clone()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second =
        SessionWriter::create(dir.path(), "two", dir.path(), None, secrets.clone()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Newer, but another directory's.
    SessionWriter::create(dir.path(), "three", Path::new("/elsewhere"), None, secrets).unwrap();
    std::fs::write(dir.path().join("junk.jsonl"), "not a header\n").unwrap();
    assert_eq!(find(dir.path(), "one").as_deref(), Some(first.path()));
    assert_eq!(
        most_recent(dir.path(), dir.path()).as_deref(),
        Some(second.path())
    );
    assert_eq!(most_recent(dir.path(), Path::new("/nowhere")), None);
}

#[test]
fn a_last_line_torn_inside_a_character_is_left_out_and_cut_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    writer.append(&user("go")).unwrap();
    let path = writer.path().to_path_buf();
    drop(writer);
    let whole = std::fs::metadata(&path).unwrap().len();
    // The crash cut "é" (0xC3 0xA9) after its first byte.
    let torn = b"{\"type\":\"message\",\"id\":\"deadbeef\",\"message\":{\"content\":\"caf\xC3";
    OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(torn)
        .unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.messages.len(), 1);
    let cut = loaded.torn.clone().unwrap();
    assert_eq!(cut.reason, crate::events::TruncationReason::TornLastLine);
    assert_eq!(
        (cut.kept_bytes, cut.dropped_bytes),
        (whole, torn.len() as u64)
    );
    let mut writer = SessionWriter::append_to(&loaded, crate::secrets::Secrets::default()).unwrap();
    writer.append(&user("again")).unwrap();
    drop(writer);
    let again = load(&path).unwrap();
    assert!(again.torn.is_none());
    assert_eq!(again.messages.len(), 2);
}

#[test]
fn a_damaged_line_before_the_last_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"message","id":"#,
        r#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"user","content":"hi"}}"#,
        "",
    ]
    .join("\n");
    std::fs::write(&path, text).unwrap();
    let err = load(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{}: line 3 is not a session entry (",
            path.display()
        )),
        "{err}"
    );
    assert!(
        err.ends_with("repair or remove that line to resume"),
        "{err}"
    );
    // JSON that is not an entry (an array, a number) is named by its line too.
    for (at, damaged) in [(2, "[1, 2]"), (3, "42")] {
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#,
            r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"user","content":"hi"}}"#,
        ];
        lines.insert(at - 1, damaged);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        assert_eq!(
            load(&path).unwrap_err().to_string(),
            format!(
                "{}: line {at} is not a session entry (not a JSON object); the file is damaged there: repair or remove that line to resume",
                path.display()
            )
        );
    }
}

#[test]
fn a_folder_name_replaces_every_separator_pi_replaces() {
    assert_eq!(slug(Path::new("/home/me/repo")), "--home-me-repo--");
    assert_eq!(slug(Path::new("/c:/w\\x")), "--c--w-x--");
}

#[test]
fn only_a_session_header_with_an_id_and_a_cwd_names_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"{"type":"session","id":"s","cwd":"/w"}"#, Some("/w")),
        (r#"{"type":"message","id":"s","cwd":"/w"}"#, None),
        (r#"{"type":"session","cwd":"/w"}"#, None),
        (r#"{"type":"session","id":"s","cwd":""}"#, None),
    ];
    for (i, (line, cwd)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&path, format!("{line}\n")).unwrap();
        assert_eq!(header_cwd(&path).as_deref(), cwd, "{line}");
    }
    // A long working directory (up to 8 KiB of header) is still found.
    let long = format!("/{}", "d".repeat(6_000));
    let path = dir.path().join("long.jsonl");
    let header = serde_json::json!({"type": "session", "id": "s", "cwd": long});
    std::fs::write(&path, format!("{header}\n")).unwrap();
    assert_eq!(header_cwd(&path), Some(long));
}

#[test]
fn a_written_compaction_reads_back_as_the_summary_then_the_kept_messages() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    writer.append(&user("old question")).unwrap();
    writer.append(&assistant_calling(&["c1"])).unwrap();
    writer.append(&result("c1")).unwrap();
    writer
        .append_compaction("They ran a command.", 900)
        .unwrap();
    writer.append(&user("kept question")).unwrap();
    writer.synced().unwrap();
    let loaded = load(writer.path()).unwrap();
    assert_eq!(
        user_texts(&loaded),
        [
            "The conversation so far, summarized:\n\nThey ran a command.",
            "kept question"
        ]
    );
}

#[test]
fn an_assistant_message_reads_back_with_its_stop_reason() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    let reasons = [
        StopReason::ToolUse,
        StopReason::Length,
        StopReason::Error,
        StopReason::Aborted,
        StopReason::Stop,
    ];
    writer.append(&user("q")).unwrap();
    for reason in reasons {
        let Message::Assistant(mut message) = assistant_calling(&[]) else {
            unreachable!()
        };
        message.stop_reason = reason;
        message.response_id = Some("resp-1".into());
        writer.append(&Message::Assistant(message)).unwrap();
    }
    writer.synced().unwrap();
    let loaded = load(writer.path()).unwrap();
    let read: Vec<(StopReason, Option<&str>)> = loaded
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some((a.stop_reason, a.response_id.as_deref())),
            _ => None,
        })
        .collect();
    let expected: Vec<(StopReason, Option<&str>)> =
        reasons.iter().map(|r| (*r, Some("resp-1"))).collect();
    assert_eq!(read, expected);
}

#[test]
fn a_call_id_used_again_in_a_later_turn_is_still_answered_as_interrupted() {
    // Some servers number calls per message (call_0, call_1, ...), so ids repeat across turns.
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    writer.append(&user("go")).unwrap();
    writer.append(&assistant_calling(&["call_0"])).unwrap();
    writer.append(&result("call_0")).unwrap();
    writer.append(&assistant_calling(&["call_0"])).unwrap();
    writer.synced().unwrap();
    let loaded = load(writer.path()).unwrap();
    assert_eq!(loaded.interrupted, 1);
    assert_eq!(
        user_texts(&loaded),
        [
            "go",
            "assistant",
            "result call_0",
            "assistant",
            "result call_0"
        ]
    );
}

#[test]
fn syncs_asked_for_in_a_row_are_all_answered_and_the_file_appears_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    // The header is synced and the file named on the writer's thread: once waited for, the
    // file is there under its own name and no temporary file is left.
    writer.synced().unwrap();
    let names = || -> Vec<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(
        names(),
        vec![
            writer
                .path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        ]
    );
    for turn in 0..50 {
        writer.append(&result(&format!("c{turn}"))).unwrap();
        writer.sync().unwrap();
    }
    writer.synced().unwrap();
    // Waiting again, with nothing asked since, returns at once.
    writer.synced().unwrap();
    assert_eq!(names().len(), 1);
    assert_eq!(load(writer.path()).unwrap().messages.len(), 50);
}

#[test]
fn syncs_never_waited_for_are_all_done_by_one_wait() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    let mut writer = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets).unwrap();
    // A run of read-only turns asks for a sync each turn and never waits until its end.
    for turn in 0..100 {
        writer.append(&result(&format!("c{turn}"))).unwrap();
        writer.sync().unwrap();
    }
    writer.synced().unwrap();
    assert_eq!(load(writer.path()).unwrap().messages.len(), 100);
}

/// Loads a session file made of `lines`, each ended by a newline.
fn load_lines(lines: &[impl AsRef<str>]) -> Loaded {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pi.jsonl");
    let text: String = lines
        .iter()
        .map(|line| line.as_ref().to_owned() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    load(&path).unwrap()
}

fn user_texts(loaded: &Loaded) -> Vec<String> {
    loaded
        .messages
        .iter()
        .map(|m| match m {
            Message::User(u) => u.content[0].as_str().to_string(),
            Message::Assistant(_) => "assistant".into(),
            Message::ToolResult(r) => format!("result {}", r.tool_call_id),
        })
        .collect()
}

mod pi_files;

#[test]
fn a_lookup_removes_the_header_staging_files_of_killed_writers_once_they_are_old() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = crate::secrets::Secrets::default();
    // Dropped, the writer has made the file appear under its name.
    let session = SessionWriter::create(dir.path(), "s", dir.path(), None, secrets)
        .unwrap()
        .path()
        .to_path_buf();
    // A PID that is surely gone: a child's, reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let long_ago = std::time::SystemTime::now() - STAGING_ABANDONED_AFTER * 2;
    let staging = |name: &str, modified: std::time::SystemTime| {
        let path = dir.path().join(name);
        let file = std::fs::File::create(&path).unwrap();
        file.set_modified(modified).unwrap();
        path
    };
    let abandoned = staging(&format!(".session-{gone}-AbC123.tmp"), long_ago);
    let before_pids = staging(".session-XyZ789.tmp", long_ago);
    // 0 names no process (to `kill`, it is the caller's process group, which lives).
    let pid_zero = staging(".session-0-GhI678.tmp", long_ago);
    let just_left = staging(
        &format!(".session-{gone}-QrS456.tmp"),
        std::time::SystemTime::now(),
    );
    let writer_alive = staging(
        &format!(".session-{}-TuV012.tmp", std::process::id()),
        long_ago,
    );
    let not_staging = staging(".session-notes.txt", long_ago);

    assert_eq!(
        most_recent(dir.path(), dir.path()).as_deref(),
        Some(session.as_path())
    );
    assert!(
        !abandoned.exists(),
        "a gone writer's old staging file is left"
    );
    assert!(
        !before_pids.exists(),
        "an old staging file without a PID is left"
    );
    assert!(
        !pid_zero.exists(),
        "an old staging file naming PID 0 is left"
    );
    for kept in [&just_left, &writer_alive, &not_staging, &session] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }

    // `--session <id>` looks the same way.
    let again = staging(&format!(".session-{gone}-DeF345.tmp"), long_ago);
    assert_eq!(find(dir.path(), "s").as_deref(), Some(session.as_path()));
    assert!(!again.exists());
}
