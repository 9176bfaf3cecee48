//! `--mcp-config` files: the `.mcp.json` shape Claude Code, Cursor and others share,
//! `{"mcpServers": {"NAME": {...}}}`, with worker's own keys beside the shared ones.
//!
//! A server is `{"command", "args", "env", "cwd"}` (stdio) or `{"type": "http", "url",
//! "headers"}` (streamable HTTP). `${VAR}` and `${VAR:-default}` are expanded in `command`,
//! `args`, `env`, `url` and `headers`. Worker's keys: `required`, `startupTimeoutMs`,
//! `toolTimeoutMs`, `enabledTools` / `disabledTools` (names or globs), `network` (the hosts a
//! stdio server may reach under `--sandbox linux`, as `--allow-host` takes them), and the widely
//! used `disabled`. Keys other tools add are ignored, so one file serves them all.
//!
//! What cannot be used is decided per server, not per file: a server whose variable is unset
//! or whose transport worker lacks is `failed` with the reason, and the others still start.
//! Only a file that cannot be read or parsed is a usage error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

/// How long a server may take to start and list its tools, unless `startupTimeoutMs` says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call may take, unless `toolTimeoutMs` says (and always within the run's
/// own time).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// The name of the project file `--mcp-project` reads in `--cwd`.
pub const PROJECT_FILE: &str = ".mcp.json";

/// A configuration file that cannot be used at all.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("--mcp-config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the `.mcp.json` shape.
    #[error("--mcp-config {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
    /// A server name that cannot become a tool name prefix, or is given twice.
    #[error("--mcp-config {path}: server '{name}': {why}")]
    Name {
        /// The file.
        path: PathBuf,
        /// The server's name.
        name: String,
        /// Why it cannot be used.
        why: &'static str,
    },
}

/// How worker reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A program worker starts, speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program (looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of a scrubbed environment.
        env: Vec<(String, String)>,
        /// Where it starts; `--cwd` when not given (relative to `--cwd` when relative).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at `url`.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

/// One configured server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The name its tools are prefixed with (`mcp__NAME__TOOL`).
    pub name: String,
    /// How to reach it; `Err` says why it cannot be started (an unset variable, a transport
    /// worker does not speak).
    pub transport: Result<Transport, String>,
    /// The run cannot go on without it.
    pub required: bool,
    /// `disabled: true`: listed, never started.
    pub disabled: bool,
    /// How long it may take to start and list its tools.
    pub startup_timeout: Duration,
    /// How long one call may take.
    pub tool_timeout: Duration,
    /// Only these of its tools are offered (`None`: all).
    pub enabled_tools: Option<GlobSet>,
    /// These of its tools are never offered.
    pub disabled_tools: Option<GlobSet>,
    /// The values that are credentials: every `env` value and header value.
    pub secrets: Vec<String>,
    /// `network`: the hosts a stdio server may reach (`--allow-host`'s form), instead of the
    /// run's network rules; `None`: the run's rules.
    pub network: Option<Vec<String>>,
    /// What starts the server's process instead of the run's own runner (a sandbox runner
    /// with the server's `network`); set by the command line.
    pub runner: Option<crate::tools::Runner>,
}

impl ServerConfig {
    /// Whether the server's tool `name` (its own name, unprefixed) is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|set| set.is_match(name))
            && !self
                .disabled_tools
                .as_ref()
                .is_some_and(|set| set.is_match(name))
    }
}

#[derive(Deserialize)]
struct File {
    /// In the file's order (`serde_json` keeps it): `mcp_status` lists servers so.
    #[serde(rename = "mcpServers")]
    mcp_servers: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    disabled: bool,
    startup_timeout_ms: Option<u64>,
    tool_timeout_ms: Option<u64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    network: Option<Vec<String>>,
}

/// Reads every file in order; a server named again in a later file replaces the earlier one
/// (as a project file is overridden by a user's). `lookup` gives the variables for `${VAR}`.
pub fn load(
    paths: &[PathBuf],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let mut servers: Vec<ServerConfig> = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        for server in parse(path, &text, lookup)? {
            servers.retain(|known| known.name != server.name);
            servers.push(server);
        }
    }
    Ok(servers)
}

