use super::*;

fn fatal(kind: FatalErrorKind, message: &str) -> FatalError {
    FatalError {
        kind,
        message: message.to_string(),
    }
}

#[test]
fn each_way_to_fail_reads_as_a_sentence() {
    let http = fatal(FatalErrorKind::Http, "HTTP 401 Unauthorized: bad key");
    assert_eq!(
        failure_line(Failure::Fatal {
            error: &http,
            requests: 1,
            target: "http://h/v1/chat/completions",
        }),
        "model request to http://h/v1/chat/completions failed: HTTP 401 Unauthorized: bad key"
    );
    let refused = fatal(FatalErrorKind::Transport, "connection refused");
    assert_eq!(
        failure_line(Failure::Fatal {
            error: &refused,
            requests: 4,
            target: "http://h/v1/chat/completions",
        }),
        "model request to http://h/v1/chat/completions failed after 3 retries: connection refused"
    );
    let length = fatal(FatalErrorKind::Length, "x");
    assert!(
        failure_line(Failure::Fatal {
            error: &length,
            requests: 1,
            target: "t",
        })
        .starts_with("the model hit the output limit (finish_reason length)")
    );
    let limit = LimitReached {
        limit: LimitKind::MaxTurns,
        turns: 20,
        max_turns: Some(20),
        timeout_ms: None,
        elapsed_ms: 5,
        used: None,
        budget_limit: None,
        tool_name: None,
    };
    assert_eq!(
        failure_line(Failure::Limit(&limit)),
        "limit reached: max turns 20 (the model wanted to go on)"
    );
    assert_eq!(
        failure_line(Failure::Aborted(Some(AbortReason::Terminate), None)),
        "terminated by SIGTERM"
    );
}
