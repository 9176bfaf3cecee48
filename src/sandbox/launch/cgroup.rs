//! The pids cgroup a launcher makes for its command's tree, where the machine lets it, and the
//! sweep of those that launchers killed with their worker could not remove.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::signal::kill;
use nix::unistd::{ForkResult, Pid, setpgid};

/// A pids cgroup for the command's tree, where this process may make one (root with cgroup
/// v1's `pids` hierarchy, or a cgroup v2 tree that delegates `pids`): the kernel then refuses
/// any fork past the limit, however fast the tree forks. Elsewhere the init's count stands
/// alone.
pub(super) struct PidsCgroup {
    dir: PathBuf,
    /// Its `cgroup.procs`, opened before the namespaces: the kernel checks a write against the
    /// credentials it was opened with.
    procs: std::fs::File,
    /// The remover's pipe ([`start_remover`]).
    remover: Option<OwnedFd>,
}

impl PidsCgroup {
    pub(super) fn create(max: u64) -> Option<PidsCgroup> {
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let parent = membership.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "pids") {
                Some(Path::new("/sys/fs/cgroup/pids").join(path))
            } else if controllers.is_empty() {
                let dir = Path::new("/sys/fs/cgroup").join(path);
                let delegated = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"));
                delegated.then_some(dir)
            } else {
                None
            }
        })?;
        sweep_stale(&parent);
        let dir = parent.join(format!("{CGROUP_PREFIX}{}", std::process::id()));
        if let Err(err) = std::fs::create_dir(&dir) {
            // A directory named after this live process's PID is a dead launcher's: PIDs are
            // reused. Left in place, it would cost this command its cgroup.
            if err.kind() != std::io::ErrorKind::AlreadyExists {
                return None;
            }
            std::fs::remove_dir(&dir).ok()?;
            std::fs::create_dir(&dir).ok()?;
        }
        let procs = std::fs::write(dir.join("pids.max"), max.to_string()).and_then(|()| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
        });
        match procs {
            Ok(procs) => {
                let remover = start_remover(&dir);
                Some(PidsCgroup {
                    dir,
                    procs,
                    remover,
                })
            }
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// Moves the init in, before it starts anything: its whole tree is then counted. `None`
    /// (and the cgroup removed) when the kernel refuses.
    pub(super) fn admit(mut self, init: Pid) -> Option<PidsCgroup> {
        match self.procs.write_all(init.to_string().as_bytes()) {
            Ok(()) => Some(self),
            Err(_) => {
                self.remove();
                None
            }
        }
    }

    /// Removes the cgroup, once its tree is gone (the launcher was never in it, so nothing
    /// has to move out first).
    pub(super) fn remove(self) {
        let _ = std::fs::remove_dir(&self.dir);
    }

    /// [`PidsCgroup::remove`], by the remover made with the cgroup, so that the launcher can
    /// exit at once. Removing a cgroup waits for an RCU grace period of the kernel's, which
    /// after an idle moment took 8-10 ms on one machine, and the launcher's exit is what
    /// carries the command's status to worker. Without a remover, the launcher removes it.
    pub(super) fn remove_after_exit(mut self) {
        let told = self
            .remover
            .take()
            .is_some_and(|remover| std::fs::File::from(remover).write_all(&[1]).is_ok());
        if !told {
            self.remove();
        }
    }
}

/// A process that removes `dir` once the launcher says the tree is gone, made with the cgroup:
/// before the launcher's PID namespace, where no process can be made once its init has
/// ended. It holds nothing but its end of a pipe (worker reads a command's output until the
/// last writer closes it). End of file without the byte means the launcher was killed: the
/// tree may still be going, and the next launcher's sweep removes the cgroup. `None` where it
/// cannot be made: the launcher then removes the cgroup itself.
///
/// It leaves the command's process group (both sides move it, so neither order of the two
/// can leave it behind). worker forgets a command's group once nothing in it is alive, and
/// kills every group it still knows of when the run ends: a remover in the group, still in
/// its removal, kept every sandboxed command's group on that list, and the run's end then
/// signalled them all and killed the removers mid-removal. It needs no group to die with the
/// run: when its launcher is killed, its pipe ends and it exits.
fn start_remover(dir: &Path) -> Option<OwnedFd> {
    let (told, tell) = nix::unistd::pipe2(OFlag::O_CLOEXEC).ok()?;
    // SAFETY: the launcher is single-threaded here; the child closes descriptors, waits on a
    // pipe, removes one directory and exits.
    match unsafe { nix::unistd::fork() }.ok()? {
        ForkResult::Child => {
            let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
            drop(tell);
            crate::tools::contain::detach_standard_streams();
            crate::tools::contain::close_all_but(told.as_raw_fd());
            let mut byte = [0u8; 1];
            let said = loop {
                match nix::unistd::read(&told, &mut byte) {
                    Err(nix::errno::Errno::EINTR) => {}
                    other => break matches!(other, Ok(1)),
                }
            };
            if said {
                let _ = std::fs::remove_dir(dir);
            }
            std::process::exit(0)
        }
        ForkResult::Parent { child } => {
            // The child has neither exec'd nor been reaped, so this cannot fail; once the
            // child has moved itself, it changes nothing.
            let _ = setpgid(child, child);
            Some(tell)
        }
    }
}

/// The start of every launcher's cgroup name; the rest is the launcher's PID.
const CGROUP_PREFIX: &str = "worker-sandbox-";

/// Removes the cgroups of launchers that are gone. A launcher removes its own once its tree
/// has ended, but one killed with its run (worker's `SIGKILL` reaches it as its parent-death
/// signal) cannot, and its empty cgroup would stay until the machine restarts. The kernel
/// refuses to remove a cgroup that still has processes, so only empty ones go; a launcher
/// that is alive (or a PID reused by any process) keeps its own. A launcher in another PID
/// namespace sharing this cgroup tree looks gone: its cgroup goes only if it is empty, which
/// at worst leaves one of its commands with the init's count alone.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(CGROUP_PREFIX))
            .and_then(|pid| pid.parse::<i32>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        if gone(pid) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Whether no live process has this PID: none at all, or a zombie (a killed launcher whose
/// new parent has not reaped it yet).
fn gone(pid: i32) -> bool {
    if kill(Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH) {
        return true;
    }
    // The state follows the command name, which is in parentheses and may hold anything.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
    })
}
