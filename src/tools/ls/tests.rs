use super::super::testing::Harness;
use super::*;

#[tokio::test]
async fn sorted_case_insensitively_with_dirs_marked_and_dotfiles_included() {
    let h = Harness::new();
    h.write("b.txt", "");
    h.write("A.txt", "");
    h.write(".env", "");
    h.write("src/x", "");
    assert_eq!(h.ok(&LsTool, json!({})).await, ".env\nA.txt\nb.txt\nsrc/");
}

#[tokio::test]
async fn limits_empty_dirs_and_errors() {
    let h = Harness::new();
    for i in 0..5 {
        h.write(&format!("f{i}"), "");
    }
    assert_eq!(
        h.ok(&LsTool, json!({"limit": 2})).await,
        "f0\nf1\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    std::fs::create_dir(h.path("empty")).unwrap();
    assert_eq!(
        h.ok(&LsTool, json!({"path": "empty"})).await,
        "(empty directory)"
    );
    assert_eq!(
        h.err(&LsTool, json!({"path": "nope"})).await,
        "Path not found: nope"
    );
    assert_eq!(
        h.err(&LsTool, json!({"path": "f1"})).await,
        "Not a directory: f1"
    );
}
