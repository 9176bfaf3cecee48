//! Containment without a sandbox: under `--sandbox none`, every command (and every MCP server)
//! starts in a PID namespace of its own, so that nothing it starts outlives worker, `setsid`
//! and double forks included.
//!
//! It happens in the child worker forks for the command, between fork and exec, as the last
//! `pre_exec` hook. That child, the *launcher*, unshares a PID namespace (as root; otherwise a
//! user namespace mapping worker's uid and gid to themselves comes with it) and forks the
//! namespace's init. The init starts the shell with `posix_spawn`, from the program, arguments
//! and environment [`Exec`] made before the fork, and says on a pipe whether it could; it
//! reports the shell's status to the launcher through the same pipe the moment it ends, and
//! then stays, reaping, while anything the command left in the background runs (background
//! jobs behave as without containment). The launcher exits with the shell's status (or dies of
//! its signal), so the `bash` tool sees the command end as before; a shell that could not be
//! started makes the hook fail with the init's error, so `spawn` fails as it would have
//! without containment. Nothing on this path execs worker's binary again, which cost a command
//! more than the namespace itself; only an init that stays for background jobs does, to become
//! a bare reaper (`worker __reap`) instead of a copy of the run's memory that every page the
//! run writes meanwhile would duplicate.
//!
//! `posix_spawn` (a `vfork`-like clone that shares the init's memory until the exec) rather
//! than a third fork: a fork copies the page tables of a process the size of worker's, and the
//! exec that follows tears the copy down again, both on the way to the command's first
//! instruction. A command whose program is not a path, or whose strings hold a NUL, is left to
//! std's own exec: the init forks a process that returns from the hook.
//!
//! The launcher and the init run in the copy of worker the fork made. Between fork and exec a
//! child of a threaded process may make only async-signal-safe calls (another thread may have
//! held a lock when the fork copied it), so everything they need is prepared before the fork
//! ([`Containment::new`]) and they make plain system calls: no allocation, no lock, no
//! `std::process::exit`. They also do by hand what an exec would: the signal handlers worker
//! installed go back to the default, and every descriptor but the standard three and their
//! end of the status pipe is closed. One of those is std's exec-status pipe, which `spawn`
//! reads until every copy is closed: the shell's copy reports its exec, as for any command.
//!
//! The init leads nothing and catches nothing: it is in the launcher's process group, which
//! worker (at a timeout, an abort, or the run's end) and its watchdog (when worker itself is
//! killed) signal. SIGKILL to the init ends every process of its namespace, including those
//! that left the group with `setsid`.
//!
//! Where no PID namespace can be made (not root, and no unprivileged user namespaces), the
//! init is a child subreaper instead: orphans still come back to it and die with the group,
//! but a process that calls `setsid` escapes once the init is killed. The README says so.
//! Anything else that fails before the shell runs is a message on stderr and exit 126.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;

use nix::libc;

/// The exit status of a command whose containment (or sandbox) could not be set up: the
/// command never ran.
pub const SETUP_FAILED: i32 = 126;

/// What the init writes after its report when it stays for background jobs.
const LINGERS: &[u8] = b"l";

/// How long the launcher waits, once the shell has ended, for the init to follow it, so that
/// no zombie is left to a PID 1 that may never reap. An init still serving background jobs is
/// left running.
const INIT_EXIT_WAIT_MS: libc::c_int = 20;

/// Starts commands contained: what the launcher and the init need, prepared before the fork.
#[derive(Debug, Clone)]
pub struct Containment {
    /// Running as root: a PID namespace needs no user namespace.
    root: bool,
    /// `/proc/self/uid_map` for the user namespace: worker's uid mapped to itself.
    uid_map: Vec<u8>,
    /// `/proc/self/gid_map`, the same for its gid.
    gid_map: Vec<u8>,
}

impl Default for Containment {
    fn default() -> Containment {
        Containment::new()
    }
}

