use super::super::testing::Harness;
use super::*;
use serde_json::json;

fn tree() -> Harness {
    let h = Harness::new();
    h.write("src/a.ts", "const fooBar = 1;\nconst foo_bar = 2;\nother\n");
    h.write("src/b.tsx", "FooBar()\n");
    h.write("test/c.ts", "fooBar test\n");
    h.write("README.md", "foo_bar docs\n");
    h
}

#[tokio::test]
async fn any_pattern_matches_with_smart_case_and_constraints() {
    let h = tree();
    assert_eq!(
        h.ok(
            &MultiGrepTool,
            json!({"patterns": ["foobar", "foo_bar"], "constraints": "*.{ts,tsx} !test/"})
        )
        .await,
        "src/a.ts:1: const fooBar = 1;\nsrc/a.ts:2: const foo_bar = 2;\nsrc/b.tsx:1: FooBar()"
    );
    // An upper-case letter makes the search case-sensitive.
    assert_eq!(
        h.ok(
            &MultiGrepTool,
            json!({"patterns": ["FooBar"], "constraints": "src/"})
        )
        .await,
        "src/b.tsx:1: FooBar()"
    );
}

#[tokio::test]
async fn the_cursor_continues_where_the_limit_stopped() {
    let h = tree();
    let first = h
        .ok(
            &MultiGrepTool,
            json!({"patterns": ["foo"], "limit": 2, "constraints": "!README.md"}),
        )
        .await;
    assert!(
        first.starts_with("src/a.ts:1: const fooBar = 1;\nsrc/a.ts:2: const foo_bar = 2;"),
        "{first}"
    );
    assert!(first.contains("Continue with cursor=\"2\""), "{first}");
    assert_eq!(
        h.ok(
            &MultiGrepTool,
            json!({"patterns": ["foo"], "limit": 3, "cursor": "2", "constraints": "!README.md"})
        )
        .await,
        "src/b.tsx:1: FooBar()\ntest/c.ts:1: fooBar test"
    );
}

#[tokio::test]
async fn bad_arguments_are_explained() {
    let h = tree();
    let empty = h.err(&MultiGrepTool, json!({"patterns": []})).await;
    assert!(
        empty.contains("patterns: required (a non-empty list of strings)"),
        "{empty}"
    );
    assert_eq!(
        h.err(&MultiGrepTool, json!({"patterns": [""]})).await,
        "patterns: must have at least 1 non-empty pattern"
    );
    assert_eq!(
        h.err(&MultiGrepTool, json!({"patterns": ["x"], "cursor": "abc"}))
            .await,
        "cursor: 'abc' is not a cursor this tool returned"
    );
}

#[test]
fn constraints_become_globs() {
    assert_eq!(
        constraint_globs("*.{ts,tsx} !test/, src/ !*.min.js"),
        vec!["*.{ts,tsx}", "!test/**", "src/**", "!*.min.js"]
    );
    assert!(constraint_globs("  ").is_empty());
}
