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

fn texts(lines: Vec<StatusLine>) -> Vec<String> {
    lines
        .into_iter()
        .map(|line| match line {
            StatusLine::Warning(text) => text,
            other => panic!("not a warning: {other:?}"),
        })
        .collect()
}

#[test]
fn the_final_export_warns_once_per_cause() {
    assert!(delivery_warnings(Some(Ok(())), 0, None, None).is_empty());
    assert_eq!(
        texts(delivery_warnings(
            Some(Err(OTelSdkError::InternalFailure("collect".into()))),
            3,
            Some("refused".into()),
            None,
        )),
        vec![
            "telemetry: 3 spans were dropped: more were waiting than the queue holds (OTEL_BSP_MAX_QUEUE_SIZE)",
            "telemetry: could not deliver traces to the collector: refused",
            "telemetry: could not deliver metrics to the collector: Operation failed: collect",
        ]
    );
    // The exporter's own note beats the collection's result; a timeout says only that.
    assert_eq!(
        texts(delivery_warnings(
            Some(Err(OTelSdkError::InternalFailure("x".into()))),
            0,
            None,
            Some("status 500".into()),
        )),
        vec!["telemetry: could not deliver metrics to the collector: status 500"]
    );
    assert_eq!(
        texts(delivery_warnings(None, 0, Some("ignored".into()), None)),
        vec!["telemetry: the collector did not take the data within 2 s; it was dropped"]
    );
}
