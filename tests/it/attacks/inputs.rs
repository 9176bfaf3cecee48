//! File-valued inputs: every file a flag, a variable or the repository names is read only if it
//! is a regular file, and no further than the cap of its kind.
//!
//! The attacks: a FIFO with no writer (opening it used to wait forever), `/dev/zero` (reading
//! it used to grow memory at a gigabyte a second), a directory, a socket, and a sparse 3 GiB
//! file (instant to make, and read whole it ran past `--timeout` and used memory in
//! proportion). Each flag refuses them with exit 2, one stderr line naming the flag, the path
//! and the reason, and nothing on stdout, within a deadline a hang cannot meet; the run is
//! killed at that deadline so that a regression fails instead of hanging the suite. The
//! prompt on stdin is not a file but is read the same way: `< /dev/zero` stops at its cap.
//!
//! Files a repository brings are not the operator's mistake, so they do not stop the run: a
//! skill is listed as a problem, and a context file (`AGENTS.md`) is cut to its cap with an
//! `input_truncated` event saying which file and how many bytes were kept and dropped.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker_measured, worker_command};

/// Far above the few milliseconds a refusal takes (a debug binary on a busy machine), far
/// below forever.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(5);
const SPARSE_SIZE: u64 = 3 << 30;

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

fn sparse(path: &Path) {
    File::create(path).unwrap().set_len(SPARSE_SIZE).unwrap();
}

/// `worker <args>` with the prompt `q` on stdin, killed at `deadline` (then the test fails).
fn run_within(cwd: &Path, args: &[&str], env: &[(&str, &str)], deadline: Duration) -> Run {
    run_with_stdin(cwd, args, env, deadline, None)
}

/// Like [`run_within`], with `stdin` (a file) instead of the prompt.
fn run_with_stdin(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    deadline: Duration,
    stdin: Option<File>,
) -> Run {
    let mut cmd = worker_command(cwd);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(stdin.map_or_else(Stdio::piped, Stdio::from))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id().cast_signed());
    if let Some(mut input) = child.stdin.take() {
        use std::io::Write;
        let _ = input.write_all(b"q");
    }
    let (done, output) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match output.recv_timeout(deadline) {
        Ok(output) => Run::from_output(output.unwrap()),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("worker {args:?} still running after {deadline:?}");
        }
    }
}

/// A usage error: exit 2, exactly `line` on stderr, nothing on stdout, well within the
/// deadline.
fn assert_refused(cwd: &Path, args: &[&str], env: &[(&str, &str)], line: &str) {
    let started = Instant::now();
    let run = run_within(cwd, args, env, REFUSAL_DEADLINE);
    let took = started.elapsed();
    assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    assert_eq!(run.stderr, format!("worker: {line}\n"), "{args:?}");
    assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    eprintln!("{args:?} refused in {took:?}");
}

#[test]
fn an_endless_stdin_is_refused_at_its_cap_not_read_until_memory_runs_out() {
    let cwd = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--timeout", "30s"], &["an argument"]] {
        let mut args = vec!["run", "--model", "dynamo/m"];
        args.extend_from_slice(extra);
        let zero = File::open("/dev/zero").unwrap();
        let started = Instant::now();
        let run = run_with_stdin(cwd.path(), &args, &[], REFUSAL_DEADLINE, Some(zero));
        eprintln!("{args:?} < /dev/zero refused in {:?}", started.elapsed());
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(
            run.stderr,
            "worker: stdin: larger than the 16 MiB cap for a prompt\n"
        );
        assert!(run.stdout.is_empty());
    }
}

/// The hostile files of one directory.
struct Hostile {
    _dir: tempfile::TempDir,
    fifo: String,
    directory: String,
    socket: String,
    huge: String,
    _listener: std::os::unix::net::UnixListener,
}

impl Hostile {
    fn new() -> Hostile {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).display().to_string();
        mkfifo(&dir.path().join("fifo"));
        std::fs::create_dir(dir.path().join("directory")).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(dir.path().join("socket")).unwrap();
        sparse(&dir.path().join("huge"));
        // A key file must not be readable by others: the mode is not what refuses these.
        for name in ["fifo", "huge"] {
            std::fs::set_permissions(dir.path().join(name), PermissionsExt::from_mode(0o600))
                .unwrap();
        }
        Hostile {
            fifo: at("fifo"),
            directory: at("directory"),
            socket: at("socket"),
            huge: at("huge"),
            _dir: dir,
            _listener: listener,
        }
    }

    /// Each hostile path with the reason worker gives for it.
    fn cases(&self) -> Vec<(&str, String)> {
        vec![
            (self.fifo.as_str(), "a FIFO, not a regular file".to_string()),
            ("/dev/zero", "a character device, not a regular file".into()),
            (
                self.directory.as_str(),
                "a directory, not a regular file".into(),
            ),
            (self.socket.as_str(), "a socket, not a regular file".into()),
        ]
    }
}

