//! Class 1: the file tools escaping `--cwd` under `--sandbox linux`. A link planted in the
//! repository followed by `..` through a directory that does not exist yet, every writing
//! tool, and paths swapped between the check and the write while the run is going: each is
//! an error result naming the rule, and nothing outside the repository changes.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use crate::sandbox::{results, sandboxed, scene};
use crate::support::mock_llm::*;

/// Every file below `dir` with its content, sorted (links are listed, not followed).
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if kind.is_dir() {
                stack.push(path);
                out.push((rel, Vec::new()));
            } else if kind.is_symlink() {
                out.push((
                    rel,
                    std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_planted_link_then_dot_dot_cannot_write_authorized_keys() {
    let s = scene();
    std::os::unix::fs::symlink(s.home.join(".ssh"), s.repo.join("ssh")).unwrap();
    let before_home = tree(&s.home);
    let before_outside = tree(&s.outside);
    let keys = "ssh-ed25519 AAAA attacker";
    let writes = [
        "ssh/new/../authorized_keys",
        "ssh/authorized_keys",
        "out/new/../../home/.ssh/authorized_keys",
        "out/x/../x.txt",
        "new/../../outside/x.txt",
    ];
    let mut replies: Vec<Reply> = writes
        .iter()
        .enumerate()
        .map(|(i, path)| {
            call(
                &format!("w{i}"),
                "write",
                &json!({"path": path, "content": keys}).to_string(),
            )
        })
        .collect();
    replies.push(call(
        "e1",
        "edit",
        &json!({"path": "ssh/id_rsa", "edits": [{"oldText": "SSH", "newText": "PWNED"}]})
            .to_string(),
    ));
    replies.push(call(
        "h1",
        "hashline_edit",
        &json!({"path": "ssh/id_rsa", "edits": [{"op": "replace", "pos": "1#AA", "lines": ["x"]}]})
            .to_string(),
    ));
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let run = sandboxed(
        &s,
        &mock,
        &["--tools", "read,write,edit,hashline_edit,bash"],
        &[],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results.len(), writes.len() + 2, "{results:?}");
    for (text, is_error) in &results {
        assert!(*is_error, "{text}");
        assert!(text.starts_with("Access denied: "), "{text}");
    }
    // The exact reasons: `..` after a missing directory, or a path that leads outside.
    assert!(
        results[0]
            .0
            .ends_with("it uses `..` after a directory that does not exist yet"),
        "{}",
        results[0].0
    );
    assert!(
        results[1].0.contains("is hidden by the sandbox"),
        "{}",
        results[1].0
    );
    assert!(
        results[4]
            .0
            .ends_with("it uses `..` after a directory that does not exist yet"),
        "{}",
        results[4].0
    );
    assert_eq!(tree(&s.home), before_home);
    assert_eq!(tree(&s.outside), before_outside);
    assert!(!run.stdout.contains("SSH-SECRET"));
}

/// Swaps `repo/race/dir` between a real directory and a link to `outside` as fast as it can.
fn swapper(repo: &Path, outside: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let (dir, staged) = (repo.join("race/dir"), repo.join("race/staged"));
    let outside = outside.to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            let _ = std::fs::rename(&dir, &staged);
            let _ = std::os::unix::fs::symlink(&outside, &dir);
            std::thread::yield_now();
            let _ = std::fs::remove_file(&dir);
            let _ = std::fs::rename(&staged, &dir);
            swaps += 1;
        }
        swaps
    })
}

#[test]
fn a_directory_swapped_for_a_link_while_files_are_written_never_lets_one_out() {
    let s = scene();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(&s.repo, &s.outside, stop.clone());
    let count = 150;
    let mut replies: Vec<Reply> = (0..count)
        .map(|i| {
            call(
                &format!("w{i}"),
                "write",
                &json!({"path": format!("race/dir/sub{}/f{i}.txt", i % 3), "content": "RACE"})
                    .to_string(),
            )
        })
        .collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let run = sandboxed(&s, &mock, &[], &[]);
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results.len(), count);
    let refused = results.iter().filter(|(_, e)| *e).count();
    for (text, is_error) in &results {
        if *is_error {
            // Refused by the walk, or lost to the swapper (the directory moved away).
            assert!(
                ["Access denied: ", "File not found", "Could not write"]
                    .iter()
                    .any(|start| text.starts_with(start)),
                "{text}"
            );
        }
    }
    assert!(swaps > 10, "the swapper ran {swaps} times");
    assert_eq!(tree(&s.outside), Vec::new(), "{refused} of {count} refused");
}

#[test]
fn a_file_swapped_for_a_link_to_a_credential_is_never_read() {
    let s = scene();
    let (file, staged) = (s.repo.join("notes.txt"), s.repo.join("notes.real"));
    std::fs::write(&file, "harmless\n").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let secret = s.home.join(".ssh/id_rsa");
    let swapper = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            let _ = std::fs::rename(&file, &staged);
            let _ = std::os::unix::fs::symlink(&secret, &file);
            std::thread::yield_now();
            let _ = std::fs::remove_file(&file);
            let _ = std::fs::rename(&staged, &file);
        }
    });
    let mut replies: Vec<Reply> = Vec::new();
    for i in 0..60 {
        replies.push(call(
            &format!("r{i}"),
            "read",
            &json!({"path": "notes.txt"}).to_string(),
        ));
        replies.push(call(
            &format!("g{i}"),
            "grep",
            &json!({"pattern": "SECRET|harmless"}).to_string(),
        ));
        replies.push(call(
            &format!("e{i}"),
            "edit",
            &json!({"path": "notes.txt", "edits": [{"oldText": "harmless", "newText": "harmless"}]})
                .to_string(),
        ));
    }
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let run = sandboxed(&s, &mock, &[], &[]);
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    run.assert_code(0);
    assert!(!run.stdout.contains("SSH-SECRET"));
    for request in mock.requests() {
        assert!(!request.body.to_string().contains("SSH-SECRET"));
    }
    assert_eq!(
        std::fs::read_to_string(s.home.join(".ssh/id_rsa")).unwrap(),
        "SSH-SECRET\n"
    );
}
