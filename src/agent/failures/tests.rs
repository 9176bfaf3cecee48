use serde_json::json;

use super::*;

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: name.into(),
        raw_arguments: arguments.to_string(),
        arguments_error: None,
    }
}

#[test]
fn the_same_call_failing_counts_and_a_success_of_it_starts_over() {
    let mut failures = RepeatedFailures::default();
    let build = call("bash", json!({"command": "make", "timeout": 5}));
    let same_reordered = call("bash", json!({"timeout": 5, "command": "make"}));
    failures.record(&build, true);
    failures.record(&call("read", json!({"path": "x"})), true);
    failures.record(&same_reordered, true);
    assert_eq!(failures.reached(3), None);
    assert_eq!(failures.reached(2), Some(("bash", 2)));
    failures.record(&build, false);
    assert_eq!(failures.reached(1), Some(("read", 1)));
    failures.record(&call("bash", json!({"command": "make test"})), true);
    failures.record(&build, true);
    assert_eq!(failures.reached(2), None);
}
