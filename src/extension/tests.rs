use super::*;

#[test]
fn a_call_joins_the_request_before_it_and_the_one_after() {
    let joins = ToolJoins::default();
    assert_eq!(joins.source(), None);
    assert!(joins.consumed("t0").is_empty());
    assert_eq!(joins.source().as_deref(), Some("t0"));
    joins.hold(("call-1", joins.source()));
    joins.hold(("call-2", joins.source()));
    let carried = joins.consumed("t1");
    assert_eq!(
        carried,
        vec![
            ("call-1", Some("t0".to_string())),
            ("call-2", Some("t0".to_string()))
        ]
    );
    assert_eq!(joins.source().as_deref(), Some("t1"));
    joins.hold(("call-3", joins.source()));
    assert_eq!(joins.drain(), vec![("call-3", Some("t1".to_string()))]);
    assert!(joins.drain().is_empty());
}
