use std::any::type_name;
use std::path::Path;

use schemars::JsonSchema;
use serde_json::Value;

use super::{STORED, parameters};
use crate::tools::define::derive_parameters;
use crate::tools::{MultiGrepTool, ToolSet};

const FILE: &str = "src/tools/parameters.jsonl";

/// The stored line of one argument type, as a fresh derivation makes it.
fn line<A: JsonSchema>() -> String {
    let name = Value::from(type_name::<A>());
    let schema = derive_parameters::<A>();
    format!(r#"{{"args":{name},"parameters":{schema}}}"#)
}

/// The whole file, every built-in tool's argument type in the tools' canonical order.
fn rendered() -> String {
    use crate::tools::{bash, edit, find, grep, hashline_edit, ls, multi_grep, read, write};
    [
        line::<read::ReadArgs>(),
        line::<write::WriteArgs>(),
        line::<edit::EditArgs>(),
        line::<bash::BashArgs>(),
        line::<grep::GrepArgs>(),
        line::<find::FindArgs>(),
        line::<ls::LsArgs>(),
        line::<hashline_edit::HashlineEditArgs>(),
        line::<multi_grep::MultiGrepArgs>(),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect()
}

#[test]
fn the_stored_schemas_are_the_derived_ones() {
    let expected = rendered();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if crate::bless::bless(root, FILE, &expected).unwrap_or_else(|err| panic!("{err}")) {
        return;
    }
    assert!(
        STORED == expected,
        "{FILE} is not what the argument types derive; if the change is intended, bless it with WORKER_BLESS={FILE} and review the diff it prints"
    );
}

#[test]
fn every_built_in_tool_has_a_stored_schema() {
    let stored: Vec<Value> = STORED
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["parameters"].clone())
        .collect();
    let mut tools = ToolSet::all_builtin();
    tools.push(std::sync::Arc::new(MultiGrepTool));
    for tool in tools {
        let schema = tool.parameters();
        assert!(
            stored.contains(&schema),
            "the built-in tool {} has no stored schema: add its argument type to `rendered` and bless {FILE}",
            tool.name()
        );
    }
}

#[test]
fn a_type_is_found_by_its_whole_name_only() {
    use crate::tools::read::ReadArgs;
    let full = type_name::<ReadArgs>();
    assert_eq!(parameters(full), Some(derive_parameters::<ReadArgs>()));
    // A prefix of a stored name, and a name a stored one is a prefix of, are other types.
    assert_eq!(parameters(&full[..full.len() - 1]), None);
    assert_eq!(parameters(&format!("{full}2")), None);
    assert_eq!(parameters("worker::tools::Unknown"), None);
}
