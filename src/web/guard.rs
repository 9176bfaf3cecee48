//! The SSRF guard of `web_fetch`: a URL from an untrusted page or issue must not reach the
//! cloud metadata service, the loopback interface or the operator's own network.
//!
//! - Hosts are checked after WHATWG URL parsing (the `url` crate), which already turns the
//!   numeric tricks into plain addresses: `http://2130706433/`, `http://0x7f.1/` and
//!   `http://a@127.0.0.1/` all have host 127.0.0.1. IPv4-mapped (`::ffff:a.b.c.d`) and NAT64
//!   (`64:ff9b::a.b.c.d`) IPv6 addresses are checked as the IPv4 address inside them.
//! - Names are resolved once, by [`GuardedResolver`], the client's only resolver: it drops
//!   every blocked address and fails when none is left, and the connection goes to an address
//!   it returned. There is no second lookup a rebinding DNS server could answer differently.
//! - The fetch client has no proxy, so nobody else resolves for it.
//!
//! `--web-allow-host` exempts named hosts; `--web-allow-private` turns the address rules off.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address is refused.
pub fn blocked_rule(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(inner) = embedded_v4(v6) {
                return blocked_v4(inner);
            }
            let segments = v6.segments();
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if segments[0] & 0xfe00 == 0xfc00 {
                Some("private (unique local)")
            } else if segments[0] & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if segments[0] & 0xff00 == 0xff00 {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_private() {
        Some("private (RFC 1918)")
    } else if ip.is_link_local() {
        Some("link-local (cloud metadata)")
    } else if a == 100 && (64..128).contains(&b) {
        Some("carrier-grade NAT")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else {
        None
    }
}

/// The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|x| *x == 0);
    nat64.then(|| {
        let [.., hi, lo] = s;
        Ipv4Addr::from(((u32::from(hi)) << 16) | u32::from(lo))
    })
}

/// What may be fetched.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Hosts exempt from the address rules (`--web-allow-host`), lower-case.
    pub allow_hosts: Vec<String>,
    /// `--web-allow-private`: no address rules at all.
    pub allow_private: bool,
    /// Name → address overrides (`WORKER_WEB_RESOLVE=name=ip,...`), checked like any answer.
    pub pinned: Vec<(String, IpAddr)>,
}

impl Policy {
    fn exempt(&self, host: &str) -> bool {
        self.allow_private
            || self
                .allow_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Checks a URL before it is requested (and every redirect target): its scheme, and its
    /// host when that is an address.
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "only http and https URLs can be fetched, not {}:",
                url.scheme()
            ));
        }
        let host = match url.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(url::Host::Domain(_)) => return Ok(()),
            None => return Err("the URL has no host".into()),
        };
        let shown = url.host_str().unwrap_or_default();
        match blocked_rule(host) {
            Some(rule) if !self.exempt(shown) => Err(refusal(shown, host, rule)),
            _ => Ok(()),
        }
    }
}

fn refusal(host: &str, ip: IpAddr, rule: &str) -> String {
    format!(
        "blocked by the SSRF guard: {host} is {ip}, a {rule} address (allow it with --web-allow-host {host} or --web-allow-private)"
    )
}

/// The fetch client's resolver: resolves once and returns only addresses the policy allows.
pub struct GuardedResolver {
    policy: Arc<Policy>,
}

impl GuardedResolver {
    pub fn new(policy: Arc<Policy>) -> Self {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let addresses: Vec<IpAddr> = match policy.pinned.iter().find(|(n, _)| *n == host) {
                Some((_, ip)) => vec![*ip],
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|addr| addr.ip())
                    .collect(),
            };
            if policy.exempt(&host) {
                let addrs: Addrs = Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
                return Ok(addrs);
            }
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addresses
                .into_iter()
                .filter(|ip| match blocked_rule(*ip) {
                    Some(rule) => {
                        refused.get_or_insert((*ip, rule));
                        false
                    }
                    None => true,
                })
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            match (allowed.is_empty(), refused) {
                (true, Some((ip, rule))) => Err(refusal(&host, ip, rule).into()),
                (true, None) => Err(format!("{host} has no address").into()),
                (false, _) => {
                    let addrs: Addrs = Box::new(allowed.into_iter());
                    Ok(addrs)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests;
