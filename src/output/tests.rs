use super::*;
use serde_json::json;

fn schema() -> OutputSchema {
    OutputSchema::new(json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["approve", "reject"]}, "notes": {"type": "string"}},
        "required": ["verdict"],
        "additionalProperties": false
    }))
    .unwrap()
}

#[test]
fn valid_answers_pass_fenced_or_not_and_invalid_ones_say_why() {
    let schema = schema();
    assert_eq!(
        schema.check(r#"{"verdict": "approve"}"#).unwrap(),
        json!({"verdict": "approve"})
    );
    assert_eq!(
        schema
            .check("```json\n{\"verdict\": \"reject\", \"notes\": \"x\"}\n```")
            .unwrap()["verdict"],
        "reject"
    );
    assert!(
        schema
            .check("Looks good!")
            .unwrap_err()
            .to_string()
            .starts_with("the answer is not JSON")
    );
    let err = schema
        .check(r#"{"verdict": "maybe"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("verdict"), "{err}");
    assert_eq!(
        schema
            .check(r#"{"notes": "no verdict"}"#)
            .unwrap_err()
            .to_string(),
        "at '' [S#/required]: missing properties 'verdict'"
    );
    assert!(
        schema
            .correction("x")
            .starts_with("Your final answer is not valid")
    );
}

#[test]
fn a_broken_schema_is_refused() {
    let err = OutputSchema::new(json!({"type": "no-such-type"})).unwrap_err();
    assert!(
        err.to_string().starts_with("not a valid JSON Schema: "),
        "{err}"
    );
}