impl Containment {
    /// Containment for this process's user.
    pub fn new() -> Containment {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        Containment {
            root: nix::unistd::geteuid().is_root(),
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    }

    /// Makes `command` start contained. Add it after every other `pre_exec` hook: the hooks
    /// before it run in the launcher, whose process group the command's is. `command`'s
    /// environment must be complete (`env_clear`, then every variable): the init hands the
    /// shell exactly the variables the command names.
    pub fn apply(&self, command: &mut std::process::Command) {
        let containment = self.clone();
        let exec = Exec::of(command);
        // SAFETY: the hook runs between fork and exec and makes only async-signal-safe system
        // calls, on data allocated before the fork (see the module docs).
        unsafe {
            command.pre_exec(move || containment.split(exec.as_ref()));
        }
    }

    /// In the forked child: becomes the launcher. Returns `Ok` only in the process that execs
    /// the command itself (no `exec`), and an error in the launcher when the init could not
    /// start the shell (std then fails the spawn with it).
    fn split(&self, exec: Option<&Exec>) -> std::io::Result<()> {
        reset_signal_handlers();
        let namespaced = self.enter_pid_namespace();
        let mut ends = [0 as RawFd; 2];
        // SAFETY: `ends` has room for the two descriptors.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            fail(b"worker: containment: pipe: ");
        }
        let [status_read, status_write] = ends;
        // SAFETY: the child makes only async-signal-safe calls until it execs or exits.
        match unsafe { libc::fork() } {
            -1 => fail(b"worker: containment: fork: "),
            0 => {
                // SAFETY: closing a descriptor this process owns.
                unsafe { libc::close(status_read) };
                init(namespaced, status_write, exec);
                Ok(())
            }
            init_pid => Err(launcher(
                status_read,
                status_write,
                init_pid,
                exec.is_some(),
            )),
        }
    }

    /// Whether the launcher's children get a PID namespace of their own.
    fn enter_pid_namespace(&self) -> bool {
        // SAFETY: `unshare` with constant flags.
        if self.root && unsafe { libc::unshare(libc::CLONE_NEWPID) } == 0 {
            return true;
        }
        // SAFETY: as above.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) } != 0 {
            return false;
        }
        write_file(c"/proc/self/setgroups", b"deny")
            && write_file(c"/proc/self/uid_map", &self.uid_map)
            && write_file(c"/proc/self/gid_map", &self.gid_map)
    }
}

