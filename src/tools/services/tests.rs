use super::*;
use crate::control::AbortReason;

#[test]
fn what_is_left_follows_what_the_run_used() {
    let limits = BudgetLimits {
        tool_calls: Some(10),
        tokens: Some(1_000),
        cost: Some(0.5),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let services = RunServices::new(RunControl::new(), Some(deadline), limits);
    let shared = services.clone();
    let mut stats = UsageStats {
        tool_calls: 4,
        cost: 0.2,
        ..UsageStats::default()
    };
    stats.tokens.total = 1_200;
    shared.record_usage(&stats);
    let left = services.remaining();
    assert_eq!(left.tool_calls, Some(6));
    assert_eq!(
        left.tokens,
        Some(0),
        "overspent is nothing left, not a wrap"
    );
    assert!((left.cost.unwrap() - 0.3).abs() < 1e-9, "{left:?}");
    let time = left.time.unwrap();
    assert!(time <= Duration::from_secs(60) && time > Duration::from_secs(50));
    assert_eq!(services.deadline(), Some(deadline));

    let unlimited = RunServices::detached().remaining();
    assert_eq!(unlimited, Remaining::default());
}

#[test]
fn a_stopped_run_is_seen_by_every_clone() {
    let control = RunControl::new();
    let services = RunServices::new(control.clone(), None, BudgetLimits::default());
    let held = services.clone();
    assert!(!held.cancel().is_cancelled());
    control.abort(AbortReason::Interrupt);
    assert!(held.cancel().is_cancelled());
    assert!(!RunServices::detached().cancel().is_cancelled());
}

#[tokio::test]
async fn without_an_approver_or_a_host_nothing_is_allowed() {
    let services = RunServices::detached();
    let request = ApprovalRequest {
        tool: "bash".into(),
        call_id: "c1".into(),
        action: "rm -rf build".into(),
    };
    assert_eq!(
        services.approve(&request).await,
        Approval::Refused {
            reason: "bash needs an approval and this run has no approver attached".into()
        }
    );
    let task = ChildTask {
        prompt: "look".into(),
        ..ChildTask::default()
    };
    assert_eq!(
        services.start_child(task.clone()).await,
        Err(ChildRunError::Unavailable)
    );

    struct Yes;
    impl Approver for Yes {
        fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
            Box::pin(async { Approval::Granted })
        }
    }
    struct Echo;
    impl ChildRuns for Echo {
        fn start(&self, task: ChildTask) -> BoxFuture<'_, Result<ChildOutcome, ChildRunError>> {
            Box::pin(async move {
                Ok(ChildOutcome {
                    session_id: "child".into(),
                    final_text: Some(task.prompt),
                    structured_output: None,
                    stats: UsageStats::default(),
                })
            })
        }
    }
    let hosted = services
        .with_approver(Arc::new(Yes))
        .with_child_runs(Arc::new(Echo));
    assert_eq!(hosted.approve(&request).await, Approval::Granted);
    assert_eq!(
        hosted
            .start_child(task)
            .await
            .unwrap()
            .final_text
            .as_deref(),
        Some("look")
    );
}