#[test]
fn every_file_flag_refuses_what_is_not_a_regular_file_at_once() {
    let cwd = tempfile::tempdir().unwrap();
    let hostile = Hostile::new();
    for (path, reason) in hostile.cases() {
        let at = format!("@{path}");
        let replay = format!("replay/{path}");
        let refusals: [(Vec<&str>, String); 7] = [
            (
                vec!["--system-prompt", &at],
                format!("--system-prompt @{path}: {reason}"),
            ),
            (
                vec!["--append-system-prompt", &at],
                format!("--append-system-prompt @{path}: {reason}"),
            ),
            (
                vec!["--output-schema", path],
                format!("--output-schema {path}: {reason}"),
            ),
            (
                vec!["--prices-file", path],
                format!("--prices-file {path}: {reason}"),
            ),
            (
                vec!["--auth-file", path],
                format!("--auth-file {path}: {reason}"),
            ),
            (
                vec!["--model", &replay],
                format!("--model: cannot read fixture {path}: {reason}"),
            ),
            (
                vec!["--resume", path],
                format!("--resume: {path}: {reason}"),
            ),
        ];
        for (flags, line) in refusals {
            let mut args = vec!["run", "--model", "dynamo/m"];
            args.extend(flags);
            assert_refused(cwd.path(), &args, &[], &line);
        }
        assert_refused(
            cwd.path(),
            &["trace", "perfetto", path, "-o", "out.json"],
            &[],
            &format!("cannot read {path}: {reason}"),
        );
    }
    assert!(!cwd.path().join("out.json").exists());
}

#[test]
fn every_file_flag_refuses_a_file_over_its_cap_naming_the_cap() {
    let cwd = tempfile::tempdir().unwrap();
    let hostile = Hostile::new();
    let huge = hostile.huge.as_str();
    let at = format!("@{huge}");
    let replay = format!("replay/{huge}");
    let over = |cap: &str| format!("larger than the {cap} cap ({SPARSE_SIZE} bytes)");
    let refusals: [(Vec<&str>, String); 7] = [
        (
            vec!["--system-prompt", &at],
            format!("--system-prompt @{huge}: {}", over("1 MiB")),
        ),
        (
            vec!["--append-system-prompt", &at],
            format!("--append-system-prompt @{huge}: {}", over("1 MiB")),
        ),
        (
            vec!["--output-schema", huge],
            format!("--output-schema {huge}: {}", over("1 MiB")),
        ),
        (
            vec!["--prices-file", huge],
            format!("--prices-file {huge}: {}", over("1 MiB")),
        ),
        (
            vec!["--auth-file", huge],
            format!("--auth-file {huge}: {}", over("64 KiB")),
        ),
        (
            vec!["--model", &replay],
            format!("--model: cannot read fixture {huge}: {}", over("256 MiB")),
        ),
        (
            vec!["--resume", huge],
            format!("--resume: {huge}: {}", over("256 MiB")),
        ),
    ];
    for (flags, line) in refusals {
        let mut args = vec!["run", "--model", "dynamo/m"];
        args.extend(flags);
        assert_refused(cwd.path(), &args, &[], &line);
    }
    assert_refused(
        cwd.path(),
        &["trace", "perfetto", huge, "-o", "out.json"],
        &[],
        &format!("cannot read {huge}: {}", over("1024 MiB")),
    );
}

#[test]
fn a_profile_file_that_is_a_fifo_is_refused_at_once() {
    let cwd = tempfile::tempdir().unwrap();
    let profiles = tempfile::tempdir().unwrap();
    let fifo = profiles.path().join("mine.json");
    mkfifo(&fifo);
    let dir = profiles.path().display().to_string();
    assert_refused(
        cwd.path(),
        &["run", "--model", "dynamo/m", "--profiles-dir", &dir],
        &[],
        &format!(
            "--profiles-dir {dir}: cannot read {}: a FIFO, not a regular file",
            fifo.display()
        ),
    );
    std::fs::remove_file(&fifo).unwrap();
    sparse(&fifo);
    assert_refused(
        cwd.path(),
        &["run", "--model", "dynamo/m", "--profiles-dir", &dir],
        &[],
        &format!(
            "--profiles-dir {dir}: cannot read {}: larger than the 64 KiB cap ({SPARSE_SIZE} bytes)",
            fifo.display()
        ),
    );
}

