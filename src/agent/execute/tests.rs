use super::*;

fn builtin(name: &str) -> Arc<dyn Tool> {
    crate::tools::ToolSet::all_builtin()
        .into_iter()
        .find(|tool| tool.name() == name)
        .unwrap()
}

#[test]
fn a_tool_with_nothing_to_stop_is_dropped_at_once() {
    let grep = builtin("grep");
    assert_eq!(stop_grace(grep.as_ref(), None), Duration::ZERO);
    let later = Instant::now() + Duration::from_secs(60);
    assert_eq!(stop_grace(grep.as_ref(), Some(later)), Duration::ZERO);
}

#[test]
fn a_command_gets_its_own_stop_cut_to_what_is_left_of_the_budget() {
    let bash = builtin("bash");
    let own = bash.stop_grace();
    assert!(own > Duration::ZERO);
    // A signal with no budget: the whole stop, and the margin to hand back the output.
    assert_eq!(stop_grace(bash.as_ref(), None), own + STOP_MARGIN);
    // The budget ran out: only the margin.
    let past = Instant::now();
    assert_eq!(stop_grace(bash.as_ref(), Some(past)), STOP_MARGIN);
    // Plenty left: the whole stop.
    let later = Instant::now() + Duration::from_secs(60);
    assert_eq!(stop_grace(bash.as_ref(), Some(later)), own + STOP_MARGIN);
}

#[test]
fn a_dropped_call_says_why() {
    let text = |reason| {
        stopped_text(reason, "web_fetch").content[0]
            .as_str()
            .to_string()
    };
    assert_eq!(
        text(Some(AbortReason::Timeout)),
        "Tool web_fetch stopped: the run's --timeout ran out before it finished"
    );
    assert_eq!(text(Some(AbortReason::Interrupt)), "Operation aborted");
}
