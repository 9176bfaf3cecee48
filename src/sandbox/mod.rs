//! Where tools run.
//!
//! - `none`: tools run as worker's own user, in `--cwd`, with the network the host has. The
//!   settings agentic-pi command lines pass for a VM sandbox (`--sandbox-image`,
//!   `--allow-host`, `--no-network`) are accepted, but cannot be enforced without a sandbox,
//!   and [`Settings::warnings`] says so instead of letting a caller believe otherwise.
//! - `linux`: every command runs in its own user, mount and PID namespace under Landlock
//!   ([`launch`]), with a scrubbed environment; the file tools keep to the same rules
//!   ([`crate::tools::access`]). [`linux::preflight`] refuses a kernel that cannot do it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::events::{SandboxState, SandboxStatus};
use crate::tools::Runner;
use crate::tools::access::PathPolicy;

pub mod launch;
pub mod linux;
pub mod proxy;
mod seccomp;
mod view;

/// A sandbox backend worker can run tools in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// Tools run directly on the host, as worker's user.
    #[default]
    None,
    /// Namespaces and Landlock around every command.
    Linux,
}

/// Why sandbox settings are refused, or the `linux` backend cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// `--sandbox` names a backend agentic-pi knows and worker does not provide.
    #[error(
        "the {backend} backend is not available in worker; supported: {}",
        Backend::SUPPORTED
    )]
    UnavailableBackend {
        /// The backend asked for.
        backend: String,
    },
    /// `--sandbox` names no backend at all.
    #[error(
        "unknown sandbox backend '{backend}'; supported: {}",
        Backend::SUPPORTED
    )]
    UnknownBackend {
        /// The backend asked for.
        backend: String,
    },
    /// A `--sandbox-env` value without `=`.
    #[error("expected KEY=VAL, got '{value}'")]
    NotAnEnvPair {
        /// The value given.
        value: String,
    },
    /// A `--sandbox-env` key that is not a POSIX variable name.
    #[error("KEY must be a POSIX variable name (letters, digits, _), got '{key}'")]
    InvalidEnvKey {
        /// The key given.
        key: String,
    },
    /// The kernel cannot run the `linux` backend.
    #[error(transparent)]
    Preflight(#[from] linux::PreflightError),
    /// worker's own binary, which launches every command, cannot be found.
    #[error("--sandbox linux: cannot find worker's own binary: {source}")]
    OwnBinary {
        /// Why `current_exe` failed.
        #[source]
        source: std::io::Error,
    },
    /// An `--allow-host` entry is invalid.
    #[error("--allow-host: {source}")]
    AllowHost {
        /// The invalid entry.
        #[source]
        source: proxy::InvalidHost,
    },
}

/// Backends agentic-pi knows that worker does not provide.
const FOREIGN: &[&str] = &["gondolin"];

impl Backend {
    /// The backends `--sandbox` accepts, for messages.
    pub const SUPPORTED: &'static str = "none, linux";

    /// Parses `--sandbox`; an unsupported backend is an error naming the supported ones.
    pub fn parse(value: &str) -> Result<Backend, SettingsError> {
        match value.trim() {
            "none" => Ok(Backend::None),
            "linux" => Ok(Backend::Linux),
            other if FOREIGN.contains(&other) => Err(SettingsError::UnavailableBackend {
                backend: other.to_string(),
            }),
            other => Err(SettingsError::UnknownBackend {
                backend: other.to_string(),
            }),
        }
    }

    /// The backend as `--sandbox` spells it and `sandbox_status` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::None => "none",
            Backend::Linux => "linux",
        }
    }
}

/// `--sandbox-env KEY=VAL`: a POSIX variable name and any value.
pub fn parse_env_pair(value: &str) -> Result<(String, String), SettingsError> {
    let Some((key, val)) = value.split_once('=') else {
        return Err(SettingsError::NotAnEnvPair {
            value: value.to_string(),
        });
    };
    let mut chars = key.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(SettingsError::InvalidEnvKey {
            key: key.to_string(),
        });
    }
    Ok((key.to_string(), val.to_string()))
}

/// `--allow-host HOST[:PORT]`: a host name, `*.DOMAIN` or an address, optionally with a port,
/// in its canonical spelling ([`proxy::AllowedHost`]).
pub fn parse_host(value: &str) -> Result<String, proxy::InvalidHost> {
    proxy::AllowedHost::parse(value).map(|host| host.to_string())
}

