//! Channel A: the agent identity on every model request, and the serving hints beside it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use super::hints::Hints;
use super::identity::AgentIdentity;
use super::protocol::ProtocolState;
use crate::llm::RequestDecorator;

/// What the bridge adds to every request: identity, then hints; counts the requests shaped.
pub struct BridgeDecorator {
    pub identity: IdentityDecorator,
    pub hints: Arc<Hints>,
    pub sent: AtomicU64,
}

impl RequestDecorator for BridgeDecorator {
    fn decorate(&self, body: &mut Value, headers: &mut Vec<(String, String)>) {
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.identity.decorate(body, headers);
        self.hints.decorate(body, headers);
    }

    fn resend_after_rejection(&self, status: u16, body: &str) -> bool {
        // Both hear of it: a message naming `agent_context` names no hint, and the reverse.
        let identity = self.identity.resend_after_rejection(status, body);
        let hint = self.hints.rejected(status, body).is_some();
        identity || hint
    }

    fn accepted(&self) {
        self.identity.accepted();
    }
}

pub struct IdentityDecorator {
    identity: AgentIdentity,
    protocol: Arc<ProtocolState>,
}

impl IdentityDecorator {
    pub fn new(identity: AgentIdentity, protocol: Arc<ProtocolState>) -> Self {
        IdentityDecorator { identity, protocol }
    }
}

impl RequestDecorator for IdentityDecorator {
    fn decorate(&self, body: &mut Value, headers: &mut Vec<(String, String)>) {
        let (in_body, in_headers) = self.protocol.sends();
        if in_body {
            merge_agent_context(body, &self.identity);
        }
        if in_headers {
            headers.push((
                "x-dynamo-session-id".into(),
                self.identity.trajectory_id.clone(),
            ));
            if let Some(parent) = &self.identity.parent_trajectory_id {
                headers.push(("x-dynamo-parent-session-id".into(), parent.clone()));
            }
        }
    }

    fn resend_after_rejection(&self, status: u16, body: &str) -> bool {
        status == 400 && body.contains("agent_context") && self.protocol.rejected_agent_context()
    }

    fn accepted(&self) {
        self.protocol.accepted();
    }
}

/// Adds `nvext.agent_context`, keeping other `nvext` keys and any `agent_context` keys the
/// body already has.
fn merge_agent_context(body: &mut Value, identity: &AgentIdentity) {
    let Some(body) = body.as_object_mut() else {
        return;
    };
    let nvext = body
        .entry("nvext")
        .or_insert_with(|| Value::Object(Map::new()));
    if !nvext.is_object() {
        *nvext = Value::Object(Map::new());
    }
    let Some(nvext) = nvext.as_object_mut() else {
        return;
    };
    let context = nvext
        .entry("agent_context")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(context) = context.as_object_mut() else {
        return;
    };
    let Ok(Value::Object(ids)) = serde_json::to_value(identity) else {
        return;
    };
    for (key, value) in ids {
        context.entry(key).or_insert(value);
    }
}

#[cfg(test)]
mod tests {
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
}
