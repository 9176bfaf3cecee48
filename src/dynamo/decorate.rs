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
    /// Adds the agent identity (body field, headers or both, as the protocol says).
    pub identity: IdentityDecorator,
    /// The serving hints; shared with the bridge, which feeds them completion sizes and reads
    /// their refusals at the end.
    pub hints: Arc<Hints>,
    /// Requests shaped so far, every attempt counted (retries and resends too):
    /// `trace_summary.llmRequests`.
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

/// Puts the agent identity on a request as the protocol says: `nvext.agent_context` in the
/// body, `x-dynamo-session-id` and `x-dynamo-parent-session-id` headers, or both.
pub struct IdentityDecorator {
    identity: AgentIdentity,
    protocol: Arc<ProtocolState>,
}

impl IdentityDecorator {
    /// A decorator for `identity`, sharing `protocol` with the bridge so what one answer settles
    /// holds for the next request and for tool records.
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
mod tests;
