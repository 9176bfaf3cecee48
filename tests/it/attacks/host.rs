//! Classes 2, 3 and 4: what a sandboxed command could change or reach on the host besides
//! file contents. Metadata of files outside the writable roots (mode, owner, times, xattrs,
//! links, FIFOs); the host's shared temp places (`/tmp`, `/var/tmp`, `/dev/shm`, SysV IPC);
//! and, with no network, the host's Unix sockets (path and abstract).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::sandbox::{bash, results, sandboxed, scene};
use crate::support::mock_llm::*;

const PYTHON: &str = "/usr/bin/python3";

/// What a file is, to compare before and after.
fn fingerprint(path: &Path) -> (u32, u32, i64, i64, Vec<u8>, usize) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    let xattrs = std::process::Command::new(PYTHON)
        .args(["-c", "import os,sys; print(len(os.listxattr(sys.argv[1])))"])
        .arg(path)
        .output()
        .unwrap();
    (
        meta.mode(),
        meta.uid(),
        meta.mtime(),
        meta.mtime_nsec(),
        std::fs::read(path).unwrap_or_default(),
        String::from_utf8_lossy(&xattrs.stdout)
            .trim()
            .parse()
            .unwrap_or(0),
    )
}

#[test]
fn nothing_outside_the_writable_roots_changes_in_any_way() {
    let s = scene();
    let target = s.outside.join("victim.txt");
    std::fs::write(&target, "original\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = fingerprint(&target);
    let listing_before: Vec<_> = std::fs::read_dir(&s.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let t = target.display().to_string();
    let o = s.outside.display().to_string();
    let attacks = [
        format!("chmod 777 {t}"),
        format!("chown $(id -u):$(id -g) {t}"),
        format!("touch -d 2000-01-01 {t}"),
        format!("{PYTHON} -c \"import os; os.setxattr('{t}', 'user.pwn', b'1')\""),
        format!("ln {t} {o}/hardlink"),
        format!("ln -s {t} {o}/symlink"),
        format!("mkfifo {o}/fifo"),
        format!("mv {t} {o}/moved"),
        format!("rm -f {t}"),
        format!("truncate -s 0 {t}"),
        format!("mkdir {o}/dir"),
    ];
    let mut replies: Vec<Reply> = attacks
        .iter()
        .enumerate()
        .map(|(i, command)| bash(&format!("b{i}"), command))
        .collect();
    replies.push(answer("done"));
    let mock = MockLlm::start(replies);
    let run = sandboxed(&s, &mock, &[], &[]);
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results.len(), attacks.len());
    for (attack, (text, is_error)) in attacks.iter().zip(&results) {
        assert!(*is_error, "{attack}: {text}");
        assert!(text.contains("Read-only file system"), "{attack}: {text}");
    }
    assert_eq!(fingerprint(&target), before);
    let listing_after: Vec<_> = std::fs::read_dir(&s.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(listing_after, listing_before);
}

#[test]
fn metadata_inside_the_working_directory_can_still_change() {
    let s = scene();
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            "echo x > f && chmod 700 f && touch -d 2001-01-01 f && mkfifo p && ln f h && stat -c %a f",
        ),
        answer("done"),
    ]);
    let run = sandboxed(&s, &mock, &[], &[]);
    run.assert_code(0);
    assert_eq!(results(&run)[0], ("700".to_string(), false));
}

#[test]
fn tmp_var_tmp_dev_shm_and_ipc_are_private_to_the_run_and_gone_with_it() {
    let s = scene();
    let tag = format!("worker-attack-{}", std::process::id());
    let host_file = Path::new("/tmp").join(format!("{tag}-host"));
    std::fs::write(&host_file, "HOST-TMP\n").unwrap();
    let places = ["/tmp", "/var/tmp", "/dev/shm"];
    let write_all = places
        .iter()
        .map(|dir| format!("echo {dir} > {dir}/{tag}"))
        .collect::<Vec<_>>()
        .join(" && ");
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            &format!("{write_all} && ipcmk -M 4096 >/dev/null && echo written"),
        ),
        // The same run's next command still finds its /tmp (not /dev/shm: a command's own).
        bash(
            "b2",
            &format!("cat /tmp/{tag} /var/tmp/{tag}; ipcs -m | grep -c 4096 || true"),
        ),
        bash("b3", &format!("cat {}", host_file.display())),
        answer("done"),
    ]);
    let ipc_before = std::process::Command::new("ipcs")
        .arg("-m")
        .output()
        .unwrap()
        .stdout;
    let run = sandboxed(&s, &mock, &[], &[]);
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results[0], ("written".to_string(), false), "{results:?}");
    assert_eq!(results[1].0, "/var/tmp\n/var/tmp\n0", "{results:?}");
    assert!(
        results[2].1 && results[2].0.contains("No such file or directory"),
        "{results:?}"
    );
    for dir in places {
        let leaked = Path::new(dir).join(&tag);
        assert!(!leaked.exists(), "{} reached the host", leaked.display());
    }
    let ipc_after = std::process::Command::new("ipcs")
        .arg("-m")
        .output()
        .unwrap()
        .stdout;
    assert_eq!(ipc_after, ipc_before);
    std::fs::remove_file(&host_file).unwrap();
}

