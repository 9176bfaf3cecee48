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
        (Some(parent), Some(name)) => {
            std::fs::canonicalize(parent).map_or_else(|_| path.to_path_buf(), |dir| dir.join(name))
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests;
