//! Damaged sessions: what a crash leaves, and what it cannot.
//!
//! A run appends each entry with one write, so a crash (or a full disk) can only cut the last
//! line, anywhere, even inside a UTF-8 character. Resuming such a file continues from the last
//! whole entry, says with an `input_truncated` event (and on stderr) how many bytes were
//! dropped and that it was a torn last line, and removes those bytes from the file before
//! appending, so that the next entry starts on a line of its own and the file reads back
//! whole. Damage before the last line is not something a crash leaves, and skipping it would
//! silently cut the conversation behind it: it is exit 2 naming the line, with the file left
//! as it was.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};

/// A finished one-turn session in `dir`; its file.
fn finished_session(dir: &Path, mock: &MockLlm) -> String {
    let run = resume_run(dir, mock, &["--session-id", "torn"]);
    run.assert_code(0);
    run.events[0]["sessionFile"].as_str().unwrap().to_string()
}

fn resume_run(dir: &Path, mock: &MockLlm, args: &[&str]) -> Run {
    let sessions = dir.join("sessions").display().to_string();
    let mut all = vec!["--model", "dynamo/m", "--session-dir", sessions.as_str()];
    all.extend_from_slice(args);
    run_worker(dir, &all, "go on", &[("DYNAMO_BASE_URL", &mock.url)])
}

fn append(path: &str, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Every line of the file is a JSON object, and the entries form one chain.
fn assert_whole(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for pair in lines[1..].windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "one chain");
    }
    lines
}

/// The line an entry being written was cut at: inside the two bytes of "é".
const TORN_IN_A_CHARACTER: &[u8] =
    b"{\"type\":\"message\",\"id\":\"0badf00d\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"caf\xC3";

#[test]
fn a_last_line_torn_inside_a_character_resumes_from_the_last_whole_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("first"), answer("second"), answer("third")]);
    let file = finished_session(dir.path(), &mock);
    let whole = std::fs::metadata(&file).unwrap().len();
    let before = assert_whole(&file);
    append(&file, TORN_IN_A_CHARACTER);

    let run = resume_run(dir.path(), &mock, &["--resume", "torn"]);
    run.assert_code(0);
    assert_eq!(
        run.events[0]["resumedFrom"],
        json!({"path": file, "entries": 2, "interrupted": 0})
    );
    let dropped = TORN_IN_A_CHARACTER.len();
    let message = format!(
        "session {file}: its last line ({dropped} bytes) was cut mid-write and is dropped; resuming from the last whole entry"
    );
    let cut = run.first("input_truncated");
    let expected = json!({
        "type": "input_truncated",
        "input": "session",
        "path": file,
        "reason": "torn_last_line",
        "keptBytes": whole,
        "droppedBytes": dropped,
        "message": message,
        "sessionId": "torn",
        "timestamp": cut["timestamp"],
    });
    assert_eq!(cut, &expected);
    // Right after where tools run, before anything else.
    assert_eq!(
        run.types()[..3],
        ["session", "sandbox_status", "input_truncated"]
    );
    assert!(
        run.stderr.contains(&format!("worker: {message}\n")),
        "{}",
        run.stderr
    );
    // The model saw the whole conversation and nothing of the cut line.
    let request = &mock.requests()[1].body;
    let contents: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(contents, ["go on", "first", "go on"]);

    // The cut bytes are gone and the new entries continue the chain from the last whole one.
    let after = assert_whole(&file);
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(after.len(), before.len() + 2);
    assert_eq!(
        after[before.len()]["parentId"],
        before.last().unwrap()["id"]
    );
    // And it resumes again without a word.
    let again = resume_run(dir.path(), &mock, &["--resume", "torn"]);
    again.assert_code(0);
    assert!(again.all("input_truncated").is_empty(), "{}", again.stdout);
    assert_eq!(again.events[0]["resumedFrom"]["entries"], 4);
}

#[test]
fn a_torn_last_line_read_without_saving_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("first"), answer("second")]);
    let file = finished_session(dir.path(), &mock);
    // Cut inside the JSON, at a character boundary this time.
    let torn = br#"{"type":"message","id":"0badf00d","parentId":"#;
    append(&file, torn);
    let on_disk = std::fs::read(&file).unwrap();
    let run = resume_run(dir.path(), &mock, &["--resume", &file, "--no-session"]);
    run.assert_code(0);
    let cut = run.first("input_truncated");
    assert_eq!(cut["reason"], "torn_last_line");
    assert_eq!(cut["droppedBytes"], torn.len());
    assert_eq!(std::fs::read(&file).unwrap(), on_disk, "not touched");
}

#[test]
fn a_damaged_line_before_the_last_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![answer("first"), answer("second")]);
    let file = finished_session(dir.path(), &mock);
    // A damaged line (not a crash's doing), then a whole entry after it.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let damaged = r#"{"type":"message","id":"#;
    lines.insert(2, damaged);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let on_disk = std::fs::read(&file).unwrap();

    let run = resume_run(dir.path(), &mock, &["--resume", "torn"]);
    let reason = serde_json::from_str::<Value>(damaged).unwrap_err();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "worker: --resume: {file}: line 3 is not a session entry ({reason}); the file is damaged there: repair or remove that line to resume\n"
        )
    );
    assert!(run.stdout.is_empty());
    assert_eq!(std::fs::read(&file).unwrap(), on_disk, "not touched");
    assert_eq!(mock.requests().len(), 1, "no model request");
}

#[test]
fn a_session_cut_inside_its_header_is_not_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cut.jsonl");
    std::fs::write(&file, br#"{"type":"session","version":3,"id":"cu"#).unwrap();
    let mock = MockLlm::start(vec![]);
    let shown = file.display().to_string();
    let run = resume_run(dir.path(), &mock, &["--resume", &shown]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        format!("worker: --resume: {shown}: not a session file (no session header)\n")
    );
    assert!(run.stdout.is_empty());
}
