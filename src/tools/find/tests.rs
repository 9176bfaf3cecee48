use super::super::testing::Harness;
use super::*;

fn tree() -> Harness {
    let h = Harness::new();
    h.write("src/main.rs", "");
    h.write("src/lib/util.rs", "");
    h.write("README.md", "");
    h.write(".github/ci.yml", "");
    h.write("target/debug/x.rs", "");
    h.write(".gitignore", "target/\n");
    h
}

#[tokio::test]
async fn name_patterns_match_at_any_depth_and_respect_gitignore() {
    let h = tree();
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "*.rs"})).await,
        "src/lib/util.rs\nsrc/main.rs"
    );
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "*.yml"})).await,
        ".github/ci.yml"
    );
}

#[tokio::test]
async fn path_patterns_match_relative_paths_and_directories_end_in_slash() {
    let h = tree();
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "src/*.rs"})).await,
        "src/main.rs"
    );
    assert_eq!(h.ok(&FindTool, json!({"pattern": "lib"})).await, "src/lib/");
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "*.rs", "path": "src/lib"}))
            .await,
        "util.rs"
    );
}

#[tokio::test]
async fn limits_no_results_and_bad_input() {
    let h = tree();
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "*", "limit": 2})).await,
        ".github/\n.github/ci.yml\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "*.zig"})).await,
        "No files found matching pattern"
    );
    assert_eq!(
        h.err(&FindTool, json!({"pattern": "*", "path": "nope"}))
            .await,
        "Path not found: nope"
    );
    assert_eq!(
        h.err(&FindTool, json!({"pattern": "*", "path": "README.md"}))
            .await,
        "Not a directory: README.md"
    );
    let err = h.err(&FindTool, json!({"pattern": "a[b"})).await;
    assert!(err.starts_with("Invalid glob pattern 'a[b': "), "{err}");
}

#[tokio::test]
async fn a_symlink_loop_is_listed_not_followed() {
    let h = tree();
    std::os::unix::fs::symlink(h.path("src"), h.path("src/loop")).unwrap();
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "*.rs"})).await,
        "src/lib/util.rs\nsrc/main.rs"
    );
    assert_eq!(
        h.ok(&FindTool, json!({"pattern": "loop"})).await,
        "src/loop"
    );
}
