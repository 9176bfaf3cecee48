//! Runs measured processes from a small launcher process, so that their peak RSS is their own.
//!
//! The pitfall this avoids: a process spawned from a big process gets the big one's peak RSS
//! counted into its own `ru_maxrss`. std spawns with `posix_spawn` (`clone(CLONE_VM |
//! CLONE_VFORK)`), so the child runs in the parent's address space until it execs, and
//! `execve` records the high-water mark of the address space it leaves behind in the new
//! program's maximum. A `/bin/true` spawned from a benchmark that holds a mock server, a
//! tokio runtime and some megabytes of samples then "peaks" at the benchmark's size.
//!
//! [`Launcher::start`] forks a launcher while the benchmark is still small (first thing in
//! `main`, before any thread or big allocation). The launcher reads requests ([`Cmd`], one
//! JSON line each) from a pipe, spawns each with `std::process::Command`, reaps it with
//! `wait4` and answers with a [`Sample`]: wall time, user and system CPU, peak RSS (of the
//! largest single process of the tree the child waited for) and exit code. `/bin/true` run
//! this way reports 1–3 MiB.

#![allow(dead_code)]

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A process to run: the program, its arguments, its whole environment (nothing is inherited),
/// its working directory, what it reads on stdin (nothing: `/dev/null`) and where its output
/// goes (`None`: `/dev/null`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Cmd {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub stdin: Vec<u8>,
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
}

impl Cmd {
    pub(crate) fn new(program: impl AsRef<Path>) -> Cmd {
        Cmd {
            program: program.as_ref().to_path_buf(),
            ..Cmd::default()
        }
    }

    pub(crate) fn arg(mut self, arg: impl Into<String>) -> Cmd {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub(crate) fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Cmd {
        self.env.push((key.into(), value.into()));
        self
    }

    pub(crate) fn cwd(mut self, dir: impl AsRef<Path>) -> Cmd {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    pub(crate) fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = bytes.into();
        self
    }

    pub(crate) fn stdout_to(mut self, path: impl AsRef<Path>) -> Cmd {
        self.stdout = Some(path.as_ref().to_path_buf());
        self
    }

    pub(crate) fn stderr_to(mut self, path: impl AsRef<Path>) -> Cmd {
        self.stderr = Some(path.as_ref().to_path_buf());
        self
    }
}

/// What one run cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// From just before the spawn to the return of `wait4`.
    pub wall: Duration,
    pub user: Duration,
    pub sys: Duration,
    /// The largest peak RSS of any single process in the tree (the child and the descendants
    /// it waited for), in KiB.
    pub max_rss_kib: u64,
    /// The exit code, or minus the signal that ended the process.
    pub code: i32,
    /// When the spawn began, on this process's clock.
    pub started: Instant,
}

impl Sample {
    /// User plus system CPU.
    pub(crate) fn cpu(&self) -> Duration {
        self.user + self.sys
    }
}

/// The launcher's answer, as sent over the pipe.
#[derive(Serialize, Deserialize)]
struct Reply {
    wall_ns: u64,
    user_ns: u64,
    sys_ns: u64,
    max_rss_kib: u64,
    code: i32,
    /// `CLOCK_MONOTONIC` at the spawn, in nanoseconds.
    started_ns: u64,
    /// Set when the program could not be spawned at all.
    error: Option<String>,
}

/// The benchmark's end of the launcher.
pub(crate) struct Launcher {
    /// The request pipe's write end and the reply pipe's read end; `None` once dropped.
    pipes: Mutex<Option<(File, BufReader<File>)>>,
    pid: libc::pid_t,
}

