//! `--sandbox linux` through the binary: escape attempts by `bash` and by the file tools, each
//! refused with a clear tool error while the run goes on; the network switch; the process
//! limit; nothing left after a SIGKILL, not even the command's cgroup once the next command
//! starts; and the preflight that refuses a kernel without what
//! the sandbox needs.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::support::mock_llm::*;
pub(crate) use crate::support::results;
use crate::support::{Run, run_command, worker_command};

/// A repository, a home with credentials, and a directory outside both.
pub(crate) struct Scene {
    _root: tempfile::TempDir,
    pub repo: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
}

pub(crate) fn scene() -> Scene {
    // Outside /tmp: a sandboxed command gets a private /tmp, where nothing of the host's is.
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = root.path().canonicalize().unwrap();
    let (repo, home, outside) = (base.join("repo"), base.join("home"), base.join("outside"));
    for dir in [&repo, &home.join(".ssh"), &home.join(".aws"), &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "SSH-SECRET\n").unwrap();
    std::fs::write(home.join(".aws/credentials"), "AWS-SECRET\n").unwrap();
    std::fs::write(
        home.join(".git-credentials"),
        "https://x:GIT-SECRET@github.com\n",
    )
    .unwrap();
    std::fs::write(repo.join("a.txt"), "alpha\n").unwrap();
    // A symlink planted in the repository, pointing out of it.
    std::os::unix::fs::symlink(&outside, repo.join("out")).unwrap();
    Scene {
        _root: root,
        repo,
        home,
        outside,
    }
}

pub(crate) fn bash(id: &str, command: &str) -> Reply {
    call(id, "bash", &json!({ "command": command }).to_string())
}

