//! The sandbox launcher: `worker __sandbox SHELL -c COMMAND`, run by `bash` in place of the
//! shell under `--sandbox linux`, with the [`Spec`] in `WORKER_SANDBOX_SPEC`.
//!
//! A fresh exec of worker's own binary (single-threaded, so it may fork freely) that:
//! 1. unshares a user, mount and PID namespace (and a network namespace for `--no-network`),
//!    mapping worker's uid and gid to themselves;
//! 2. forks the namespace's init (PID 1), which dies with the launcher (`PDEATHSIG`), and the
//!    launcher dies with worker, so the whole tree goes when worker does: the kernel kills
//!    every process of a PID namespace when its init exits, `setsid` or not;
//! 3. in the init: mounts a fresh `/proc` (the tree sees only itself: no worker to signal),
//!    covers each hidden path with an empty read-only tmpfs (directories) or `/dev/null`
//!    (files), sets rlimits, and applies Landlock: read and execute everywhere, write only in
//!    the writable roots and a few devices;
//! 4. forks the shell and stays as init: reaps orphans, keeps the tree under the process
//!    limit (it counts `/proc`, because `RLIMIT_NPROC` does not bind root), and when the
//!    shell exits kills what is left and exits with the shell's status.
//!
//! Anything that fails before the shell runs is a message on stderr and exit 126: the
//! command never runs unconfined.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use serde::{Deserialize, Serialize};

/// The first argument that makes worker the launcher.
pub const LAUNCH_ARG: &str = "__sandbox";
/// Where the launcher finds its [`Spec`].
pub const SPEC_VAR: &str = "WORKER_SANDBOX_SPEC";
/// The launcher's exit status when the sandbox could not be set up.
pub const SETUP_FAILED: i32 = 126;

/// What one sandboxed command may do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// Trees commands may write to (the working directory, the private temp directory).
    pub writable: Vec<PathBuf>,
    /// Paths covered with nothing: credentials.
    pub hidden: Vec<PathBuf>,
    /// No network at all (a network namespace with only loopback).
    pub no_network: bool,
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

/// How often the init checks the process count (a signal wakes it sooner).
const CHECK_INTERVAL: Duration = Duration::from_millis(20);

/// Runs the launcher when worker was started as one; returns its exit status.
pub fn main_if_launcher() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != LAUNCH_ARG {
        return None;
    }
    let command: Vec<OsString> = args.collect();
    Some(match launch(&command) {
        Ok(code) => code,
        Err(message) => {
            say(&message);
            SETUP_FAILED
        }
    })
}

fn launch(command: &[OsString]) -> Result<i32, String> {
    if command.is_empty() {
        return Err("no command to run".into());
    }
    let spec: Spec = std::env::var(SPEC_VAR)
        .map_err(|_| format!("{SPEC_VAR} is not set"))
        .and_then(|text| serde_json::from_str(&text).map_err(|err| format!("{SPEC_VAR}: {err}")))?;
    // SAFETY: single-threaded here (a fresh exec), so changing the environment is sound.
    unsafe { std::env::remove_var(SPEC_VAR) };
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    if spec.no_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|err| format!("cannot create namespaces: {err}"))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|err| format!("setgroups: {err}"))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|err| format!("uid_map: {err}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|err| format!("gid_map: {err}"))?;
    // Nothing mounted here reaches the host.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|err| format!("cannot make the mounts private: {err}"))?;
    // SAFETY: single-threaded; the child only continues this function's plain code.
    match unsafe { fork() }.map_err(|err| format!("fork: {err}"))? {
        ForkResult::Parent { child } => Ok(wait_for(child)),
        ForkResult::Child => {
            let code = match init(&spec, command) {
                Ok(code) => code,
                Err(message) => {
                    say(&message);
                    SETUP_FAILED
                }
            };
            std::process::exit(code)
        }
    }
}

/// A line on the command's stderr (which the tool result shows).
fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "worker sandbox: {message}");
}

/// The launcher waits for the namespace's init and passes its status on.
fn wait_for(child: Pid) -> i32 {
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, signal, _)) => return 128 + signal as i32,
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return SETUP_FAILED,
        }
    }
}

