use super::*;
use serde_json::{Value, json};

fn identity(parent: Option<&str>) -> AgentIdentity {
    AgentIdentity {
        session_type_id: "worker".into(),
        session_id: "s".into(),
        trajectory_id: "t".into(),
        parent_trajectory_id: parent.map(str::to_string),
    }
}

fn end_event() -> ToolEvent {
    ToolEvent {
        tool_call_id: "call-1".into(),
        tool_class: "bash".into(),
        started_at_unix_ms: Some(1000),
        ended_at_unix_ms: Some(1005),
        status: Some(ToolStatus::Succeeded),
        duration_ms: Some(5.25),
        output_bytes: Some(4),
        error_type: None,
        source_request_id: Some("s:r0:t0:a1".into()),
        consumer_request_id: Some("s:r0:t1:a1".into()),
        parent_request_id: None,
    }
}

/// Decodes msgpack into a JSON value to compare whole records.
fn decode(bytes: &[u8]) -> Value {
    rmp_serde::from_slice(bytes).unwrap()
}

#[test]
fn v1_records_are_msgpack_maps_with_named_keys_and_no_empty_options() {
    let id = identity(None);
    let tool = end_event();
    let bytes = to_msgpack(&AgentTraceRecord::tool(
        EventType::ToolEnd,
        1005,
        &id,
        &tool,
    ))
    .unwrap();
    // A fixmap marker (0x80..0x8f), not an array (0x90..0x9f), of the 6 fields present.
    assert_eq!(bytes[0], 0x86, "a map of 6 expected, got {:#x}", bytes[0]);
    // The head comes first, in the schemas' order, in the trace file as on the wire.
    let line = serde_json::to_string(&AgentTraceRecord::tool(
        EventType::ToolEnd,
        1005,
        &id,
        &tool,
    ))
    .unwrap();
    assert!(
        line.starts_with(
            r#"{"schema":"dynamo.agent.trace.v1","event_type":"tool_end","event_time_unix_ms":1005,"event_source":"harness","#
        ),
        "{line}"
    );
    assert_eq!(
        decode(&bytes),
        json!({
            "schema": "dynamo.agent.trace.v1",
            "event_type": "tool_end",
            "event_time_unix_ms": 1005,
            "event_source": "harness",
            "agent_context": {"session_type_id": "worker", "session_id": "s", "trajectory_id": "t"},
            "tool": {"tool_call_id": "call-1", "tool_class": "bash", "started_at_unix_ms": 1000,
                     "ended_at_unix_ms": 1005, "status": "succeeded", "duration_ms": 5.25, "output_bytes": 4,
                     "source_request_id": "s:r0:t0:a1", "consumer_request_id": "s:r0:t1:a1"}
        })
    );
}

#[test]
fn request_trace_ingress_is_flat_with_the_trajectory_as_session() {
    let id = identity(Some("parent"));
    let tool = ToolEvent {
        status: Some(ToolStatus::Running),
        ended_at_unix_ms: None,
        duration_ms: None,
        output_bytes: None,
        consumer_request_id: None,
        parent_request_id: Some("p:r0:t3:a1".into()),
        ..end_event()
    };
    let bytes = to_msgpack(&RequestTraceIngress::tool(
        EventType::ToolStart,
        1000,
        &id,
        &tool,
    ))
    .unwrap();
    assert_eq!(
        decode(&bytes),
        json!({
            "schema": "dynamo.request.trace.v1",
            "event_type": "tool_start",
            "event_time_unix_ms": 1000,
            "session_id": "t",
            "parent_session_id": "parent",
            "tool": {"tool_call_id": "call-1", "tool_class": "bash", "started_at_unix_ms": 1000, "status": "running",
                     "source_request_id": "s:r0:t0:a1", "parent_request_id": "p:r0:t3:a1"}
        })
    );
}

#[test]
fn tool_classes_cut_at_the_first_separator() {
    assert_eq!(tool_class("agent_tools---search"), "agent_tools");
    assert_eq!(tool_class("mcp/server.tool"), "mcp");
    assert_eq!(tool_class("bash"), "bash");
    assert_eq!(tool_class("github_get_issue"), "github_get_issue");
    assert_eq!(tool_class(""), "unknown");
    assert_eq!(tool_class("/x"), "unknown");
}

#[test]
fn a_redacted_record_encodes_to_the_records_own_bytes() {
    let id = identity(Some("p"));
    let mut tool = end_event();
    let record = AgentTraceRecord::tool(EventType::ToolEnd, 1005, &id, &tool);
    let secrets = Secrets::from_values(["call-id-secret".to_string()]);
    let through_value = redacted(&record, &secrets).map(|value| to_msgpack(&value).unwrap());
    assert_eq!(through_value, Some(to_msgpack(&record).unwrap()));
    // A tool call id the model chose to hold a secret is sent redacted.
    tool.tool_call_id = "call-id-secret".into();
    let record = RequestTraceIngress::tool(EventType::ToolEnd, 1005, &id, &tool);
    let value = redacted(&record, &secrets).unwrap();
    assert_eq!(
        decode(&to_msgpack(&value).unwrap())["tool"]["tool_call_id"],
        "[REDACTED]"
    );
}