pub(crate) fn sandboxed(
    scene: &Scene,
    mock: &MockLlm,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Run {
    run_command(sandboxed_command(scene, mock, extra, env), "try to escape")
}

/// The command [`sandboxed`] runs.
fn sandboxed_command(
    scene: &Scene,
    mock: &MockLlm,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Command {
    let mut command = worker_command(&scene.repo);
    command
        .args(["run", "--model", "dynamo/m", "--sandbox", "linux"])
        .args(extra)
        .env("DYNAMO_BASE_URL", &mock.url)
        .env("HOME", &scene.home)
        .env("OPENAI_API_KEY", "sk-openai-SECRET")
        .env("DYNAMO_API_KEY", "dynamo-SECRET")
        .env("GITHUB_APP_ID", "12345")
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer otel-SECRET",
        );
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// A fresh pids cgroup for one test, for the workers it starts: each of their launchers makes
/// its command's cgroup inside it, and sweeps only the leftovers there. (Launchers of other
/// tests running at the same time sweep the cgroup they run in, not this one.)
pub(crate) struct TestCgroup(PathBuf);

impl TestCgroup {
    pub(crate) fn new(name: &str) -> TestCgroup {
        let dir = Path::new("/sys/fs/cgroup/pids")
            .join(format!("worker-test-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap_or_else(|err| {
            panic!(
                "{}: {err} (this test needs root with cgroup v1's pids hierarchy)",
                dir.display()
            )
        });
        TestCgroup(dir)
    }

    /// `command` started in this cgroup: a shell moves itself in, then execs it (which keeps
    /// the shell's PID). Its environment is cleared, as every test's worker's is, and set
    /// again from `command`'s.
    pub(crate) fn enter(&self, command: &Command) -> Command {
        let mut entered = Command::new("sh");
        entered
            .arg("-c")
            .arg("echo $$ > \"$0\" && exec \"$@\"")
            .arg(self.0.join("cgroup.procs"))
            .arg(command.get_program())
            .args(command.get_args())
            .env_clear();
        for (key, value) in command.get_envs() {
            if let Some(value) = value {
                entered.env(key, value);
            }
        }
        if let Some(dir) = command.get_current_dir() {
            entered.current_dir(dir);
        }
        entered
    }

    /// The launchers' cgroups left in it, once what a killed launcher leaves has had time to
    /// show.
    pub(crate) fn left(&self) -> Vec<String> {
        std::thread::sleep(std::time::Duration::from_millis(300));
        std::fs::read_dir(&self.0)
            .unwrap()
            .flatten()
            .filter(|entry| entry.path().is_dir())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for dir in std::fs::read_dir(&self.0).into_iter().flatten().flatten() {
            let _ = std::fs::remove_dir(dir.path());
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn writes_outside_the_working_directory_fail_from_every_tool() {
    let scene = scene();
    let outside = scene.outside.display().to_string();
    let mock = MockLlm::start(vec![
        bash("b1", &format!("echo x > {outside}/by-bash.txt")),
        call(
            "w1",
            "write",
            &json!({"path": format!("{outside}/by-write.txt"), "content": "x"}).to_string(),
        ),
        bash("b2", "echo x > out/through-link.txt"),
        call(
            "w2",
            "write",
            &json!({"path": "out/through-link-write.txt", "content": "x"}).to_string(),
        ),
        call(
            "e1",
            "edit",
            &json!({"path": "out/../../outside/x.txt", "edits": [{"oldText": "a", "newText": "b"}]})
                .to_string(),
        ),
        bash("b3", "echo inside > inside.txt && cat inside.txt"),
        answer("done"),
    ]);
    let run = sandboxed(&scene, &mock, &[], &[]);
    run.assert_code(0);
    let results = results(&run);
    let says = |i: usize, text: &str| assert!(results[i].0.contains(text), "{:?}", results[i]);
    // bash: the kernel refuses (the filesystem is read-only outside the writable roots); the
    // file tools: an error result naming the rule.
    says(0, "Read-only file system");
    says(1, "outside the sandbox's writable area");
    says(2, "Read-only file system");
    says(3, "outside the sandbox's writable area");
    assert!(results[1].1 && results[3].1, "{results:?}");
    assert!(results[4].1, "{:?}", results[4]);
    assert_eq!(
        results[5],
        ("inside".to_string(), false),
        "writes inside work"
    );
    assert_eq!(
        std::fs::read_dir(&scene.outside).unwrap().count(),
        0,
        "nothing was written outside"
    );
}

#[test]
fn credentials_and_secrets_are_not_readable_from_any_tool() {
    let scene = scene();
    let home = scene.home.display().to_string();
    let mock = MockLlm::start(vec![
        bash("b1", "cat ~/.ssh/id_rsa; ls -A ~/.ssh | wc -l"),
        call("r1", "read", &json!({"path": "~/.ssh/id_rsa"}).to_string()),
        bash("b2", "cat ~/.git-credentials ~/.aws/credentials 2>&1; true"),
        call(
            "g1",
            "grep",
            &json!({"pattern": "SECRET", "path": home}).to_string(),
        ),
        bash("b3", "env"),
        answer("done"),
    ]);
    let run = sandboxed(&scene, &mock, &[], &[]);
    run.assert_code(0);
    let results = results(&run);
    assert!(!run.stdout.contains("SSH-SECRET") && !run.stdout.contains("GIT-SECRET"));
    assert!(!run.stdout.contains("AWS-SECRET"));
    assert!(
        results[0].0.ends_with('0'),
        "an empty ~/.ssh: {:?}",
        results[0]
    );
    assert!(
        results[1].1 && results[1].0.contains("hidden by the sandbox"),
        "{:?}",
        results[1]
    );
    assert!(results[3].0.contains("No matches"), "{:?}", results[3]);
    let env = &results[4].0;
    for key in [
        "OPENAI_API_KEY",
        "DYNAMO_API_KEY",
        "GITHUB_APP_ID",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ] {
        assert!(!env.contains(key), "{key} reached the command:\n{env}");
    }
    assert!(env.contains("PATH="), "{env}");
    let status = run.first("sandbox_status");
    assert_eq!(status["backend"], "linux");
    let keys: Vec<&str> = status["status"]["envKeys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(
        keys.contains(&"PATH") && keys.contains(&"TMPDIR"),
        "{keys:?}"
    );
    assert!(!keys.contains(&"OPENAI_API_KEY"), "{keys:?}");
    assert!(status["status"]["createMs"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_worker_cannot_be_signalled_and_a_fork_bomb_is_stopped() {
    let scene = scene();
    let mock = MockLlm::start(vec![
        bash("b1", "kill -9 $PPID; echo still-here"),
        bash("b2", "pkill -9 -f 'worker run' ; kill -9 -1; echo after"),
        // The shell waits, so the bomb meets the limit (a shell that returns takes its whole
        // tree with it).
        bash("b3", ":(){ :|:& };:; sleep 3"),
        bash("b4", "echo alive"),
        answer("done"),
    ]);
    // A small limit keeps the bomb from taking the machine's process budget from the tests
    // running beside it.
    let run = sandboxed(
        &scene,
        &mock,
        &[],
        &[("WORKER_SANDBOX_MAX_PROCESSES", "48")],
    );
    run.assert_code(0);
    let results = results(&run);
    assert!(
        results[0].0.contains("still-here"),
        "{results:?}\n{}",
        run.stderr
    );
    let (bomb, failed) = &results[2];
    assert!(
        *failed
            && bomb.contains(
                "the command exceeded the sandbox's limit of 48 processes and was stopped"
            ),
        "{}",
        &bomb[bomb.len().saturating_sub(500)..]
    );
    assert_eq!(results[3], ("alive".to_string(), false));
    assert_eq!(run.first("agent_end")["stopReason"], "stop");
}

/// A server on 127.0.0.1 of the host that answers `hello`.
fn host_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 5\r\n\r\nhello");
        }
    });
    port
}

#[test]
fn no_network_means_no_connection_at_all() {
    let port = host_server();
    let fetch = format!("curl -sS -m 3 http://127.0.0.1:{port}/ 2>&1; echo; echo code=$?");
    let scene = scene();
    let mock = MockLlm::start(vec![bash("b1", &fetch), answer("done")]);
    let open = sandboxed(&scene, &mock, &[], &[]);
    open.assert_code(0);
    assert!(
        results(&open)[0].0.starts_with("hello"),
        "the host's network: {:?}",
        results(&open)
    );
    assert_eq!(open.first("sandbox_status")["status"]["network"], "host");

    let mock = MockLlm::start(vec![bash("b1", &fetch), answer("done")]);
    let closed = sandboxed(&scene, &mock, &["--no-network"], &[]);
    closed.assert_code(0);
    let text = &results(&closed)[0].0;
    assert!(
        !text.contains("hello") && text.contains("connect"),
        "{text}"
    );
    assert_eq!(closed.first("sandbox_status")["status"]["network"], "none");
}

#[test]
fn allow_host_admits_only_the_named_hosts_through_the_proxy() {
    let port = host_server();
    let scene = scene();
    let mock = MockLlm::start(vec![
        // Allowed: through the proxy to the host's server.
        bash("b1", &format!("curl -sS -m 5 http://127.0.0.1:{port}/")),
        // Another host: the proxy refuses it, for plain HTTP and for a CONNECT tunnel.
        bash(
            "b2",
            &format!("curl -sS -m 5 -o /dev/null -w '%{{http_code}}' http://localhost:{port}/"),
        ),
        bash(
            "b3",
            &format!("curl -sS -m 5 https://localhost:{port}/ 2>&1; true"),
        ),
        // Around the proxy: nowhere to go.
        bash(
            "b4",
            &format!("curl -sS -m 3 --noproxy '*' http://127.0.0.1:{port}/ 2>&1; echo code=$?"),
        ),
        answer("done"),
    ]);
    let allowed = format!("127.0.0.1:{port}");
    let run = sandboxed(&scene, &mock, &["--allow-host", &allowed], &[]);
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results[0].0, "hello", "{results:?}");
    assert_eq!(results[1].0, "403", "{results:?}");
    assert!(results[2].0.contains("403"), "{results:?}");
    assert!(
        !results[3].0.contains("hello") && results[3].0.contains("code=7"),
        "{results:?}"
    );
    let status = &run.first("sandbox_status")["status"];
    assert_eq!(status["network"], "proxy");
    assert_eq!(status["allowedHttpHosts"], json!([allowed]));
}

/// A sandboxed run in the background, asking `mock` with `prompt`, for a test to kill.
pub(crate) fn start_sandboxed(scene: &Scene, mock: &MockLlm, prompt: &str) -> std::process::Child {
    crate::support::spawn_quiet(start_command(scene, mock), prompt)
}

/// The command [`start_sandboxed`] starts.
fn start_command(scene: &Scene, mock: &MockLlm) -> Command {
    let mut command = worker_command(&scene.repo);
    command
        .args(["run", "--model", "dynamo/m", "--sandbox", "linux"])
        .env("DYNAMO_BASE_URL", &mock.url);
    command
}

#[test]
fn the_whole_tree_is_gone_after_the_worker_is_killed() {
    let scene = scene();
    let marker = format!("sleep {}", 3000 + std::process::id() % 997);
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            &format!("setsid {marker} > /dev/null 2>&1 & (exec {marker}) & sleep 60"),
        ),
        answer("done"),
    ]);
    let mut child = start_sandboxed(&scene, &mock, "start a daemon");
    let alive = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let started = std::time::Instant::now();
    while alive() < 2 {
        assert!(
            started.elapsed().as_secs() < 20,
            "the commands never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    while alive() > 0 {
        assert!(
            killed.elapsed().as_secs() < 5,
            "{} process(es) outlived the worker",
            alive()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The text of `report` once a command has written a whole line to it (up to 20 s).
pub(crate) fn wait_for_line(report: &Path) -> String {
    let started = std::time::Instant::now();
    loop {
        match std::fs::read_to_string(report) {
            Ok(text) if text.ends_with('\n') => return text,
            _ => {
                assert!(started.elapsed().as_secs() < 20, "the command never ran");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// The pids cgroup a sandboxed command reported from `/proc/self/cgroup`, as a directory.
fn reported_cgroup(membership: &str) -> PathBuf {
    let (controllers, path) = membership
        .lines()
        .filter(|line| line.contains("worker-sandbox-"))
        .find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            Some((controllers.to_string(), path.trim_start_matches('/').to_string()))
        })
        .unwrap_or_else(|| {
            panic!(
                "the command ran in no pids cgroup of the sandbox's (this test needs root with \
                 cgroup v1's pids hierarchy, or a cgroup v2 tree that delegates pids):\n{membership}"
            )
        });
    let root = if controllers.is_empty() {
        PathBuf::from("/sys/fs/cgroup")
    } else {
        PathBuf::from("/sys/fs/cgroup/pids")
    };
    root.join(path)
}

/// `(parent PID, process group)` of a process, from `/proc/<pid>/stat`; `None` once it is gone.
fn parent_and_group(pid: &str) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold anything:
    // state, parent, group.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(1);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// worker forgets a command's process group once nothing in it is alive, and the run's end
/// kills every group it still knows of. The launcher's cgroup remover outlives the launcher by
/// its removal, so it is in a group of its own: in the command's, it kept every sandboxed
/// command's group on that list until the run's end, which then killed it mid-removal. The
/// command waits (up to 10 s) while the test looks, then the run ends as usual and its cgroup
/// goes.
#[test]
fn the_cgroup_remover_is_outside_the_commands_process_group() {
    let scene = scene();
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            "cat /proc/self/cgroup > cgroup.txt; for i in $(seq 500); do [ -e go ] && break; sleep 0.02; done",
        ),
        answer("done"),
    ]);
    let mut child = start_sandboxed(&scene, &mock, "report its cgroup and wait");
    let report = scene.repo.join("cgroup.txt");
    let membership = wait_for_line(&report);
    // The cgroup is named after its launcher, the leader of the command's group.
    let cgroup = reported_cgroup(&membership);
    let launcher: i32 = cgroup
        .file_name()
        .and_then(|name| name.to_str()?.strip_prefix("worker-sandbox-")?.parse().ok())
        .unwrap();
    let namespace = |pid: i32| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let launcher_group = parent_and_group(&launcher.to_string()).map(|(_, group)| group);
    // The launcher's children: the command's init, in a PID namespace of its own, and the
    // remover, made before that namespace, in the launcher's.
    let removers: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let (parent, group) = parent_and_group(&pid.to_string())?;
            (parent == launcher && namespace(pid) == namespace(launcher)).then_some((pid, group))
        })
        .collect();
    std::fs::write(scene.repo.join("go"), "").unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        launcher_group,
        Some(launcher),
        "the launcher leads no group of its own"
    );
    assert_eq!(
        removers.len(),
        1,
        "the launcher has no cgroup remover: {removers:?}"
    );
    assert_ne!(
        removers[0].1, launcher,
        "the remover is in the command's process group"
    );
    assert!(status.success(), "the run failed: {status}");
    let ended = std::time::Instant::now();
    while cgroup.exists() && ended.elapsed().as_secs() < 2 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!cgroup.exists(), "{} is still there", cgroup.display());
}

