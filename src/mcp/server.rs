//! One MCP server: started (a process in the run's sandbox, or a streamable HTTP endpoint),
//! initialized and listed within its startup timeout, then watched: a changed tool list is
//! listed again before the next model request, and a server that dies takes its tools with it.
//!
//! A server's state changes in one place ([`Server::settle`]), which bumps the shared
//! generation so the extension knows to hand the run a new tool list and print `mcp_status`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceExt};
use tokio::io::AsyncReadExt;

use super::config::{ServerConfig, Transport};
use crate::events::{McpServerState, McpServerStatus};
use crate::sync::LockExt;
use crate::tools::ToolContext;

/// The most of a server's stderr kept for the error that says why it died.
const STDERR_TAIL: usize = 2048;
/// How long a server has to exit once its input is closed at the end of a run, before its
/// group is killed.
pub(super) const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Called after a server's state changed.
pub(super) type OnChange = Arc<dyn Fn() + Send + Sync>;

/// What a server is to the run.
pub(super) struct Server {
    pub config: ServerConfig,
    state: Mutex<State>,
    /// The connection, once initialized.
    connection: Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// A stdio server's process, once started.
    process: Mutex<Option<Process>>,
    /// The server said its tools changed; cleared when they are listed again.
    list_changed: Arc<AtomicBool>,
    /// Shared by every server of the run: bumped whenever one's state or tools change.
    generation: Arc<AtomicU64>,
    /// When the run started (what `ms` counts from).
    epoch: Instant,
    /// The end of what the process wrote to stderr.
    stderr: Arc<Mutex<Vec<u8>>>,
    changed: OnChange,
    /// The run is stopping it: its exit is no news.
    stopping: AtomicBool,
}

struct State {
    status: McpServerState,
    tools: Vec<rmcp::model::Tool>,
    error: Option<String>,
    ms: u64,
}

/// A stdio server's process, as the run ends it.
struct Process {
    group: nix::unistd::Pid,
    /// Turns true when the process has exited.
    ended: tokio::sync::watch::Receiver<bool>,
    /// Reads its stderr until it closes.
    stderr: Option<tokio::task::JoinHandle<()>>,
    /// The run's leftovers, whose watchdog knows the group.
    leftovers: crate::tools::Leftovers,
}

/// Worker's side of the connection: it names itself and hears that the tools changed.
#[derive(Clone)]
struct Handler {
    list_changed: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("worker", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.list_changed.store(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
        std::future::ready(())
    }
}

impl Server {
    pub(super) fn new(
        config: ServerConfig,
        generation: Arc<AtomicU64>,
        epoch: Instant,
        changed: OnChange,
    ) -> Self {
        // A server that cannot be started is known to have failed from the start.
        let (status, error) = match (&config.transport, config.disabled) {
            (_, true) => (McpServerState::Disabled, None),
            (Err(why), false) => (McpServerState::Failed, Some(why.clone())),
            (Ok(_), false) => (McpServerState::Starting, None),
        };
        Server {
            config,
            state: Mutex::new(State {
                status,
                tools: Vec::new(),
                error,
                ms: 0,
            }),
            connection: Mutex::new(None),
            process: Mutex::new(None),
            list_changed: Arc::new(AtomicBool::new(false)),
            generation,
            epoch,
            stderr: Arc::default(),
            changed,
            stopping: AtomicBool::new(false),
        }
    }

    /// The server's line in `mcp_status`; `offered`: the names of the tools the run offers
    /// of it, listed when `with_names`.
    pub(super) fn status(&self, offered: Vec<String>, with_names: bool) -> McpServerStatus {
        let state = self.state.lock_or_recover();
        McpServerStatus {
            name: self.config.name.clone(),
            status: state.status,
            required: self.config.required,
            tools: offered.len() as u32,
            ms: match state.status {
                McpServerState::Starting => self.epoch.elapsed().as_millis() as u64,
                _ => state.ms,
            },
            error: state.error.clone(),
            tool_names: with_names.then_some(offered),
        }
    }

    pub(super) fn state(&self) -> McpServerState {
        self.state.lock_or_recover().status
    }

    /// The tools it offers now (none unless it is ready).
    pub(super) fn tools(&self) -> Vec<rmcp::model::Tool> {
        let state = self.state.lock_or_recover();
        if state.status != McpServerState::Ready {
            return Vec::new();
        }
        state
            .tools
            .iter()
            .filter(|tool| self.config.offers(&tool.name))
            .cloned()
            .collect()
    }

