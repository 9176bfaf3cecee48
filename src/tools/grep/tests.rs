use super::super::testing::Harness;
use super::*;

fn tree() -> Harness {
    let h = Harness::new();
    h.write("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    h.write("src/b.rs", "// alpha\n");
    h.write(".hidden/c.txt", "alpha hidden\n");
    h.write("ignored/d.txt", "alpha ignored\n");
    h.write(".gitignore", "ignored/\n");
    h.write("bin.dat", b"alpha\0\x01\x02");
    h
}

#[tokio::test]
async fn finds_matches_in_path_order_respecting_gitignore_and_skipping_binaries() {
    let h = tree();
    assert_eq!(
        h.ok(&GrepTool, json!({"pattern": "alpha"})).await,
        ".hidden/c.txt:1: alpha hidden\nsrc/a.rs:1: fn alpha() {}\nsrc/b.rs:1: // alpha"
    );
}

#[tokio::test]
async fn glob_case_literal_and_context_options() {
    let h = tree();
    assert_eq!(
        h.ok(
            &GrepTool,
            json!({"pattern": "ALPHA", "ignoreCase": true, "glob": "*.rs", "path": "src"})
        )
        .await,
        "a.rs:1: fn alpha() {}\nb.rs:1: // alpha"
    );
    assert_eq!(
        h.ok(
            &GrepTool,
            json!({"pattern": "beta() {}", "literal": true, "context": 1})
        )
        .await,
        "src/a.rs-1- fn alpha() {}\nsrc/a.rs:2: fn beta() {}"
    );
}

#[tokio::test]
async fn a_single_file_can_be_searched() {
    let h = tree();
    assert_eq!(
        h.ok(&GrepTool, json!({"pattern": "beta", "path": "src/a.rs"}))
            .await,
        "a.rs:2: fn beta() {}"
    );
}

#[tokio::test]
async fn the_match_limit_is_reported() {
    let h = Harness::new();
    h.write("many.txt", "hit\n".repeat(10));
    assert_eq!(
        h.ok(&GrepTool, json!({"pattern": "hit", "limit": 3})).await,
        "many.txt:1: hit\nmany.txt:2: hit\nmany.txt:3: hit\n\n[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    );
}

#[tokio::test]
async fn long_lines_are_cut_at_500_characters() {
    let h = Harness::new();
    h.write("long.txt", format!("needle{}\n", "x".repeat(600)));
    let text = h.ok(&GrepTool, json!({"pattern": "needle"})).await;
    assert!(text.ends_with("... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]"), "{text}");
}

#[tokio::test]
async fn no_match_bad_regex_and_missing_path_are_explained() {
    let h = tree();
    assert_eq!(
        h.ok(&GrepTool, json!({"pattern": "zzz"})).await,
        "No matches found"
    );
    let err = h.err(&GrepTool, json!({"pattern": "a(b"})).await;
    assert!(err.starts_with("Invalid regex 'a(b': "), "{err}");
    assert_eq!(
        h.err(&GrepTool, json!({"pattern": "a", "path": "nope"}))
            .await,
        "Path not found: nope"
    );
}

#[tokio::test]
async fn a_symlink_loop_does_not_trap_the_search() {
    let h = tree();
    std::os::unix::fs::symlink(h.path("src"), h.path("src/loop")).unwrap();
    assert_eq!(
        h.ok(&GrepTool, json!({"pattern": "beta"})).await,
        "src/a.rs:2: fn beta() {}"
    );
}
