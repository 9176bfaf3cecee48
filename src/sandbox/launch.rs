//! The sandbox launcher: `worker __sandbox SHELL -c COMMAND`, run by `bash` in place of the
//! shell under `--sandbox linux`, with the [`Spec`] in `WORKER_SANDBOX_SPEC`. Without a
//! command, `worker __sandbox` is a standby: it sets everything up, then reads its command
//! from stdin ([`command`]), so that worker can start the next command's launcher while the
//! model thinks.
//!
//! A fresh exec of worker's own binary (single-threaded, so it may fork freely) that:
//! 1. unshares a user, mount and PID namespace (and a network namespace for `--no-network`),
//!    mapping worker's uid and gid to themselves;
//! 2. forks the namespace's init (PID 1), which dies with the launcher (`PDEATHSIG`), and the
//!    launcher dies with worker, so the whole tree goes when worker does: the kernel kills
//!    every process of a PID namespace when its init exits, `setsid` or not. Where it can, the
//!    launcher moves the init into a pids cgroup of the command's own while the init builds the
//!    view below, and the init starts nothing until it is told the move is done;
//! 3. in the init, in a mount namespace of its own: mounts a fresh `/proc` (the tree sees
//!    only itself: no worker to signal), builds the command's view of the filesystem
//!    ([`super::view`]: private temp directories, credentials covered, everything read-only
//!    but the writable roots), caps file sizes, and applies Landlock: read and execute
//!    everywhere, write only in the writable roots and a few devices; with no network, the
//!    command's process also gets the Unix-socket filter ([`super::seccomp`]);
//! 4. (a standby: reads its command, and checks that no hidden path appeared since its view
//!    was built) forks the shell and stays as init: reaps orphans, keeps the tree under the
//!    process limit (it counts its own `/proc`: `RLIMIT_NPROC` counts the user's processes on
//!    the whole machine, and does not bind root), and when the shell exits kills what is left
//!    and exits with the shell's status.
//!
//! Anything that fails before the shell runs is a message on stderr and exit 126: the
//! command never runs unconfined.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use serde::{Deserialize, Serialize};

mod cgroup;
mod command;
mod error;

pub(super) use error::LaunchError;

/// The first argument that makes worker the launcher.
pub const LAUNCH_ARG: &str = "__sandbox";
/// Where the launcher finds its [`Spec`].
pub const SPEC_VAR: &str = "WORKER_SANDBOX_SPEC";
/// The launcher's exit status when the sandbox could not be set up.
pub use crate::tools::contain::SETUP_FAILED;

/// What one sandboxed command may do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// Trees commands may write to (the working directory, the private temp directory).
    pub writable: Vec<PathBuf>,
    /// The run's private temp directory, which `/tmp` and `/var/tmp` become.
    pub temp_dir: PathBuf,
    /// The run's own directory (spill files, the temp directory): readable at its own path.
    pub run_dir: Option<PathBuf>,
    /// Paths covered with nothing: credentials.
    pub hidden: Vec<PathBuf>,
    /// A network namespace of its own, with only loopback: no network at all, unless
    /// `proxy_socket` leads out.
    pub no_network: bool,
    /// worker's egress proxy (`--allow-host`), served inside as `127.0.0.1:3128`.
    pub proxy_socket: Option<PathBuf>,
    /// Processes the tree may have at once.
    pub max_processes: u64,
    /// The largest file a command may write, in bytes.
    pub max_file_bytes: u64,
}

/// Devices commands may write to although `/dev` is read-only.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/shm",
];

/// How often the init checks the process count while children keep exiting (a tree that
/// churns, such as a fork bomb)...
const BUSY_CHECK: Duration = Duration::from_millis(2);
/// ...and at the latest when nothing happens (a child's exit wakes it sooner).
const IDLE_CHECK: Duration = Duration::from_millis(20);
/// The niceness commands run at (the init stays at worker's).
const COMMAND_NICENESS: nix::libc::c_int = 5;

/// Runs the launcher when worker was started as one; returns its exit status.
pub fn main_if_launcher() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != LAUNCH_ARG {
        return None;
    }
    let command: Vec<OsString> = args.collect();
    Some(match launch(&command) {
        Ok(code) => code,
        Err(err) => {
            say(&err.to_string());
            SETUP_FAILED
        }
    })
}

