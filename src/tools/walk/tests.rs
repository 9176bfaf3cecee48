use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A directory holding `files` empty files (plus the root: `files + 1` entries in all).
fn tree(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..files {
        std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
    }
    dir
}

/// Walks `root`, returning how many visitors were made, how often each path was seen, and
/// the threads the entries were seen on.
fn walk(root: &Path) -> (usize, HashMap<PathBuf, usize>, Vec<std::thread::ThreadId>) {
    let made = AtomicUsize::new(0);
    let seen = Mutex::new((HashMap::new(), Vec::new()));
    visit(&builder(root, None), || {
        made.fetch_add(1, Ordering::Relaxed);
        let seen = &seen;
        Box::new(move |entry| {
            let mut seen = seen.lock().unwrap();
            *seen.0.entry(entry.unwrap().into_path()).or_insert(0) += 1;
            seen.1.push(std::thread::current().id());
            ControlFlow::Continue(())
        })
    });
    let (counts, threads) = seen.into_inner().unwrap();
    (made.into_inner(), counts, threads)
}

#[test]
fn a_small_tree_is_walked_by_one_visitor_on_the_calling_thread() {
    let dir = tree(SERIAL_ENTRIES - 1);
    let (made, counts, seen_on) = walk(dir.path());
    assert_eq!(made, 1);
    assert_eq!(counts.len(), SERIAL_ENTRIES);
    assert!(counts.values().all(|&n| n == 1));
    let here = std::thread::current().id();
    assert!(seen_on.iter().all(|&t| t == here));
}

#[test]
fn a_larger_tree_is_walked_in_parallel_and_each_entry_is_seen_once() {
    let dir = tree(SERIAL_ENTRIES + 50);
    let (made, counts, seen_on) = walk(dir.path());
    // ignore's parallel walk makes one visitor for the roots, then one per thread.
    assert_eq!(made, threads() + 1);
    assert_eq!(counts.len(), SERIAL_ENTRIES + 51);
    assert!(
        counts.values().all(|&n| n == 1),
        "an entry the first listing saw was visited twice"
    );
    let here = std::thread::current().id();
    assert!(seen_on.iter().all(|&t| t != here));
}

#[test]
fn break_ends_a_small_walk_at_once() {
    let dir = tree(10);
    let visited = AtomicUsize::new(0);
    visit(&builder(dir.path(), None), || {
        let visited = &visited;
        Box::new(move |_| {
            visited.fetch_add(1, Ordering::Relaxed);
            ControlFlow::Break(())
        })
    });
    assert_eq!(visited.into_inner(), 1);
}
