//! `--sandbox linux` on worker's side: the preflight, and the runner that starts every
//! command through the launcher ([`super::launch`]).
//!
//! The preflight checks what the launcher needs before the run prints anything: user
//! namespaces (with mount and PID namespaces inside them) and Landlock. A kernel without
//! them is exit 2 with a message saying which is missing, never a silent run without a
//! sandbox. `WORKER_SANDBOX_ASSUME_MISSING=userns|landlock` makes the preflight report that
//! feature missing (the test seam for machines that have both).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use super::launch::{LAUNCH_ARG, SPEC_VAR, Spec};
use super::proxy::Allowlist;
use crate::tools::{CommandLine, CommandRunner, Standby};

/// The test seam: a feature to report missing.
pub const ASSUME_MISSING_VAR: &str = "WORKER_SANDBOX_ASSUME_MISSING";

/// What commands see of worker's environment (the list lives with the tools, which scrub a
/// long-lived process's environment the same way).
pub use crate::tools::BASE_ENV;

/// Set to the proxy under `--allow-host`.
pub const PROXY_VARS: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];

/// The most processes a command's tree may have at once, unless `WORKER_SANDBOX_MAX_PROCESSES`
/// says otherwise.
pub const MAX_PROCESSES: u64 = 512;
/// The variable that overrides [`MAX_PROCESSES`].
pub const MAX_PROCESSES_VAR: &str = "WORKER_SANDBOX_MAX_PROCESSES";
/// The largest file a command may write.
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// Credentials under `$HOME` that commands cannot read.
pub const HIDDEN_IN_HOME: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gh",
    ".netrc",
    ".pi/agent/auth.json",
    ".docker",
    ".git-credentials",
    ".config/git/credentials",
    ".gnupg",
    ".kube",
];

/// What the kernel lacks for `--sandbox linux`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PreflightError {
    /// Unprivileged user namespaces (with mount and PID namespaces inside them) are not allowed.
    #[error(
        "--sandbox linux needs unprivileged user namespaces (with mount and PID namespaces), which this kernel does not allow (see /proc/sys/kernel/unprivileged_userns_clone, /proc/sys/user/max_user_namespaces)"
    )]
    UserNamespaces,
    /// Landlock is not available.
    #[error(
        "--sandbox linux needs Landlock (ABI 1 or later, Linux 5.13+ with landlock in the lsm= list), which this kernel does not provide"
    )]
    Landlock,
}

/// Checks that the kernel gives the launcher what it needs; the error names what is missing.
pub fn preflight(assume_missing: Option<&str>) -> Result<(), PreflightError> {
    if assume_missing == Some("userns") || !user_namespaces() {
        return Err(PreflightError::UserNamespaces);
    }
    let abi = if assume_missing == Some("landlock") {
        0
    } else {
        landlock_abi()
    };
    if abi < 1 {
        return Err(PreflightError::Landlock);
    }
    Ok(())
}