fn launch(command: &[OsString]) -> Result<i32, LaunchError> {
    let spec: Spec = std::env::var(SPEC_VAR)
        .map_err(|source| LaunchError::SpecUnset { source })
        .and_then(|text| {
            serde_json::from_str(&text).map_err(|source| LaunchError::SpecInvalid { source })
        })?;
    // SAFETY: single-threaded here (a fresh exec), so changing the environment is sound.
    unsafe { std::env::remove_var(SPEC_VAR) };
    // Before the namespaces: only the real user may make a cgroup (and the kernel checks a move
    // into it against whoever opened its process list). Its hard cap sits a little above the
    // init's limit, so the init notices first and stops the tree with a message.
    let cap = spec
        .max_processes
        .saturating_add(spec.max_processes / 8 + 8);
    let cgroup = cgroup::PidsCgroup::create(cap);
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC;
    if spec.no_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|source| LaunchError::Namespaces { source })?;
    std::fs::write("/proc/self/setgroups", "deny")
        .map_err(|source| LaunchError::Setgroups { source })?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|source| LaunchError::UidMap { source })?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|source| LaunchError::GidMap { source })?;
    let forwarder = if spec.no_network {
        loopback_up();
        match &spec.proxy_socket {
            Some(socket) => Some((
                std::net::TcpListener::bind(("127.0.0.1", super::proxy::INSIDE_PORT))
                    .map_err(|source| LaunchError::ProxyListen { source })?,
                socket.clone(),
            )),
            None => None,
        }
    } else {
        None
    };
    // Nothing mounted here reaches the host.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|source| LaunchError::PrivateMounts { source })?;
    // The init starts the command once the launcher writes to this pipe.
    let (admitted, admit) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|source| LaunchError::Pipe { source })?;
    // A standby's init says on this one when its command has come (see `command`).
    let started = if command.is_empty() {
        let ends =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|source| LaunchError::Pipe { source })?;
        Some((ends, nix::unistd::getppid()))
    } else {
        None
    };
    // SAFETY: single-threaded; the child only continues this function's plain code.
    match unsafe { fork() }.map_err(|source| LaunchError::Fork { source })? {
        ForkResult::Parent { child } => {
            drop(admitted);
            let started = started.map(|((read, write), worker)| {
                drop(write);
                (read, worker)
            });
            // The init is moved while it builds the view: the move waits for an RCU grace
            // period of the kernel's. The launcher itself stays out, so once the tree is gone
            // the cgroup is empty and goes without a second move.
            let cgroup = cgroup.and_then(|cgroup| cgroup.admit(child));
            // In or not (then the init's own count stands alone), the init goes on; if it
            // cannot be told, it ends without starting the command.
            let _ = std::fs::File::from(admit).write_all(&[1]);
            // This process may not start threads (its children live in another PID
            // namespace), so the forwarder is a process of its own, in the sandbox's.
            if let Some((listener, socket)) = forwarder {
                // SAFETY: single-threaded; the child only runs the forwarder and exits.
                if let Ok(ForkResult::Child) = unsafe { fork() } {
                    forward(&listener, &socket);
                    std::process::exit(0);
                }
            }
            crate::tools::contain::ignore_group_signals();
            if let Some((started, worker)) = started {
                command::tie_to_worker_once_started(started, worker, child);
            }
            let code = wait_for(child);
            if let Some(cgroup) = cgroup {
                cgroup.remove_after_exit();
            }
            Ok(code)
        }
        ForkResult::Child => {
            drop(admit);
            let started = started.map(|((read, write), _)| {
                drop(read);
                write
            });
            let code = match init(&spec, command, admitted, started) {
                Ok(code) => code,
                // Nobody reads a standby's output once worker has ended it.
                Err(LaunchError::Unused) => SETUP_FAILED,
                Err(err) => {
                    say(&err.to_string());
                    SETUP_FAILED
                }
            };
            std::process::exit(code)
        }
    }
}

/// A line on the command's stderr (which the tool result shows).
fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "worker sandbox: {message}");
}

