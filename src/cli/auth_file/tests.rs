use super::*;
use std::os::unix::fs::PermissionsExt;

fn write(dir: &Path, text: &str, mode: u32) -> std::path::PathBuf {
    let path = dir.join("auth.json");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn keys_are_read_and_other_entries_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        r#"{"openai":{"type":"api_key","key":"sk-1"},"anthropic":{"type":"oauth","access":"x"},"odd":{}}"#,
        0o600,
    );
    let file = load(&path).unwrap();
    assert_eq!(file.keys.get("openai").map(String::as_str), Some("sk-1"));
    assert_eq!(file.keys.len(), 1);
    assert_eq!(file.warnings.len(), 2);
}

#[test]
fn a_file_others_can_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "{}", 0o644);
    let err = load(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("readable by others (mode 644); run chmod 600 on it"),
        "{err}"
    );
    let path = write(dir.path(), "[1]", 0o600);
    assert!(
        load(&path)
            .unwrap_err()
            .to_string()
            .contains("not a JSON object of providers")
    );
}
