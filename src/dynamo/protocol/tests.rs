use super::*;

#[test]
fn auto_sends_both_until_the_server_decides() {
    let state = ProtocolState::new(TraceProtocol::Auto);
    assert_eq!(state.sends(), (true, true));
    assert_eq!(state.resolved(), None);
    assert!(state.rejected_agent_context());
    assert_eq!(state.sends(), (false, true));
    assert_eq!(state.resolved(), Some(Resolved::Request));
    assert!(
        !state.rejected_agent_context(),
        "a second 400 is a real error"
    );
    state.accepted();
    assert_eq!(state.resolved(), Some(Resolved::Request));
}

#[test]
fn auto_resolves_to_agent_when_the_body_identity_is_accepted() {
    let state = ProtocolState::new(TraceProtocol::Auto);
    state.accepted();
    assert_eq!(state.resolved(), Some(Resolved::Agent));
    assert_eq!(state.sends(), (true, true));
    assert_eq!(state.for_tool_records(), Some(Resolved::Agent));
}

#[test]
fn fixed_protocols_never_switch() {
    let agent = ProtocolState::new(TraceProtocol::Agent);
    assert_eq!(agent.sends(), (true, false));
    assert!(!agent.rejected_agent_context());
    let request = ProtocolState::new(TraceProtocol::Request);
    assert_eq!(request.sends(), (false, true));
    let off = ProtocolState::new(TraceProtocol::Off);
    assert_eq!(off.sends(), (false, false));
    assert_eq!(off.for_tool_records(), None);
}
