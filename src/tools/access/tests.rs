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
    assert!(policy.check(&root.path().join("x"), Access::Write).is_err());
    assert!(policy.check(&root.path().join("x"), Access::Read).is_ok());
    // `..` through a directory that does not exist yet.
    assert!(
        policy
            .check(&cwd.join("new/../../escape.txt"), Access::Write)
            .is_err()
    );
    // A symlink planted in the working directory leads outside.
    assert!(
        policy
            .check(&cwd.join("up/escape.txt"), Access::Write)
            .is_err()
    );
    let hidden = policy.check(&cwd.join("key"), Access::Read).unwrap_err();
    assert!(
        hidden.to_string().contains("hidden by the sandbox"),
        "{hidden}"
    );
    assert!(policy.check(&secrets, Access::Read).is_err());
}