/// Whether a child can create the namespaces the launcher uses.
fn user_namespaces() -> bool {
    let mut probe = Command::new(crate::tools::POSIX_SHELL);
    probe
        .args(["-c", "exit 0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: `unshare` is async-signal-safe and touches nothing in the parent.
    unsafe {
        probe.pre_exec(|| {
            use nix::sched::{CloneFlags, unshare};
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
                .map_err(std::io::Error::from)
        });
    }
    probe.status().is_ok_and(|status| status.success())
}

/// The kernel's Landlock ABI version, 0 without Landlock.
fn landlock_abi() -> i64 {
    const CREATE_RULESET_VERSION: nix::libc::c_uint = 1;
    // SAFETY: the documented version query: no ruleset, size 0.
    let abi = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_landlock_create_ruleset,
            std::ptr::null::<nix::libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    abi.max(0)
}

/// Starts commands through the launcher.
pub struct LinuxRunner {
    /// worker's own binary: every command starts as `worker __sandbox`, the launcher.
    pub exe: PathBuf,
    /// Paths commands cannot read (credentials).
    pub hidden: Vec<PathBuf>,
    /// `--no-network`: commands get no network at all.
    pub no_network: bool,
    /// `--allow-host`: the hosts the egress proxy admits (commands get no other network).
    pub allow_hosts: Option<Arc<Allowlist>>,
    /// The proxy's socket, once started (on the first command).
    pub proxy: OnceLock<Option<PathBuf>>,
    /// The most processes a command's tree may have at once.
    pub max_processes: u64,
    /// `--edit-scope`'s directories: where commands may write instead of the working
    /// directory; `None`: all of it.
    pub write_scope: Option<Vec<PathBuf>>,
    /// The proxy socket's file name: one per runner, so a runner with other hosts (an MCP
    /// server's network allowance) has a proxy of its own in the same run directory.
    socket_name: String,
}

/// Runners made so far in this process (each names its proxy socket after its number).
static RUNNERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl LinuxRunner {
    /// A runner with no proxy started yet and the default process cap ([`MAX_PROCESSES`]).
    pub fn new(
        exe: PathBuf,
        hidden: Vec<PathBuf>,
        no_network: bool,
        allow_hosts: Option<Allowlist>,
    ) -> Self {
        LinuxRunner {
            exe,
            hidden,
            no_network,
            allow_hosts: allow_hosts.map(Arc::new),
            proxy: OnceLock::new(),
            max_processes: MAX_PROCESSES,
            write_scope: None,
            socket_name: match RUNNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
                0 => "proxy.sock".to_string(),
                n => format!("proxy-{n}.sock"),
            },
        }
    }

    /// The proxy's socket, in the run's own directory (which commands cannot write). `None`
    /// if it could not start: commands then have no way out at all.
    fn proxy_socket(&self, scratch: &Path) -> Option<PathBuf> {
        let hosts = self.allow_hosts.as_ref()?;
        self.proxy
            .get_or_init(|| {
                let socket = scratch.parent().unwrap_or(scratch).join(&self.socket_name);
                super::proxy::start(&socket, hosts.clone()).ok()
            })
            .clone()
    }
}

impl LinuxRunner {
    /// The launcher for `line`: `worker __sandbox SHELL -c COMMAND`, or, without `command`,
    /// a launcher that reads it from stdin once it is set up, with `line.env` (which changes
    /// from call to call: the model request's id). `writable` is [`LinuxRunner::writable`]'s
    /// list for `line`.
    fn launcher(
        &self,
        line: &CommandLine<'_>,
        command: Option<&str>,
        writable: &[PathBuf],
    ) -> Command {
        let CommandLine {
            shell,
            cwd,
            env,
            scratch,
            ..
        } = *line;
        let proxied = self.allow_hosts.is_some();
        let spec = Spec {
            writable: writable.to_vec(),
            temp_dir: scratch.to_path_buf(),
            run_dir: scratch.parent().map(Path::to_path_buf),
            hidden: self.hidden.clone(),
            no_network: self.no_network || proxied,
            proxy_socket: self.proxy_socket(scratch),
            max_processes: self.max_processes,
            max_file_bytes: MAX_FILE_BYTES,
        };
        let mut cmd = Command::new(&self.exe);
        cmd.arg(LAUNCH_ARG);
        if let Some(command) = command {
            cmd.arg(shell).arg("-c").arg(command);
        }
        cmd.current_dir(cwd).env_clear();
        for key in BASE_ENV {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
        cmd.env("TMPDIR", scratch);
        if proxied {
            let proxy = format!("http://127.0.0.1:{}", super::proxy::INSIDE_PORT);
            for key in PROXY_VARS {
                cmd.env(key, &proxy);
            }
        }
        for (key, value) in env.iter().filter(|_| command.is_some()) {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        cmd.env(SPEC_VAR, serde_json::to_string(&spec).unwrap_or_default());
        cmd
    }

    /// Where commands may write. With --edit-scope naming directories, only those in the
    /// working directory: the ones that exist now, resolved, and still inside it (a symlinked
    /// `src` cannot open a door elsewhere). The private temp directory always.
    fn writable(&self, cwd: &Path, scratch: &Path) -> Vec<PathBuf> {
        let mut writable: Vec<PathBuf> = match &self.write_scope {
            Some(dirs) => {
                let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
                dirs.iter()
                    .filter_map(|dir| dir.canonicalize().ok())
                    .filter(|real| real.starts_with(&root) && real.is_dir())
                    .collect()
            }
            None => vec![cwd.to_path_buf()],
        };
        writable.push(scratch.to_path_buf());
        writable
    }
}

impl CommandRunner for LinuxRunner {
    fn command(&self, line: &CommandLine<'_>) -> Command {
        let writable = self.writable(line.cwd, line.scratch);
        self.launcher(line, Some(line.command), &writable)
    }

    /// A launcher that builds the view at once and waits for its command. Its fingerprint
    /// holds everything the view is built from: the launcher's arguments, directory and
    /// environment (the spec with it), and which file each hidden path and writable root is
    /// now. A credential that appears later, a writable root replaced, or an --edit-scope
    /// directory made since, each makes a command's fingerprint differ from that of the
    /// launcher set up before, which is then not used. (The init checks the hidden paths once
    /// more when the command comes: see [`super::launch`].)
    fn standby(&self, line: &CommandLine<'_>) -> Option<Standby> {
        // Worked out once: the spec and the fingerprint see the same roots.
        let writable = self.writable(line.cwd, line.scratch);
        let command = self.launcher(line, None, &writable);
        let mut fingerprint = Vec::new();
        let mut add = |bytes: &[u8]| {
            fingerprint.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            fingerprint.extend_from_slice(bytes);
        };
        add(command.get_program().as_encoded_bytes());
        for arg in command.get_args() {
            add(arg.as_encoded_bytes());
        }
        add(command
            .get_current_dir()
            .map_or(&[][..], |dir| dir.as_os_str().as_encoded_bytes()));
        for (key, value) in command.get_envs() {
            add(key.as_encoded_bytes());
            add(value.map_or(&[][..], std::ffi::OsStr::as_encoded_bytes));
        }
        for path in self
            .hidden
            .iter()
            .chain(&writable)
            .chain([&line.cwd.to_path_buf()])
        {
            add(&file_identity(path));
        }
        Some(Standby {
            command,
            fingerprint,
        })
    }
}

/// Which file `path` leads to now (device, inode, type), or that it leads nowhere.
fn file_identity(path: &Path) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map_or_else(
        |_| Vec::new(),
        |meta| {
            [meta.dev(), meta.ino(), u64::from(meta.mode())]
                .iter()
                .flat_map(|n| n.to_le_bytes())
                .collect()
        },
    )
}
