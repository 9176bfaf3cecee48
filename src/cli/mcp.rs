//! `--mcp-config` and `--mcp-project` for a run, and `worker mcp check`, which starts the
//! same servers the same way (sandbox included) without a model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Env, RunConfig};
use crate::mcp::{Mcp, ServerConfig, TOOL_PREFIX};
use crate::secrets::Secrets;
use crate::tools::{BashSettings, ToolContext};

use super::args::{McpCheckArgs, SandboxArgs};
use super::{RunArgs, UsageError};

/// Adds the MCP extension when the run has servers: the `--tools` entries that name MCP tools
/// (`mcp__…`) and those of the `--profile` (`profile`) narrow what it offers, and every
/// credential in the configuration is a secret.
pub(super) fn add_mcp(
    args: &RunArgs,
    env: &dyn Env,
    config: &mut RunConfig,
    warnings: &mut Vec<String>,
    profile: Option<Vec<String>>,
) -> Result<(), UsageError> {
    let files = config_files(&args.mcp_config, args.mcp_project, &config.cwd, warnings);
    if files.is_empty() {
        return Ok(());
    }
    let mut servers = load(&files, env, &config.secrets)?;
    network_runners(
        &mut servers,
        &args.isolation,
        args.auth_file.as_deref(),
        env,
        &config.sandbox,
        &config.cwd,
        warnings,
    )?;
    let allow = config.tools.allow.as_mut().map(|allow| {
        let (mcp, own): (Vec<String>, Vec<String>) = allow
            .drain(..)
            .partition(|name| name.starts_with(TOOL_PREFIX));
        *allow = own;
        mcp
    });
    let filters: Vec<Vec<String>> = allow.into_iter().chain(profile).collect();
    config.extensions.push(Mcp::new(servers, &filters)?);
    Ok(())
}

/// The project's `.mcp.json` (with `--mcp-project`) and then the `--mcp-config` files, so a
/// user's file overrides the project's.
fn config_files(
    given: &[PathBuf],
    project: bool,
    cwd: &Path,
    warnings: &mut Vec<String>,
) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if project {
        let path = cwd.join(crate::mcp::config::PROJECT_FILE);
        if path.is_file() {
            files.push(path);
        } else {
            warnings.push(format!(
                "--mcp-project: {} does not exist; no project servers",
                path.display()
            ));
        }
    }
    files.extend(given.iter().cloned());
    files
}

/// The servers of `files`, their credentials registered with `secrets`.
fn load(
    files: &[PathBuf],
    env: &dyn Env,
    secrets: &Secrets,
) -> Result<Vec<ServerConfig>, UsageError> {
    let servers = crate::mcp::config::load(files, &|name| env.get(name))?;
    for server in &servers {
        for secret in &server.secrets {
            secrets.add(secret);
        }
    }
    Ok(servers)
}

/// `worker mcp check`, set up: the servers and how to start them.
pub struct McpCheck {
    /// Problems found while setting up, for stderr.
    pub warnings: Vec<String>,
    mcp: Arc<Mcp>,
    ctx: ToolContext,
    secrets: Secrets,
}

/// What `worker mcp check` found: one JSON line per server, redacted, and whether every
/// required server is ready.
pub struct McpCheckOutcome {
    /// One line per server.
    pub lines: Vec<String>,
    /// Every required server is ready.
    pub ready: bool,
    /// Problems worth a line on stderr.
    pub warnings: Vec<String>,
}

