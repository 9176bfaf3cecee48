//! Who this agent is in a Dynamo trace: the agent context.
//!
//! `trajectory_id` names this run's line of work; `parent_trajectory_id` the run that started
//! it; `session_id` groups a whole agent tree; `session_type_id` says what kind of harness
//! produced it. All come from `DYN_AGENT_*` variables, with defaults derived from the run's
//! own session id, so every request carries the three required ids (Dynamo 1.2.1 rejects a
//! request missing one).
//!
//! Subagents launched by Pi-style subagent runners (`PI_SUBAGENT_CHILD=1` plus run id and
//! agent name) inherit their parent's `DYN_AGENT_TRAJECTORY_ID`; the bridge turns that into
//! `parent_trajectory_id` and gives the child its own trajectory `RUN_ID:AGENT:INDEX`.
//!
//! The environment worker hands to the processes it starts ([`AgentIdentity::child_env`])
//! carries this run's ids and drops `DYN_AGENT_PARENT_TRAJECTORY_ID` and the `PI_SUBAGENT_*`
//! markers, so a subagent started from here derives *its* parent as this run, and a
//! grandchild as that subagent: each level names the one above, none collapses onto another.

use serde::Serialize;

use crate::config::Env;

/// `session_type_id` when `DYN_AGENT_SESSION_TYPE_ID` is not set.
pub const DEFAULT_SESSION_TYPE: &str = "worker";

const SESSION_TYPE_ID: &str = "DYN_AGENT_SESSION_TYPE_ID";
const SESSION_ID: &str = "DYN_AGENT_SESSION_ID";
const TRAJECTORY_ID: &str = "DYN_AGENT_TRAJECTORY_ID";
const PARENT_TRAJECTORY_ID: &str = "DYN_AGENT_PARENT_TRAJECTORY_ID";
const SUBAGENT_CHILD: &str = "PI_SUBAGENT_CHILD";
const SUBAGENT_RUN_ID: &str = "PI_SUBAGENT_RUN_ID";
const SUBAGENT_CHILD_AGENT: &str = "PI_SUBAGENT_CHILD_AGENT";
const SUBAGENT_CHILD_INDEX: &str = "PI_SUBAGENT_CHILD_INDEX";

/// The four ids, serialized as Dynamo's `agent_context` (optional parent omitted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentIdentity {
    /// What kind of harness produced the trace (`DYN_AGENT_SESSION_TYPE_ID`, default
    /// `worker`).
    pub session_type_id: String,
    /// Groups a whole agent tree (`DYN_AGENT_SESSION_ID`, default the trajectory id).
    pub session_id: String,
    /// This run's line of work (`DYN_AGENT_TRAJECTORY_ID`, default the run's session id;
    /// `RUN_ID:AGENT:INDEX` for a bridged subagent); the `x-dynamo-session-id` header.
    pub trajectory_id: String,
    /// The trajectory of the run that started this one (the `x-dynamo-parent-session-id`
    /// header); `None` for a root run, and then left out of `agent_context`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_trajectory_id: Option<String>,
}

impl AgentIdentity {
    /// Resolves the identity; `run_session_id` is the default trajectory. The flag says
    /// whether the subagent bridge rewrote it.
    pub fn resolve(env: &dyn Env, run_session_id: &crate::ids::SessionId) -> (AgentIdentity, bool) {
        let inherited = env.get(TRAJECTORY_ID);
        let explicit_parent = env.get(PARENT_TRAJECTORY_ID);
        let bridge = match (
            env.get(SUBAGENT_CHILD).as_deref(),
            &explicit_parent,
            &inherited,
            env.get(SUBAGENT_RUN_ID),
            env.get(SUBAGENT_CHILD_AGENT),
        ) {
            (Some("1"), None, Some(parent), Some(run), Some(agent)) => {
                let index = env
                    .get(SUBAGENT_CHILD_INDEX)
                    .unwrap_or_else(|| "0".to_string());
                Some((parent.clone(), format!("{run}:{agent}:{index}")))
            }
            _ => None,
        };
        let bridged = bridge.is_some();
        let (trajectory_id, parent_trajectory_id) = match bridge {
            Some((parent, trajectory)) => (trajectory, Some(parent)),
            None => (
                inherited.unwrap_or_else(|| run_session_id.to_string()),
                explicit_parent,
            ),
        };
        let identity = AgentIdentity {
            session_type_id: env
                .get(SESSION_TYPE_ID)
                .unwrap_or_else(|| DEFAULT_SESSION_TYPE.to_string()),
            session_id: env.get(SESSION_ID).unwrap_or_else(|| trajectory_id.clone()),
            trajectory_id,
            parent_trajectory_id,
        };
        (identity, bridged)
    }

    /// Environment changes for processes this run starts: `Some` sets, `None` removes.
    pub fn child_env(&self) -> Vec<(String, Option<String>)> {
        vec![
            (SESSION_TYPE_ID.into(), Some(self.session_type_id.clone())),
            (SESSION_ID.into(), Some(self.session_id.clone())),
            (TRAJECTORY_ID.into(), Some(self.trajectory_id.clone())),
            (PARENT_TRAJECTORY_ID.into(), None),
            (SUBAGENT_CHILD.into(), None),
            (SUBAGENT_RUN_ID.into(), None),
            (SUBAGENT_CHILD_AGENT.into(), None),
            (SUBAGENT_CHILD_INDEX.into(), None),
        ]
    }
}

#[cfg(test)]
mod tests;