/// The model's answer to any run: enough for a run that gets past its inputs.
fn answering() -> MockLlm {
    MockLlm::start_cycling(vec![answer("ok")])
}

#[test]
fn a_github_app_key_that_is_a_fifo_skips_the_github_tools_at_once() {
    let cwd = tempfile::tempdir().unwrap();
    let hostile = Hostile::new();
    let mock = answering();
    for (path, reason) in hostile.cases() {
        let run = run_within(
            cwd.path(),
            &["run", "--model", "dynamo/m", "--profile", "read"],
            &[
                ("DYNAMO_BASE_URL", &mock.url),
                ("GITHUB_APP_ID", "1"),
                ("GITHUB_APP_INSTALLATION_ID", "2"),
                ("GITHUB_APP_PRIVATE_KEY_PATH", path),
            ],
            REFUSAL_DEADLINE,
        );
        run.assert_code(0);
        let github = run.extension("github");
        assert_eq!(github["status"], "skipped");
        assert_eq!(github["reason"], "pem-unreadable");
        assert_eq!(
            github["message"],
            format!("cannot read GITHUB_APP_PRIVATE_KEY_PATH {path}: {reason}")
        );
    }
}

#[test]
fn a_skill_that_is_not_a_regular_file_or_too_large_is_a_problem_not_a_hang() {
    let cwd = tempfile::tempdir().unwrap();
    let hostile = Hostile::new();
    let skills = cwd.path().join(".agents/skills");
    for name in ["piped", "huge"] {
        std::fs::create_dir_all(skills.join(name)).unwrap();
    }
    let piped = skills.join("piped/SKILL.md");
    mkfifo(&piped);
    let huge = skills.join("huge/SKILL.md");
    sparse(&huge);
    let mock = answering();
    // A home of its own, so the project's skills are not found a second time as the user's.
    let home = tempfile::tempdir().unwrap();
    let run = run_within(
        cwd.path(),
        &[
            "run",
            "--model",
            "dynamo/m",
            "--skill",
            "/dev/zero",
            "--skill",
            &hostile.fifo,
        ],
        &[
            ("DYNAMO_BASE_URL", &mock.url),
            ("HOME", home.path().to_str().unwrap()),
        ],
        REFUSAL_DEADLINE,
    );
    run.assert_code(0);
    let problems = &run.first("skills_status")["problems"];
    let expected = json!([
        {"path": "/dev/zero", "message": "cannot read: a character device, not a regular file"},
        {"path": hostile.fifo, "message": "cannot read: a FIFO, not a regular file"},
        {"path": huge.display().to_string(), "message": format!("cannot read: larger than the 256 KiB cap ({SPARSE_SIZE} bytes)")},
        {"path": piped.display().to_string(), "message": "cannot read: a FIFO, not a regular file"},
    ]);
    assert_eq!(problems, &expected, "{}", run.stdout);
    assert_eq!(run.first("skills_status")["discovered"], 0);
}

