use super::*;
use opentelemetry_sdk::error::OTelSdkError;

#[test]
fn a_failed_export_names_the_transport_cause_and_a_success_clears_it() {
    let failure = Failure::default();
    *lock(&failure.transport) = Some("tcp connect error: Connection refused".into());
    failure.exported(&Err(OTelSdkError::InternalFailure("network error".into())));
    let reason = failure.take().unwrap_or_default();
    assert!(reason.contains("network error"), "{reason}");
    assert!(
        reason.ends_with("(tcp connect error: Connection refused)"),
        "{reason}"
    );
    assert_eq!(failure.take(), None, "taken once");

    failure.exported(&Err(OTelSdkError::InternalFailure("status 500".into())));
    assert_eq!(
        failure.take().as_deref(),
        Some("Operation failed: status 500"),
        "an earlier cause is not reused"
    );
    failure.exported(&Err(OTelSdkError::InternalFailure("x".into())));
    failure.exported(&Ok(()));
    assert_eq!(failure.take(), None, "the last export succeeded");
}
