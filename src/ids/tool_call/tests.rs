use super::*;

#[test]
fn a_tool_call_id_is_the_model_s_text_on_the_wire_and_in_the_schema() {
    let id = ToolCallId::new("call_7");
    assert_eq!(id.as_str(), "call_7");
    assert_eq!(id.to_string(), "call_7");
    assert_eq!(ToolCallId::from("call_7"), id);
    assert_eq!(ToolCallId::from("call_7".to_string()), id);
    assert_eq!(
        serde_json::to_value(&id).unwrap(),
        serde_json::json!("call_7")
    );
    let schema = schemars::schema_for!(ToolCallId);
    assert_eq!(schema.get("type"), Some(&serde_json::json!("string")));
    assert!(<ToolCallId as schemars::JsonSchema>::inline_schema());
    assert_eq!(
        <ToolCallId as schemars::JsonSchema>::schema_name(),
        <String as schemars::JsonSchema>::schema_name()
    );
}
