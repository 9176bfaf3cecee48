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
