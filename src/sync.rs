//! Locks that survive a panic elsewhere.
//!
//! A thread that panics while holding a lock poisons it. Everything worker guards with a lock
//! (counters, buffers, file handles) stays valid after such a panic, and the run must still
//! finish its stream, so every lock is taken with the poison cleared, through this one helper.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Taking a `Mutex` whether or not a panic poisoned it.
pub trait LockExt<T> {
    /// The guard, poisoned or not.
    fn lock_or_recover(&self) -> MutexGuard<'_, T>;
    /// The value, poisoned or not.
    fn into_inner_or_recover(self) -> T;
}

impl<T> LockExt<T> for Mutex<T> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn into_inner_or_recover(self) -> T {
        self.into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Taking an `RwLock` whether or not a panic poisoned it.
pub trait RwLockExt<T> {
    /// The read guard, poisoned or not.
    fn read_or_recover(&self) -> RwLockReadGuard<'_, T>;
    /// The write guard, poisoned or not.
    fn write_or_recover(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RwLockExt<T> for RwLock<T> {
    fn read_or_recover(&self) -> RwLockReadGuard<'_, T> {
        self.read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_or_recover(&self) -> RwLockWriteGuard<'_, T> {
        self.write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
