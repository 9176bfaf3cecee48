//! Sandbox launchers set up ahead of their command (`--sandbox linux`): the next command's
//! launcher builds its view while the model thinks, and is handed the command only if the
//! files its view was built from are as they were. A credential or an --edit-scope directory
//! made between two commands is therefore seen by the second exactly as it would be by a
//! launcher started for it; a credential that appears while a launcher is being set up makes
//! it refuse the command; and no launcher outlives its run.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::sandbox::{TestCgroup, bash, results, sandboxed, scene, wait_for_line};
use crate::support::mock_llm::*;

#[test]
fn a_credential_made_while_a_launcher_waits_is_hidden_from_the_command_it_runs() {
    let scene = scene();
    let vault = scene.repo.join("vault");
    let mock = MockLlm::start(vec![
        bash("b1", "true"),
        // The launcher for b3 starts as b2 does, and has its view long before the pause ends.
        bash(
            "b2",
            "sleep 0.3; mkdir vault && echo VAULT-KEY > vault/key && echo made",
        ),
        bash("b3", "cat vault/key 2>&1; echo \"status $?\""),
        answer("done"),
    ]);
    let run = sandboxed(
        &scene,
        &mock,
        &["--sandbox-hide", vault.to_str().unwrap()],
        &[],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results[1], ("made".to_string(), false), "{results:?}");
    assert!(!results[2].0.contains("VAULT-KEY"), "{results:?}");
    // Handed to a launcher started for it, not refused by the one set up before.
    assert!(results[2].0.ends_with("status 1"), "{results:?}");
    assert!(!results[2].0.contains("appeared after"), "{results:?}");
}

#[test]
fn an_edit_scope_directory_made_while_a_launcher_waits_is_writable_by_the_command_it_runs() {
    let scene = scene();
    let mock = MockLlm::start(vec![
        bash("b1", "true"),
        call(
            "w1",
            "write",
            &json!({"path": "gen/by-write.txt", "content": "x"}).to_string(),
        ),
        bash("b2", "echo x > gen/by-bash.txt && echo ok"),
        answer("done"),
    ]);
    let run = sandboxed(&scene, &mock, &["--edit-scope", "gen"], &[]);
    run.assert_code(0);
    let results = results(&run);
    assert!(!results[1].1, "{results:?}");
    assert_eq!(results[2], ("ok".to_string(), false), "{results:?}");
    assert!(scene.repo.join("gen/by-bash.txt").exists());
}

/// `worker run ARGS` in `repo`, against `mock`, inside `cgroup`.
fn worker(cgroup: &TestCgroup, repo: &Path, mock: &MockLlm, args: &[&str]) -> Command {
    let mut command = crate::support::worker_command(repo);
    command
        .args([
            "run",
            "--model",
            "dynamo/m",
            "--sandbox",
            "linux",
            "--no-session",
        ])
        .args(args)
        .env("DYNAMO_BASE_URL", &mock.url);
    let mut entered = cgroup.enter(&command);
    entered.stdin(Stdio::null());
    entered
}