/// A launcher killed with its worker cannot remove its pids cgroup (worker's SIGKILL reaches it
/// as its parent-death signal), so the next sandboxed command removes such leftovers, and
/// keeps a cgroup whose launcher's PID is alive. A command that ends leaves no cgroup behind
/// (the last command of the second run, so no later launcher's sweep removes it instead).
/// Both runs are in a cgroup of the test's own, where no other test's launcher sweeps.
#[test]
fn the_cgroup_of_a_killed_run_is_removed_by_the_next_sandboxed_command() {
    let scene = scene();
    let cgroup = TestCgroup::new("sweep");
    let mock = MockLlm::start(vec![
        bash("b1", "cat /proc/self/cgroup > cgroup.txt; sleep 60"),
        answer("done"),
    ]);
    let mut child = crate::support::spawn_quiet(
        cgroup.enter(&start_command(&scene, &mock)),
        "report its cgroup and wait",
    );
    let report = scene.repo.join("cgroup.txt");
    let membership = wait_for_line(&report);
    let leftover = reported_cgroup(&membership);
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    while std::fs::read_to_string(leftover.join("cgroup.procs")).is_ok_and(|p| !p.is_empty()) {
        assert!(
            killed.elapsed().as_secs() < 5,
            "the tree outlived the worker"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        leftover.is_dir(),
        "the killed launcher's cgroup went by itself: {}",
        leftover.display()
    );
    let mut alive = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let kept = leftover.with_file_name(format!("worker-sandbox-{}", alive.id()));
    std::fs::create_dir(&kept).unwrap();

    let mock = MockLlm::start(vec![
        bash("b1", "cat /proc/self/cgroup > cgroup.txt; echo ok"),
        answer("done"),
    ]);
    let run = run_command(
        cgroup.enter(&sandboxed_command(&scene, &mock, &[], &[])),
        "try to escape",
    );
    let (swept, still) = (!leftover.exists(), kept.is_dir());
    let _ = std::fs::remove_dir(&kept);
    let _ = alive.kill();
    let _ = alive.wait();
    run.assert_code(0);
    assert_eq!(results(&run)[0], ("ok".to_string(), false));
    assert!(swept, "{} is still there", leftover.display());
    assert!(still, "the cgroup of a live PID was removed");
    let ended = reported_cgroup(&std::fs::read_to_string(&report).unwrap());
    assert_ne!(
        ended, leftover,
        "the second run reported the first one's cgroup"
    );
    // Its launcher's remover takes it away just after the launcher has exited.
    let exited = std::time::Instant::now();
    while ended.exists() && exited.elapsed().as_secs() < 2 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!ended.exists(), "{} is still there", ended.display());
}

