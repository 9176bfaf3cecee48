use rmcp::model::CallToolResult;
use serde_json::json;

use super::*;
use crate::tools::testing;

fn result_of(content: serde_json::Value) -> CallToolResult {
    serde_json::from_value(json!({"content": content})).unwrap()
}

fn text(result: &ToolResult) -> &str {
    result.content[0].as_str()
}

#[test]
fn text_blocks_are_joined_and_nothing_else_is_kept() {
    let harness = testing::Harness::new();
    let ctx = &harness.ctx;
    let mapped = map(
        &result_of(json!([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}])),
        ctx,
    );
    assert_eq!(text(&mapped), "one\ntwo");
    assert!(mapped.details.is_none());
}

#[test]
fn an_image_is_described_for_the_model_and_kept_for_consumers() {
    let harness = testing::Harness::new();
    let ctx = &harness.ctx;
    let mapped = map(
        &result_of(json!([
            {"type": "image", "data": "iVBORw0KGgoAAAA=", "mimeType": "image/png"},
            {"type": "text", "text": "a picture"}
        ])),
        ctx,
    );
    assert_eq!(
        text(&mapped),
        "[image: image/png, 11B; images are not passed to the model]\na picture"
    );
    let details = mapped.details.unwrap();
    assert_eq!(details["content"][0]["mimeType"], "image/png");
    assert_eq!(details["content"][0]["data"], "iVBORw0KGgoAAAA=");
    assert_eq!(details["content"].as_array().unwrap().len(), 1);
}

#[test]
fn a_text_resource_is_its_text_under_its_uri_and_a_link_names_its_uri() {
    let harness = testing::Harness::new();
    let ctx = &harness.ctx;
    let mapped = map(
        &result_of(json!([
            {"type": "resource", "resource": {"uri": "file:///notes.txt", "text": "resource body"}},
            {"type": "resource_link", "uri": "file:///big.bin", "name": "big"}
        ])),
        ctx,
    );
    assert_eq!(
        text(&mapped),
        "[resource file:///notes.txt]\nresource body\n[resource link file:///big.bin: big]"
    );
}

#[test]
fn an_empty_result_says_so() {
    let harness = testing::Harness::new();
    let ctx = &harness.ctx;
    assert_eq!(text(&map(&result_of(json!([])), ctx)), "(no output)");
}

#[test]
fn a_long_result_keeps_its_head_and_spills_the_whole_redacted() {
    let harness = testing::Harness::new();
    let ctx = &harness.ctx;
    ctx.bash.secrets.add("sekrit-value-123");
    let lines: Vec<String> = (0..5000)
        .map(|n| format!("line {n} sekrit-value-123"))
        .collect();
    let whole = lines.join("\n");
    let mapped = map(&result_of(json!([{"type": "text", "text": whole}])), ctx);
    let shown = text(&mapped).to_string();
    assert!(shown.starts_with("line 0 "));
    assert!(shown.len() < 60 * 1024, "{} bytes shown", shown.len());
    let details = mapped.details.unwrap();
    assert_eq!(details["truncation"]["truncated"], true);
    assert_eq!(details["truncation"]["totalLines"], 5000);
    let path = details["fullOutputPath"].as_str().unwrap();
    assert!(shown.contains(&format!("Full output: {path}")), "{shown}");
    let spilled = std::fs::read_to_string(path).unwrap();
    assert_eq!(spilled.lines().count(), 5000);
    assert!(!spilled.contains("sekrit-value-123"));
    assert!(spilled.starts_with("line 0 "));
    ctx.leftovers.clean_up();
    assert!(!std::path::Path::new(path).exists());
}
