//! Which addresses worker may connect to on someone else's behalf: the addresses a URL from an
//! untrusted page (`web_fetch`) or a sandboxed command's request (the `--allow-host` egress
//! proxy) must never reach.
//!
//! One [`Classifier`] serves both, so they refuse the same things for the same reasons:
//!
//! - every range of the IANA special-purpose address registries, IPv4 and IPv6 (loopback,
//!   private, link-local and the cloud metadata service, carrier-grade NAT, documentation,
//!   benchmarking, reserved, multicast, ...), plus every IPv6 address outside global unicast
//!   (`2000::/3`); the table is in [`special`];
//! - IPv6 forms that carry an IPv4 address: IPv4-mapped (`::ffff:a.b.c.d`) and NAT64
//!   (`64:ff9b::a.b.c.d`) are the IPv4 address they carry, refused when it is; 6to4
//!   (`2002::/16`), Teredo (`2001::/32`) and the deprecated IPv4-compatible form (`::a.b.c.d`)
//!   are refused outright, and the reason names the address inside;
//! - every address of the machine's own interfaces (read with `getifaddrs` at each check, so a
//!   new address counts at once), whatever range it is in: a public address of the host is
//!   still the host. If the interfaces cannot be read, no address can be told apart from the
//!   host's, and every one is refused.
//!
//! Callers decide what an explicit allowance exempts; the classifier only says why an address
//! is forbidden ([`Forbidden`], whose text completes "IP is ..." or "HOST is IP, ...").

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

mod interfaces;
mod special;

pub use special::Block;

/// Why an address must not be connected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forbidden {
    /// It is in a special-purpose range.
    Special(&'static Block),
    /// It is an address of one of the machine's own interfaces.
    OwnInterface(String),
    /// An IPv6 form that carries an IPv4 address, and why that form is refused: because of the
    /// address inside (`inner_reason`), or because the form itself is special-purpose.
    Embeds {
        /// The IPv6 form (IPv4-mapped, NAT64, 6to4, Teredo, IPv4-compatible).
        form: &'static Block,
        /// The IPv4 address the form carries.
        inner: Ipv4Addr,
        /// Why that IPv4 address is forbidden itself; `None` when it is not and the form alone is
        /// refused.
        inner_reason: Option<Box<Forbidden>>,
    },
    /// The machine's own addresses could not be read, so this one may be among them.
    Unverifiable(String),
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Forbidden::Special(block) => write!(f, "{block}"),
            Forbidden::OwnInterface(interface) => {
                write!(f, "an address of this machine (interface {interface})")
            }
            Forbidden::Embeds {
                form,
                inner,
                inner_reason,
            } => {
                write!(f, "{form} carrying {inner}")?;
                match inner_reason {
                    Some(reason) => write!(f, ", {reason}"),
                    None => Ok(()),
                }
            }
            Forbidden::Unverifiable(error) => write!(
                f,
                "possibly an address of this machine (its interfaces cannot be read: {error})"
            ),
        }
    }
}

/// The machine's own addresses, read once, and the checks against them and the registry.
#[derive(Debug, Clone)]
pub struct Classifier {
    /// (interface, address), or why they could not be read.
    own: Result<Vec<(String, IpAddr)>, String>,
}

impl Classifier {
    /// A classifier that knows the machine's addresses as they are now.
    pub fn now() -> Classifier {
        Classifier {
            own: interfaces::own_addresses().map_err(|err| err.to_string()),
        }
    }

    /// A classifier for a machine with these addresses (tests).
    pub fn with_own_addresses(own: Vec<(String, IpAddr)>) -> Classifier {
        Classifier { own: Ok(own) }
    }

    /// A classifier for a machine whose addresses could not be read (tests).
    pub fn unverifiable(error: &str) -> Classifier {
        Classifier {
            own: Err(error.to_string()),
        }
    }

    /// Why `ip` must not be connected to; `None` if it may be.
    pub fn forbidden(&self, ip: IpAddr) -> Option<Forbidden> {
        match ip {
            IpAddr::V4(v4) => self.forbidden_v4(v4),
            IpAddr::V6(v6) => {
                let block = special::v6_block(v6);
                match block.and_then(|form| Some((form, form.carried(v6)?))) {
                    Some((form, inner)) => {
                        let inner_reason = self.forbidden_v4(inner).map(Box::new);
                        if inner_reason.is_none() && !form.refused_outright() {
                            return None;
                        }
                        Some(Forbidden::Embeds {
                            form,
                            inner,
                            inner_reason,
                        })
                    }
                    None => self.own_or_special(ip, block),
                }
            }
        }
    }

    fn forbidden_v4(&self, ip: Ipv4Addr) -> Option<Forbidden> {
        self.own_or_special(IpAddr::V4(ip), special::v4_block(ip))
    }

    /// Loopback is named as such; any other address of the machine as the machine's, before
    /// the range it happens to be in; then the range.
    fn own_or_special(&self, ip: IpAddr, block: Option<&'static Block>) -> Option<Forbidden> {
        if !ip.is_loopback() {
            match &self.own {
                Ok(own) => {
                    if let Some((interface, _)) = own.iter().find(|(_, addr)| *addr == ip) {
                        return Some(Forbidden::OwnInterface(interface.clone()));
                    }
                }
                Err(error) if block.is_none() => {
                    return Some(Forbidden::Unverifiable(error.clone()));
                }
                Err(_) => {}
            }
        }
        block.map(Forbidden::Special)
    }
}

#[cfg(test)]
mod tests;