#[test]
fn a_kernel_without_what_the_sandbox_needs_is_refused_before_any_event() {
    let scene = scene();
    let mock = MockLlm::start(vec![answer("never")]);
    for (missing, names) in [("userns", "user namespaces"), ("landlock", "Landlock")] {
        let run = sandboxed(
            &scene,
            &mock,
            &[],
            &[("WORKER_SANDBOX_ASSUME_MISSING", missing)],
        );
        run.assert_code(2);
        assert!(run.stdout.is_empty(), "{missing}: {}", run.stdout);
        assert!(
            run.stderr.contains("--sandbox linux needs") && run.stderr.contains(names),
            "{missing}: {}",
            run.stderr
        );
    }
    assert!(mock.requests().is_empty(), "no request was made");
}

#[test]
fn options_the_linux_sandbox_cannot_honour_are_usage_errors() {
    let scene = scene();
    let mock = MockLlm::start(vec![]);
    for (args, message) in [
        (
            vec!["--allow-host", "github.com", "--no-network"],
            "--allow-host and --no-network contradict each other",
        ),
        (
            vec!["--sandbox-image", "ubuntu"],
            "--sandbox-image is for VM backends",
        ),
    ] {
        let run = sandboxed(&scene, &mock, &args, &[]);
        run.assert_code(2);
        assert!(run.stderr.contains(message), "{}", run.stderr);
    }
}

