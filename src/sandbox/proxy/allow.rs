//! The `--allow-host` list: which hosts the egress proxy connects to, and on which ports.
//!
//! An entry is `HOST`, `*.DOMAIN` (its subdomains, not the domain itself) or an IP address,
//! optionally with `:PORT` (`[V6]:PORT` for IPv6). Without a port an entry admits 443 and 80;
//! with one, that port only; entries for the same host add up. Host names are compared in
//! WHATWG form (`url::Host::parse`), so `2130706433` and `127.0.0.1` are one address.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use url::Host;

/// The ports an entry without one admits: HTTPS and HTTP.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

/// An `--allow-host` entry that is none of the forms an entry may take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected HOST, *.DOMAIN or an IP address, optionally with :PORT (1-65535), got '{value}'")]
pub struct InvalidHost {
    /// The entry as given.
    pub value: String,
}

/// What an entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// One host name, lower-case, without a trailing dot.
    Name(String),
    /// Every subdomain of this domain (`*.DOMAIN`).
    Subdomains(String),
    /// One address, literally.
    Address(IpAddr),
}

/// One `--allow-host` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    pattern: Pattern,
    port: Option<u16>,
}

impl AllowedHost {
    /// Parses an entry; the error says what is expected.
    pub fn parse(value: &str) -> Result<AllowedHost, InvalidHost> {
        let expected = || InvalidHost {
            value: value.to_string(),
        };
        let text = value.trim();
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(AllowedHost {
                pattern: Pattern::Address(ip),
                port: None,
            });
        }
        if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or_else(expected)?;
            let ip: std::net::Ipv6Addr = inside.parse().map_err(|_| expected())?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or_else(expected)?),
            };
            let port = port.map(parse_port).transpose().map_err(|()| expected())?;
            return Ok(AllowedHost {
                pattern: Pattern::Address(IpAddr::V6(ip)),
                port,
            });
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(parse_port(port).map_err(|()| expected())?)),
            None => (text, None),
        };
        let valid_chars = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*'));
        if !valid_chars {
            return Err(expected());
        }
        let pattern = match host.strip_prefix("*.") {
            Some(domain) => match Host::parse(domain).map_err(|_| expected())? {
                Host::Domain(_) => Pattern::Subdomains(domain_name(domain).ok_or_else(expected)?),
                Host::Ipv4(_) | Host::Ipv6(_) => return Err(expected()),
            },
            None => match Host::parse(host).map_err(|_| expected())? {
                Host::Domain(_) => Pattern::Name(domain_name(host).ok_or_else(expected)?),
                Host::Ipv4(ip) => Pattern::Address(IpAddr::V4(ip)),
                Host::Ipv6(ip) => Pattern::Address(IpAddr::V6(ip)),
            },
        };
        Ok(AllowedHost { pattern, port })
    }

    fn matches(&self, host: &Host<String>) -> bool {
        match (&self.pattern, host) {
            (Pattern::Name(name), Host::Domain(domain)) => *name == normal_name(domain),
            (Pattern::Subdomains(parent), Host::Domain(domain)) => normal_name(domain)
                .strip_suffix(parent.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            (Pattern::Address(ip), Host::Ipv4(v4)) => *ip == IpAddr::V4(*v4),
            (Pattern::Address(ip), Host::Ipv6(v6)) => *ip == IpAddr::V6(*v6),
            _ => false,
        }
    }
}

/// The canonical spelling: what `--allow-host` values become, and what the status line shows.
impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Pattern::Name(name) => write!(f, "{name}")?,
            Pattern::Subdomains(domain) => write!(f, "*.{domain}")?,
            Pattern::Address(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            Pattern::Address(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

fn parse_port(text: &str) -> Result<u16, ()> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 && text.chars().all(|c| c.is_ascii_digit()) => Ok(port),
        _ => Err(()),
    }
}

/// A domain name for an entry: labels of letters, digits and `-`, no wildcard left, and
/// still a name once normalized (`0..` would otherwise become `0`, which is an address).
fn domain_name(text: &str) -> Option<String> {
    let name = normal_name(text);
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    });
    let still_a_name = matches!(Host::parse(&name), Ok(Host::Domain(_)));
    (labels_ok && !name.is_empty() && still_a_name).then_some(name)
}

fn normal_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The parsed `--allow-host` entries of a run.
#[derive(Debug, Clone, Default)]
pub struct Allowlist {
    entries: Vec<AllowedHost>,
}

impl Allowlist {
    /// Parses each `--allow-host` value; the first invalid one is the error.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Allowlist, InvalidHost> {
        let entries = values
            .iter()
            .map(|value| AllowedHost::parse(value.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Allowlist { entries })
    }

    /// The ports `host` may be reached on; empty if it is not allowed at all.
    pub fn ports(&self, host: &Host<String>) -> BTreeSet<u16> {
        self.entries
            .iter()
            .filter(|entry| entry.matches(host))
            .flat_map(|entry| match entry.port {
                Some(port) => vec![port],
                None => DEFAULT_PORTS.to_vec(),
            })
            .collect()
    }

    /// Whether `ip` is allowed literally, which exempts it from the address rules.
    pub fn names_address(&self, ip: IpAddr) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.pattern == Pattern::Address(ip))
    }
}
