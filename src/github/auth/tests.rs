use super::*;
use crate::config::MapEnv;

#[test]
fn a_token_is_used_when_no_app_variable_is_set() {
    let creds = from_env(
        &MapEnv::from_pairs(&[("GITHUB_TOKEN", "ghp_x")]),
        &Secrets::default(),
    )
    .unwrap();
    assert_eq!(creds.kind(), "token");
    assert_eq!(format!("{creds:?}"), "Token(<redacted>)");
}

#[test]
fn partial_app_config_is_invalid_even_with_a_token() {
    let err = from_env(
        &MapEnv::from_pairs(&[("GITHUB_APP_ID", "1"), ("GITHUB_TOKEN", "ghp_x")]),
        &Secrets::default(),
    )
    .unwrap_err();
    assert_eq!(err.reason, "invalid-config");
    assert_eq!(
        err.message,
        "partial GitHub App credentials: 1/3 of GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY_PATH, GITHUB_APP_INSTALLATION_ID are set"
    );
}

#[test]
fn an_unreadable_or_bad_pem_is_reported() {
    let env = MapEnv::from_pairs(&[
        ("GITHUB_APP_ID", "1"),
        ("GITHUB_APP_PRIVATE_KEY_PATH", "/no/such.pem"),
        ("GITHUB_APP_INSTALLATION_ID", "2"),
    ]);
    let err = from_env(&env, &Secrets::default()).unwrap_err();
    assert_eq!(err.reason, "pem-unreadable");
    assert!(
        err.message
            .starts_with("cannot read GITHUB_APP_PRIVATE_KEY_PATH /no/such.pem: "),
        "{}",
        err.message
    );
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("key.pem");
    std::fs::write(&pem, "not a key, only text").unwrap();
    let env = MapEnv::from_pairs(&[
        ("GITHUB_APP_ID", "1"),
        ("GITHUB_APP_PRIVATE_KEY_PATH", pem.to_str().unwrap()),
        ("GITHUB_APP_INSTALLATION_ID", "2"),
    ]);
    let secrets = Secrets::default();
    assert_eq!(
        from_env(&env, &secrets).unwrap_err().reason,
        "pem-unreadable"
    );
    // A file that is not a key is not a secret either.
    assert!(secrets.is_empty());
}

#[test]
fn nothing_set_means_no_credentials() {
    assert_eq!(
        from_env(&MapEnv::default(), &Secrets::default())
            .unwrap_err()
            .reason,
        "no-credentials"
    );
}