/// The launcher waits for the namespace's init and passes its status on. It reaps its other
/// child (the proxy forwarder) too: the init's exit waits until everything in its namespace
/// has been reaped.
fn wait_for(init: Pid) -> i32 {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == init => return code,
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == init => {
                return 128 + signal as i32;
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return SETUP_FAILED,
        }
    }
}

/// Inside the namespace, `127.0.0.1:3128` leads to worker's proxy socket outside it.
fn forward(listener: &std::net::TcpListener, socket: &Path) {
    for inside in listener.incoming().flatten() {
        let Ok(outside) = std::os::unix::net::UnixStream::connect(socket) else {
            continue;
        };
        let (Ok(mut inside_read), Ok(mut outside_write)) =
            (inside.try_clone(), outside.try_clone())
        else {
            continue;
        };
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut inside_read, &mut outside_write);
            let _ = outside_write.shutdown(std::net::Shutdown::Write);
        });
        let (mut inside, mut outside) = (inside, outside);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut outside, &mut inside);
            let _ = inside.shutdown(std::net::Shutdown::Write);
        });
    }
}

/// PID 1 of the sandbox. `admitted` is read before the command starts (see [`launch`]); a
/// standby's `started` is written once its command has come.
fn init(
    spec: &Spec,
    command: &[OsString],
    admitted: OwnedFd,
    started: Option<OwnedFd>,
) -> Result<i32, LaunchError> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|source| LaunchError::DeathSignal { source })?;
    // A mount namespace of the init's own: the launcher (and the proxy forwarder) keep the
    // view they had, and only the command's is made read-only.
    unshare(CloneFlags::CLONE_NEWNS).map_err(|source| LaunchError::Namespaces { source })?;
    let proc_mounted = mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .is_ok();
    // The working directory is entered again once the view is built: the one the launcher was
    // started in belongs to the mounts beneath the view, where no credential is covered.
    let cwd = std::env::current_dir().map_err(|source| LaunchError::WorkingDirectory { source })?;
    let missing = super::view::build(spec)?;
    std::env::set_current_dir(&cwd).map_err(|source| LaunchError::EnterWorkingDirectory {
        path: cwd.clone(),
        source,
    })?;
    set_limits(spec)?;
    restrict_filesystem(spec)?;
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGCHLD);
    signals
        .thread_block()
        .map_err(|source| LaunchError::SignalMask { source })?;
    wait_for_admission(admitted)?;
    let argv = if command.is_empty() {
        command::from_stdin()?
    } else {
        command::from_arguments(command)?
    };
    command::check_still_missing(&missing)?;
    if let Some(started) = started {
        let _ = std::fs::File::from(started).write_all(&[1]);
    }
    // SAFETY: single-threaded; the child only unblocks signals and execs.
    let shell = match unsafe { fork() }.map_err(|source| LaunchError::Fork { source })? {
        ForkResult::Child => {
            let _ = signals.thread_unblock();
            if spec.no_network
                && let Err(err) = super::seccomp::deny_unix_sockets()
            {
                say(&err.to_string());
                std::process::exit(SETUP_FAILED);
            }
            // The tree runs below the init's priority, so a tree that hogs the CPUs (a fork
            // bomb) cannot starve the init that must stop it.
            // SAFETY: setpriority on this process only.
            unsafe {
                nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, COMMAND_NICENESS);
            }
            let _ = nix::unistd::execvp(&argv[0], &argv);
            say(&format!("cannot run {:?}", argv[0]));
            std::process::exit(127);
        }
        ForkResult::Parent { child } => child,
    };
    Ok(reap_until(
        shell,
        spec.max_processes,
        proc_mounted,
        &signals,
    ))
}

/// Waits for the launcher's word that this process is in the command's pids cgroup (or will
/// not be); the launcher ending without a word ends the init.
fn wait_for_admission(admitted: OwnedFd) -> Result<(), LaunchError> {
    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(&admitted, &mut byte) {
            Ok(1) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => {}
            Ok(_) | Err(_) => return Err(LaunchError::LauncherGone),
        }
    }
}

