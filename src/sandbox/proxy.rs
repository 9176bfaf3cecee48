//! The egress proxy of `--sandbox linux --allow-host`: the only way out of a command's
//! network namespace.
//!
//! worker listens on a Unix socket in the run's own directory (which commands cannot
//! write); inside each command's namespace the launcher forwards `127.0.0.1:3128` to it, and
//! the command gets `HTTP_PROXY`/`HTTPS_PROXY` pointing there. Direct connections have nowhere
//! to go: the namespace has only loopback. A request names its destination, a
//! `CONNECT host:port` (HTTPS) or an absolute-form `GET http://host/...` (plain HTTP,
//! [`request`]), and is admitted only if all of these hold, in this order:
//!
//! 1. the host is on the `--allow-host` list ([`allow`]);
//! 2. the port is one that host's entries allow (443 and 80, or the entry's own `:PORT`);
//! 3. the proxy resolves the name itself, once, and keeps only addresses that
//!    [`crate::net`] does not forbid (loopback, private, link-local and metadata, the rest of
//!    the special-purpose registries, the machine's own addresses), unless the address itself
//!    is on the list; it then connects to one of those addresses, never to the name.
//!
//! Anything else gets `403 Forbidden` whose body is the reason (`worker sandbox: ...`), and
//! nothing is sent anywhere; a destination that cannot be reached is a `502` with the error.
//! A plain-HTTP connection carries one request ([`request`] says how); a tunnel is opaque.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use url::Host;

use crate::net::Classifier;

pub mod allow;
pub mod request;

pub use allow::{AllowedHost, Allowlist, InvalidHost};
use request::{Request, Target};

/// The port the launcher listens on inside each command's namespace.
pub const INSIDE_PORT: u16 = 3128;
/// The longest the proxy waits to connect to one address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// What every reason the proxy gives starts with.
const PREFIX: &str = "worker sandbox";

/// Why a request is not carried out.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// The policy does not allow it (403).
    #[error("{PREFIX}: {0}")]
    Forbidden(String),
    /// Allowed, but the destination cannot be reached (502).
    #[error("{PREFIX}: {0}")]
    Unreachable(String),
}

/// Starts the proxy on `socket` (inside the current runtime); it runs until the process ends.
pub fn start(socket: &Path, hosts: Arc<Allowlist>) -> std::io::Result<PathBuf> {
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let hosts = hosts.clone();
            tokio::spawn(async move {
                let _ = serve(stream, &hosts).await;
            });
        }
    });
    Ok(socket.to_path_buf())
}

/// One client connection: read the request head, then tunnel, forward or refuse.
async fn serve(mut client: UnixStream, hosts: &Allowlist) -> std::io::Result<()> {
    let mut read = Vec::new();
    let request = loop {
        match request::parse(&read) {
            Ok(Some(request)) => break request,
            Ok(None) => {}
            Err(reason) => return refuse(client, Refusal::Forbidden(reason.to_string())).await,
        }
        let mut chunk = [0u8; 8192];
        let count = client.read(&mut chunk).await?;
        if count == 0 {
            return Ok(());
        }
        read.extend_from_slice(&chunk[..count]);
    };
    let target = match &request {
        Request::Connect { target, .. } | Request::Http { target, .. } => target.clone(),
    };
    let mut upstream = match connect(&target, hosts).await {
        Ok(upstream) => upstream,
        Err(refusal) => return refuse(client, refusal).await,
    };
    match request {
        Request::Connect { early, .. } => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            upstream.write_all(&early).await?;
            tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        }
        Request::Http {
            head,
            body_length,
            early,
            ..
        } => {
            upstream.write_all(&head).await?;
            upstream.write_all(&early).await?;
            let rest = body_length.saturating_sub(early.len() as u64);
            relay_one_request(client, upstream, rest).await;
        }
    }
    Ok(())
}