impl Launcher {
    /// Forks the launcher. Call it first thing in `main`: the launcher is a copy of this
    /// process as it is now, and every process it spawns starts from its peak RSS.
    pub(crate) fn start() -> Launcher {
        let (request_read, request_write) = pipe();
        let (reply_read, reply_write) = pipe();
        // SAFETY: nothing else runs yet (no other thread exists), so the child is a faithful
        // copy; it never returns from `serve` into the caller's code.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            drop(request_write);
            drop(reply_read);
            serve(File::from(request_read), File::from(reply_write));
            // SAFETY: ends the launcher without running the benchmark's exit handlers.
            unsafe { libc::_exit(0) };
        }
        drop(request_read);
        drop(reply_write);
        Launcher {
            pipes: Mutex::new(Some((
                File::from(request_write),
                BufReader::new(File::from(reply_read)),
            ))),
            pid,
        }
    }

    /// Runs `cmd` to its end in the launcher. Panics if it cannot be spawned.
    pub(crate) fn run(&self, cmd: &Cmd) -> Sample {
        self.run_many(std::slice::from_ref(cmd)).remove(0)
    }

    /// Starts every command of `cmds` at once (a fleet) and waits for all of them; their
    /// samples in the same order. Panics if one cannot be spawned.
    pub(crate) fn run_many(&self, cmds: &[Cmd]) -> Vec<Sample> {
        let mut guard = self.pipes.lock().unwrap();
        let pipes = guard.as_mut().unwrap();
        let mut line = serde_json::to_vec(cmds).unwrap();
        line.push(b'\n');
        pipes.0.write_all(&line).expect("write to the launcher");
        let mut answer = String::new();
        pipes
            .1
            .read_line(&mut answer)
            .expect("read from the launcher");
        assert!(!answer.is_empty(), "the launcher exited");
        let replies: Vec<Reply> = serde_json::from_str(&answer).expect("launcher reply");
        cmds.iter()
            .zip(replies)
            .map(|(cmd, reply)| sample(cmd, reply))
            .collect()
    }
}

