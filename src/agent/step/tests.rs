use super::*;
use crate::llm::{LlmError, TransportError};

fn limits() -> Limits {
    Limits {
        max_turns: Some(3),
        max_tool_calls: Some(10),
        ..Limits::default()
    }
}

#[test]
fn an_abort_is_read_before_anything_else_at_the_safe_point() {
    let stats = UsageStats {
        tool_calls: 10,
        ..UsageStats::default()
    };
    // Over the turn limit and the tool-call budget too: the abort is what is reported.
    let ending = stop_before_turn(true, &limits(), &stats, 3);
    assert!(matches!(ending, Some(Ending::Aborted)), "{ending:?}");
}

#[test]
fn the_turn_limit_stops_at_its_count_and_before_the_budgets() {
    let mut stats = UsageStats::default();
    assert!(stop_before_turn(false, &limits(), &stats, 2).is_none());
    assert!(matches!(
        stop_before_turn(false, &limits(), &stats, 3),
        Some(Ending::MaxTurns)
    ));
    stats.tool_calls = 10;
    assert!(matches!(
        stop_before_turn(false, &limits(), &stats, 3),
        Some(Ending::MaxTurns)
    ));
    assert!(matches!(
        stop_before_turn(false, &limits(), &stats, 2),
        Some(Ending::Budget(LimitKind::MaxToolCalls))
    ));
    assert!(stop_before_turn(false, &Limits::default(), &stats, 1000).is_none());
}

#[test]
fn an_answer_is_judged_by_how_it_ended_then_why_it_stopped_then_its_calls() {
    let ended = |answer: Answer| match answer {
        Answer::Ending(ending) => format!("{ending:?}"),
        other => format!("{other:?}"),
    };
    assert_eq!(
        ended(judge(TurnEnd::Completed, StopReason::Stop, None, false)),
        "Final"
    );
    assert_eq!(
        ended(judge(TurnEnd::Completed, StopReason::ToolUse, None, true)),
        "Calls"
    );
    assert_eq!(
        ended(judge(TurnEnd::Aborted, StopReason::ToolUse, None, true)),
        "Aborted"
    );
    let Answer::Ending(Ending::Failed(error, reason)) =
        judge(TurnEnd::Completed, StopReason::Length, None, true)
    else {
        panic!("length is a failure");
    };
    assert_eq!(
        (error.kind, reason),
        (FatalErrorKind::Length, RunStopReason::Length)
    );
    let Answer::Ending(Ending::Failed(error, reason)) = judge(
        TurnEnd::Completed,
        StopReason::Error,
        Some("blocked by the filter".into()),
        false,
    ) else {
        panic!("an error stop is a failure");
    };
    assert_eq!(
        (error.kind, error.message.as_str(), reason),
        (
            FatalErrorKind::ContentFilter,
            "blocked by the filter",
            RunStopReason::Error
        )
    );
    let failed = TurnEnd::Failed(LlmError::Transport(TransportError::Connect(
        "refused".into(),
    )));
    let Answer::Ending(Ending::Failed(error, reason)) =
        judge(failed, StopReason::Stop, None, false)
    else {
        panic!("a failed request is a failure");
    };
    assert_eq!(
        (error.kind, error.message.as_str(), reason),
        (FatalErrorKind::Transport, "refused", RunStopReason::Error)
    );
}
