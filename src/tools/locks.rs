//! Serializing writes to the same file across concurrently running tool calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::sync::LockExt;

/// One async lock per canonical path. Two spellings of one file (`a/../b`, a symlink) share
/// a lock because the key is resolved through the filesystem.
#[derive(Clone, Default)]
pub struct FileLocks {
    locks: Arc<Mutex<HashMap<PathBuf, Arc<AsyncMutex<()>>>>>,
}

impl FileLocks {
    /// Waits until no other tool call is writing `path`, then holds it until the guard drops.
    pub async fn lock(&self, path: &Path) -> OwnedMutexGuard<()> {
        let key = canonical_key(path);
        let lock = {
            let mut map = self.locks.lock_or_recover();
            map.entry(key).or_default().clone()
        };
        lock.lock_owned().await
    }
}

/// The canonical path when the file exists; otherwise its canonical parent plus its name.
fn canonical_key(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|dir| dir.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
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
}