/// A reply as a sample on this process's clock. Panics if the command could not be spawned.
fn sample(cmd: &Cmd, reply: Reply) -> Sample {
    if let Some(error) = reply.error {
        panic!("cannot run {}: {error}", cmd.program.display());
    }
    let now = monotonic_ns();
    let started = Instant::now() - Duration::from_nanos(now.saturating_sub(reply.started_ns));
    Sample {
        wall: Duration::from_nanos(reply.wall_ns),
        user: Duration::from_nanos(reply.user_ns),
        sys: Duration::from_nanos(reply.sys_ns),
        max_rss_kib: reply.max_rss_kib,
        code: reply.code,
        started,
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // Closing the request pipe ends the launcher's loop.
        drop(self.pipes.get_mut().unwrap().take());
        let mut status = 0;
        // SAFETY: plain FFI on our own child.
        unsafe { libc::waitpid(self.pid, &raw mut status, 0) };
    }
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors the kernel writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new and owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// `CLOCK_MONOTONIC` (the clock `Instant` reads on Linux) in nanoseconds.
fn monotonic_ns() -> u64 {
    // SAFETY: `ts` is a POD the kernel fills.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: plain FFI with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    nanos(ts.tv_sec, ts.tv_nsec)
}

fn nanos(secs: i64, nanos: i64) -> u64 {
    u64::try_from(secs).unwrap_or(0) * 1_000_000_000 + u64::try_from(nanos).unwrap_or(0)
}

/// The launcher's loop: one request line in (the commands to run at once), one reply line
/// out, until the pipe closes.
fn serve(requests: File, mut replies: File) {
    for line in BufReader::new(requests).lines() {
        let Ok(line) = line else { break };
        let reply: Vec<Reply> = match serde_json::from_str::<Vec<Cmd>>(&line) {
            Ok(cmds) if cmds.len() == 1 => vec![launch(&cmds[0])],
            Ok(cmds) => launch_all(&cmds),
            Err(err) => vec![failed(format!("bad request: {err}"))],
        };
        let mut out = serde_json::to_vec(&reply).unwrap_or_default();
        out.push(b'\n');
        if replies.write_all(&out).is_err() {
            break;
        }
    }
}

fn failed(error: String) -> Reply {
    Reply {
        wall_ns: 0,
        user_ns: 0,
        sys_ns: 0,
        max_rss_kib: 0,
        code: -1,
        started_ns: 0,
        error: Some(error),
    }
}

fn output(path: Option<&PathBuf>) -> std::io::Result<Stdio> {
    Ok(match path {
        Some(path) => Stdio::from(File::create(path)?),
        None => Stdio::null(),
    })
}

/// Spawns `cmd`, feeds its stdin, reaps it with `wait4`.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std cannot see
fn launch(cmd: &Cmd) -> Reply {
    let mut command = Command::new(&cmd.program);
    command.args(&cmd.args).env_clear().envs(cmd.env.clone());
    if let Some(dir) = &cmd.cwd {
        command.current_dir(dir);
    }
    let stdout = match output(cmd.stdout.as_ref()) {
        Ok(stdio) => stdio,
        Err(err) => return failed(format!("stdout file: {err}")),
    };
    let stderr = match output(cmd.stderr.as_ref()) {
        Ok(stdio) => stdio,
        Err(err) => return failed(format!("stderr file: {err}")),
    };
    command
        .stdin(if cmd.stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(stdout)
        .stderr(stderr);
    let started_ns = monotonic_ns();
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return failed(err.to_string()),
    };
    let pid = child.id().cast_signed();
    let stdin = child.stdin.take();
    let mut status = 0;
    // SAFETY: `rusage` is a POD the kernel fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = std::thread::scope(|scope| {
        if let Some(mut pipe) = stdin {
            // A writer of its own: a child that exits without reading all of it must not
            // block the wait.
            scope.spawn(move || {
                let _ = pipe.write_all(&cmd.stdin);
            });
        }
        // SAFETY: plain FFI; `pid` is our child, the pointers are valid.
        unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) }
    });
    let wall = started.elapsed();
    if waited != pid {
        return failed(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    reply(wall, started_ns, status, &usage)
}

/// Spawns every command, one after the other from this thread, then reaps them as they end.
/// No thread of its own per command: each would grow the launcher (a malloc arena apiece),
/// and every child starts from the launcher's peak RSS. Each stdin is written whole at once,
/// so it must fit a pipe's buffer (64 KiB).
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std cannot see
fn launch_all(cmds: &[Cmd]) -> Vec<Reply> {
    let mut replies: Vec<Reply> = Vec::with_capacity(cmds.len());
    let mut running = std::collections::HashMap::new();
    for (index, cmd) in cmds.iter().enumerate() {
        replies.push(failed("never reaped".into()));
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .env_clear()
            .envs(cmd.env.clone())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .stdin(if cmd.stdin.is_empty() {
                Stdio::null()
            } else {
                Stdio::piped()
            });
        if let Some(dir) = &cmd.cwd {
            command.current_dir(dir);
        }
        let started_ns = monotonic_ns();
        let started = Instant::now();
        match command.spawn() {
            Ok(mut child) => {
                if let Some(mut pipe) = child.stdin.take() {
                    let _ = pipe.write_all(&cmd.stdin);
                }
                running.insert(child.id().cast_signed(), (index, started, started_ns));
            }
            Err(err) => replies[index] = failed(err.to_string()),
        }
    }
    while !running.is_empty() {
        let mut status = 0;
        // SAFETY: `rusage` is a POD the kernel fills.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: plain FFI; waits for any child of the launcher, the pointers are valid.
        let pid = unsafe { libc::wait4(-1, &raw mut status, 0, &raw mut usage) };
        if pid < 0 {
            break;
        }
        let Some((index, started, started_ns)) = running.remove(&pid) else {
            continue;
        };
        replies[index] = reply(started.elapsed(), started_ns, status, &usage);
    }
    replies
}

/// What `wait4` said of a child, as sent back.
fn reply(wall: Duration, started_ns: u64, status: i32, usage: &libc::rusage) -> Reply {
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    Reply {
        wall_ns: u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
        user_ns: nanos(usage.ru_utime.tv_sec, usage.ru_utime.tv_usec * 1000),
        sys_ns: nanos(usage.ru_stime.tv_sec, usage.ru_stime.tv_usec * 1000),
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        code,
        started_ns,
        error: None,
    }
}