/// The sandbox settings of a run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The backend `--sandbox` chose.
    pub backend: Backend,
    /// `--sandbox-image`: accepted for agentic-pi's command lines, unused (a warning says so).
    pub image: Option<String>,
    /// Added to every command's environment.
    pub env: Vec<(String, String)>,
    /// Hosts commands may reach (`--allow-host`, as [`parse_host`] spells them); `None`: no
    /// restriction asked for.
    pub allow_hosts: Option<Vec<String>>,
    /// `--no-network`: `linux` gives commands no network at all; `none` cannot enforce it.
    pub no_network: bool,
    /// `linux`: the most processes a command's tree may have (`WORKER_SANDBOX_MAX_PROCESSES`).
    pub max_processes: Option<u64>,
    /// `linux`: the directories `--edit-scope` names, where commands may write instead of the
    /// whole working directory (those that exist when a command starts); `None`: all of it.
    pub write_scope: Option<Vec<PathBuf>>,
    /// Set up for `linux`: what confines the tools.
    pub confinement: Option<Confinement>,
    /// `none`: each command starts in a PID namespace of its own, so nothing it starts outlives
    /// worker ([`crate::tools::contain`]). `None`: commands start directly.
    pub contain: Option<crate::tools::contain::Containment>,
}

/// How the `linux` backend confines the tools of a run.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// Starts every command through the launcher (namespaces and Landlock).
    pub runner: Runner,
    /// The same rules for the in-process file tools: the working directory writable, credentials
    /// hidden.
    pub policy: Arc<PathPolicy>,
    /// Preflight and setup, in milliseconds.
    pub create_ms: f64,
    /// Variables commands get (names only).
    pub env_keys: Vec<String>,
}

impl Confinement {
    /// Checks the kernel, then prepares the runner and the file tools' policy: `cwd` is
    /// writable, `hidden` unreadable. The error says what the kernel lacks.
    pub fn prepare(
        settings: &Settings,
        cwd: &Path,
        hidden: Vec<PathBuf>,
        assume_missing: Option<&str>,
    ) -> Result<Confinement, SettingsError> {
        let started = std::time::Instant::now();
        linux::preflight(assume_missing)?;
        let exe = std::env::current_exe().map_err(|source| SettingsError::OwnBinary { source })?;
        // The file tools write only in the working directory (commands also have a private
        // temp directory, which they name through TMPDIR).
        let policy = Arc::new(PathPolicy::new(&[cwd.to_path_buf()], &hidden));
        let proxy_vars: &[&str] = if settings.allow_hosts.is_some() {
            linux::PROXY_VARS
        } else {
            &[]
        };
        let mut env_keys: Vec<String> = linux::BASE_ENV
            .iter()
            .filter(|key| std::env::var_os(key).is_some())
            .chain(proxy_vars)
            .map(std::string::ToString::to_string)
            .chain(["TMPDIR".to_string()])
            .chain(settings.env.iter().map(|(key, _)| key.clone()))
            .collect();
        env_keys.sort();
        env_keys.dedup();
        let allow_hosts = settings
            .allow_hosts
            .as_deref()
            .map(proxy::Allowlist::parse)
            .transpose()
            .map_err(|source| SettingsError::AllowHost { source })?;
        let mut runner = linux::LinuxRunner::new(exe, hidden, settings.no_network, allow_hosts);
        if let Some(max) = settings.max_processes {
            runner.max_processes = max;
        }
        runner.write_scope.clone_from(&settings.write_scope);
        let runner = Runner(Arc::new(runner));
        Ok(Confinement {
            runner,
            policy,
            create_ms: (started.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0,
            env_keys,
        })
    }
}

/// Credentials commands must not read: the usual ones under `home`, plus `extra`
/// (`--auth-file`, the GitHub App key, `--sandbox-hide`).
pub fn hidden_paths(home: Option<&Path>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut hidden: Vec<PathBuf> = home
        .map(|home| {
            linux::HIDDEN_IN_HOME
                .iter()
                .map(|rel| home.join(rel))
                .collect()
        })
        .unwrap_or_default();
    hidden.extend(extra.iter().cloned());
    hidden
}

impl Settings {
    /// The `sandbox_status` line.
    pub fn status(&self, cwd: &Path) -> SandboxStatus {
        let confined = self.confinement.as_ref();
        SandboxStatus {
            backend: self.backend.name(),
            status: SandboxState {
                backend: self.backend.name(),
                cwd: cwd.display().to_string(),
                network: match (confined, self.no_network, &self.allow_hosts) {
                    (Some(_), true, _) => "none",
                    (Some(_), false, Some(_)) => "proxy",
                    _ => "host",
                },
                create_ms: confined.map(|c| c.create_ms),
                env_keys: confined.map(|c| c.env_keys.clone()),
                allowed_http_hosts: confined.and(self.allow_hosts.clone()),
            },
        }
    }

    /// What was asked for and cannot be done with this backend.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.backend == Backend::Linux {
            return warnings;
        }
        if self.no_network {
            warnings.push(
                "--no-network has no effect with --sandbox none: commands have the host's network"
                    .to_string(),
            );
        }
        if self.allow_hosts.is_some() {
            warnings.push(
                "--allow-host has no effect with --sandbox none: commands have the host's network"
                    .to_string(),
            );
        }
        if self.image.is_some() {
            warnings.push("--sandbox-image is not used by --sandbox none".to_string());
        }
        warnings
    }
}

#[cfg(test)]
mod tests;
