use super::*;

#[test]
fn writes_stay_inside_and_hidden_paths_stay_unread() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("repo");
    let secrets = root.path().join("home/.ssh");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("id_rsa"), "key").unwrap();
    std::os::unix::fs::symlink(root.path(), cwd.join("up")).unwrap();
    std::os::unix::fs::symlink(secrets.join("id_rsa"), cwd.join("key")).unwrap();
    let policy = PathPolicy::new(std::slice::from_ref(&cwd), std::slice::from_ref(&secrets));

    assert!(
        policy
            .check(&cwd.join("new/file.txt"), Access::Write)
            .is_ok()
    );
    let outside = policy
        .check(&root.path().join("x"), Access::Write)
        .unwrap_err()
        .to_string();
    assert!(
        outside.ends_with("x is outside the sandbox's writable area (the working directory and its private temp directory); everything else is read-only"),
        "{outside}"
    );
    assert!(policy.check(&root.path().join("x"), Access::Read).is_ok());
    // `..` through a directory that does not exist yet.
    let dotdot = policy
        .check(&cwd.join("new/../../escape.txt"), Access::Write)
        .unwrap_err()
        .to_string();
    assert!(
        dotdot.ends_with("it uses `..` after a directory that does not exist yet"),
        "{dotdot}"
    );
    // A symlink planted in the working directory leads outside.
    let through_link = policy
        .check(&cwd.join("up/escape.txt"), Access::Write)
        .unwrap_err()
        .to_string();
    assert!(
        through_link.ends_with("is outside the sandbox's writable area (the working directory and its private temp directory); everything else is read-only"),
        "{through_link}"
    );
    let hidden = policy.check(&cwd.join("key"), Access::Read).unwrap_err();
    assert!(
        hidden.to_string().contains("hidden by the sandbox"),
        "{hidden}"
    );
    let secrets_dir = policy
        .check(&secrets, Access::Read)
        .unwrap_err()
        .to_string();
    assert!(
        secrets_dir.ends_with(".ssh is hidden by the sandbox (credentials are not readable)"),
        "{secrets_dir}"
    );
}

#[test]
fn a_path_with_no_existing_part_is_normalized_on_paper() {
    let base = Path::new("/nonexistent-worker-test-root");
    assert_eq!(real_path(&base.join("a/./b/..")), base.join("a"));
    assert_eq!(real_path(&base.join("a/../../x")), Path::new("/x"));
}
