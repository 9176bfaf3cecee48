use super::*;
use crate::github::auth::Credentials;
use crate::secrets::Secrets;

fn all_tools() -> Vec<Arc<dyn Tool>> {
    let gh = GitHub::new(
        "http://127.0.0.1:9",
        Credentials::Token("t".into()),
        std::time::Duration::from_millis(1),
        Secrets::default(),
    );
    let git = GitSettings {
        server_url: "http://127.0.0.1:9".into(),
        credentials: PathBuf::from("/nonexistent"),
    };
    all(&Arc::new(Shared { gh, git }))
}

#[test]
fn every_named_tool_is_defined_once_in_order_with_a_valid_schema() {
    let tools = all_tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort();
    let mut expected = TOOL_NAMES.to_vec();
    expected.sort();
    assert_eq!(names, expected);
    for tool in &tools {
        let schema = tool.parameters();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        for required in schema["required"].as_array().unwrap() {
            assert!(
                schema["properties"]
                    .get(required.as_str().unwrap())
                    .is_some(),
                "{}: {required}",
                tool.name()
            );
        }
        assert!(tool.description().len() > 20, "{}", tool.name());
    }
}

#[tokio::test]
async fn a_missing_or_malformed_argument_is_named_with_its_kind() {
    let tools = all_tools();
    let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap().clone();
    let ctx = crate::tools::testing::Harness::new().ctx;
    let err = tool("github_get_issue")
        .execute(json!({"owner": "o", "issue_number": 2}), ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Validation failed for tool \"github_get_issue\":\n  - repo: required (a non-empty string)\n\nReceived arguments:\n{\n  \"owner\": \"o\",\n  \"issue_number\": 2\n}"
    );
    let err = tool("github_get_issue")
        .execute(
            json!({"owner": "o", "repo": "r", "issue_number": -1}),
            ctx.clone(),
        )
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("  - issue_number: expected a non-negative integer, got -1"),
        "{}",
        err.message
    );
    let err = tool("github_create_pull_request_review")
        .execute(
            json!({"owner": "o", "repo": "r", "pull_number": 1, "body": ""}),
            ctx.clone(),
        )
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("  - event: required (one of APPROVE, REQUEST_CHANGES, COMMENT)"),
        "{}",
        err.message
    );
    let err = tool("github_list_issues")
        .execute(json!({"owner": "o", "repo": "r", "state": "x"}), ctx)
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("  - state: expected one of open, closed, all, got \"x\""),
        "{}",
        err.message
    );
}

mod props {
    use super::*;
    use crate::tools::testing::json_value;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every GitHub tool's arguments, built from its own parameter names with arbitrary
        /// values, parse or are rejected; none panics.
        #[test]
        fn github_tool_arguments_parse_or_are_refused_with_a_named_reason(
            values in proptest::collection::vec(json_value(), 8),
            picks in proptest::collection::vec(any::<proptest::sample::Index>(), 8),
        ) {
            let registry = registry(&shared());
            for (tool, (name, parse)) in registry.tools.iter().zip(&registry.parsers) {
                prop_assert_eq!(tool.name(), *name);
                let schema = tool.parameters();
                let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
                let args: serde_json::Map<String, Value> = picks
                    .iter()
                    .zip(&values)
                    .map(|(pick, value)| ((*pick.get(&names)).clone(), value.clone()))
                    .collect();
                let args = Value::Object(args);
                let required = schema["required"].as_array().cloned().unwrap_or_default();
                let lacks_required = required
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|field| args.get(field).is_none());
                match parse(&args) {
                    Ok(()) => prop_assert!(!lacks_required, "{name} accepted {args} without a required field"),
                    Err(message) => prop_assert!(
                        message.starts_with("Validation failed for tool \"t\":\n  - "),
                        "{name}: {message}"
                    ),
                }
            }
        }

        /// Arguments built from each tool's schema with valid values, some fields left out:
        /// they parse exactly when every required field is there, and a missing one is named.
        #[test]
        fn valid_arguments_parse_iff_every_required_field_is_present(
            keep in proptest::collection::vec(any::<bool>(), 16),
        ) {
            let registry = registry(&shared());
            for (tool, (name, parse)) in registry.tools.iter().zip(&registry.parsers) {
                let schema = tool.parameters();
                let properties = schema["properties"].as_object().unwrap();
                let args: serde_json::Map<String, Value> = properties
                    .iter()
                    .zip(keep.iter().cycle())
                    .filter(|(_, keep)| **keep)
                    .map(|((field, property), _)| (field.clone(), valid_value(property)))
                    .collect();
                let missing: Vec<&str> = schema["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|field| !args.contains_key(*field))
                    .collect();
                let args = Value::Object(args);
                match parse(&args) {
                    Ok(()) => prop_assert!(missing.is_empty(), "{name} accepted {args} without {missing:?}"),
                    // The test parser names a missing field bare (the tool adds its kind).
                    Err(message) => {
                        let named: Vec<&str> =
                            message.lines().filter_map(|line| line.strip_prefix("  - ")).collect();
                        prop_assert!(
                            !named.is_empty() && named.iter().all(|field| missing.contains(field)),
                            "{name} refused {args} with {message}, missing {missing:?}"
                        );
                    }
                }
            }
        }
    }

    fn shared() -> Arc<Shared> {
        let gh = GitHub::new(
            "http://127.0.0.1:9",
            crate::github::auth::Credentials::Token("t".into()),
            std::time::Duration::from_millis(1),
            crate::secrets::Secrets::default(),
        );
        let git = GitSettings {
            server_url: "http://127.0.0.1:9".into(),
            credentials: PathBuf::from("/nonexistent"),
        };
        Arc::new(Shared { gh, git })
    }

    /// A value its property's schema accepts: the first of an enum, else one of its type.
    fn valid_value(property: &Value) -> Value {
        if let Some(first) = property["enum"]
            .as_array()
            .and_then(|values| values.first())
        {
            return first.clone();
        }
        let kind = match &property["type"] {
            Value::Array(kinds) => kinds
                .iter()
                .find(|k| *k != "null")
                .cloned()
                .unwrap_or_default(),
            kind => kind.clone(),
        };
        match kind.as_str() {
            Some("string") => json!("text"),
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([valid_value(&property["items"])]),
            Some("object") => Value::Object(
                property["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(field, inner)| (field.clone(), valid_value(inner)))
                    .collect(),
            ),
            other => panic!("no valid value for type {other:?} in {property}"),
        }
    }
}
