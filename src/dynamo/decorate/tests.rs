use super::*;
use crate::dynamo::protocol::TraceProtocol;
use serde_json::json;

fn decorator(protocol: TraceProtocol, parent: Option<&str>) -> IdentityDecorator {
    IdentityDecorator::new(
        AgentIdentity {
            session_type_id: "worker".into(),
            session_id: "s".into(),
            trajectory_id: "t".into(),
            parent_trajectory_id: parent.map(str::to_string),
        },
        Arc::new(ProtocolState::new(protocol)),
    )
}

#[test]
fn agent_mode_merges_into_existing_nvext_without_overwriting() {
    let d = decorator(TraceProtocol::Agent, Some("p"));
    let mut body = json!({"model": "m", "nvext": {"greed_sampling": true, "agent_context": {"session_id": "mine"}}});
    let mut headers = Vec::new();
    d.decorate(&mut body, &mut headers);
    assert_eq!(
        body["nvext"],
        json!({"greed_sampling": true, "agent_context": {"session_id": "mine", "session_type_id": "worker", "trajectory_id": "t", "parent_trajectory_id": "p"}})
    );
    assert!(headers.is_empty());
}

#[test]
fn request_mode_uses_headers_only() {
    let d = decorator(TraceProtocol::Request, Some("p"));
    let mut body = json!({"model": "m"});
    let mut headers = Vec::new();
    d.decorate(&mut body, &mut headers);
    assert_eq!(body, json!({"model": "m"}));
    assert_eq!(
        headers,
        vec![
            ("x-dynamo-session-id".to_string(), "t".to_string()),
            ("x-dynamo-parent-session-id".to_string(), "p".to_string())
        ]
    );
    let d = decorator(TraceProtocol::Request, None);
    let mut headers = Vec::new();
    d.decorate(&mut body, &mut headers);
    assert_eq!(headers.len(), 1, "no parent header without a parent");
}

#[test]
fn auto_sends_both_then_switches_on_a_400_naming_agent_context() {
    let d = decorator(TraceProtocol::Auto, None);
    let mut body = json!({});
    let mut headers = Vec::new();
    d.decorate(&mut body, &mut headers);
    assert!(body["nvext"]["agent_context"].is_object());
    assert_eq!(headers.len(), 1);
    assert!(!d.resend_after_rejection(400, "unknown field `model`"));
    assert!(!d.resend_after_rejection(500, "agent_context"));
    assert!(d.resend_after_rejection(400, "unknown field agent_context, expected one of ..."));
    let mut body = json!({});
    d.decorate(&mut body, &mut Vec::new());
    assert_eq!(body, json!({}), "no body identity after the switch");
}

#[test]
fn off_changes_nothing() {
    let d = decorator(TraceProtocol::Off, Some("p"));
    let mut body = json!({"model": "m"});
    let mut headers = Vec::new();
    d.decorate(&mut body, &mut headers);
    assert_eq!(body, json!({"model": "m"}));
    assert!(headers.is_empty());
}
