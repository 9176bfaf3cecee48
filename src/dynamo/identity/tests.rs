use super::*;
use crate::config::MapEnv;

fn sid(id: &str) -> crate::ids::SessionId {
    crate::ids::SessionId::parse(id).unwrap()
}

fn resolve(pairs: &[(&str, &str)]) -> (AgentIdentity, bool) {
    AgentIdentity::resolve(&MapEnv::from_pairs(pairs), &sid("sess-run"))
}

fn identity(session: &str, trajectory: &str, parent: Option<&str>) -> AgentIdentity {
    AgentIdentity {
        session_type_id: "worker".into(),
        session_id: session.into(),
        trajectory_id: trajectory.into(),
        parent_trajectory_id: parent.map(str::to_string),
    }
}

const BRIDGE: [(&str, &str); 4] = [
    ("PI_SUBAGENT_CHILD", "1"),
    ("DYN_AGENT_TRAJECTORY_ID", "parent-traj"),
    ("PI_SUBAGENT_RUN_ID", "run7"),
    ("PI_SUBAGENT_CHILD_AGENT", "scout"),
];

#[test]
fn defaults_derive_every_required_id_from_the_run() {
    assert_eq!(
        resolve(&[]),
        (identity("sess-run", "sess-run", None), false)
    );
}

#[test]
fn explicit_ids_win_and_blank_values_count_as_unset() {
    let (id, _) = resolve(&[
        ("DYN_AGENT_SESSION_TYPE_ID", "ci"),
        ("DYN_AGENT_SESSION_ID", "s1"),
        ("DYN_AGENT_TRAJECTORY_ID", "t1"),
        ("DYN_AGENT_PARENT_TRAJECTORY_ID", "t0"),
    ]);
    assert_eq!(
        id,
        AgentIdentity {
            session_type_id: "ci".into(),
            ..identity("s1", "t1", Some("t0"))
        }
    );
    let (id, _) = resolve(&[
        ("DYN_AGENT_SESSION_ID", " "),
        ("DYN_AGENT_TRAJECTORY_ID", ""),
    ]);
    assert_eq!(id, identity("sess-run", "sess-run", None));
}

#[test]
fn bridge_rewrites_a_subagent_child() {
    assert_eq!(
        resolve(&BRIDGE),
        (
            identity("run7:scout:0", "run7:scout:0", Some("parent-traj")),
            true
        )
    );
}

#[test]
fn bridge_uses_the_child_index() {
    let mut pairs = BRIDGE.to_vec();
    pairs.push(("PI_SUBAGENT_CHILD_INDEX", "3"));
    assert_eq!(resolve(&pairs).0.trajectory_id, "run7:scout:3");
}

#[test]
fn bridge_needs_child_equal_to_1() {
    let mut pairs = BRIDGE.to_vec();
    pairs[0] = ("PI_SUBAGENT_CHILD", "true");
    assert_eq!(
        resolve(&pairs),
        (identity("parent-traj", "parent-traj", None), false)
    );
}

#[test]
fn a_manual_parent_wins_over_the_bridge() {
    let mut pairs = BRIDGE.to_vec();
    pairs.push(("DYN_AGENT_PARENT_TRAJECTORY_ID", "manual"));
    assert_eq!(
        resolve(&pairs),
        (
            identity("parent-traj", "parent-traj", Some("manual")),
            false
        )
    );
}

#[test]
fn bridge_needs_an_inherited_trajectory() {
    let pairs: Vec<_> = BRIDGE
        .iter()
        .copied()
        .filter(|(k, _)| *k != "DYN_AGENT_TRAJECTORY_ID")
        .collect();
    assert_eq!(
        resolve(&pairs),
        (identity("sess-run", "sess-run", None), false)
    );
}

#[test]
fn bridge_needs_run_id_and_agent_name() {
    for missing in ["PI_SUBAGENT_RUN_ID", "PI_SUBAGENT_CHILD_AGENT"] {
        let pairs: Vec<_> = BRIDGE
            .iter()
            .copied()
            .filter(|(k, _)| *k != missing)
            .collect();
        assert!(!resolve(&pairs).1, "{missing}");
    }
}

#[test]
fn the_session_is_shared_down_the_tree_when_set() {
    let mut pairs = BRIDGE.to_vec();
    pairs.push(("DYN_AGENT_SESSION_ID", "tree"));
    assert_eq!(resolve(&pairs).0.session_id, "tree");
}

/// What a process started by `parent` sees, with extra variables set by its launcher.
fn child_of(parent: &AgentIdentity, launcher: &[(&str, &str)]) -> MapEnv {
    let mut env = MapEnv::default();
    for (key, value) in parent.child_env() {
        if let Some(value) = value {
            env.0.insert(key, value);
        }
    }
    for (key, value) in launcher {
        env.0.insert(key.to_string(), value.to_string());
    }
    env
}

#[test]
fn a_root_child_grandchild_chain_names_each_parent() {
    let (root, _) = resolve(&[]);
    let child_env = child_of(
        &root,
        &[
            ("PI_SUBAGENT_CHILD", "1"),
            ("PI_SUBAGENT_RUN_ID", "r1"),
            ("PI_SUBAGENT_CHILD_AGENT", "scout"),
        ],
    );
    let (child, bridged) = AgentIdentity::resolve(&child_env, &sid("sess-child"));
    assert!(bridged);
    assert_eq!(child, identity("sess-run", "r1:scout:0", Some("sess-run")));
    let grand_env = child_of(
        &child,
        &[
            ("PI_SUBAGENT_CHILD", "1"),
            ("PI_SUBAGENT_RUN_ID", "r2"),
            ("PI_SUBAGENT_CHILD_AGENT", "fixer"),
        ],
    );
    let (grandchild, bridged) = AgentIdentity::resolve(&grand_env, &sid("sess-grand"));
    assert!(bridged);
    assert_eq!(
        grandchild,
        identity("sess-run", "r2:fixer:0", Some("r1:scout:0"))
    );
}

#[test]
fn a_plain_process_started_by_a_subagent_keeps_its_trajectory_without_re_bridging() {
    let (child, _) = resolve(&BRIDGE);
    // A command the child runs inherits no PI_SUBAGENT_* markers: it acts for the child.
    let (same, bridged) = AgentIdentity::resolve(&child_of(&child, &[]), &sid("other"));
    assert!(!bridged);
    assert_eq!(same.trajectory_id, child.trajectory_id);
    assert_eq!(same.session_id, child.session_id);
}
