//! The IANA special-purpose address registries (IPv4 and IPv6, as of 2025), and the IPv6
//! address space outside global unicast, as one table per family. The first block that
//! contains an address is its block, so a block inside another comes before it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A special-purpose range.
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    network: IpAddr,
    prefix: u8,
    /// What it is, with its article ("a loopback"), to be followed by "address".
    name: &'static str,
    /// For IPv6 forms that carry an IPv4 address: where it sits.
    carries: Option<Carried>,
}

/// Where an IPv6 form keeps the IPv4 address it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carried {
    /// The low 32 bits, and traffic goes to that IPv4 address (IPv4-mapped, NAT64): the form
    /// is as good as the address inside.
    Translated,
    /// The low 32 bits of the deprecated IPv4-compatible form.
    Compatible,
    /// Bits 16..48 (6to4).
    SixToFour,
    /// The low 32 bits, inverted (the Teredo client).
    Teredo,
}

impl Block {
    const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, name: &'static str) -> Block {
        Block {
            network: IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
            prefix,
            name,
            carries: None,
        }
    }

    const fn v6(segments: [u16; 8], prefix: u8, name: &'static str) -> Block {
        let [a, b, c, d, e, f, g, h] = segments;
        Block {
            network: IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
            prefix,
            name,
            carries: None,
        }
    }

    const fn carrying(self, carried: Carried) -> Block {
        Block {
            carries: Some(carried),
            ..self
        }
    }

    /// Whether `ip` is in this block; an address of the other family never is.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (network, address, width) = match (self.network, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                (u128::from(u32::from(n)), u128::from(u32::from(a)), 32)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
            _ => return false,
        };
        let mask = mask(width, self.prefix);
        address & mask == network & mask
    }

    /// The network address has no bits set past the prefix (a check on the table).
    pub fn is_well_formed(&self) -> bool {
        let (network, width) = match self.network {
            IpAddr::V4(n) => (u128::from(u32::from(n)), 32),
            IpAddr::V6(n) => (u128::from(n), 128),
        };
        self.prefix <= width && network & !mask(width, self.prefix) == 0
    }

    /// The IPv4 address inside `ip`, if this block is a form that carries one.
    pub fn carried(&self, ip: Ipv6Addr) -> Option<Ipv4Addr> {
        let bits = u128::from(ip);
        // Truncating casts pick the 32 bits each form keeps its address in.
        let low = bits as u32;
        Some(Ipv4Addr::from(match self.carries? {
            Carried::Translated | Carried::Compatible => low,
            Carried::SixToFour => (bits >> 80) as u32,
            Carried::Teredo => !low,
        }))
    }

    /// Refused whatever address it carries (6to4, Teredo, IPv4-compatible), rather than as
    /// that address.
    pub fn refused_outright(&self) -> bool {
        self.carries != Some(Carried::Translated)
    }
}

/// "a loopback address (127.0.0.0/8)".
impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} address ({}/{})",
            self.name, self.network, self.prefix
        )
    }
}

/// The mask of the first `prefix` bits of a `width`-bit address, in the low bits of a u128.
fn mask(width: u8, prefix: u8) -> u128 {
    let all = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    match width.checked_sub(prefix) {
        Some(host_bits) if host_bits < 128 => (all >> host_bits) << host_bits,
        _ => 0,
    }
}

const PRIVATE: &str = "a private (RFC 1918)";
const AS112: &str = "an AS112 (DNS sink)";
const AMT: &str = "an AMT (multicast tunnelling)";
const BENCHMARKING: &str = "a benchmarking";
const IETF: &str = "an IETF protocol assignment";

