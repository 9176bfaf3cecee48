use super::*;

fn scope(cwd: &Path, patterns: &[&str]) -> EditScope {
    let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_string()).collect();
    EditScope::new(cwd, &patterns).unwrap()
}

#[test]
fn a_directory_covers_what_is_under_it_and_a_glob_only_what_it_matches() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let scope = scope(cwd, &["src", "docs/*.md"]);
    assert!(scope.check(&cwd.join("src/main.rs")).is_ok());
    assert!(scope.check(&cwd.join("src/deep/new/file.rs")).is_ok());
    assert!(scope.check(&cwd.join("docs/guide.md")).is_ok());
    // `*` does not cross a directory.
    assert!(scope.check(&cwd.join("docs/sub/guide.md")).is_err());
    assert!(scope.check(&cwd.join("docs/guide.txt")).is_err());
    let refused = scope.check(&cwd.join("README.md")).unwrap_err().to_string();
    assert!(
        refused.contains("README.md") && refused.contains("outside the edit scope"),
        "{refused}"
    );
    assert!(refused.contains("src, docs/*.md"), "{refused}");
}

#[test]
fn a_symlink_or_dot_dot_cannot_lead_a_write_out_of_the_scope() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    std::fs::create_dir(cwd.join("src")).unwrap();
    std::fs::create_dir(cwd.join("secret")).unwrap();
    std::os::unix::fs::symlink(cwd.join("secret"), cwd.join("src/link")).unwrap();
    let scope = scope(cwd, &["src/**"]);
    assert!(scope.check(&cwd.join("src/link/x.txt")).is_err());
    assert!(scope.check(&cwd.join("src/../secret/x.txt")).is_err());
    let outside = tempfile::tempdir().unwrap();
    let refused = scope
        .check(&outside.path().join("x.txt"))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("outside the working directory"),
        "{refused}"
    );
}

#[test]
fn a_scope_must_be_a_relative_glob_inside_cwd() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["/etc", "../other", "src/../../x"] {
        let err = EditScope::new(dir.path(), &[bad.to_string()]).unwrap_err();
        assert!(matches!(err, EditScopeError::OutsideCwd(_)), "{bad}: {err}");
    }
    let err = EditScope::new(dir.path(), &["src/[".to_string()]).unwrap_err();
    assert!(matches!(err, EditScopeError::Glob { .. }), "{err}");
}

#[test]
fn only_globs_that_name_whole_directories_give_directories() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = real_path(dir.path());
    assert_eq!(
        scope(dir.path(), &["src", "./lib/**", "docs/"]).directories(),
        Some(vec![cwd.join("src"), cwd.join("lib"), cwd.join("docs")])
    );
    assert_eq!(scope(dir.path(), &["src", "docs/*.md"]).directories(), None);
    assert_eq!(scope(dir.path(), &["**"]).directories(), None);
}
