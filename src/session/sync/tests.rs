use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{SYNC_LIMIT, Syncer};

fn scratch() -> (tempfile::TempDir, File) {
    let dir = tempfile::tempdir().unwrap();
    let file = File::create(dir.path().join("session.jsonl")).unwrap();
    (dir, file)
}

fn failing(_: &File) -> std::io::Result<()> {
    Err(std::io::Error::other("the disk is full"))
}

#[test]
fn a_failed_sync_is_reported_by_the_next_wait_once() {
    let (_dir, file) = scratch();
    let mut syncer = Syncer::start(file, None, failing, SYNC_LIMIT).unwrap();
    syncer.request().unwrap();
    let err = syncer.wait().unwrap_err();
    assert_eq!(err.to_string(), "the disk is full");
    // Reported once: nothing was asked since.
    syncer.wait().unwrap();
    // A later sync that fails is reported again.
    syncer.request().unwrap();
    assert_eq!(syncer.wait().unwrap_err().to_string(), "the disk is full");
}

#[test]
fn the_first_jobs_failure_is_reported_by_the_first_wait() {
    let (_dir, file) = scratch();
    let first: super::FirstJob = Box::new(|_: &File| Err(std::io::Error::other("no link")));
    let mut syncer = Syncer::start(file, Some(first), File::sync_data, SYNC_LIMIT).unwrap();
    assert_eq!(syncer.wait().unwrap_err().to_string(), "no link");
    syncer.request().unwrap();
    syncer.wait().unwrap();
}

fn hanging(_: &File) -> std::io::Result<()> {
    std::thread::sleep(Duration::from_secs(3));
    Ok(())
}

#[test]
fn a_sync_that_does_not_answer_is_given_up_at_the_limit_and_not_waited_for_again() {
    let (_dir, file) = scratch();
    let limit = Duration::from_secs(1);
    let mut syncer = Syncer::start(file, None, hanging, limit).unwrap();
    syncer.request().unwrap();
    let started = Instant::now();
    let err = syncer.wait().unwrap_err();
    assert_eq!(err.to_string(), "the file was not synced within 1 s");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // As when the writer is dropped: the sync given up on is not waited for (or reported)
    // again. (Waiting for it again would take the whole limit once more.)
    let again = Instant::now();
    syncer.wait().unwrap();
    assert!(
        again.elapsed() < limit / 2,
        "waited {:?} again for a sync given up on",
        again.elapsed()
    );
}

#[test]
fn the_thread_ends_once_the_syncer_is_dropped() {
    let (_dir, file) = scratch();
    let mut syncer = Syncer::start(file, None, File::sync_data, SYNC_LIMIT).unwrap();
    syncer.request().unwrap();
    syncer.wait().unwrap();
    let shared = syncer.shared.clone();
    drop(syncer);
    // Otherwise it would wait for requests for the rest of the process, holding the file.
    let dropped = Instant::now();
    while !shared.progress().ended {
        assert!(
            dropped.elapsed() < Duration::from_secs(5),
            "the sync thread outlived its syncer"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

static GATED_STARTED: AtomicBool = AtomicBool::new(false);
static GATE_OPEN: AtomicBool = AtomicBool::new(false);
static GATED_SYNCS: AtomicUsize = AtomicUsize::new(0);

/// A sync that, the first time, says it has started and waits for the gate.
fn gated(_: &File) -> std::io::Result<()> {
    GATED_STARTED.store(true, Ordering::SeqCst);
    while !GATE_OPEN.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    GATED_SYNCS.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[test]
fn a_sync_asked_for_while_one_runs_waits_for_one_of_its_own() {
    let (_dir, file) = scratch();
    let mut syncer = Syncer::start(file, None, gated, SYNC_LIMIT).unwrap();
    syncer.request().unwrap();
    let asked = Instant::now();
    while !GATED_STARTED.load(Ordering::SeqCst) {
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "the sync asked for never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // Written after that sync began: it may not cover this, so these need another.
    for _ in 0..5 {
        syncer.request().unwrap();
    }
    GATE_OPEN.store(true, Ordering::SeqCst);
    syncer.wait().unwrap();
    // One for the first request and one for the five made while it ran.
    assert_eq!(GATED_SYNCS.load(Ordering::SeqCst), 2);
}

#[test]
fn a_thread_that_died_is_reported_and_refuses_new_requests() {
    let (_dir, file) = scratch();
    let first: super::FirstJob =
        Box::new(|_: &File| panic!("the sync thread's first job panicked"));
    let mut syncer = Syncer::start(file, Some(first), File::sync_data, SYNC_LIMIT).unwrap();
    let started = Instant::now();
    assert_eq!(
        syncer.wait().unwrap_err().to_string(),
        "the session sync thread has ended"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        syncer.request().unwrap_err().to_string(),
        "the session sync thread has ended"
    );
    syncer.wait().unwrap();
}