/// The launcher left waiting when a run ends goes, and removes its pids cgroup.
#[test]
fn the_launcher_left_waiting_removes_its_cgroup_when_the_run_ends() {
    let scene = scene();
    let mock = MockLlm::start(vec![bash("b1", "echo ok"), answer("done")]);
    let cgroup = TestCgroup::new("standby-end");
    let output = worker(&cgroup, &scene.repo, &mock, &["say ok"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("\"exitCode\":0"), "{stdout}");
    assert_eq!(cgroup.left(), Vec::<String>::new());
}

/// A worker killed while a command runs leaves that command's cgroup (its launcher dies with
/// worker; the next sandboxed command removes it), but not the cgroup of the launcher waiting
/// for the next command: that one does not die with worker, it sees its input close and ends
/// by itself.
#[test]
fn a_waiting_launcher_removes_its_cgroup_when_worker_is_killed() {
    let scene = scene();
    let mock = MockLlm::start(vec![
        bash("b1", "cat /proc/self/cgroup > cgroup.txt; sleep 60"),
        answer("done"),
    ]);
    let cgroup = TestCgroup::new("standby-kill");
    let mut worker = worker(&cgroup, &scene.repo, &mock, &["wait"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let report = scene.repo.join("cgroup.txt");
    let membership = wait_for_line(&report);
    // The next command's launcher is set up by now.
    std::thread::sleep(Duration::from_millis(300));
    worker.kill().unwrap();
    worker.wait().unwrap();
    let command = membership
        .lines()
        .find_map(|line| line.rsplit_once("/worker-sandbox-"))
        .map_or_else(
            || panic!("{membership}"),
            |(_, pid)| format!("worker-sandbox-{pid}"),
        );
    let mut left = cgroup.left();
    let started = std::time::Instant::now();
    // The killed command's tree may take a moment to go; its cgroup stays.
    while left.len() > 1 && started.elapsed().as_secs() < 5 {
        left = cgroup.left();
    }
    assert_eq!(left, vec![command]);
}

/// A launcher started without a command, as worker starts one ahead: the spec of a command
/// in `repo` that hides `hidden`.
fn standby(repo: &Path, hidden: &Path, scratch: &Path) -> std::process::Child {
    let spec = worker::sandbox::launch::Spec {
        writable: vec![repo.to_path_buf(), scratch.to_path_buf()],
        temp_dir: scratch.to_path_buf(),
        run_dir: None,
        hidden: vec![hidden.to_path_buf()],
        no_network: false,
        proxy_socket: None,
        max_processes: 64,
        max_file_bytes: 1 << 20,
    };
    Command::new(env!("CARGO_BIN_EXE_worker"))
        .arg(worker::sandbox::launch::LAUNCH_ARG)
        .current_dir(repo)
        .env(
            worker::sandbox::launch::SPEC_VAR,
            serde_json::to_string(&spec).unwrap(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(mut child: std::process::Child, input: &[u8]) -> (i32, String) {
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let mut output = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut output)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut output)
        .unwrap();
    (child.wait().unwrap().code().unwrap_or(-1), output)
}

#[test]
fn a_launcher_runs_the_command_it_reads_with_no_input_of_its_own() {
    let scene = scene();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = standby(&scene.repo, &scene.home.join(".ssh"), scratch.path());
    let input = serde_json::to_vec(&json!({
        "argv": ["/bin/sh", "-c", "readlink /proc/self/fd/0; cat a.txt; echo \"$GREETING ${LANG-none}\""],
        "env": [["GREETING", "hello"], ["LANG", null]],
    }))
    .unwrap();
    assert_eq!(
        finish(child, &input),
        (0, "/dev/null\nalpha\nhello none\n".to_string())
    );
}

#[test]
fn a_launcher_whose_input_ends_without_a_command_exits_without_a_word() {
    let scene = scene();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = standby(&scene.repo, &scene.home.join(".ssh"), scratch.path());
    assert_eq!(finish(child, b""), (126, String::new()));
}

#[test]
fn a_launcher_refuses_its_command_when_a_hidden_path_appeared_after_its_view() {
    let scene = scene();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let vault = scene.repo.join("vault");
    let child = standby(&scene.repo, &vault, scratch.path());
    // Its view is built in milliseconds; the credential comes well after.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::create_dir(&vault).unwrap();
    std::fs::write(vault.join("key"), "VAULT-KEY\n").unwrap();
    let input = serde_json::to_vec(&json!({"argv": ["/bin/sh", "-c", "cat vault/key"]})).unwrap();
    let (code, output) = finish(child, &input);
    assert_eq!(code, 126, "{output}");
    assert_eq!(
        output,
        format!(
            "worker sandbox: {} appeared after the sandbox was set up, and is not hidden: the command was not run\n",
            vault.display()
        )
    );
}

#[test]
fn a_launcher_refuses_input_that_is_not_a_command() {
    let scene = scene();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (input, said) in [
        (&b"echo hi"[..], "the command is not valid"),
        (
            b"[\"/bin/sh\", \"-c\", \"true\"]",
            "the command is not valid",
        ),
        (b"{\"argv\": []}", "no command to run"),
        (
            b"{\"argv\": [\"/bin/sh\", \"-c\", \"echo \\u0000\"]}",
            "the command contains a NUL byte",
        ),
        (
            b"{\"argv\": [\"/bin/sh\"], \"env\": [[\"A=B\", \"c\"]]}",
            "cannot set the variable \"A=B\"",
        ),
    ] {
        let child = standby(&scene.repo, &scene.home.join(".ssh"), scratch.path());
        let (code, output) = finish(child, input);
        assert_eq!(code, 126, "{output}");
        assert!(
            output.starts_with(&format!("worker sandbox: {said}")),
            "{output}"
        );
    }
}

/// A command's launcher is the one set up while the command before it ran (its pids cgroup is
/// older than the pause before it), and the command still gets its own call's environment.
#[test]
fn a_command_runs_in_the_launcher_set_up_while_the_one_before_ran() {
    let scene = scene();
    let mock = MockLlm::start(vec![
        bash("b1", "sleep 1.2"),
        bash(
            "b2",
            "dir=/sys/fs/cgroup/pids$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup); \
             echo \"$(( $(date +%s) - $(stat -c %Z \"$dir\") )) ${DYN_AGENT_PARENT_REQUEST_ID##*:t}\"",
        ),
        answer("done"),
    ]);
    let run = sandboxed(&scene, &mock, &[], &[]);
    run.assert_code(0);
    let results = results(&run);
    let (age, request) = results[1]
        .0
        .split_once(' ')
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!(age.parse::<u64>().unwrap() >= 1, "{results:?}");
    assert_eq!(request, "1:a1", "{results:?}");
}

/// A command run by a launcher set up ahead dies with worker through the launcher itself,
/// which ties itself to worker once it has a command, not only through the watchdog: here the
/// watchdog is killed first.
#[test]
fn a_command_a_standby_runs_dies_with_worker_without_the_watchdog() {
    let scene = scene();
    let marker = format!("sleep {}", 5000 + std::process::id() % 997);
    let mock = MockLlm::start(vec![
        bash("b1", "true"),
        bash("b2", &format!("exec {marker}")),
        answer("done"),
    ]);
    let mut worker = crate::sandbox::start_sandboxed(&scene, &mock, "sleep");
    let alive = || {
        let out = Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let started = std::time::Instant::now();
    while alive() < 1 {
        assert!(
            started.elapsed().as_secs() < 20,
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let watchdogs: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            parent == Some(worker.id()) && String::from_utf8_lossy(&cmdline).contains("groups=")
        })
        .collect();
    assert_eq!(watchdogs.len(), 1, "worker's watchdog: {watchdogs:?}");
    Command::new("kill")
        .args(["-KILL", &watchdogs[0].to_string()])
        .status()
        .unwrap();
    worker.kill().unwrap();
    worker.wait().unwrap();
    let killed = std::time::Instant::now();
    while alive() > 0 {
        assert!(
            killed.elapsed().as_secs() < 5,
            "the command outlived the worker"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
