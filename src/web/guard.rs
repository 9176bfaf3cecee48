//! The SSRF guard of `web_fetch`: a URL from an untrusted page or issue must not reach the
//! cloud metadata service, the loopback interface, the machine itself or the operator's own
//! network.
//!
//! - What is forbidden is [`crate::net`]'s to say (the IANA special-purpose registries, the
//!   IPv6 forms that carry an IPv4 address, the machine's own addresses); this module applies
//!   it to every address a fetch could reach.
//! - Hosts are checked after WHATWG URL parsing (the `url` crate), which already turns the
//!   numeric tricks into plain addresses: `http://2130706433/`, `http://0x7f.1/` and
//!   `http://a@127.0.0.1/` all have host 127.0.0.1. A literal address is checked before the
//!   request, and again at every redirect.
//! - Names are resolved once, by [`GuardedResolver`], the client's only resolver: it drops
//!   every forbidden address and fails when none is left, and the connection goes to an
//!   address it returned. There is no second lookup a rebinding DNS server could answer
//!   differently. The fetch client has no proxy, so nobody else resolves for it.
//! - The address a response actually came from is checked once more ([`Policy::check_peer`]),
//!   so a path around the two checks above would still end in a refusal.
//!
//! `--web-allow-host HOST` exempts a name (whatever it resolves to) or a literal address
//! (wherever it is met); `--web-allow-private` turns the address rules off.
//! `WORKER_WEB_RESOLVE` pins names to addresses, which are checked like any DNS answer: it
//! replaces the lookup, never the guard, and only the operator's environment sets it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::net::{Classifier, Forbidden};

/// What every refusal starts with, so callers can tell it from other failures.
pub(super) const MARKER: &str = "blocked by the SSRF guard";

/// Why a URL or an address may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// The URL's scheme is not http or https; carries the scheme.
    #[error("only http and https URLs can be fetched, not {0}:")]
    Scheme(String),
    /// The URL has no host.
    #[error("the URL has no host")]
    NoHost,
    /// A literal address the rules forbid.
    #[error(
        "{MARKER}: {ip} is {forbidden}; allow it with --web-allow-host {ip} or --web-allow-private"
    )]
    Address {
        /// The address.
        ip: IpAddr,
        /// Why it is forbidden.
        forbidden: Forbidden,
    },
    /// A name that resolved to an address the rules forbid.
    #[error(
        "{MARKER}: {host} is {ip}, {forbidden}; allow it with --web-allow-host {host} or --web-allow-private"
    )]
    Resolved {
        /// The name.
        host: String,
        /// The address it resolved to.
        ip: IpAddr,
        /// Why the address is forbidden.
        forbidden: Forbidden,
    },
}

impl GuardError {
    /// Whether the address rules refused (rather than the URL's form): the message starts
    /// with the guard's marker.
    pub fn is_blocked(&self) -> bool {
        matches!(
            self,
            GuardError::Address { .. } | GuardError::Resolved { .. }
        )
    }
}

/// What may be fetched.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Hosts and addresses exempt from the address rules (`--web-allow-host`), lower-case.
    pub allow_hosts: Vec<String>,
    /// `--web-allow-private`: no address rules at all.
    pub allow_private: bool,
    /// Name → address overrides (`WORKER_WEB_RESOLVE=name=ip,...`), checked like any answer.
    pub pinned: Vec<(String, IpAddr)>,
}

impl Policy {
    fn exempt_host(&self, host: &str) -> bool {
        self.allow_private
            || self
                .allow_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// An address allowed literally (`--web-allow-host 10.0.0.5`, or `[fd00::5]`).
    fn exempt_address(&self, ip: IpAddr) -> bool {
        self.allow_private
            || self.allow_hosts.iter().any(|h| {
                h.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .is_ok_and(|allowed| allowed == ip)
            })
    }

    /// Checks a URL before it is requested (and every redirect target): its scheme, and its
    /// host when that is an address.
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), GuardError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(GuardError::Scheme(url.scheme().to_string()));
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(url::Host::Domain(_)) => return Ok(()),
            None => return Err(GuardError::NoHost),
        };
        self.check_literal(url.host_str().unwrap_or_default(), ip, &Classifier::now())
    }

    /// Checks the address a response came from, against the host of its URL.
    pub fn check_peer(&self, url: &reqwest::Url, ip: IpAddr) -> Result<(), GuardError> {
        let classifier = Classifier::now();
        match url.host() {
            Some(url::Host::Domain(host)) => self.check_resolved(host, ip, &classifier),
            _ => self.check_literal(url.host_str().unwrap_or_default(), ip, &classifier),
        }
    }

    /// A literal address, as written in a URL (`shown`).
    fn check_literal(
        &self,
        shown: &str,
        ip: IpAddr,
        classifier: &Classifier,
    ) -> Result<(), GuardError> {
        if self.exempt_host(shown) || self.exempt_address(ip) {
            return Ok(());
        }
        match classifier.forbidden(ip) {
            Some(forbidden) => Err(GuardError::Address { ip, forbidden }),
            None => Ok(()),
        }
    }

    /// An address `host` resolved to.
    fn check_resolved(
        &self,
        host: &str,
        ip: IpAddr,
        classifier: &Classifier,
    ) -> Result<(), GuardError> {
        if self.exempt_host(host) || self.exempt_address(ip) {
            return Ok(());
        }
        match classifier.forbidden(ip) {
            Some(forbidden) => Err(GuardError::Resolved {
                host: host.to_string(),
                ip,
                forbidden,
            }),
            None => Ok(()),
        }
    }
}

/// The fetch client's resolver: resolves once and returns only addresses the policy allows.
pub(super) struct GuardedResolver {
    policy: Arc<Policy>,
}

impl GuardedResolver {
    pub(super) fn new(policy: Arc<Policy>) -> Self {
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
            let classifier = Classifier::now();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = addresses
                .into_iter()
                .filter(|ip| match policy.check_resolved(&host, *ip, &classifier) {
                    Ok(()) => true,
                    Err(reason) => {
                        refused.get_or_insert(reason);
                        false
                    }
                })
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            match (allowed.is_empty(), refused) {
                (true, Some(reason)) => Err(reason.into()),
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
