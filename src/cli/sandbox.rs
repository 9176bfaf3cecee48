//! `--sandbox` from the command line: the settings every backend shares, and setting up
//! `linux` (or saying why it cannot be).

use std::path::PathBuf;

use crate::config::Env;

use super::UsageError;
use super::args::SandboxArgs;

/// The sandbox settings every backend shares, from the flags.
pub(super) fn sandbox_settings(args: &SandboxArgs) -> crate::sandbox::Settings {
    crate::sandbox::Settings {
        backend: args.backend,
        image: args.sandbox_image.clone(),
        env: args.sandbox_env.clone(),
        allow_hosts: (!args.allow_host.is_empty()).then(|| args.allow_host.clone()),
        no_network: args.no_network,
        max_processes: None,
        write_scope: None,
        confinement: None,
        contain: None,
    }
}

/// Sets up `--sandbox linux`, or says why it cannot be (a usage error: exit 2, before any
/// event).
pub(super) fn confine(
    args: &SandboxArgs,
    auth_file: Option<&std::path::Path>,
    env: &dyn Env,
    settings: &crate::sandbox::Settings,
    cwd: &std::path::Path,
) -> Result<crate::sandbox::Confinement, UsageError> {
    if args.sandbox_image.is_some() {
        return Err(UsageError::SandboxImage);
    }
    if !args.allow_host.is_empty() && args.no_network {
        return Err(UsageError::AllowHostWithoutNetwork);
    }
    let max_processes = match env.get(crate::sandbox::linux::MAX_PROCESSES_VAR) {
        None => None,
        Some(raw) => Some(
            raw.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= 8)
                .ok_or_else(|| UsageError::MaxProcesses { value: raw.clone() })?,
        ),
    };
    let settings = crate::sandbox::Settings {
        max_processes,
        ..settings.clone()
    };
    let mut extra: Vec<PathBuf> = args.sandbox_hide.clone();
    extra.extend(auth_file.map(std::path::Path::to_path_buf));
    extra.extend(env.get("GITHUB_APP_PRIVATE_KEY_PATH").map(PathBuf::from));
    // worker's own git credential store (written for the GitHub tools' clones and pushes).
    extra.push(crate::github::git::credentials_path(env));
    let hidden =
        crate::sandbox::hidden_paths(env.get("HOME").map(PathBuf::from).as_deref(), &extra);
    crate::sandbox::Confinement::prepare(
        &settings,
        cwd,
        hidden,
        env.get(crate::sandbox::linux::ASSUME_MISSING_VAR)
            .as_deref(),
    )
    .map_err(UsageError::from)
}