/// The init's loop: reap, watch the process count, and end with the shell. The count is
/// checked at least every [`BUSY_CHECK`] while children keep exiting (a fork bomb must not
/// keep the init busy reaping, nor pile up zombies), and every [`IDLE_CHECK`] otherwise.
fn reap_until(shell: Pid, max_processes: u64, counting: bool, signals: &SigSet) -> i32 {
    loop {
        let checked = std::time::Instant::now();
        let mut idle = false;
        while checked.elapsed() < BUSY_CHECK {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == shell => return end(code),
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == shell => {
                    return end(128 + signal as i32);
                }
                Ok(WaitStatus::StillAlive) => {
                    idle = true;
                    break;
                }
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return end(SETUP_FAILED),
            }
        }
        if counting && processes() > max_processes {
            // Said once everything is stopped, so it is the output's last line.
            let code = end(137);
            say(&format!(
                "the command exceeded the sandbox's limit of {max_processes} processes and was stopped"
            ));
            return code;
        }
        if idle {
            wait_signal(signals, IDLE_CHECK);
        }
    }
}

/// Kills what is left in the namespace (again, until nothing is: a process may be forking
/// while the first signal goes out) and exits with `code`.
fn end(code: i32) -> i32 {
    loop {
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        while let Ok(status) = waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        if processes() <= 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    while waitpid(None::<Pid>, None).is_ok() {}
    code
}

/// Processes in this PID namespace (its `/proc`).
fn processes() -> u64 {
    std::fs::read_dir("/proc").map_or(0, |dir| {
        dir.flatten()
            .filter(|e| {
                e.file_name()
                    .as_encoded_bytes()
                    .iter()
                    .all(u8::is_ascii_digit)
            })
            .count() as u64
    })
}

/// Sleeps until a blocked signal (SIGCHLD) arrives or `timeout` passes.
fn wait_signal(signals: &SigSet, timeout: Duration) {
    let spec = nix::libc::timespec {
        tv_sec: timeout.as_secs().cast_signed(),
        tv_nsec: nix::libc::c_long::from(timeout.subsec_nanos()),
    };
    // SAFETY: a valid signal set and timespec; the info pointer may be null.
    unsafe {
        nix::libc::sigtimedwait(signals.as_ref(), std::ptr::null_mut(), &raw const spec);
    }
}

/// `RLIMIT_FSIZE`. (Not `RLIMIT_NPROC`: it counts every process of the user on the machine,
/// worker's own threads included, so it would fail the commands of a busy worker; the init's
/// count is the process limit.)
fn set_limits(spec: &Spec) -> Result<(), LaunchError> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(
        Resource::RLIMIT_FSIZE,
        spec.max_file_bytes,
        spec.max_file_bytes,
    )
    .map_err(|source| LaunchError::FileSizeLimit { source })
}

/// Landlock: read and execute everywhere, everything in the writable roots and devices.
fn restrict_filesystem(spec: &Spec) -> Result<(), LaunchError> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };
    let abi = ABI::V5;
    let writable: Vec<&Path> = spec
        .writable
        .iter()
        .map(PathBuf::as_path)
        .chain(WRITABLE_DEVICES.iter().map(Path::new))
        .collect();
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .and_then(landlock::Ruleset::create)
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        })
        .and_then(landlock::RulesetCreated::restrict_self)
        .map_err(|source| LaunchError::Landlock { source })
        .and_then(|status| match status.ruleset {
            landlock::RulesetStatus::NotEnforced => Err(LaunchError::LandlockNotEnforced),
            _ => Ok(()),
        })
}

/// Brings the new network namespace's loopback up, so local servers (and the proxy's
/// forwarder) work.
fn loopback_up() {
    // SAFETY: plain socket and ioctl calls on a zeroed `ifreq` naming "lo".
    unsafe {
        let fd = nix::libc::socket(nix::libc::AF_INET, nix::libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return;
        }
        let mut request: nix::libc::ifreq = std::mem::zeroed();
        for (i, byte) in b"lo".iter().enumerate() {
            request.ifr_name[i] = (*byte).cast_signed();
        }
        if nix::libc::ioctl(fd, nix::libc::SIOCGIFFLAGS, &mut request) == 0 {
            request.ifr_ifru.ifru_flags |= nix::libc::IFF_UP as nix::libc::c_short;
            nix::libc::ioctl(fd, nix::libc::SIOCSIFFLAGS, &request);
        }
        nix::libc::close(fd);
    }
}