/// The IPv4 special-purpose registry, and multicast.
pub(super) static V4: [Block; 19] = [
    Block::v4(0, 0, 0, 0, 8, "an unspecified (this network)"),
    Block::v4(10, 0, 0, 0, 8, PRIVATE),
    Block::v4(100, 64, 0, 0, 10, "a shared (carrier-grade NAT)"),
    Block::v4(127, 0, 0, 0, 8, "a loopback"),
    Block::v4(169, 254, 0, 0, 16, "a link-local (cloud metadata)"),
    Block::v4(172, 16, 0, 0, 12, PRIVATE),
    Block::v4(192, 0, 0, 0, 24, IETF),
    Block::v4(192, 0, 2, 0, 24, "a documentation (TEST-NET-1)"),
    Block::v4(192, 31, 196, 0, 24, AS112),
    Block::v4(192, 52, 193, 0, 24, AMT),
    Block::v4(192, 88, 99, 0, 24, "a 6to4 relay anycast"),
    Block::v4(192, 168, 0, 0, 16, PRIVATE),
    Block::v4(192, 175, 48, 0, 24, AS112),
    Block::v4(198, 18, 0, 0, 15, BENCHMARKING),
    Block::v4(198, 51, 100, 0, 24, "a documentation (TEST-NET-2)"),
    Block::v4(203, 0, 113, 0, 24, "a documentation (TEST-NET-3)"),
    Block::v4(224, 0, 0, 0, 4, "a multicast"),
    Block::v4(255, 255, 255, 255, 32, "a broadcast"),
    Block::v4(240, 0, 0, 0, 4, "a reserved"),
];

const NOT_GLOBAL: &str = "a reserved (not global unicast)";

/// The IPv6 special-purpose registry, then what lies outside global unicast (`2000::/3`).
pub(super) static V6: [Block; 28] = [
    Block::v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "an unspecified"),
    Block::v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "a loopback"),
    Block::v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "an IPv4-mapped").carrying(Carried::Translated),
    Block::v6(
        [0, 0, 0, 0, 0, 0, 0, 0],
        96,
        "an IPv4-compatible (deprecated)",
    )
    .carrying(Carried::Compatible),
    Block::v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "a NAT64").carrying(Carried::Translated),
    Block::v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "a local-use NAT64"),
    Block::v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "a discard-only"),
    Block::v6([0x100, 0, 0, 1, 0, 0, 0, 0], 64, "a dummy"),
    Block::v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "a Teredo").carrying(Carried::Teredo),
    Block::v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, BENCHMARKING),
    Block::v6([0x2001, 3, 0, 0, 0, 0, 0, 0], 32, AMT),
    Block::v6([0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48, AS112),
    Block::v6(
        [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
        28,
        "an ORCHID (deprecated)",
    ),
    Block::v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, "an ORCHIDv2"),
    Block::v6([0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28, "a drone remote ID"),
    Block::v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, IETF),
    Block::v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "a documentation"),
    Block::v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "a 6to4").carrying(Carried::SixToFour),
    Block::v6([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48, AS112),
    Block::v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "a documentation"),
    Block::v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        "an SRv6 segment identifier",
    ),
    Block::v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "a unique local (private)"),
    Block::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "a link-local"),
    Block::v6(
        [0xfec0, 0, 0, 0, 0, 0, 0, 0],
        10,
        "a site-local (deprecated)",
    ),
    Block::v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "a multicast"),
    Block::v6([0, 0, 0, 0, 0, 0, 0, 0], 3, NOT_GLOBAL),
    Block::v6([0x4000, 0, 0, 0, 0, 0, 0, 0], 2, NOT_GLOBAL),
    Block::v6([0x8000, 0, 0, 0, 0, 0, 0, 0], 1, NOT_GLOBAL),
];

/// The special-purpose block of an IPv4 address.
pub(super) fn v4_block(ip: Ipv4Addr) -> Option<&'static Block> {
    V4.iter().find(|block| block.contains(IpAddr::V4(ip)))
}

/// The special-purpose block of an IPv6 address.
pub(super) fn v6_block(ip: Ipv6Addr) -> Option<&'static Block> {
    V6.iter().find(|block| block.contains(IpAddr::V6(ip)))
}

#[cfg(test)]
mod tests;