/// PID 1 of the namespace (or a subreaper): starts the shell (with `exec`; without, forks
/// the process that returns to exec it), reports its end, and reaps until nothing is left.
fn init(namespaced: bool, status: RawFd, exec: Option<&Exec>) {
    if !namespaced {
        // SAFETY: `prctl` with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    }
    let shell = match exec {
        Some(exec) => match exec.spawn() {
            Ok(pid) => {
                send(status, report(b'p', pid));
                pid
            }
            Err(error) => {
                send(status, report(b'x', error));
                // SAFETY: ends this process without running anything of worker's.
                unsafe { libc::_exit(SETUP_FAILED) }
            }
        },
        // SAFETY: as in `split`.
        None => match unsafe { libc::fork() } {
            -1 => fail(b"worker: containment: fork: "),
            0 => return,
            pid => pid,
        },
    };
    close_all_but(status);
    detach_standard_streams();
    // The launcher may be gone by the time the shell ends; a closed pipe is no reason to die.
    // SAFETY: ignoring one signal.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let mut reported = false;
    let mut slimmed = false;
    loop {
        // Once the shell has ended, a moment with children left but none ended means jobs
        // still run in the background: the init stays for them, but not as a copy of the
        // whole run's memory, which every page the run writes meanwhile would duplicate.
        let linger = reported && !slimmed;
        let mut wait_status = 0;
        let flags = if linger { libc::WNOHANG } else { 0 };
        // SAFETY: `wait_status` is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &raw mut wait_status, flags) };
        if pid == 0 {
            // Tells the launcher not to wait for this process's end.
            // SAFETY: a valid buffer of its own length.
            let _ = unsafe { libc::write(status, LINGERS.as_ptr().cast(), LINGERS.len()) };
            become_reaper();
            slimmed = true;
            continue;
        }
        if pid == -1 {
            if nix::errno::Errno::last() == nix::errno::Errno::EINTR {
                continue;
            }
            // Nothing is left to reap.
            // SAFETY: ends this process without running anything of worker's.
            unsafe { libc::_exit(0) };
        }
        if pid != shell || reported {
            continue;
        }
        let report = if libc::WIFEXITED(wait_status) {
            report(b'e', libc::WEXITSTATUS(wait_status))
        } else if libc::WIFSIGNALED(wait_status) {
            report(b's', libc::WTERMSIG(wait_status))
        } else {
            continue;
        };
        reported = true;
        send(status, report);
    }
}

/// Writes one report on the status pipe; a launcher gone is no reason to stop.
fn send(status: RawFd, report: [u8; 5]) {
    // SAFETY: a valid buffer of its own length.
    let _ = unsafe { libc::write(status, report.as_ptr().cast(), report.len()) };
}

/// Replaces the init's image with a fresh worker that only reaps ([`main_if_reaper`]); the
/// process, its children and its place in the namespace stay. Returns if the exec fails, and
/// the init goes on reaping as it is.
fn become_reaper() {
    let argv = [c"worker".as_ptr(), REAP_ARG.as_ptr(), std::ptr::null()];
    // SAFETY: NUL-terminated strings and a null-terminated array, all valid until the exec.
    unsafe { libc::execv(c"/proc/self/exe".as_ptr(), argv.as_ptr()) };
}

/// The first argument that makes worker a lingering init's reaper.
pub const REAP_ARG: &CStr = c"__reap";

/// Runs the reaper when worker was started as one (by an init whose shell ended while jobs
/// it left still run): reaps every child until none is left, then exits 0.
pub fn main_if_reaper() -> Option<i32> {
    if std::env::args_os().nth(1)?.as_bytes() != REAP_ARG.to_bytes() {
        return None;
    }
    loop {
        // SAFETY: a null status pointer is allowed.
        let pid = unsafe { libc::waitpid(-1, std::ptr::null_mut(), 0) };
        if pid == -1 && nix::errno::Errno::last() != nix::errno::Errno::EINTR {
            return Some(0);
        }
    }
}

/// The launcher's end: exits with the shell's status as the init reports it. A signal is
/// passed on by dying of it, so the caller sees what it would have seen of the shell itself.
/// With `spawning`, the init first says whether it started the shell; if it could not, its
/// error is returned (once the init is reaped), for the hook to fail with.
fn launcher(
    status: RawFd,
    init_writes: RawFd,
    init: libc::pid_t,
    spawning: bool,
) -> std::io::Error {
    // SAFETY: closing a descriptor this process owns.
    unsafe { libc::close(init_writes) };
    ignore_group_signals();
    let mut report = [0u8; 5];
    if spawning {
        // std's exec-status pipe stays open until then: a failure goes back on it.
        if !read_exact(status, &mut report) {
            // SAFETY: ends this process without running anything of worker's.
            unsafe { libc::_exit(SETUP_FAILED) };
        }
        if report[0] == b'x' {
            // SAFETY: a null status pointer is allowed.
            unsafe { libc::waitpid(init, std::ptr::null_mut(), 0) };
            return std::io::Error::from_raw_os_error(value(report));
        }
    }
    close_all_but(status);
    if !read_exact(status, &mut report) {
        // SAFETY: ends this process without running anything of worker's.
        unsafe { libc::_exit(SETUP_FAILED) };
    }
    reap_if_done(status, init);
    let number = value(report);
    if report[0] == b's' {
        // SAFETY: restoring the default action of one signal, then raising it.
        unsafe {
            libc::signal(number, libc::SIG_DFL);
            libc::raise(number);
        }
        // SAFETY: as above.
        unsafe { libc::_exit(128 + number) };
    }
    // SAFETY: as above.
    unsafe { libc::_exit(number) }
}

/// A signal to the command's process group is for the command: the launcher lives until the
/// command ends, so a command that traps SIGTERM keeps its grace period instead of being
/// killed the moment its launcher goes. (The sandbox's launcher does the same.)
pub fn ignore_group_signals() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: ignoring one signal.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}

