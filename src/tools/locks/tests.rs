use super::*;
use std::time::Duration;

#[tokio::test]
async fn two_spellings_of_one_file_share_a_lock() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("f"), "x").unwrap();
    let locks = FileLocks::default();
    let held = locks.lock(&dir.path().join("f")).await;
    let other = locks.clone();
    let alias = dir.path().join("sub/../f");
    let waiter = tokio::spawn(async move { other.lock(&alias).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiter.is_finished(),
        "the alias must wait for the first holder"
    );
    drop(held);
    tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .unwrap()
        .unwrap();
}