/// The servers of one file's text.
pub fn parse(
    path: &Path,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let parse_error = |message: String| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let file: File = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let at = err.path().to_string();
        let inner = err.into_inner();
        // A syntax error is about the text, not about a place in the shape.
        if at == "." || inner.is_syntax() || inner.is_eof() {
            parse_error(inner.to_string())
        } else {
            parse_error(format!("{at}: {inner}"))
        }
    })?;
    let mut servers = Vec::new();
    for (name, raw) in file.mcp_servers {
        let raw: RawServer = serde_path_to_error::deserialize(raw).map_err(|err| {
            let at = err.path().to_string();
            let inner = err.into_inner();
            match at.as_str() {
                "." => parse_error(format!("mcpServers.{name}: {inner}")),
                _ => parse_error(format!("mcpServers.{name}.{at}: {inner}")),
            }
        })?;
        if let Some(why) = bad_name(&name) {
            return Err(ConfigError::Name {
                path: path.to_path_buf(),
                name,
                why,
            });
        }
        let enabled_tools = globs(raw.enabled_tools.as_deref())
            .map_err(|err| parse_error(format!("server '{name}': enabledTools: {err}")))?;
        let disabled_tools = globs(raw.disabled_tools.as_deref())
            .map_err(|err| parse_error(format!("server '{name}': disabledTools: {err}")))?;
        let network = raw.network.clone();
        let mut secrets = Vec::new();
        let transport = transport(&raw, lookup, &mut secrets);
        servers.push(ServerConfig {
            name,
            transport,
            required: raw.required,
            disabled: raw.disabled,
            startup_timeout: raw
                .startup_timeout_ms
                .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_millis),
            tool_timeout: raw
                .tool_timeout_ms
                .map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_millis),
            enabled_tools,
            disabled_tools,
            secrets,
            network,
            runner: None,
        });
    }
    Ok(servers)
}

/// Why `name` cannot prefix tool names: models take `[a-zA-Z0-9_-]` in a tool name, and
/// `__` separates the server from the tool.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("a server needs a name")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Some(
            "a server name may only have letters, digits, '_' and '-' (it becomes part of tool names)",
        )
    } else if name.contains("__") {
        Some(
            "a server name may not contain '__' (it separates the server from the tool in tool names)",
        )
    } else {
        None
    }
}

fn globs(patterns: Option<&[String]>) -> Result<Option<GlobSet>, globset::Error> {
    let Some(patterns) = patterns else {
        return Ok(None);
    };
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Glob::new(pattern.trim())?);
    }
    set.build().map(Some)
}

/// The server's transport with every variable expanded; the credentials it carries are added
/// to `secrets` even when the transport turns out unusable.
fn transport(
    raw: &RawServer,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Vec<String>,
) -> Result<Transport, String> {
    let kind = raw.kind.as_deref().unwrap_or(match raw.url {
        Some(_) => "http",
        None => "stdio",
    });
    match kind {
        "stdio" => {
            let command = raw
                .command
                .as_deref()
                .ok_or("a stdio server needs \"command\"")?;
            let mut env = Vec::new();
            for (key, value) in &raw.env {
                let value = expand(value, lookup)?;
                secrets.push(value.clone());
                env.push((key.clone(), value));
            }
            Ok(Transport::Stdio {
                command: expand(command, lookup)?,
                args: raw
                    .args
                    .iter()
                    .map(|arg| expand(arg, lookup))
                    .collect::<Result<_, _>>()?,
                env,
                cwd: raw.cwd.as_ref().map(PathBuf::from),
            })
        }
        "http" | "streamable-http" | "streamableHttp" => {
            let url = raw.url.as_deref().ok_or("an http server needs \"url\"")?;
            let mut headers = Vec::new();
            for (key, value) in &raw.headers {
                let value = expand(value, lookup)?;
                secrets.push(value.clone());
                // `Bearer TOKEN`: the token alone is a secret too.
                if let Some((_, token)) = value.split_once(' ') {
                    secrets.push(token.to_string());
                }
                headers.push((key.clone(), value));
            }
            let url = expand(url, lookup)?;
            secrets.extend(crate::secrets::url_password(&url));
            Ok(Transport::Http { url, headers })
        }
        "sse" => Err(
            "type \"sse\" (the legacy HTTP+SSE transport) is not supported; use the server's streamable HTTP endpoint (type \"http\")"
                .to_string(),
        ),
        other => Err(format!(
            "unknown server type \"{other}\" (supported: stdio, http)"
        )),
    }
}

/// `${VAR}` and `${VAR:-default}` in `text`, from `lookup`; an unset variable without a
/// default is an error naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed \"${{\" in \"{text}\""));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("${{{name}}} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests;