impl McpCheck {
    /// Reads the configuration and sets up the sandbox as `worker run` would.
    pub fn new(args: &McpCheckArgs, env: &dyn Env, secrets: &Secrets) -> Result<Self, UsageError> {
        let cwd = super::resolve_cwd(args.cwd.as_deref())?;
        let mut warnings = Vec::new();
        let files = config_files(&args.mcp_config, args.mcp_project, &cwd, &mut warnings);
        if files.is_empty() {
            return Err(UsageError::McpNothingToCheck);
        }
        let mut servers = load(&files, env, secrets)?;
        let bash = isolation(&args.isolation, env, &cwd, secrets)?;
        let settings = super::sandbox::sandbox_settings(&args.isolation);
        network_runners(
            &mut servers,
            &args.isolation,
            None,
            env,
            &settings,
            &cwd,
            &mut warnings,
        )?;
        Ok(McpCheck {
            warnings,
            mcp: Mcp::new(servers, &[])?,
            ctx: ToolContext {
                cwd: Arc::new(cwd),
                call_id: Arc::from(""),
                // No run: never stopped, no budget, no approvals, no child runs.
                run: crate::tools::RunServices::detached(),
                progress: Arc::new(|_| {}),
                files: crate::tools::FileLocks::default(),
                leftovers: crate::tools::Leftovers::default(),
                bash,
                policy: None,
                edit_scope: None,
            },
            secrets: secrets.clone(),
        })
    }

    /// Starts every server, waits for each to settle, and stops them all.
    pub async fn run(self) -> McpCheckOutcome {
        self.mcp.start_all(&self.ctx);
        self.mcp.wait_all().await;
        let status = self.mcp.status(true);
        self.mcp.stop_all().await;
        self.ctx.leftovers.clean_up();
        let ready = status.servers.iter().all(|server| {
            !server.required || server.status == crate::events::McpServerState::Ready
        });
        let mut warnings = self.warnings.clone();
        let lines = status
            .servers
            .iter()
            .map(|server| {
                if let Some(error) = &server.error {
                    warnings.push(format!("MCP server '{}': {error}", server.name));
                }
                let line = serde_json::to_string(server).unwrap_or_default();
                self.secrets.redact(&line).into_owned()
            })
            .collect();
        let warnings = warnings
            .iter()
            .map(|warning| self.secrets.redact(warning).into_owned())
            .collect();
        McpCheckOutcome {
            lines,
            ready,
            warnings,
        }
    }
}

/// A runner of its own for each stdio server with a `network` allowance: under
/// `--sandbox linux`, the run's sandbox with exactly those hosts (and the run's `--allow-host`
/// ones) reachable through a proxy of its own; an empty allowance is no network. Under
/// `--sandbox none` it cannot be enforced, and a warning says so.
fn network_runners(
    servers: &mut [ServerConfig],
    isolation: &SandboxArgs,
    auth_file: Option<&Path>,
    env: &dyn Env,
    run: &crate::sandbox::Settings,
    cwd: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), UsageError> {
    for server in servers.iter_mut() {
        let Some(hosts) = &server.network else {
            continue;
        };
        let mut allowed = isolation.allow_host.clone();
        for host in hosts {
            let host =
                crate::sandbox::parse_host(host).map_err(|source| UsageError::McpNetwork {
                    server: server.name.clone(),
                    source,
                })?;
            if !allowed.contains(&host) {
                allowed.push(host);
            }
        }
        if isolation.backend != crate::sandbox::Backend::Linux {
            warnings.push(format!(
                "MCP server '{}': \"network\" has no effect with --sandbox none: the server has the host's network",
                server.name
            ));
            continue;
        }
        let own = SandboxArgs {
            no_network: allowed.is_empty(),
            allow_host: allowed,
            ..isolation.clone()
        };
        let settings = crate::sandbox::Settings {
            write_scope: run.write_scope.clone(),
            ..super::sandbox::sandbox_settings(&own)
        };
        let confinement = super::sandbox::confine(&own, auth_file, env, &settings, cwd)?;
        server.runner = Some(confinement.runner);
    }
    Ok(())
}

/// How `worker run` with these sandbox flags starts processes.
fn isolation(
    args: &SandboxArgs,
    env: &dyn Env,
    cwd: &Path,
    secrets: &Secrets,
) -> Result<BashSettings, UsageError> {
    let settings = super::sandbox::sandbox_settings(args);
    let mut bash = BashSettings {
        secrets: secrets.clone(),
        ..BashSettings::default()
    };
    if args.backend == crate::sandbox::Backend::Linux {
        let confinement = super::sandbox::confine(args, None, env, &settings, cwd)?;
        bash.runner = Some(confinement.runner);
    } else {
        bash.contain = Some(crate::tools::contain::Containment::new());
    }
    Ok(bash)
}