#[test]
fn sandbox_hide_hides_one_more_path() {
    let scene = scene();
    let extra = scene.repo.join("private.env");
    std::fs::write(&extra, "TOKEN=HIDE-ME\n").unwrap();
    let mock = MockLlm::start(vec![
        bash("b1", "cat private.env; echo end"),
        call("r1", "read", &json!({"path": "private.env"}).to_string()),
        answer("done"),
    ]);
    let run = sandboxed(
        &scene,
        &mock,
        &["--sandbox-hide", extra.to_str().unwrap()],
        &[],
    );
    run.assert_code(0);
    assert!(!run.stdout.contains("HIDE-ME"), "{:?}", results(&run));
    let results = results(&run);
    assert_eq!(results[0].0, "end");
    assert!(results[1].1 && results[1].0.contains("hidden by the sandbox"));
}

#[test]
fn with_a_profile_commands_get_the_github_token_but_not_the_credential_store() {
    let scene = scene();
    let store = scene.home.join(".config/worker/git-credentials");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, "https://x-access-token:STORE-SECRET@github.com\n").unwrap();
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            r#"[ -n "$GITHUB_TOKEN" ] && [ "$GH_TOKEN" = "$GITHUB_TOKEN" ] && echo token-present"#,
        ),
        bash("b2", "cat ~/.config/worker/git-credentials; echo end"),
        answer("done"),
    ]);
    let run = sandboxed(
        &scene,
        &mock,
        &["--profile", "read"],
        // A token, and no App (the scene's partial App id would skip the profile).
        &[
            ("GITHUB_TOKEN", "ghp_sandboxtoken123"),
            ("GITHUB_APP_ID", ""),
        ],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(
        results[0].0,
        "token-present",
        "{results:?} {}",
        run.extension("github")
    );
    assert_eq!(results[1].0, "end", "{results:?}");
    assert!(!run.stdout.contains("STORE-SECRET") && !run.stdout.contains("ghp_sandboxtoken123"));
}

