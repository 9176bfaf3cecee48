use super::super::testing::Harness;
use super::*;
use serde_json::json;

#[tokio::test]
async fn creates_parents_and_reports_bytes_not_characters() {
    let h = Harness::new();
    let text = h
        .ok(&WriteTool, json!({"path": "a/b/c.txt", "content": "héllo"}))
        .await;
    assert_eq!(text, "Successfully wrote 6 bytes to a/b/c.txt");
    assert_eq!(h.read("a/b/c.txt"), "héllo");
}

#[tokio::test]
async fn overwrites_and_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    h.write("run.sh", "old");
    std::fs::set_permissions(h.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    h.ok(
        &WriteTool,
        json!({"path": "run.sh", "content": "#!/bin/sh\n"}),
    )
    .await;
    assert_eq!(h.read("run.sh"), "#!/bin/sh\n");
    let mode = std::fs::metadata(h.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn a_directory_is_not_overwritten() {
    let h = Harness::new();
    std::fs::create_dir(h.path("d")).unwrap();
    assert_eq!(
        h.err(&WriteTool, json!({"path": "d", "content": "x"}))
            .await,
        "Path is a directory: d"
    );
}

#[tokio::test]
async fn a_file_in_the_way_of_a_parent_is_reported() {
    let h = Harness::new();
    h.write("f", "x");
    let err = h
        .err(&WriteTool, json!({"path": "f/g.txt", "content": "x"}))
        .await;
    assert!(err.starts_with("Could not write f/g.txt: "), "{err}");
}

#[tokio::test]
async fn a_read_only_directory_is_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    if crate::tools::testing::rerun_unprivileged(
        "tools::write::tests::a_read_only_directory_is_permission_denied",
    ) {
        return;
    }
    let h = Harness::new();
    std::fs::create_dir(h.path("ro")).unwrap();
    std::fs::set_permissions(h.path("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    assert!(
        std::fs::write(h.path("ro/probe"), "x").is_err(),
        "directory permissions are not enforced for this user"
    );
    assert_eq!(
        h.err(&WriteTool, json!({"path": "ro/x.txt", "content": "x"}))
            .await,
        "Permission denied: ro/x.txt"
    );
}

#[tokio::test]
async fn ten_megabytes_are_written_whole() {
    let h = Harness::new();
    let content = "0123456789abcdef\n".repeat(10 * 1024 * 1024 / 17);
    let text = h
        .ok(&WriteTool, json!({"path": "big.txt", "content": content}))
        .await;
    assert_eq!(
        text,
        format!("Successfully wrote {} bytes to big.txt", content.len())
    );
    assert_eq!(
        std::fs::metadata(h.path("big.txt")).unwrap().len() as usize,
        content.len()
    );
}
