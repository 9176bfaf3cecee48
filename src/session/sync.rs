//! The thread that makes a session file durable, so that the run's loop waits on the disk
//! only where it must.
//!
//! The writer asks for a sync once a turn's entries are written ([`Syncer::request`]) and,
//! before a tool that may change anything and at the run's end, waits for every sync asked
//! for so far ([`Syncer::wait`]). Requests are counted, not queued: the thread syncs once for
//! all the requests made since its last sync and then marks them all done. Asking costs a
//! counter and a wake-up and leaves nothing behind. (A reply channel per request, allocated
//! by the run's thread and freed by this one, left the heap holes that kept about half a
//! kilobyte resident for every turn of a long run.)

use std::fs::File;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::sync::LockExt;

/// The longest the run waits for its session file to be synced.
pub(super) const SYNC_LIMIT: Duration = Duration::from_secs(10);

/// A first job for the sync thread, run before any sync asked for.
pub(super) type FirstJob = Box<dyn FnOnce(&File) -> std::io::Result<()> + Send>;

/// How the thread makes what was written durable: [`File::sync_data`] (a test's stand-in
/// fails or hangs).
pub(super) type SyncFn = fn(&File) -> std::io::Result<()>;

/// What was asked of the thread and what it has done.
#[derive(Debug, Default)]
struct Progress {
    /// Jobs asked for so far; a first job is the first.
    asked: u64,
    /// Jobs done: whatever was written before the `done`-th job was asked for is durable (or
    /// its failure is in `failure`).
    done: u64,
    /// The first failure no wait has reported yet.
    failure: Option<String>,
    /// The writer is gone: the thread ends once it has done what was asked.
    closing: bool,
    /// The thread has ended: nothing asked from now on will be done.
    ended: bool,
}

#[derive(Debug, Default)]
struct Shared {
    progress: Mutex<Progress>,
    /// Signalled whenever `progress` changes.
    changed: Condvar,
}

impl Shared {
    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock_or_recover()
    }

    /// Records that the jobs up to `done` ended with `result`.
    fn finish(&self, done: u64, result: std::io::Result<()>) {
        let mut progress = self.progress();
        progress.done = done;
        if let Err(err) = result {
            progress.failure.get_or_insert(err.to_string());
        }
        drop(progress);
        self.changed.notify_all();
    }
}

/// Marks the thread ended when it returns (or unwinds), so that no wait waits for it.
struct Ending<'a>(&'a Shared);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.progress().ended = true;
        self.0.changed.notify_all();
    }
}

/// One thread per session file, syncing it whenever asked.
#[derive(Debug)]
pub(super) struct Syncer {
    shared: Arc<Shared>,
    /// The longest one [`Syncer::wait`] waits.
    limit: Duration,
    /// The jobs up to here are not waited for again: a wait gave up on them (the disk did
    /// not answer in time, or the thread had ended) and said so.
    given_up: u64,
}

impl Syncer {
    /// Starts the thread: `first` (when given) at once, then a sync with `sync` whenever asked.
    pub(super) fn start(
        file: File,
        first: Option<FirstJob>,
        sync: SyncFn,
        limit: Duration,
    ) -> std::io::Result<Syncer> {
        let shared = Arc::new(Shared::default());
        shared.progress().asked = u64::from(first.is_some());
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("session-sync".into())
            .spawn(move || serve(&thread_shared, &file, first, sync))?;
        Ok(Syncer {
            shared,
            limit,
            given_up: 0,
        })
    }

    /// Asks for a sync of everything written so far; returns at once.
    pub(super) fn request(&mut self) -> std::io::Result<()> {
        let mut progress = self.shared.progress();
        if progress.ended {
            return Err(std::io::Error::other("the session sync thread has ended"));
        }
        progress.asked += 1;
        drop(progress);
        self.shared.changed.notify_all();
        Ok(())
    }

    /// Waits for every job asked for, at most the limit: a disk that does not answer (a hung
    /// network mount) fails the session file, not the run. The first failure since the last
    /// wait is returned, once.
    pub(super) fn wait(&mut self) -> std::io::Result<()> {
        let deadline = Instant::now() + self.limit;
        let mut progress = self.shared.progress();
        let target = progress.asked;
        let waited_for = |progress: &Progress| {
            progress.done < target && target > self.given_up && !progress.ended
        };
        while waited_for(&progress) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            progress = self
                .shared
                .changed
                .wait_timeout(progress, left)
                .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
        }
        let unfinished = progress.done < target && target > self.given_up;
        let failure = progress.failure.take().or_else(|| {
            unfinished.then(|| {
                if progress.ended {
                    "the session sync thread has ended".to_string()
                } else {
                    format!(
                        "the file was not synced within {} s",
                        self.limit.as_secs_f64()
                    )
                }
            })
        });
        drop(progress);
        if unfinished {
            self.given_up = target;
        }
        failure.map_or(Ok(()), |error| Err(std::io::Error::other(error)))
    }
}

impl Drop for Syncer {
    /// The thread does what was asked and ends.
    fn drop(&mut self) {
        self.shared.progress().closing = true;
        self.shared.changed.notify_all();
    }
}

/// The thread: the first job, then one sync for whatever was asked since the last, until
/// the writer is gone and nothing is left to do.
fn serve(shared: &Shared, file: &File, first: Option<FirstJob>, sync: SyncFn) {
    let _ending = Ending(shared);
    if let Some(first) = first {
        shared.finish(1, first(file));
    }
    loop {
        let target = {
            let mut progress = shared.progress();
            while progress.asked == progress.done && !progress.closing {
                progress = shared
                    .changed
                    .wait(progress)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if progress.asked == progress.done {
                return;
            }
            progress.asked
        };
        shared.finish(target, sync(file));
    }
}

#[cfg(test)]
mod tests;
