use super::*;
use crate::github::tools::TOOL_NAMES;

#[test]
fn shipped_profiles_have_the_documented_sizes_and_nest() {
    let profiles = Profiles::load(None, &TOOL_NAMES).unwrap();
    assert_eq!(
        profiles.names(),
        ["issues-write", "read", "repo-write", "review-write"]
    );
    let sizes: Vec<usize> = ["read", "issues-write", "review-write", "repo-write"]
        .iter()
        .map(|p| profiles.resolve(p, &TOOL_NAMES).unwrap().len())
        .collect();
    assert_eq!(sizes, [18, 25, 27, 33]);
    let all = profiles.resolve("repo-write", &TOOL_NAMES).unwrap();
    let mut sorted = all.clone();
    sorted.sort();
    let mut known: Vec<String> = TOOL_NAMES
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    known.sort();
    assert_eq!(sorted, known, "repo-write is every tool");
    assert_eq!(
        &all[..18],
        &profiles.resolve("read", &TOOL_NAMES).unwrap()[..],
        "parents first"
    );
}

#[test]
fn an_unknown_profile_lists_the_available_ones() {
    let profiles = Profiles::load(None, &TOOL_NAMES).unwrap();
    assert_eq!(
        profiles
            .resolve("admin", &TOOL_NAMES)
            .unwrap_err()
            .to_string(),
        "unknown GitHub profile 'admin'. Expected one of: issues-write, read, repo-write, review-write"
    );
}

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn a_directory_adds_and_overrides_profiles() {
    let dir = dir_with(&[
        (
            "triage.json",
            r#"{"description": "x", "extends": "read", "tools": ["github_add_labels"]}"#,
        ),
        ("read.json", r#"{"tools": ["github_get_issue"]}"#),
    ]);
    let profiles = Profiles::load(Some(dir.path()), &TOOL_NAMES).unwrap();
    assert_eq!(
        profiles.resolve("triage", &TOOL_NAMES).unwrap(),
        ["github_get_issue", "github_add_labels"]
    );
}

#[test]
fn cycles_unknown_tools_duplicates_and_unknown_parents_are_rejected() {
    let cases = [
        (
            vec![
                ("a.json", r#"{"extends": "b", "tools": []}"#),
                ("b.json", r#"{"extends": "a", "tools": []}"#),
            ],
            "extends chain has a cycle: a -> b -> a",
        ),
        (
            vec![("x.json", r#"{"tools": ["github_delete_repo"]}"#)],
            "unknown tool 'github_delete_repo'",
        ),
        (
            vec![(
                "x.json",
                r#"{"extends": "read", "tools": ["github_get_issue"]}"#,
            )],
            "tool 'github_get_issue' is listed twice (with what it extends)",
        ),
        (
            vec![("x.json", r#"{"extends": "nope", "tools": []}"#)],
            "extends unknown profile 'nope'",
        ),
        (
            vec![("x.json", r#"{"tool": []}"#)],
            "not a profile (unknown field `tool`",
        ),
    ];
    for (files, expected) in cases {
        let dir = dir_with(&files);
        let err = Profiles::load(Some(dir.path()), &TOOL_NAMES)
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{err}\nexpected: {expected}");
        assert!(err.starts_with("GitHub profile "), "{err}");
    }
}

#[test]
fn a_profile_may_name_mcp_tools_by_name_or_glob() {
    let dir = dir_with(&[(
        "gh-mcp.json",
        r#"{"extends": "read", "tools": ["mcp__github__get_*", "mcp__fs__read_file"]}"#,
    )]);
    let profiles = Profiles::load(Some(dir.path()), &TOOL_NAMES).unwrap();
    let tools = profiles.resolve("gh-mcp", &TOOL_NAMES).unwrap();
    assert_eq!(
        &tools[tools.len() - 2..],
        ["mcp__github__get_*", "mcp__fs__read_file"]
    );
}
