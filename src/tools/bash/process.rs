//! Child processes for `bash`: own process group, no stdin, one pipe for both output streams,
//! killed with the worker.
//!
//! Each command leads a new process group so a timeout or abort can signal everything it
//! started (`kill(-pgid)`). `PR_SET_PDEATHSIG` makes the shell die if the worker dies without
//! cleaning up; groups still alive when a run ends are killed by [`Leftovers::clean_up`],
//! which also reaches background jobs the shell left behind, and removes the run's spill files.

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use super::standby::Standbys;
use crate::sync::LockExt;
use crate::tools::Runner;
use crate::tools::contain::Containment;
use crate::tools::programs::{POSIX_SHELL, absolute_path_only};

pub(super) struct Spawned {
    pub child: Child,
    pub output: pipe::Receiver,
    pub pgid: Pid,
    /// The child told the watchdog of its group itself.
    pub told: bool,
}

/// Starts `shell -c command` with stdout and stderr on one pipe, so the reader sees both in
/// the order they were written. With `watchdog`, the child tells the watchdog its process
/// group itself, before the command runs: a worker killed at that very moment still leaves
/// nothing behind. A runner with standbys starts the command through one ([`Standbys`]).
pub(super) fn spawn(
    command: &str,
    cwd: &Path,
    env: &[(String, Option<String>)],
    runner: Option<(&Runner, &Path)>,
    contain: Option<&Containment>,
    watchdog: Option<RawFd>,
    standbys: &Standbys,
) -> io::Result<Spawned> {
    if let Some((runner, scratch)) = runner {
        let line = crate::tools::CommandLine {
            shell: shell(),
            command,
            cwd,
            env,
            scratch,
        };
        if let Some(spawned) = standbys.start(runner, &line) {
            return spawned;
        }
    }
    let std_cmd = shell_command(command, cwd, env, runner, false);
    let tie = Tie::Command {
        watchdog,
        contain: unless_sandboxed(runner, contain),
    };
    let (child, output, pgid) = spawn_with_output(std_cmd, Stdio::null(), tie)?;
    Ok(Spawned {
        child,
        output,
        pgid,
        told: watchdog.is_some(),
    })
}

/// How a process [`spawn_with_output`] starts is tied to worker.
pub(super) enum Tie<'a> {
    /// A command: [`guard`]ed, and killed when its handle is dropped.
    Command {
        watchdog: Option<RawFd>,
        contain: Option<&'a Containment>,
    },
    /// A standby ([`Standbys`]): a process group of its own, nothing more. It ends by itself
    /// when its input closes, which worker's end does however it comes, and ties itself to
    /// worker once it has a command.
    Standby,
}

/// Starts `std_cmd` with `stdin`, and stdout and stderr on one pipe: its process, the pipe's
/// read end and its process group.
pub(super) fn spawn_with_output(
    mut std_cmd: std::process::Command,
    stdin: Stdio,
    tie: Tie<'_>,
) -> io::Result<(Child, pipe::Receiver, Pid)> {
    let (reader, writer) = io::pipe()?;
    std_cmd
        .stdin(stdin)
        .stdout(writer.try_clone()?)
        .stderr(writer);
    let command = match tie {
        Tie::Command { watchdog, contain } => {
            guard(&mut std_cmd, watchdog, contain);
            true
        }
        Tie::Standby => {
            std_cmd.process_group(0);
            false
        }
    };
    let mut cmd = Command::from(std_cmd);
    cmd.kill_on_drop(command);
    let child = cmd.spawn()?;
    // Dropping `cmd` closed our copies of the write end: EOF now means every writer is gone.
    drop(cmd);
    let pgid = Pid::from_raw(child.id().map_or(0, u32::cast_signed));
    let output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok((child, output, pgid))
}

/// Starts a long-lived process the run talks to over its stdin and stdout (an MCP server),
/// the way commands start (in the sandbox, or contained), but with a scrubbed environment
/// (worker's own variables do not reach it: only the basic ones and `env`) and its stderr
/// piped for the caller.
pub(super) fn spawn_service(
    command: &str,
    cwd: &Path,
    env: &[(String, Option<String>)],
    runner: Option<(&Runner, &Path)>,
    contain: Option<&Containment>,
    watchdog: Option<RawFd>,
) -> io::Result<(Child, Pid)> {
    let mut std_cmd = shell_command(command, cwd, env, runner, true);
    // A service is given secrets in `env`.
    absolute_path_only(&mut std_cmd);
    std_cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    guard(&mut std_cmd, watchdog, unless_sandboxed(runner, contain));
    let mut cmd = Command::from(std_cmd);
    cmd.kill_on_drop(true);
    let child = cmd.spawn()?;
    let pgid = Pid::from_raw(child.id().map_or(0, u32::cast_signed));
    Ok((child, pgid))
}

