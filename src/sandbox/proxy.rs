//! The egress proxy of `--sandbox linux --allow-host`: the only way out of a command's
//! network namespace.
//!
//! worker listens on a Unix socket in the run's own directory (which commands cannot
//! write); inside each command's namespace the launcher forwards `127.0.0.1:3128` to it, and
//! the command gets `HTTP_PROXY`/`HTTPS_PROXY` pointing there. Requests name their host: a
//! `CONNECT host:port` (HTTPS) or an absolute-form `GET http://host/...` (plain HTTP). A host
//! in the allow list is connected from worker's side; any other gets `403 Forbidden` with the
//! reason in the body. Direct connections have nowhere to go: the namespace has only
//! loopback.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener, UnixStream};

/// The port the launcher listens on inside each command's namespace.
pub const INSIDE_PORT: u16 = 3128;
/// The most a request head may take.
const MAX_HEAD: usize = 64 * 1024;

/// Whether `host` matches an allow-list entry: exactly, or under a `*.` pattern.
pub fn allowed(host: &str, patterns: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    patterns.iter().any(|pattern| {
        let pattern = pattern.to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => host == pattern,
        }
    })
}

/// Starts the proxy on `socket` (inside the current runtime); it runs until the process ends.
pub fn start(socket: &Path, hosts: Arc<Vec<String>>) -> std::io::Result<PathBuf> {
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

/// One client connection: read the request head, then tunnel or refuse.
async fn serve(stream: UnixStream, hosts: &[String]) -> std::io::Result<()> {
    let mut client = BufReader::new(stream);
    let mut head = Vec::new();
    loop {
        let read = client.read_until(b'\n', &mut head).await?;
        if read == 0 || head.len() > MAX_HEAD {
            return Ok(());
        }
        if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let request_line = text.lines().next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let Some((host, port, tunnel)) = destination(method, target) else {
        return refuse(client.get_mut(), 400, "a proxy request must name its host").await;
    };
    if !allowed(&host, hosts) {
        let reason = format!("worker sandbox: {host} is not an --allow-host host");
        return refuse(client.get_mut(), 403, &reason).await;
    }
    let mut upstream = match TcpStream::connect((host.as_str(), port)).await {
        Ok(upstream) => upstream,
        Err(err) => {
            let reason = format!("worker sandbox: cannot reach {host}:{port}: {err}");
            return refuse(client.get_mut(), 502, &reason).await;
        }
    };
    if tunnel {
        client
            .get_mut()
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
    } else {
        // Plain HTTP: the request goes on as the origin server expects it.
        upstream
            .write_all(origin_form(&text, target).as_bytes())
            .await?;
    }
    // Whatever the client sent after the head is already buffered.
    let buffered = client.buffer().to_vec();
    upstream.write_all(&buffered).await?;
    let mut client = client.into_inner();
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// (host, port, is a CONNECT tunnel) from the request line.
fn destination(method: &str, target: &str) -> Option<(String, u16, bool)> {
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = target.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        return Some((host.to_string(), port.parse().ok()?, true));
    }
    let url = url::Url::parse(target).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    Some((
        url.host_str()?.to_string(),
        url.port_or_known_default()?,
        false,
    ))
}

/// The head with its request line in origin form (`GET /path HTTP/1.1`).
fn origin_form(head: &str, target: &str) -> String {
    let path = url::Url::parse(target)
        .map(|url| {
            let mut path = url.path().to_string();
            if let Some(query) = url.query() {
                path.push('?');
                path.push_str(query);
            }
            path
        })
        .unwrap_or_else(|_| "/".to_string());
    let (first, rest) = head.split_once("\r\n").unwrap_or((head, ""));
    let first = first.replacen(target, &path, 1);
    format!("{first}\r\n{rest}")
}

async fn refuse(client: &mut UnixStream, status: u16, reason: &str) -> std::io::Result<()> {
    let phrase = match status {
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Bad Request",
    };
    let body = format!("{reason}\n");
    let response = format!(
        "HTTP/1.1 {status} {phrase}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    let mut rest = [0u8; 1];
    let _ =
        tokio::time::timeout(std::time::Duration::from_millis(50), client.read(&mut rest)).await;
    client.shutdown().await
}

#[cfg(test)]
mod tests;