#[test]
fn what_the_view_covers_takes_nothing_in() {
    let scene = scene();
    // A hidden directory inside the working directory, which is writable: its cover must stay
    // read-only all the same.
    let vault = scene.repo.join("vault");
    std::fs::create_dir(&vault).unwrap();
    std::fs::write(vault.join("key"), "VAULT-SECRET\n").unwrap();
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            "ls -A vault | wc -l; touch vault/planted 2>&1 | sed 's/.*: //'; mkdir vault/d 2>&1 | sed 's/.*: //'",
        ),
        // The command's own /dev/shm: a fresh tmpfs that cannot carry set-uid programs or
        // device nodes.
        bash(
            "b2",
            "grep ' /dev/shm ' /proc/self/mounts | tr ' ,' '\\n\\n' | grep -xE 'nosuid|nodev' | sort | paste -sd ' '",
        ),
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
    assert_eq!(
        results[0].0, "0\nRead-only file system\nRead-only file system",
        "{results:?}"
    );
    assert_eq!(results[1].0, "nodev nosuid", "{results:?}");
    assert!(!vault.join("planted").exists());
    assert_eq!(
        std::fs::read_to_string(vault.join("key")).unwrap(),
        "VAULT-SECRET\n"
    );
}

#[test]
fn edit_scope_directories_are_the_only_place_commands_and_file_tools_write() {
    let scene = scene();
    std::fs::create_dir(scene.repo.join("src")).unwrap();
    // A symlink named like an allowed directory cannot open a door out of the scope.
    std::os::unix::fs::symlink(&scene.outside, scene.repo.join("gen")).unwrap();
    let mock = MockLlm::start(vec![
        bash("b1", "echo x > src/by-bash.txt && echo ok"),
        bash("b2", "echo x > top.txt"),
        call(
            "w1",
            "write",
            &json!({"path": "notes.txt", "content": "x"}).to_string(),
        ),
        call(
            "w2",
            "write",
            &json!({"path": "src/by-write.txt", "content": "x"}).to_string(),
        ),
        bash("b3", "echo x > gen/escape.txt"),
        answer("done"),
    ]);
    let run = sandboxed(
        &scene,
        &mock,
        &["--edit-scope", "src/**", "--edit-scope", "gen"],
        &[],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results[0], ("ok".to_string(), false));
    assert!(
        results[1].0.contains("Read-only file system"),
        "{:?}",
        results[1]
    );
    assert!(results[2].1, "{:?}", results[2]);
    assert!(
        results[2].0.starts_with("Write refused:") && results[2].0.contains("src/**, gen"),
        "{:?}",
        results[2]
    );
    assert!(!results[3].1, "{:?}", results[3]);
    assert!(
        results[4].0.contains("Read-only file system"),
        "{:?}",
        results[4]
    );
    assert!(!scene.repo.join("top.txt").exists());
    assert!(!scene.repo.join("notes.txt").exists());
    assert!(scene.repo.join("src/by-bash.txt").exists());
    assert_eq!(std::fs::read_dir(&scene.outside).unwrap().count(), 0);
}