/// The system prompt of the run's first model request.
fn system_prompt(mock: &MockLlm) -> String {
    let requests = mock.requests();
    requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_3_gib_agents_md_is_cut_to_its_cap_within_the_budget_and_in_little_memory() {
    let cwd = tempfile::tempdir().unwrap();
    let agents = cwd.path().join("AGENTS.md");
    {
        use std::io::Write;
        let mut file = File::create(&agents).unwrap();
        file.write_all(b"Use tabs.\n").unwrap();
        file.set_len(SPARSE_SIZE).unwrap();
    }
    let mock = MockLlm::start(vec![answer("ok")]);
    let started = Instant::now();
    let (run, peak_kib) = run_worker_measured(
        cwd.path(),
        &["--model", "dynamo/m", "--timeout", "4s"],
        "q",
        &[("DYNAMO_BASE_URL", &mock.url)],
    );
    let took = started.elapsed();
    run.assert_code(0);
    eprintln!(
        "3 GiB AGENTS.md: {took:?}, peak RSS {} MiB",
        peak_kib / 1024
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // A run with no context file peaks near 27 MiB (a debug build); reading the file whole
    // took 3 GiB.
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
    let cap = 32 * 1024u64;
    let shown = agents.display().to_string();
    let cut = run.first("input_truncated");
    assert_eq!(
        (
            &cut["input"],
            &cut["path"],
            &cut["reason"],
            &cut["keptBytes"],
            &cut["droppedBytes"],
            &cut["capBytes"]
        ),
        (
            &json!("context_file"),
            &json!(shown),
            &json!("file_cap"),
            &json!(cap),
            &json!(SPARSE_SIZE - cap),
            &json!(cap)
        )
    );
    let message = format!(
        "context file {shown}: {cap} of {SPARSE_SIZE} bytes kept, {} cut: over the cap for one context file (32 KiB)",
        SPARSE_SIZE - cap
    );
    assert_eq!(cut["message"], message);
    assert!(
        run.stderr.contains(&format!("worker: {message}\n")),
        "{}",
        run.stderr
    );
    // Before the run starts, so an orchestrator sees it first.
    let types = run.types();
    let at = |kind: &str| types.iter().position(|t| t == kind).unwrap();
    assert!(at("input_truncated") < at("agent_start"), "{types:?}");
    // The model gets the file's first 32 KiB and a note saying where the rest is.
    let prompt = system_prompt(&mock);
    assert!(prompt.contains("Use tabs.\n"), "{prompt:.300}");
    assert!(
        prompt.contains(&format!(
            "\n[... cut at {cap} of {SPARSE_SIZE} bytes; read the file for the rest]\n</project_instructions>"
        )),
        "the note"
    );
    assert!(prompt.len() < 40 * 1024, "{} bytes", prompt.len());
}

#[test]
fn two_dozen_nested_agents_md_files_stop_at_the_total_cap_with_a_warning_each() {
    let root = tempfile::tempdir().unwrap();
    let each = 4 * 1024;
    let mut dir: PathBuf = root.path().to_path_buf();
    let mut files = Vec::new();
    for depth in 0..24 {
        dir = dir.join(format!("d{depth}"));
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("AGENTS.md");
        let rule = format!("rule {depth}\n");
        std::fs::write(&file, rule.clone() + &"x".repeat(each - rule.len())).unwrap();
        files.push(file.display().to_string());
    }
    let mock = MockLlm::start(vec![answer("ok")]);
    let cwd = dir.display().to_string();
    let run = run_within(
        root.path(),
        &["run", "--model", "dynamo/m", "--cwd", &cwd],
        &[("DYNAMO_BASE_URL", &mock.url)],
        REFUSAL_DEADLINE,
    );
    run.assert_code(0);
    // 64 KiB hold the 16 nearest; the 8 farthest are named but not included.
    let cuts: Vec<&Value> = run.all("input_truncated");
    let cut_paths: Vec<&str> = cuts.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(
        cut_paths,
        files[..8].iter().map(String::as_str).collect::<Vec<_>>()
    );
    for cut in &cuts {
        assert_eq!(cut["reason"], "total_cap");
        assert_eq!(cut["keptBytes"], 0);
        assert_eq!(cut["droppedBytes"], each);
        assert_eq!(cut["capBytes"], 64 * 1024);
        let line = format!(
            "worker: context file {}: 0 of {each} bytes kept, {each} cut: the context files reached their total cap (64 KiB)\n",
            cut["path"].as_str().unwrap()
        );
        assert!(run.stderr.contains(&line), "{}", run.stderr);
    }
    let prompt = system_prompt(&mock);
    for depth in 0..24 {
        let included = prompt.contains(&format!("rule {depth}\n"));
        assert_eq!(included, depth >= 8, "rule {depth}");
    }
    for file in &files {
        assert!(prompt.contains(&format!("<project_instructions path=\"{file}\">")));
    }
}

#[test]
fn an_agents_md_that_is_a_fifo_or_a_device_is_skipped_with_a_warning() {
    let cwd = tempfile::tempdir().unwrap();
    let fifo = cwd.path().join("AGENTS.md");
    mkfifo(&fifo);
    let sub = cwd.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::os::unix::fs::symlink("/dev/zero", sub.join("AGENTS.md")).unwrap();
    // The next name in the same directory is still read.
    std::fs::write(sub.join("CLAUDE.md"), "Use spaces.").unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let cwd_arg = sub.display().to_string();
    let run = run_within(
        cwd.path(),
        &["run", "--model", "dynamo/m", "--cwd", &cwd_arg],
        &[("DYNAMO_BASE_URL", &mock.url)],
        REFUSAL_DEADLINE,
    );
    run.assert_code(0);
    for (path, reason) in [
        (fifo.display().to_string(), "a FIFO, not a regular file"),
        (
            sub.join("AGENTS.md").display().to_string(),
            "a character device, not a regular file",
        ),
    ] {
        let line = format!("worker: context file {path}: {reason}; skipped\n");
        assert!(run.stderr.contains(&line), "{}", run.stderr);
    }
    assert!(run.all("input_truncated").is_empty());
    assert!(system_prompt(&mock).contains("Use spaces."));
}