/// Sends the rest of the request's body (`rest` bytes) and copies the answer back, until the
/// server is done or the client sends anything past the body, which ends the connection:
/// a second request never reaches the server.
async fn relay_one_request(client: UnixStream, upstream: TcpStream, rest: u64) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let request = async {
        let sent = tokio::io::copy(&mut (&mut client_read).take(rest), &mut upstream_write).await;
        if sent.ok() != Some(rest) {
            return;
        }
        // The client is done sending (end of stream): wait for the answer. Anything else past
        // the body ends the connection.
        let mut more = [0u8; 1];
        if let Ok(0) = client_read.read(&mut more).await {
            std::future::pending::<()>().await;
        }
    };
    let answer = tokio::io::copy(&mut upstream_read, &mut client_write);
    tokio::select! {
        () = request => {}
        _ = answer => {}
    }
}

/// Checks `target` against the list and the address rules, and connects to an address the
/// proxy resolved itself.
async fn connect(target: &Target, hosts: &Allowlist) -> Result<TcpStream, Refusal> {
    let ports = hosts.ports(&target.host);
    if ports.is_empty() {
        return Err(Refusal::Forbidden(format!(
            "{} is not an --allow-host host",
            target.host
        )));
    }
    if !ports.contains(&target.port) {
        return Err(Refusal::Forbidden(format!(
            "port {} is not allowed for {} (allowed: {}; add --allow-host {}:{} to allow it)",
            target.port,
            target.host,
            list(&ports),
            target.host,
            target.port
        )));
    }
    let addresses = match &target.host {
        // On the list as an address: allowed as such.
        Host::Ipv4(ip) => vec![IpAddr::V4(*ip)],
        Host::Ipv6(ip) => vec![IpAddr::V6(*ip)],
        Host::Domain(name) => resolve(name, target.port, hosts).await?,
    };
    let mut last_error = None;
    for ip in addresses {
        let address = SocketAddr::new(ip, target.port);
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(err)) => last_error = Some(format!("{address}: {err}")),
            Err(_) => last_error = Some(format!("{address}: no answer in {CONNECT_TIMEOUT:?}")),
        }
    }
    Err(Refusal::Unreachable(format!(
        "cannot reach {target}: {}",
        last_error.unwrap_or_else(|| "no address".into())
    )))
}

/// The addresses `name` resolves to that may be connected to, or why none may.
async fn resolve(name: &str, port: u16, hosts: &Allowlist) -> Result<Vec<IpAddr>, Refusal> {
    let resolved: Vec<IpAddr> = tokio::net::lookup_host((name, port))
        .await
        .map_err(|err| Refusal::Unreachable(format!("cannot resolve {name}: {err}")))?
        .map(|address| address.ip())
        .collect();
    let classifier = Classifier::now();
    let mut refused = None;
    let mut allowed = Vec::new();
    for ip in resolved {
        if hosts.names_address(ip) {
            allowed.push(ip);
            continue;
        }
        match classifier.forbidden(ip) {
            None => allowed.push(ip),
            Some(forbidden) => {
                refused.get_or_insert(format!(
                    "{name} resolves to {ip}, {forbidden}; to allow it, name the address itself: --allow-host {}",
                    shown(ip)
                ));
            }
        }
    }
    match (allowed.is_empty(), refused) {
        (false, _) => Ok(allowed),
        (true, Some(reason)) => Err(Refusal::Forbidden(reason)),
        (true, None) => Err(Refusal::Unreachable(format!("{name} has no address"))),
    }
}

/// An address as `--allow-host` takes it.
fn shown(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn list(ports: &BTreeSet<u16>) -> String {
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Answers with the refusal and closes the connection.
async fn refuse(mut client: UnixStream, refusal: Refusal) -> std::io::Result<()> {
    let (status, phrase) = match refusal {
        Refusal::Forbidden(_) => (403, "Forbidden"),
        Refusal::Unreachable(_) => (502, "Bad Gateway"),
    };
    let body = format!("{refusal}\n");
    let response = format!(
        "HTTP/1.1 {status} {phrase}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    // A moment for the client to read the answer before the connection goes.
    let mut rest = [0u8; 1];
    let _ = tokio::time::timeout(Duration::from_millis(50), client.read(&mut rest)).await;
    client.shutdown().await
}

#[cfg(test)]
mod tests;