/// PID 1 of the sandbox.
fn init(spec: &Spec, command: &[OsString]) -> Result<i32, String> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|err| format!("prctl: {err}"))?;
    let proc_mounted = mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .is_ok();
    if spec.no_network {
        loopback_up();
    }
    for path in &spec.hidden {
        hide(path)?;
    }
    set_limits(spec)?;
    restrict_filesystem(spec)?;
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGCHLD);
    signals
        .thread_block()
        .map_err(|err| format!("sigprocmask: {err}"))?;
    let argv: Vec<CString> = command
        .iter()
        .map(|arg| CString::new(arg.clone().into_vec()))
        .collect::<Result<_, _>>()
        .map_err(|_| "the command contains a NUL byte".to_string())?;
    // SAFETY: single-threaded; the child only unblocks signals and execs.
    let shell = match unsafe { fork() }.map_err(|err| format!("fork: {err}"))? {
        ForkResult::Child => {
            let _ = signals.thread_unblock();
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

/// The init's loop: reap everything, watch the process count, and end with the shell.
fn reap_until(shell: Pid, max_processes: u64, counting: bool, signals: &SigSet) -> i32 {
    loop {
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == shell => return end(code),
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == shell => {
                    return end(128 + signal as i32);
                }
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return end(SETUP_FAILED),
            }
        }
        if counting && processes() > max_processes {
            say(&format!(
                "the command exceeded the sandbox's limit of {max_processes} processes and was stopped"
            ));
            return end(137);
        }
        wait_signal(signals, CHECK_INTERVAL);
    }
}

/// Kills what is left in the namespace and exits with `code`.
fn end(code: i32) -> i32 {
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    while waitpid(None::<Pid>, None).is_ok() {}
    code
}

/// Processes in this PID namespace (its `/proc`).
fn processes() -> u64 {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .as_encoded_bytes()
                        .iter()
                        .all(u8::is_ascii_digit)
                })
                .count() as u64
        })
        .unwrap_or(0)
}

/// Sleeps until a blocked signal (SIGCHLD) arrives or `timeout` passes.
fn wait_signal(signals: &SigSet, timeout: Duration) {
    let spec = nix::libc::timespec {
        tv_sec: timeout.as_secs() as nix::libc::time_t,
        tv_nsec: timeout.subsec_nanos() as nix::libc::c_long,
    };
    // SAFETY: a valid signal set and timespec; the info pointer may be null.
    unsafe {
        nix::libc::sigtimedwait(signals.as_ref(), std::ptr::null_mut(), &spec);
    }
}

/// Covers a credential: an empty read-only tmpfs over a directory, `/dev/null` over a file.
fn hide(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let result = if meta.is_dir() {
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=000"),
        )
    } else {
        mount(
            Some("/dev/null"),
            path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
    };
    result.map_err(|err| format!("cannot hide {}: {err}", path.display()))
}

fn set_limits(spec: &Spec) -> Result<(), String> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(
        Resource::RLIMIT_NPROC,
        spec.max_processes,
        spec.max_processes,
    )
    .map_err(|err| format!("RLIMIT_NPROC: {err}"))?;
    setrlimit(
        Resource::RLIMIT_FSIZE,
        spec.max_file_bytes,
        spec.max_file_bytes,
    )
    .map_err(|err| format!("RLIMIT_FSIZE: {err}"))
}

/// Landlock: read and execute everywhere, everything in the writable roots and devices.
fn restrict_filesystem(spec: &Spec) -> Result<(), String> {
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
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        })
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|err| format!("Landlock: {err}"))
        .and_then(|status| match status.ruleset {
            landlock::RulesetStatus::NotEnforced => {
                Err("Landlock is not enforced by this kernel".to_string())
            }
            _ => Ok(()),
        })
}

/// Brings the new network namespace's loopback up, so local servers still work.
fn loopback_up() {
    // SAFETY: plain socket and ioctl calls on a zeroed `ifreq` naming "lo".
    unsafe {
        let fd = nix::libc::socket(nix::libc::AF_INET, nix::libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return;
        }
        let mut request: nix::libc::ifreq = std::mem::zeroed();
        for (i, byte) in b"lo".iter().enumerate() {
            request.ifr_name[i] = *byte as nix::libc::c_char;
        }
        if nix::libc::ioctl(fd, nix::libc::SIOCGIFFLAGS, &mut request) == 0 {
            request.ifr_ifru.ifru_flags |= nix::libc::IFF_UP as nix::libc::c_short;
            nix::libc::ioctl(fd, nix::libc::SIOCSIFFLAGS, &request);
        }
        nix::libc::close(fd);
    }
}
