//! Session files this writer did not make, or did not make alone: Pi's own, and one
//! resumed with ids already in it.

use super::*;

#[test]
fn a_pi_made_message_reads_back_with_string_content_and_its_usage() {
    let lines = [
        r#"{"type":"session","version":3,"id":"pi-made","timestamp":"t","cwd":"/r"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"a plain string","timestamp":7}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":11,"output":22,"cacheRead":33,"cacheWrite":44,"totalTokens":110,"cost":{"input":0.5,"output":0.25,"cacheRead":0,"cacheWrite":0,"total":0.75}},"stopReason":"stop","timestamp":8}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"compactionSummary","summary":"Earlier work.","tokensBefore":9000,"timestamp":9}}"#,
    ];
    let loaded = load_lines(&lines);
    let [
        Message::User(user),
        Message::Assistant(answer),
        Message::User(summary),
    ] = &loaded.messages[..]
    else {
        panic!("{:?}", loaded.messages);
    };
    assert_eq!(
        summary.content[0].as_str(),
        "The conversation so far, summarized:\n\nEarlier work."
    );
    assert_eq!(
        (user.content[0].as_str(), user.timestamp),
        ("a plain string", 7)
    );
    let usage = &answer.usage;
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write,
            usage.total_tokens
        ),
        (11, 22, 33, 44, 110)
    );
    assert_eq!((usage.cost.input, usage.cost.total), (0.5, 0.75));
}

#[test]
fn thinking_the_api_and_tool_details_read_back_as_pi_wrote_them() {
    let lines = [
        r#"{"type":"session","version":3,"id":"pi-made","timestamp":"t","cwd":"/r"}"#,
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"go","timestamp":1}}"#,
        r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},{"type":"text","text":"listing"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"pwd"}}],"api":"anthropic-messages","provider":"anthropic","model":"m","stopReason":"toolUse","timestamp":2}}"#,
        r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a"}],"details":null,"isError":false,"timestamp":3}}"#,
        r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"t","message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[{"type":"text","text":"/r"}],"details":{"exitCode":0},"isError":false,"timestamp":4}}"#,
    ];
    let loaded = load_lines(&lines);
    let [
        _,
        Message::Assistant(answer),
        Message::ToolResult(first),
        Message::ToolResult(second),
    ] = &loaded.messages[..]
    else {
        panic!("{:?}", loaded.messages);
    };
    assert_eq!(answer.api, "anthropic-messages");
    let AssistantContent::Thinking {
        thinking,
        thinking_signature,
    } = &answer.content[0]
    else {
        panic!("{:?}", answer.content);
    };
    assert_eq!(
        (thinking.as_str(), thinking_signature.as_deref()),
        ("hmm", Some("sig"))
    );
    assert_eq!(answer.text(), "listing");
    assert_eq!(first.details, None, "a null detail is no detail");
    assert_eq!(second.details, Some(serde_json::json!({"exitCode": 0})));
}

fn entry(id: &str, parent: &str, message: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"t","message":{message}}}"#
    )
}

#[test]
fn a_compaction_without_a_kept_entry_keeps_what_follows_it_and_only_messages_are_read() {
    let lines = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/r"}"#.to_string(),
        entry("a1", "null", r#"{"role":"user","content":"summarized away","timestamp":1}"#)
            .replace(r#""parentId":"null""#, r#""parentId":null"#),
        r#"{"type":"compaction","id":"a2","parentId":"a1","timestamp":"t","summary":"S.","tokensBefore":10}"#.to_string(),
        r#"{"type":"custom","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"user","content":"not a message entry","timestamp":2}}"#.to_string(),
        entry("a4", "a3", r#"{"role":"user","content":"after","timestamp":3}"#),
    ];
    let loaded = load_lines(&lines);
    assert_eq!(
        user_texts(&loaded),
        ["The conversation so far, summarized:\n\nS.", "after"]
    );
}

#[test]
fn a_resumed_writer_keeps_the_file_s_ids_and_makes_new_ones_of_8_hex_digits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/r"}"#.to_string(),
        entry(
            "0000abcd",
            "null",
            r#"{"role":"user","content":"a","timestamp":1}"#,
        )
        .replace(r#""parentId":"null""#, r#""parentId":null"#),
        entry(
            "ffffffff",
            "0000abcd",
            r#"{"role":"user","content":"b","timestamp":2}"#,
        ),
        entry(
            "a1",
            "ffffffff",
            r#"{"role":"user","content":"c","timestamp":3}"#,
        ),
        entry(
            "zzzzzzzz",
            "a1",
            r#"{"role":"user","content":"d","timestamp":4}"#,
        ),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let loaded = load(&path).unwrap();
    let mut writer = SessionWriter::append_to(&loaded, crate::secrets::Secrets::default()).unwrap();
    // Only an id of 8 hex digits is one this writer could make again.
    let mut used: Vec<u32> = writer.used.iter().copied().collect();
    used.sort_unstable();
    assert_eq!(used, [0xabcd, 0xffff_ffff]);
    writer.append(&user("e")).unwrap();
    writer.synced().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let id = last["id"].as_str().unwrap();
    assert_eq!(id.len(), 8);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{id}"
    );
    assert_eq!(last["parentId"], "zzzzzzzz");
    assert_eq!(writer.used.len(), 3);
    assert!(writer.used.contains(&u32::from_str_radix(id, 16).unwrap()));
}