/// `shell -c command` in `cwd` with `env` applied, through the sandbox's runner when there is
/// one. `scrub`: without a runner (which scrubs by itself), start from the basic variables
/// only instead of worker's whole environment.
fn shell_command(
    command: &str,
    cwd: &Path,
    env: &[(String, Option<String>)],
    runner: Option<(&Runner, &Path)>,
    scrub: bool,
) -> std::process::Command {
    if let Some((runner, scratch)) = runner {
        return runner.0.command(&crate::tools::CommandLine {
            shell: shell(),
            command,
            cwd,
            env,
            scratch,
        });
    }
    let mut std_cmd = std::process::Command::new(shell());
    std_cmd.arg("-c").arg(command).current_dir(cwd);
    // The environment is spelled out whole, as the containment needs it (see
    // `Containment::apply`); std would build the same list for any command given a variable.
    std_cmd.env_clear();
    if scrub {
        for key in crate::tools::BASE_ENV {
            if let Some(value) = std::env::var_os(key) {
                std_cmd.env(key, value);
            }
        }
    } else {
        std_cmd.envs(std::env::vars_os());
    }
    for (key, value) in env {
        match value {
            Some(value) => std_cmd.env(key, value),
            None => std_cmd.env_remove(key),
        };
    }
    std_cmd
}

/// Its own process group, registered with the watchdog (when there is one) before it runs,
/// killed when the worker dies, and contained when asked (last: the hooks before run in the
/// containment's launcher, which leads the group).
fn guard(
    std_cmd: &mut std::process::Command,
    watchdog: Option<RawFd>,
    contain: Option<&Containment>,
) {
    std_cmd.process_group(0);
    if let Some(fd) = watchdog {
        // SAFETY: `register` runs in the forked child before exec and only calls `write` on a
        // stack buffer, touching no locks or allocations.
        unsafe {
            std_cmd.pre_exec(move || {
                register(fd);
                Ok(())
            });
        }
    }
    die_with_worker(std_cmd);
    if let Some(contain) = contain {
        contain.apply(std_cmd);
    }
}

/// Containment is for commands without a sandbox: the sandbox's launcher contains by itself.
fn unless_sandboxed<'a>(
    runner: Option<(&Runner, &Path)>,
    contain: Option<&'a Containment>,
) -> Option<&'a Containment> {
    contain.filter(|_| runner.is_none())
}

/// Makes the child die (SIGKILL) when the worker dies, so a worker killed without a chance to
/// clean up leaves no command running. Also used for hook programs.
pub(crate) fn die_with_worker(std_cmd: &mut std::process::Command) {
    let parent = std::process::id().cast_signed();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe calls (prctl, getppid, raise), touching no locks or allocations.
    unsafe {
        std_cmd.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
                // The worker may have died between fork and prctl; then nobody would kill us.
                if nix::unistd::getppid().as_raw() != parent {
                    let _ = nix::sys::signal::raise(Signal::SIGKILL);
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = parent;
            Ok(())
        });
    }
}

/// Writes `+PID\n` (this process leads its own group) to the watchdog, with nothing but a
/// stack buffer and `write`: it runs between fork and exec.
fn register(fd: RawFd) {
    let mut pid = nix::unistd::getpid().as_raw().unsigned_abs();
    let mut digits = [0u8; 12];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    let mut line = [0u8; 14];
    line[0] = b'+';
    let len = digits.len() - at;
    line[1..=len].copy_from_slice(&digits[at..]);
    line[len + 1] = b'\n';
    // SAFETY: a valid buffer of `len + 2` bytes; a failed write only loses the protection.
    let _ = unsafe { nix::libc::write(fd, line.as_ptr().cast(), len + 2) };
}

fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        POSIX_SHELL
    }
}

/// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group.
pub(super) async fn terminate(child: &mut Child, pgid: Pid, grace: Duration) {
    let _ = killpg(pgid, Signal::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = child.wait().await;
    } else {
        // The leader left; stragglers in its group get no second chance.
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// What the run's commands leave behind: every process group that may still be alive, and
/// the directory of spill files (created with the first spill, one per run).
///
/// Both are also told to a watchdog: a small `sh` in a session of its own that reads
/// `+PGID` / `-PGID` / `dPATH` lines from a pipe and, when the pipe closes — the worker is
/// gone, however it ended, SIGKILL included — kills every group still listed and removes the
/// directory. So a command's background job or pipeline cannot outlive the worker, and its
/// output cannot fill the disk of a machine that runs thousands of workers. (A process that
/// moves itself to a group of its own, with `setsid`, is beyond it.) The watchdog starts with
/// the first command, so runs that never use bash pay nothing.
#[derive(Clone, Default)]
pub struct Leftovers {
    groups: Arc<Mutex<HashSet<i32>>>,
    spill_dir: Arc<Mutex<Option<tempfile::TempDir>>>,
    watchdog: Arc<Mutex<Option<Watchdog>>>,
    /// The launcher set up for the next command (a sandbox's), ended with the run.
    standbys: Standbys,
}

/// Kills the listed groups and removes the spill directory once its input closes.
const WATCHDOG_SCRIPT: &str = r#"groups=" "
dir=
while IFS= read -r line; do
  case $line in
    +*) groups="$groups${line#+} " ;;
    -*) g=" ${line#-} "; case $groups in *"$g"*) groups="${groups%%"$g"*} ${groups#*"$g"}" ;; esac ;;
    d*) dir=${line#d} ;;
  esac
done
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
if [ -n "$dir" ]; then rm -rf -- "$dir"; fi"#;

struct Watchdog {
    input: std::process::ChildStdin,
    // Kept so the handle is not dropped; the watchdog outlives the worker by design.
    _process: std::process::Child,
}

impl Watchdog {
    fn start() -> io::Result<Watchdog> {
        let mut command = std::process::Command::new(POSIX_SHELL);
        command
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: a signal to the worker's group does not reach it.
            .process_group(0);
        // It runs `rm` with worker's environment.
        absolute_path_only(&mut command);
        let mut process = command.spawn()?;
        let input = process
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the watchdog has no input"))?;
        Ok(Watchdog {
            input,
            _process: process,
        })
    }

    fn tell(&mut self, line: &str) -> io::Result<()> {
        use std::io::Write;
        self.input.write_all(line.as_bytes())
    }
}

impl Leftovers {
    /// Runs `start` with the watchdog's input (started if need be; `None` when there is no
    /// watchdog), for a child to register itself on (see [`spawn`]). The watchdog is locked
    /// meanwhile, so its input stays open until the child has forked.
    pub fn with_watchdog<T>(&self, start: impl FnOnce(Option<RawFd>) -> T) -> T {
        let mut watchdog = self.watchdog.lock_or_recover();
        if watchdog.is_none() {
            *watchdog = Watchdog::start().ok();
        }
        start(watchdog.as_ref().map(|dog| dog.input.as_raw_fd()))
    }

    /// Records a group; `told`: the child already told the watchdog.
    pub fn add(&self, pgid: Pid, told: bool) {
        self.lock().insert(pgid.as_raw());
        if !told {
            self.tell(&format!("+{}\n", pgid.as_raw()));
        }
    }

    /// Tells the watchdog of a group its owner ends itself (a long-lived service, which must
    /// wind down before it is killed): the run's [`Leftovers::clean_up`] leaves it alone, the
    /// watchdog kills it if worker dies. `told`: the child already told the watchdog.
    pub fn watch(&self, pgid: Pid, told: bool) {
        if !told {
            self.tell(&format!("+{}\n", pgid.as_raw()));
        }
    }

    /// Forgets the group if nothing in it is alive any more.
    pub fn forget_if_gone(&self, pgid: Pid) {
        if killpg(pgid, None).is_err() {
            self.lock().remove(&pgid.as_raw());
            self.tell(&format!("-{}\n", pgid.as_raw()));
        }
    }

    /// The run's directory for spill files, created on first use.
    pub fn spill_dir(&self) -> io::Result<std::path::PathBuf> {
        let mut dir = self.spill_dir.lock_or_recover();
        if let Some(dir) = dir.as_ref() {
            return Ok(dir.path().to_path_buf());
        }
        let created = tempfile::Builder::new().prefix("worker-run-").tempdir()?;
        let path = created.path().to_path_buf();
        // A path the line protocol cannot carry is still removed by `clean_up`.
        if let Some(text) = path.to_str().filter(|text| !text.contains('\n')) {
            self.tell(&format!("d{text}\n"));
        }
        *dir = Some(created);
        Ok(path)
    }

    /// The run's standbys ([`Standbys`]).
    pub(super) fn standbys(&self) -> &Standbys {
        &self.standbys
    }

    /// Ends the standby launcher, if there is one (it exits by itself); SIGKILL to every group
    /// still recorded (background jobs included), then removes the spill files: the results
    /// that named them were for a model that is done.
    pub fn clean_up(&self) {
        self.standbys.end();
        for pgid in self.lock().drain() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            self.tell(&format!("-{pgid}\n"));
        }
        if let Some(dir) = self.spill_dir.lock_or_recover().take() {
            let _ = dir.close();
        }
    }

    /// Best effort: without a watchdog the groups are still killed when the run ends normally.
    fn tell(&self, line: &str) {
        let mut watchdog = self.watchdog.lock_or_recover();
        if watchdog.is_none() {
            *watchdog = Watchdog::start().ok();
        }
        if let Some(dog) = watchdog.as_mut()
            && dog.tell(line).is_err()
        {
            *watchdog = None;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<i32>> {
        self.groups.lock_or_recover()
    }
}