    /// The connection to call tools over; `Err` says why there is none.
    pub(super) fn peer(&self) -> Result<Peer<RoleClient>, String> {
        if let Some(service) = self.connection.lock_or_recover().as_ref() {
            return Ok(service.peer().clone());
        }
        let state = self.state.lock_or_recover();
        Err(match (&state.error, state.status) {
            (Some(error), _) => error.clone(),
            (None, McpServerState::Starting) => "it is still starting".to_string(),
            (None, McpServerState::Disabled) => "it is disabled".to_string(),
            (None, _) => "it is not connected".to_string(),
        })
    }

    /// Starts, initializes and lists the server within its startup timeout; the state says
    /// how it went. `ctx`: how the run starts processes (sandbox, leftovers).
    pub(super) async fn start(self: &Arc<Self>, ctx: &ToolContext) {
        if self.state() != McpServerState::Starting {
            return;
        }
        let timeout = self.config.startup_timeout;
        let started = tokio::time::timeout(timeout, self.connect(ctx)).await;
        let outcome = match started {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(error)) => Err((McpServerState::Failed, error)),
            Err(_) => Err((
                McpServerState::Timeout,
                format!(
                    "not ready within {} ms (startupTimeoutMs)",
                    timeout.as_millis()
                ),
            )),
        };
        match outcome {
            Ok(tools) => self.settle(McpServerState::Ready, Some(tools), None),
            Err((status, error)) => {
                // Nothing to wind down: the server never started serving.
                self.stop(Duration::ZERO).await;
                let error = self.with_stderr(error);
                self.settle(status, None, Some(error));
            }
        }
    }

