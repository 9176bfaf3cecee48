use super::*;

fn yes() -> Decision {
    Decision {
        allow: true,
        reason: None,
    }
}

#[tokio::test]
async fn a_decision_reaches_its_approval_once() {
    let approvals = Approvals::default();
    let (first, waiting) = approvals.open();
    let (second, _other) = approvals.open();
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("approval-1", "approval-2")
    );
    approvals.decide(&first, yes()).unwrap();
    assert_eq!(waiting.await.unwrap(), yes());
    assert_eq!(
        approvals.decide(&first, yes()),
        Err(DecideError::AlreadyResolved(first.clone()))
    );
    assert_eq!(
        approvals.decide("approval-9", yes()),
        Err(DecideError::Unknown("approval-9".into()))
    );
}

#[tokio::test]
async fn a_closed_approval_takes_no_late_decision() {
    let approvals = Approvals::default();
    let (id, waiting) = approvals.open();
    approvals.close(&id);
    assert!(waiting.await.is_err());
    assert_eq!(
        approvals.decide(&id, yes()),
        Err(DecideError::AlreadyResolved(id.clone()))
    );
}
