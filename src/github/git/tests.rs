use super::*;
use crate::config::MapEnv;

#[test]
fn the_server_url_follows_the_api_base() {
    let env = MapEnv::default();
    assert_eq!(
        server_url(&env, "https://api.github.com"),
        "https://github.com"
    );
    assert_eq!(
        server_url(&env, "https://ghe.corp/api/v3/"),
        "https://ghe.corp"
    );
    assert_eq!(
        server_url(&env, "http://127.0.0.1:9999"),
        "http://127.0.0.1:9999"
    );
    assert_eq!(
        server_url(
            &MapEnv::from_pairs(&[("GITHUB_SERVER_URL", "file:///srv/git/")]),
            "x"
        ),
        "file:///srv/git"
    );
}

#[test]
fn credentials_are_0600_in_a_0700_directory_and_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/creds");
    write_credentials(&path, "https://github.com", "ghs_abc123").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "https://x-access-token:ghs_abc123@github.com\n"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("new"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    write_credentials(&path, "https://ghe.corp", "ghs_def456").unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "https://x-access-token:ghs_def456@ghe.corp\n"
    );
}

#[test]
fn any_token_is_stored_percent_encoded_and_odd_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    write_credentials(
        &path,
        "https://github.com",
        "ghs_weird.tok/en+v=\n@evil.com",
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "https://x-access-token:ghs_weird.tok%2Fen%2Bv%3D%0A%40evil.com@github.com\n"
    );
    assert_eq!(
        write_credentials(&path, "https://github.com", "")
            .unwrap_err()
            .to_string(),
        "refusing to write an empty token to the git credentials file"
    );
    assert!(
        write_credentials(&dir.path().join("a b"), "https://github.com", "tok")
            .unwrap_err()
            .to_string()
            .contains("whitespace")
    );
}

#[test]
fn git_is_found_only_in_absolute_path_directories() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let make = |dir: &str, mode: u32| {
        let dir = root.path().join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let git = dir.join("git");
        std::fs::write(&git, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(mode)).unwrap();
        dir
    };
    let (planted, plain, system) = (
        make("planted", 0o755),
        make("plain", 0o644),
        make("usr", 0o755),
    );
    // `planted`, written relative to this process's working directory: found there, it
    // would come first.
    let up = "../".repeat(std::env::current_dir().unwrap().components().count());
    let relative = format!("{up}{}", planted.strip_prefix("/").unwrap().display());
    assert!(Path::new(&relative).join("git").is_file());
    let path = std::env::join_paths([
        PathBuf::from(&relative),
        plain.clone(),
        PathBuf::from("/nonexistent"),
        system.clone(),
    ])
    .unwrap();
    assert_eq!(git_program(Some(&path)), Some(system.join("git")));
    let none = std::env::join_paths([PathBuf::from(&relative), plain]).unwrap();
    assert_eq!(git_program(Some(&none)), None);
    assert_eq!(git_program(None), None);
    assert_eq!(
        GitError::NotInPath.to_string(),
        "cannot run git: no directory of PATH has it (relative entries are not searched)"
    );
}
