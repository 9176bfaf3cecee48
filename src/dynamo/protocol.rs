//! Which trace dialect Dynamo speaks.
//!
//! Dynamo 1.2.x reads the identity from the request body (`nvext.agent_context`) and ingests
//! `dynamo.agent.trace.v1` tool records. Dynamo 1.3 and later reads it from
//! `x-dynamo-session-id` headers, ingests flat `dynamo.request.trace.v1` records, and answers
//! a body with `nvext.agent_context` with HTTP 400. In `auto`, worker sends both until the
//! server shows which one it speaks: a 400 naming `agent_context` means `request`, the first
//! accepted request means `agent`.

use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;

/// `--dynamo-trace-protocol`: how the agent identity travels on model requests and which
/// shape tool records take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TraceProtocol {
    /// Both, until the server shows which one it speaks.
    Auto,
    /// Dynamo 1.2.x: `nvext.agent_context` and `dynamo.agent.trace.v1`.
    Agent,
    /// Dynamo 1.3+: `x-dynamo-session-id` headers and `dynamo.request.trace.v1`.
    Request,
    /// No identity on requests and no tool events to Dynamo (`--trace-file` is still written).
    Off,
}

impl TraceProtocol {
    /// The name as typed and as reported (`trace_status.protocol`).
    pub fn name(self) -> &'static str {
        match self {
            TraceProtocol::Auto => "auto",
            TraceProtocol::Agent => "agent",
            TraceProtocol::Request => "request",
            TraceProtocol::Off => "off",
        }
    }
}

/// A dialect that is actually in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolved {
    /// Dynamo 1.2.x: the identity in the body, `dynamo.agent.trace.v1` tool records.
    Agent,
    /// Dynamo 1.3+: the identity in headers, `dynamo.request.trace.v1` tool records.
    Request,
}

impl Resolved {
    /// The name as reported (`resolvedProtocol` of `trace_status` and `trace_summary`).
    pub fn name(self) -> &'static str {
        match self {
            Resolved::Agent => "agent",
            Resolved::Request => "request",
        }
    }
}

const UNRESOLVED: u8 = 0;
const AGENT: u8 = 1;
const REQUEST: u8 = 2;

/// The configured protocol and, for `auto`, what the server turned out to speak.
#[derive(Debug)]
pub struct ProtocolState {
    configured: TraceProtocol,
    resolved: AtomicU8,
}

impl ProtocolState {
    /// The state for `configured`: already resolved for `agent` and `request`, unresolved for
    /// `auto` and `off`.
    pub fn new(configured: TraceProtocol) -> Self {
        let resolved = match configured {
            TraceProtocol::Agent => AGENT,
            TraceProtocol::Request => REQUEST,
            TraceProtocol::Auto | TraceProtocol::Off => UNRESOLVED,
        };
        ProtocolState {
            configured,
            resolved: AtomicU8::new(resolved),
        }
    }

    /// The protocol asked for.
    pub fn configured(&self) -> TraceProtocol {
        self.configured
    }

    /// The dialect in use: fixed for `agent` and `request`, learned for `auto`; `None` for
    /// `auto` until an answer settles it, and always for `off`.
    pub fn resolved(&self) -> Option<Resolved> {
        match self.resolved.load(Ordering::SeqCst) {
            AGENT => Some(Resolved::Agent),
            REQUEST => Some(Resolved::Request),
            _ => None,
        }
    }

    /// Whether requests carry the body identity and the headers, respectively.
    pub fn sends(&self) -> (bool, bool) {
        match (self.configured, self.resolved()) {
            (TraceProtocol::Off, _) => (false, false),
            (_, Some(Resolved::Request)) => (false, true),
            (TraceProtocol::Agent, _) => (true, false),
            // auto, unresolved or resolved to agent: both (headers are harmless on 1.2.x)
            _ => (true, true),
        }
    }

    /// A request was accepted: in `auto`, the server speaks what was sent.
    pub fn accepted(&self) {
        if self.configured == TraceProtocol::Auto {
            let _ = self.resolved.compare_exchange(
                UNRESOLVED,
                AGENT,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
    }

    /// The server refused `nvext.agent_context`: in `auto`, switch to headers. True when the
    /// request should be sent again at once.
    pub fn rejected_agent_context(&self) -> bool {
        if self.configured != TraceProtocol::Auto || self.resolved() == Some(Resolved::Request) {
            return false;
        }
        self.resolved.store(REQUEST, Ordering::SeqCst);
        true
    }

    /// The dialect tool records use: what requests resolved to, `agent` before any request.
    pub fn for_tool_records(&self) -> Option<Resolved> {
        match self.configured {
            TraceProtocol::Off => None,
            _ => Some(self.resolved().unwrap_or(Resolved::Agent)),
        }
    }
}

#[cfg(test)]
mod tests;