#[test]
fn a_repository_under_tmp_keeps_working_and_keeps_its_hidden_files_hidden() {
    let root = tempfile::Builder::new()
        .prefix("worker-attack-")
        .tempdir_in("/tmp")
        .unwrap();
    let repo = root.path().canonicalize().unwrap();
    std::fs::write(repo.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(repo.join("private.env"), "TOKEN=HIDE-ME\n").unwrap();
    let mock = MockLlm::start(vec![
        bash(
            "b1",
            "cat a.txt; cat private.env; cat ./private.env; echo made > new.txt; echo end",
        ),
        bash(
            "b2",
            &format!("cat {}/private.env; echo end", repo.display()),
        ),
        answer("done"),
    ]);
    let private = repo.join("private.env");
    let run = crate::support::run_worker(
        &repo,
        &[
            "--model",
            "dynamo/m",
            "--sandbox",
            "linux",
            "--sandbox-hide",
            private.to_str().unwrap(),
        ],
        "go",
        &[("DYNAMO_BASE_URL", mock.url.as_str())],
    );
    run.assert_code(0);
    let results = results(&run);
    assert_eq!(results[0], ("alpha\nend".to_string(), false), "{results:?}");
    assert_eq!(results[1], ("end".to_string(), false), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(repo.join("new.txt")).unwrap(),
        "made\n"
    );
    assert!(!run.stdout.contains("HIDE-ME"));
}

/// Connects to `address` with Python; prints `connected` or the error.
fn connect(kind: &str, address: &str) -> String {
    format!(
        "{PYTHON} -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect({kind}'{address}'); print('connected')\" 2>&1 | tail -n 1"
    )
}

#[test]
fn with_no_network_the_host_s_unix_sockets_are_out_of_reach() {
    let s = scene();
    let path = s.outside.join("agent.sock");
    let path_listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    path_listener.set_nonblocking(true).unwrap();
    let abstract_name = format!("worker-attack-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    abstract_listener.set_nonblocking(true).unwrap();
    let p = path.display().to_string();
    for flags in [&["--no-network"][..], &["--allow-host", "example.com"][..]] {
        let mock = MockLlm::start(vec![
            bash("b1", &connect("", &p)),
            bash("b2", &connect("'\\\\0' + ", &abstract_name)),
            bash(
                "b3",
                &format!(
                    "{PYTHON} -c \"import socket; a,b=socket.socketpair(); a.send(b'ok'); print(b.recv(2).decode())\""
                ),
            ),
            bash(
                "b4",
                &format!("curl -s --max-time 2 --unix-socket {p} http://x/ ; echo \"curl $?\""),
            ),
            answer("done"),
        ]);
        let run = sandboxed(&s, &mock, flags, &[]);
        run.assert_code(0);
        let results = results(&run);
        assert_eq!(
            results[0].0, "PermissionError: [Errno 13] Permission denied",
            "{flags:?} {results:?}"
        );
        assert_eq!(
            results[1].0, "PermissionError: [Errno 13] Permission denied",
            "{flags:?} {results:?}"
        );
        assert_eq!(results[2].0, "ok", "{flags:?} {results:?}");
        assert!(results[3].0.starts_with("curl 7"), "{flags:?} {results:?}");
        assert!(
            path_listener.accept().is_err(),
            "{flags:?}: a path socket was reached"
        );
        assert!(
            abstract_listener.accept().is_err(),
            "{flags:?}: an abstract socket was reached"
        );
    }
    // Without a network switch, the host's network (Unix sockets included) is as documented.
    let mock = MockLlm::start(vec![bash("b1", &connect("", &p)), answer("done")]);
    let run = sandboxed(&s, &mock, &[], &[]);
    assert_eq!(results(&run)[0].0, "connected");
}
