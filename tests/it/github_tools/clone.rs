//! Cloning with a private credential store, and refreshing it.

use super::*;

fn git(args: &[&str], cwd: &std::path::Path) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn clone_uses_a_private_credential_store_and_refresh_rewrites_it() {
    use std::os::unix::fs::PermissionsExt;
    // A bare repository at <server>/o/r.git, served over a file URL.
    let server_dir = tempfile::tempdir().unwrap();
    let seed = server_dir.path().join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&["init", "-q", "-b", "main"], &seed);
    std::fs::write(seed.join("README.md"), "hello\n").unwrap();
    git(&["add", "."], &seed);
    git(&["commit", "-q", "-m", "init"], &seed);
    std::fs::create_dir_all(server_dir.path().join("o")).unwrap();
    git(
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            server_dir.path().join("o/r.git").to_str().unwrap(),
        ],
        server_dir.path(),
    );
    let server_url = format!("file://{}", server_dir.path().display());

    let gh = setup_with(
        "repo-write",
        &[("GITHUB_TOKEN", TOKEN), ("GITHUB_SERVER_URL", &server_url)],
    )
    .await;
    let got = gh
        .ok(
            "github_clone_repo",
            json!({"owner": "o", "repo": "r", "path": "work/r"}),
        )
        .await;
    let dest = gh.dir.path().join("work/r");
    let creds = gh.dir.path().join("git/credentials");
    // A static token has no known expiry (the null is trimmed, like every null).
    assert_eq!(
        got,
        json!({"cloned": true, "path": dest, "credentials_file": creds})
    );
    assert_eq!(
        std::fs::read_to_string(dest.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(&creds).unwrap(),
        format!("https://x-access-token:{TOKEN}@{}\n", "localhost")
    );
    assert_eq!(
        std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(creds.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let helper = std::process::Command::new("git")
        .args(["config", "credential.helper"])
        .current_dir(&dest)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&helper.stdout).trim(),
        format!("store --file={}", creds.display())
    );

    std::fs::write(&creds, "stale").unwrap();
    let got = gh
        .ok("github_refresh_git_auth", json!({"path": "work/r"}))
        .await;
    assert_eq!(got["refreshed"], true);
    assert!(std::fs::read_to_string(&creds).unwrap().contains(TOKEN));

    let (text, _) = gh
        .call(
            "github_clone_repo",
            json!({"owner": "o", "repo": "r", "path": "work/r"}),
        )
        .await
        .unwrap_err();
    assert!(text.contains("already exists and is not empty"), "{text}");
    let (text, _) = gh
        .call(
            "github_clone_repo",
            json!({"owner": "o", "repo": "missing"}),
        )
        .await
        .unwrap_err();
    assert!(text.contains("git exited with 128"), "{text}");
    assert!(!text.contains(TOKEN));
}