    /// Connects and lists the tools.
    async fn connect(
        self: &Arc<Self>,
        ctx: &ToolContext,
    ) -> Result<Vec<rmcp::model::Tool>, String> {
        let transport = self.config.transport.clone()?;
        let handler = Handler {
            list_changed: self.list_changed.clone(),
            generation: self.generation.clone(),
        };
        let service = match transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut ctx = ctx.clone();
                if let Some(runner) = &self.config.runner {
                    ctx.bash.runner = Some(runner.clone());
                }
                let (mut child, group) = spawn(&command, &args, &env, cwd.as_deref(), &ctx).await?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err("the server's pipes could not be opened".to_string());
                };
                let stderr = child
                    .stderr
                    .take()
                    .map(|stderr| tokio::spawn(keep_tail(stderr, self.stderr.clone())));
                let (ended, ended_watch) = tokio::sync::watch::channel(false);
                let server = Arc::downgrade(self);
                tokio::spawn(async move {
                    let status = child.wait().await;
                    ended.send_replace(true);
                    if let Some(server) = server.upgrade() {
                        server.exited(status.ok());
                    }
                });
                *self.process.lock_or_recover() = Some(Process {
                    group,
                    ended: ended_watch,
                    stderr,
                    leftovers: ctx.leftovers.clone(),
                });
                handler
                    .serve((stdout, stdin))
                    .await
                    .map_err(|err| initialize_failed(&err))?
            }
            Transport::Http { url, headers } => handler
                .serve(http_transport(&url, &headers)?)
                .await
                .map_err(|err| initialize_failed(&err))?,
        };
        let peer = service.peer().clone();
        *self.connection.lock_or_recover() = Some(service);
        peer.list_all_tools()
            .await
            .map_err(|err| format!("tools/list failed: {}", causes(&err)))
    }

    /// The process ended: a ready server is gone, with its tools.
    fn exited(&self, status: Option<std::process::ExitStatus>) {
        let how = match status.map(|status| (status.code(), status)) {
            Some((Some(code), _)) => format!("the server exited with status {code}"),
            Some((None, status)) => format!("the server was killed ({status})"),
            None => "the server exited".to_string(),
        };
        self.gone(how);
    }

    /// The connection is lost (the process ended, or the transport closed under a call).
    pub(super) fn gone(&self, how: String) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let status = self.state();
        if !matches!(status, McpServerState::Ready | McpServerState::Starting) {
            return;
        }
        self.connection.lock_or_recover().take();
        let error = self.with_stderr(how);
        if status == McpServerState::Ready {
            self.settle(McpServerState::Failed, None, Some(error));
        }
    }

    /// Lists the tools again if the server said they changed; `true` when it did.
    pub(super) async fn relist(&self) -> bool {
        if !self.list_changed.swap(false, Ordering::SeqCst) {
            return false;
        }
        let Ok(peer) = self.peer() else {
            return false;
        };
        match tokio::time::timeout(self.config.startup_timeout, peer.list_all_tools()).await {
            Ok(Ok(tools)) => {
                self.settle(McpServerState::Ready, Some(tools), None);
                true
            }
            // Keeps the tools it had: a failed re-list is not a dead server.
            _ => false,
        }
    }

    /// The one place the state changes.
    fn settle(
        &self,
        status: McpServerState,
        tools: Option<Vec<rmcp::model::Tool>>,
        error: Option<String>,
    ) {
        {
            let mut state = self.state.lock_or_recover();
            if state.status != status || state.status != McpServerState::Ready {
                state.ms = self.epoch.elapsed().as_millis() as u64;
            }
            state.status = status;
            state.error = error;
            state.tools = tools.unwrap_or_default();
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
        (self.changed)();
    }

    /// `message`, with the end of the server's stderr when it wrote any.
    fn with_stderr(&self, message: String) -> String {
        let tail = self.stderr.lock_or_recover();
        let text = String::from_utf8_lossy(&tail);
        match text.trim().lines().last() {
            Some(line) if !line.trim().is_empty() => format!("{message}; stderr: {}", line.trim()),
            _ => message,
        }
    }

    /// The run is ending: what happens to the server from now on is the run's doing.
    pub(super) fn ending(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Closes the connection and ends the process: its input closed, `grace` for it to act
    /// on what it was sent last (a cancellation) and exit, then its group killed. Its stderr
    /// is read to the end, for the error that says why it stopped.
    pub(super) async fn stop(&self, grace: Duration) {
        self.ending();
        let connection = self.connection.lock_or_recover().take();
        if let Some(mut service) = connection {
            let _ = service.close_with_timeout(grace).await;
        }
        let process = self.process.lock_or_recover().take();
        let Some(mut process) = process else {
            return;
        };
        let _ = tokio::time::timeout(grace, process.ended.wait_for(|ended| *ended)).await;
        let _ = nix::sys::signal::killpg(process.group, nix::sys::signal::Signal::SIGKILL);
        process.leftovers.forget_if_gone(process.group);
        if let Some(reader) = process.stderr.take() {
            let _ = tokio::time::timeout(CLOSE_GRACE, reader).await;
        }
    }
}

/// An error with every cause it carries (a refused connection under a transport error).
fn causes(err: &(dyn std::error::Error + 'static)) -> String {
    crate::http::error_chain(err)
}

/// Why `initialize` failed; for a transport that could not send it, the transport's own
/// causes (the SDK does not chain them).
fn initialize_failed(err: &rmcp::service::ClientInitializeError) -> String {
    match err {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            let inner: &(dyn std::error::Error + 'static) = &*error.error;
            // The HTTP client's own error carries why (a refused connection, a TLS failure).
            let why = match inner
                .downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>()
            {
                Some(rmcp::transport::streamable_http_client::StreamableHttpError::Client(client)) => {
                    causes(client)
                }
                _ => causes(inner),
            };
            format!("initialize failed ({context}): {why}")
        }
        other => format!("initialize failed: {}", causes(other)),
    }
}

/// The stdio server's process, started as the run's commands are. Forking happens on a
/// blocking thread: the run's own start (connecting to the model) goes on meanwhile.
async fn spawn(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&std::path::Path>,
    ctx: &ToolContext,
) -> Result<(tokio::process::Child, nix::unistd::Pid), String> {
    let line = std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ");
    let cwd = match cwd {
        Some(dir) => ctx.cwd.join(dir),
        None => ctx.cwd.to_path_buf(),
    };
    let env: Vec<(String, Option<String>)> = env
        .iter()
        .map(|(key, value)| (key.clone(), Some(value.clone())))
        .collect();
    let ctx = ctx.clone();
    let started = tokio::task::spawn_blocking(move || {
        crate::tools::start_service(&format!("exec {line}"), &cwd, &env, &ctx)
    })
    .await
    .map_err(|err| format!("cannot start {command}: {err}"))?;
    started.map_err(|err| format!("cannot start {command}: {err}"))
}

/// The streamable HTTP transport to `url`, sending `headers` with every request.
fn http_transport(
    url: &str,
    headers: &[(String, String)],
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|err| format!("header {name}: {err}"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("header {name}: the value is not a valid header value"))?;
        custom.insert(name, value);
    }
    let tls = url.starts_with("https://");
    let client = crate::http::client(crate::config::defaults::CONNECT_TIMEOUT, tls)
        .map_err(|err| err.to_string())?;
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client, config,
    ))
}

/// Keeps the last [`STDERR_TAIL`] bytes the server writes to stderr.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        let mut kept = tail.lock_or_recover();
        kept.extend_from_slice(&buffer[..read]);
        let excess = kept.len().saturating_sub(STDERR_TAIL);
        kept.drain(..excess);
    }
}

/// `word` as one shell word.
fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("npx"), "npx");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }
}
