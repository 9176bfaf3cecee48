//! What has left this process: the kernel's own count of the bytes a tee socket took.
//!
//! zmq.rs's `send` returns once a message is in the library's per-peer queue (up to 1024
//! messages); a task writes it to the socket later. Whatever is still in that queue when
//! the process exits is lost, so "send returned" is not "delivered". Bytes the kernel has
//! taken are safe: it keeps delivering them after the process is gone. The vendored zmq.rs
//! hands over the descriptor of each connection it makes (`SocketOptions::on_connected`);
//! the probe trusts it only while its peer is the endpoint, checked when the probe is made
//! and at every reading (a closed descriptor's number may be reused). Before that hook, the
//! probe looked for the socket in `/proc/self/fd` before and after connecting: two directory
//! scans that cost a short run about 0.1 ms.
//!
//! - TCP: bytes taken = bytes the peer acknowledged (`TCP_INFO.tcpi_bytes_acked`) plus bytes
//!   still queued in the kernel (`SIOCOUTQ`), minus what the handshake used.
//! - IPC (Unix socket): the kernel counts no total, only bytes the peer has not read yet
//!   (`SIOCOUTQ`). When that is zero twice, a moment apart, with nothing left to send, the
//!   peer has read everything; until then nothing counts as taken.
//!
//! Where the probe cannot tell (the descriptor is not connected to the endpoint, the socket
//! is gone), it says so with `None` and the caller counts the events as unconfirmed: never
//! as delivered.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::libc;
use nix::sys::socket::{SockaddrStorage, getpeername};

/// How long the Unix-socket reading must stay drained before it counts.
const SETTLE: Duration = Duration::from_millis(2);

/// Who the socket must be connected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Peer {
    Tcp(Vec<SocketAddr>),
    Unix(PathBuf),
}

impl Peer {
    fn matches(&self, fd: RawFd) -> bool {
        let Ok(address) = getpeername::<SockaddrStorage>(fd) else {
            return false;
        };
        match self {
            Peer::Tcp(candidates) => {
                let found = if let Some(v4) = address.as_sockaddr_in() {
                    SocketAddr::from(std::net::SocketAddrV4::from(*v4))
                } else if let Some(v6) = address.as_sockaddr_in6() {
                    SocketAddr::from(std::net::SocketAddrV6::from(*v6))
                } else {
                    return false;
                };
                candidates.contains(&found)
            }
            Peer::Unix(path) => address
                .as_unix_addr()
                .and_then(|unix| unix.path())
                .is_some_and(|found| found == path),
        }
    }
}

/// One connection's kernel-side progress.
#[derive(Debug)]
pub(super) struct SocketProbe {
    fd: RawFd,
    peer: Peer,
    /// Kernel bytes the connection had taken before the first message (the handshake).
    baseline: u64,
    /// Unix sockets: since when the peer has had nothing left to read, and how many bytes
    /// had been handed over then (a later hand-over starts the wait again).
    drained_since: Option<(Instant, u64)>,
}

impl SocketProbe {
    /// The probe of `fd`, if it is connected to `peer`; make it right after the connection
    /// is made, before any message is sent on it.
    pub(super) fn at(peer: Peer, fd: RawFd) -> Option<SocketProbe> {
        if !peer.matches(fd) {
            return None;
        }
        let baseline = match peer {
            Peer::Tcp(_) => tcp_taken(fd)?,
            Peer::Unix(_) => 0,
        };
        Some(SocketProbe {
            fd,
            peer,
            baseline,
            drained_since: None,
        })
    }

    /// How many of the `handed` bytes given to the socket library have left the process;
    /// `None` when the socket is gone or the kernel will not say.
    pub(super) fn taken(&mut self, handed: u64) -> Option<u64> {
        // The descriptor may have been closed and reused: it must still be this connection.
        if !self.peer.matches(self.fd) {
            return None;
        }
        match self.peer {
            Peer::Tcp(_) => Some(tcp_taken(self.fd)?.saturating_sub(self.baseline)),
            Peer::Unix(_) => {
                if unread(self.fd)? > 0 {
                    self.drained_since = None;
                    return Some(0);
                }
                match self.drained_since {
                    Some((since, then)) if then == handed => {
                        Some(if since.elapsed() >= SETTLE { handed } else { 0 })
                    }
                    _ => {
                        self.drained_since = Some((Instant::now(), handed));
                        Some(0)
                    }
                }
            }
        }
    }
}

/// Bytes a TCP socket has taken: acknowledged by the peer plus still queued in the kernel.
fn tcp_taken(fd: RawFd) -> Option<u64> {
    // SAFETY: `tcp_info` is plain old data; the kernel writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a valid pointer and length for the option's buffer; a bad fd is an error return.
    let status = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &raw mut len,
        )
    };
    if status != 0 {
        return None;
    }
    Some(info.tcpi_bytes_acked + unread(fd)?)
}

/// Bytes written to the socket that the peer has not consumed (`SIOCOUTQ`).
fn unread(fd: RawFd) -> Option<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int; a bad fd is an error return.
    let status = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) };
    if status != 0 {
        return None;
    }
    u64::try_from(queued).ok()
}

#[cfg(test)]
mod tests;