/// Reaps the init once it has exited (the usual case: right after its report), which the
/// status pipe shows by its end: the init holds the only writer. An init that stays for
/// background jobs says so on the pipe instead.
fn reap_if_done(status: RawFd, init: libc::pid_t) {
    let mut ready = libc::pollfd {
        fd: status,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid `pollfd`.
    if unsafe { libc::poll(&raw mut ready, 1, INIT_EXIT_WAIT_MS) } != 1 {
        return;
    }
    let mut byte = 0u8;
    // SAFETY: a valid one-byte buffer.
    if unsafe { libc::read(status, (&raw mut byte).cast(), 1) } == 0 {
        // The init is exiting: waiting for it takes no longer than that.
        // SAFETY: a null status pointer is allowed.
        unsafe { libc::waitpid(init, std::ptr::null_mut(), 0) };
    }
}

/// What an exec would do to the signal handlers: those set go back to the default (worker's
/// own, for stops and child processes, must not run in a copy of it); ignored ones stay.
fn reset_signal_handlers() {
    for signal in 1..=libc::SIGRTMAX() {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: an all-zero `sigaction` is a valid out-value.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reading one signal's action into `current`.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &raw mut current) } != 0 {
            continue;
        }
        if current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN {
            // SAFETY: restoring one signal's default action.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}

/// Points the standard streams at `/dev/null`, for a process that writes none of a command's
/// output and must not hold its pipe, whose reader waits for the last writer: the init here
/// (the output is the shell's and its jobs'; held, the reader would wait for a job that writes
/// elsewhere, as it would not wait without containment) and the sandbox's cgroup remover.
pub(crate) fn detach_standard_streams() {
    // SAFETY: a NUL-terminated path.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
    for fd in 0..=2 {
        // SAFETY: replacing or closing one of this process's standard descriptors.
        unsafe {
            if null >= 0 {
                libc::dup2(null, fd);
            } else {
                libc::close(fd);
            }
        }
    }
    if null > 2 {
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::close(null) };
    }
}

/// Closes every descriptor above the standard three except `keep`.
pub(crate) fn close_all_but(keep: RawFd) {
    let close_range = |first: RawFd, last: libc::c_uint| -> bool {
        // SAFETY: `close_range` with no flags only closes descriptors.
        unsafe { libc::syscall(libc::SYS_close_range, first.cast_unsigned(), last, 0) == 0 }
    };
    let below = keep <= 3 || close_range(3, (keep - 1).cast_unsigned());
    if below && close_range(keep + 1, libc::c_uint::MAX) {
        return;
    }
    // A kernel before 5.9: one at a time, as far as descriptors usually go.
    for fd in 3..1024 {
        if fd != keep {
            // SAFETY: closing a descriptor, which may not be open.
            unsafe { libc::close(fd) };
        }
    }
}

/// Writes `bytes` to the file at `path` in one `write`.
fn write_file(path: &CStr, bytes: &[u8]) -> bool {
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: a valid buffer of its own length.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    // SAFETY: closing the descriptor just opened.
    unsafe { libc::close(fd) };
    usize::try_from(written) == Ok(bytes.len())
}

/// Fills `buffer` from `fd`; false at an end or an error first.
fn read_exact(fd: RawFd, buffer: &mut [u8]) -> bool {
    let mut filled = 0;
    while filled < buffer.len() {
        let rest = &mut buffer[filled..];
        // SAFETY: a valid buffer of its own length.
        let read = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match usize::try_from(read) {
            Ok(0) => return false,
            Ok(n) => filled += n,
            Err(_) if nix::errno::Errno::last() == nix::errno::Errno::EINTR => {}
            Err(_) => return false,
        }
    }
    true
}

/// `message` and the last error's description on stderr, then exit 126.
fn fail(message: &[u8]) -> ! {
    let reason = nix::errno::Errno::last().desc().as_bytes();
    for part in [message, reason, b"\n"] {
        // SAFETY: a valid buffer of its own length.
        let _ = unsafe { libc::write(libc::STDERR_FILENO, part.as_ptr().cast(), part.len()) };
    }
    // SAFETY: ends this process without running anything of worker's.
    unsafe { libc::_exit(SETUP_FAILED) }
}

/// A report on the status pipe: its kind, then a number. From the init: `p` the shell started
/// (its pid), `x` it could not be (the error number), `e` it exited (its status), `s` a signal
/// ended it (the signal); after `e` or `s`, a lone `l` when it stays for background jobs.
fn report(kind: u8, value: i32) -> [u8; 5] {
    let bytes = value.to_le_bytes();
    [kind, bytes[0], bytes[1], bytes[2], bytes[3]]
}

/// The number a [`report`] carries.
fn value(report: [u8; 5]) -> i32 {
    i32::from_le_bytes([report[1], report[2], report[3], report[4]])
}

/// What std would exec for a command, as C strings made before the fork, so that the init
/// can start the shell with `posix_spawn` instead of forking a process to return and exec.
#[derive(Debug)]
struct Exec {
    /// Own the strings `argv` and `envp` point into (a `CString`'s bytes do not move with it).
    strings: Vec<CString>,
    /// `argv` (the program first) and then `envp`, each ending with a null pointer.
    pointers: Vec<*const libc::c_char>,
    /// Where `envp` starts in `pointers`.
    envp: usize,
}

// SAFETY: the pointers point into `strings`, which is never changed or dropped before them;
// nothing is written through them.
unsafe impl Send for Exec {}
// SAFETY: as above.
unsafe impl Sync for Exec {}

impl Exec {
    /// `command`'s program, arguments and (complete) environment; `None` when the program is
    /// not a path (std would search `PATH` in the command's environment) or a string holds a
    /// NUL (std refuses the command before it forks).
    fn of(command: &std::process::Command) -> Option<Exec> {
        let program = command.get_program().as_bytes();
        if !program.contains(&b'/') {
            return None;
        }
        let mut strings = vec![CString::new(program).ok()?];
        for arg in command.get_args() {
            strings.push(CString::new(arg.as_bytes()).ok()?);
        }
        let arguments = strings.len();
        for (key, value) in command.get_envs() {
            let Some(value) = value else { continue };
            let mut entry = Vec::with_capacity(key.len() + value.len() + 1);
            entry.extend_from_slice(key.as_bytes());
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            strings.push(CString::new(entry).ok()?);
        }
        let mut pointers: Vec<*const libc::c_char> = Vec::with_capacity(strings.len() + 2);
        pointers.extend(strings[..arguments].iter().map(|s| s.as_ptr()));
        pointers.push(std::ptr::null());
        let envp = pointers.len();
        pointers.extend(strings[arguments..].iter().map(|s| s.as_ptr()));
        pointers.push(std::ptr::null());
        Some(Exec {
            strings,
            pointers,
            envp,
        })
    }

    /// Starts the program: its pid, or the error number of what failed (the exec included).
    /// Async-signal-safe in glibc: the child's stack is mapped, not allocated, and the
    /// caller waits for the exec.
    fn spawn(&self) -> Result<libc::pid_t, i32> {
        let mut pid: libc::pid_t = 0;
        // SAFETY: the path and both arrays are NUL- and null-terminated and live as long as
        // `self`; no file actions or attributes are passed.
        let failed = unsafe {
            libc::posix_spawn(
                &raw mut pid,
                self.strings[0].as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                self.pointers.as_ptr().cast::<*mut libc::c_char>(),
                self.pointers[self.envp..]
                    .as_ptr()
                    .cast::<*mut libc::c_char>(),
            )
        };
        if failed == 0 { Ok(pid) } else { Err(failed) }
    }
}

#[cfg(test)]
mod tests;
