use super::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};

struct FailingSink;
impl EventSink for FailingSink {
    fn write_line(&mut self, _line: &[u8]) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

#[test]
fn every_event_line_carries_session_id_and_timestamp_after_its_fields() {
    let sink = CollectorSink::default();
    let emitter = Emitter::new(Box::new(sink.clone()), "s-1", true);
    emitter.header(&SessionHeader::new("s-1", "t", "/w"));
    emitter.emit(&Event::TurnStart { turn_index: 0 });
    let lines = sink.lines();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with(r#"{"type":"session","version":3,"id":"s-1""#));
    assert!(!lines[0].contains("sessionId"));
    let turn: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(turn["type"], "turn_start");
    assert_eq!(turn["sessionId"], "s-1");
    let stamp = turn["timestamp"].as_str().unwrap();
    assert_eq!(stamp.len(), "2026-11-22T13:12:00.123Z".len(), "{stamp}");
    assert!(stamp.ends_with('Z'));
    assert!(lines[1].starts_with(r#"{"type":"turn_start","turnIndex":0,"sessionId""#));
    let records = emitter.records();
    assert_eq!(records[1]["turnIndex"], json!(0));
}

#[test]
fn a_failed_sink_fires_the_close_hook_once_and_goes_quiet() {
    let fired = Arc::new(AtomicUsize::new(0));
    let emitter = Emitter::new(Box::new(FailingSink), "s", false);
    let counter = fired.clone();
    emitter.on_close(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    emitter.emit(&Event::AgentStart);
    emitter.emit(&Event::AgentStart);
    assert!(emitter.is_closed());
    assert_eq!(fired.load(Ordering::SeqCst), 1);
}

/// Takes lines in parts, keeping each write (a whole line or a part) as written, and how many
/// were whole lines; fails from the `fail_at`-th write on.
#[derive(Clone, Default)]
struct PartSink {
    parts: Arc<Mutex<Vec<Vec<u8>>>>,
    whole: Arc<AtomicUsize>,
    fail_at: Option<usize>,
}

impl EventSink for PartSink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.whole.fetch_add(1, Ordering::SeqCst);
        self.write_part(line)
    }

    fn takes_parts(&self) -> bool {
        true
    }

    fn write_part(&mut self, part: &[u8]) -> io::Result<()> {
        let mut parts = self.parts.lock_or_recover();
        if self.fail_at.is_some_and(|at| parts.len() >= at) {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        }
        parts.push(part.to_vec());
        Ok(())
    }
}

/// The same records through a sink that takes whole lines: what the parts must add up to.
fn whole_lines(records: &[Value], secrets: &Secrets) -> Vec<u8> {
    let sink = CollectorSink::default();
    let emitter = Emitter::new(Box::new(sink.clone()), "s", false);
    emitter.set_secrets(secrets.clone());
    for record in records {
        emitter.forward(record);
    }
    sink.lines()
        .iter()
        .map(|line| format!("{line}\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn a_long_line_leaves_in_parts_that_add_up_to_the_whole_line_redacted() {
    let secret = "sk-part-boundary-secret";
    let secrets = Secrets::from_values([secret.to_string()]);
    // Thousands of short strings, each holding the secret: some straddle a part boundary.
    let items: Vec<String> = (0..12_000).map(|i| format!("{i}:{secret};")).collect();
    let records = vec![
        json!({"type": "short", "text": secret}),
        json!({"type": "agent_end", "messages": items}),
        json!({"type": "after"}),
        // Only `agent_end` goes in parts: any other line, however long, is written whole.
        json!({"type": "tool_execution_end", "text": "x".repeat(3 * PART_BYTES)}),
    ];
    let sink = PartSink::default();
    let emitter = Emitter::new(Box::new(sink.clone()), "s", false);
    emitter.set_secrets(secrets.clone());
    for record in &records {
        emitter.forward(record);
    }
    let parts = sink.parts.lock_or_recover().clone();
    // The short lines and the other long one go whole; agent_end in parts of about
    // PART_BYTES.
    assert_eq!(sink.whole.load(Ordering::SeqCst), 3);
    assert!(parts.len() > 6, "{} parts", parts.len());
    assert_eq!(parts[0].last(), Some(&b'\n'));
    assert!(
        parts[1..parts.len() - 3]
            .iter()
            .all(|p| !p.contains(&b'\n'))
    );
    assert_eq!(parts.last().map(Vec::len), Some(3 * PART_BYTES + 40));
    // (Redaction shortens a part.)
    assert!(parts[1].len() > PART_BYTES / 2 && parts[1].len() < 2 * PART_BYTES);
    let written: Vec<u8> = parts.concat();
    assert_eq!(written, whole_lines(&records, &secrets));
    let text = String::from_utf8(written).unwrap();
    assert!(!text.contains(secret));
    assert_eq!(text.matches("[REDACTED]").count(), 12_001);
}

#[test]
fn a_sink_failing_under_a_part_closes_the_emitter_once() {
    let fired = Arc::new(AtomicUsize::new(0));
    let sink = PartSink {
        fail_at: Some(2),
        ..PartSink::default()
    };
    let emitter = Emitter::new(Box::new(sink.clone()), "s", false);
    let counter = fired.clone();
    emitter.on_close(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let long: Vec<String> = (0..20_000).map(|i| format!("item {i}")).collect();
    emitter.forward(&json!({"type": "agent_end", "messages": long}));
    emitter.forward(&json!({"type": "after"}));
    assert!(emitter.is_closed());
    assert_eq!(fired.load(Ordering::SeqCst), 1);
    assert_eq!(sink.parts.lock_or_recover().len(), 2);
}