#[test]
fn the_direct_encoding_is_what_the_long_way_gives_and_a_secret_still_goes() {
    let id = identity(Some("p"));
    let mut tool = end_event();
    let secrets = Secrets::from_values(["call-id-secret".to_string()]);
    for record in [
        to_msgpack(&AgentTraceRecord::tool(
            EventType::ToolEnd,
            1005,
            &id,
            &tool,
        )),
        to_msgpack(&RequestTraceIngress::tool(
            EventType::ToolStart,
            1005,
            &id,
            &tool,
        )),
    ] {
        assert!(!secrets.occur_in(&record.unwrap()));
    }
    let record = AgentTraceRecord::tool(EventType::ToolEnd, 1005, &id, &tool);
    let long_way = redacted(&record, &secrets).map(|value| to_msgpack(&value).unwrap());
    assert_eq!(redacted_msgpack(&record, &secrets), long_way);
    assert_eq!(
        redacted_msgpack(&record, &Secrets::default()),
        Some(to_msgpack(&record).unwrap())
    );

    tool.tool_call_id = "call-id-secret".into();
    for payload in [
        redacted_msgpack(
            &AgentTraceRecord::tool(EventType::ToolEnd, 1005, &id, &tool),
            &secrets,
        ),
        redacted_msgpack(
            &RequestTraceIngress::tool(EventType::ToolEnd, 1005, &id, &tool),
            &secrets,
        ),
    ] {
        let payload = payload.unwrap();
        assert!(!secrets.occur_in(&payload));
        assert!(
            payload
                .windows(b"[REDACTED]".len())
                .any(|w| w == b"[REDACTED]")
        );
    }
}

/// The records' shape as a plain derive with the head flattened: what the hand-written
/// `Serialize` impls must encode byte for byte (keys, their order, and which are left out).
#[derive(Serialize)]
struct FlatAgentRecord<'a> {
    #[serde(flatten)]
    head: RecordHead,
    event_source: &'static str,
    agent_context: &'a AgentIdentity,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<&'a RequestMetrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a ToolEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    control: Option<&'a Value>,
}

#[derive(Serialize)]
struct FlatIngress<'a> {
    #[serde(flatten)]
    head: RecordHead,
    session_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_session_id: Option<&'a str>,
    tool: &'a ToolEvent,
}

fn flat<'a>(record: &'a AgentTraceRecord<'a>) -> FlatAgentRecord<'a> {
    FlatAgentRecord {
        head: record.head,
        event_source: record.event_source,
        agent_context: record.agent_context,
        request: record.request.as_ref(),
        tool: record.tool,
        control: record.control.as_ref(),
    }
}

#[test]
fn records_encode_as_their_flattened_derive_would_with_every_field_combination() {
    let tool = end_event();
    let request = RequestMetrics {
        request_id: "r".into(),
        x_request_id: None,
        model: "m".into(),
        input_tokens: Some(3),
        output_tokens: None,
        cached_tokens: None,
        request_received_ms: Some(7),
        ttft_ms: None,
        total_time_ms: Some(1.5),
        parent_request_id: None,
    };
    let control = json!({"type": "steer", "text": "go"});
    for parent in [None, Some("run7:scout:0")] {
        let id = identity(parent);
        for mask in 0..8u8 {
            let mut record = AgentTraceRecord::tool(EventType::ToolEnd, 1005, &id, &tool);
            record.request = (mask & 1 != 0).then(|| request.clone());
            record.tool = (mask & 2 != 0).then_some(&tool);
            record.control = (mask & 4 != 0).then(|| control.clone());
            assert_eq!(
                to_msgpack(&record).unwrap(),
                to_msgpack(&flat(&record)).unwrap(),
                "msgpack, fields {mask:03b}"
            );
            assert_eq!(
                serde_json::to_string(&record).unwrap(),
                serde_json::to_string(&flat(&record)).unwrap(),
                "JSON (the trace file), fields {mask:03b}"
            );
        }
        let ingress = RequestTraceIngress::tool(EventType::ToolStart, 1000, &id, &tool);
        let reference = FlatIngress {
            head: ingress.head,
            session_id: ingress.session_id,
            parent_session_id: ingress.parent_session_id,
            tool: ingress.tool,
        };
        assert_eq!(
            to_msgpack(&ingress).unwrap(),
            to_msgpack(&reference).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&ingress).unwrap(),
            serde_json::to_string(&reference).unwrap()
        );
    }
}
