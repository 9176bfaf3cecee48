use std::net::Ipv6Addr;

use super::*;

/// A machine with no address but loopback's, so that only the registry decides.
fn registry_only() -> Classifier {
    Classifier::with_own_addresses(vec![("lo".into(), "127.0.0.1".parse().unwrap())])
}

fn reason(classifier: &Classifier, ip: &str) -> Option<String> {
    classifier
        .forbidden(ip.parse().unwrap())
        .map(|forbidden| forbidden.to_string())
}

/// The IANA special-purpose registries as published (iana.org/assignments/iana-ipv4-special-registry
/// and iana-ipv6-special-registry), plus multicast and the IPv6 space outside `2000::/3`.
const REGISTRY: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.0.0/29",
    "192.0.0.8/32",
    "192.0.0.9/32",
    "192.0.0.10/32",
    "192.0.0.170/32",
    "192.0.0.171/32",
    "192.0.2.0/24",
    "192.31.196.0/24",
    "192.52.193.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "192.175.48.0/24",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
    "::1/128",
    "::/128",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "100:0:0:1::/64",
    "2001::/23",
    "2001::/32",
    "2001:1::1/128",
    "2001:1::2/128",
    "2001:1::3/128",
    "2001:2::/48",
    "2001:3::/32",
    "2001:4:112::/48",
    "2001:10::/28",
    "2001:20::/28",
    "2001:30::/28",
    "2001:db8::/32",
    "2002::/16",
    "2620:4f:8000::/48",
    "3fff::/20",
    "5f00::/16",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
    "::/3",
    "4000::/2",
    "8000::/1",
];

/// The first address, the last, and one in the middle of a CIDR block.
fn samples(cidr: &str) -> Vec<IpAddr> {
    let (network, prefix) = cidr.split_once('/').unwrap();
    let prefix: u32 = prefix.parse().unwrap();
    match network.parse::<IpAddr>().unwrap() {
        IpAddr::V4(n) => {
            let host = u32::MAX.checked_shr(prefix).unwrap_or(0);
            let first = u32::from(n);
            [first, first | host, first | (host / 2)]
                .map(|a| IpAddr::V4(a.into()))
                .to_vec()
        }
        IpAddr::V6(n) => {
            let host = u128::MAX.checked_shr(prefix).unwrap_or(0);
            let first = u128::from(n);
            [first, first | host, first | (host / 2)]
                .map(|a| IpAddr::V6(a.into()))
                .to_vec()
        }
    }
}

#[test]
fn the_table_is_well_formed() {
    for block in special::V4.iter().chain(special::V6.iter()) {
        assert!(block.is_well_formed(), "{block}");
    }
}

#[test]
fn every_address_of_every_registry_block_is_forbidden() {
    let classifier = registry_only();
    for cidr in REGISTRY {
        for ip in samples(cidr) {
            // ::ffff:0:0/96 carries IPv4 addresses: its first, last and middle ones carry
            // 0.0.0.0, 255.255.255.255 and 127.255.255.255, all forbidden themselves.
            assert!(classifier.forbidden(ip).is_some(), "{ip} in {cidr}");
        }
    }
}

#[test]
fn each_reason_names_the_range() {
    let classifier = registry_only();
    for (ip, expected) in [
        ("127.0.0.1", "a loopback address (127.0.0.0/8)"),
        ("10.1.2.3", "a private (RFC 1918) address (10.0.0.0/8)"),
        (
            "172.31.255.255",
            "a private (RFC 1918) address (172.16.0.0/12)",
        ),
        (
            "192.168.1.1",
            "a private (RFC 1918) address (192.168.0.0/16)",
        ),
        (
            "169.254.169.254",
            "a link-local (cloud metadata) address (169.254.0.0/16)",
        ),
        (
            "100.100.100.200",
            "a shared (carrier-grade NAT) address (100.64.0.0/10)",
        ),
        (
            "0.0.0.0",
            "an unspecified (this network) address (0.0.0.0/8)",
        ),
        (
            "192.0.0.9",
            "an IETF protocol assignment address (192.0.0.0/24)",
        ),
        (
            "192.0.2.1",
            "a documentation (TEST-NET-1) address (192.0.2.0/24)",
        ),
        (
            "198.51.100.7",
            "a documentation (TEST-NET-2) address (198.51.100.0/24)",
        ),
        (
            "203.0.113.7",
            "a documentation (TEST-NET-3) address (203.0.113.0/24)",
        ),
        ("198.19.0.1", "a benchmarking address (198.18.0.0/15)"),
        (
            "192.88.99.1",
            "a 6to4 relay anycast address (192.88.99.0/24)",
        ),
        ("224.0.0.1", "a multicast address (224.0.0.0/4)"),
        (
            "255.255.255.255",
            "a broadcast address (255.255.255.255/32)",
        ),
        ("250.1.2.3", "a reserved address (240.0.0.0/4)"),
        ("::1", "a loopback address (::1/128)"),
        ("::", "an unspecified address (::/128)"),
        ("fd00::1", "a unique local (private) address (fc00::/7)"),
        ("fe80::1", "a link-local address (fe80::/10)"),
        ("ff02::1", "a multicast address (ff00::/8)"),
        ("2001:db8::1", "a documentation address (2001:db8::/32)"),
        ("3fff::1", "a documentation address (3fff::/20)"),
        ("64:ff9b:1::1", "a local-use NAT64 address (64:ff9b:1::/48)"),
        ("100::1", "a discard-only address (100::/64)"),
        ("2001:2::1", "a benchmarking address (2001:2::/48)"),
        (
            "2001:1::1",
            "an IETF protocol assignment address (2001::/23)",
        ),
        (
            "4000::1",
            "a reserved (not global unicast) address (4000::/2)",
        ),
        (
            "::ffff:127.0.0.1",
            "an IPv4-mapped address (::ffff:0.0.0.0/96) carrying 127.0.0.1, a loopback address (127.0.0.0/8)",
        ),
        (
            "::ffff:169.254.169.254",
            "an IPv4-mapped address (::ffff:0.0.0.0/96) carrying 169.254.169.254, a link-local (cloud metadata) address (169.254.0.0/16)",
        ),
        (
            "64:ff9b::7f00:1",
            "a NAT64 address (64:ff9b::/96) carrying 127.0.0.1, a loopback address (127.0.0.0/8)",
        ),
        (
            "::7f00:1",
            "an IPv4-compatible (deprecated) address (::/96) carrying 127.0.0.1, a loopback address (127.0.0.0/8)",
        ),
        (
            "2002:7f00:1::",
            "a 6to4 address (2002::/16) carrying 127.0.0.1, a loopback address (127.0.0.0/8)",
        ),
        (
            "2002:a9fe:a9fe::1",
            "a 6to4 address (2002::/16) carrying 169.254.169.254, a link-local (cloud metadata) address (169.254.0.0/16)",
        ),
        // Teredo keeps the client's address inverted: !127.0.0.1 is 128.255.255.254.
        (
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "a Teredo address (2001::/32) carrying 127.0.0.1, a loopback address (127.0.0.0/8)",
        ),
        // 6to4 and Teredo are refused even around a public address.
        (
            "2002:808:808::1",
            "a 6to4 address (2002::/16) carrying 8.8.8.8",
        ),
        (
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
            "a Teredo address (2001::/32) carrying 8.8.8.8",
        ),
    ] {
        assert_eq!(reason(&classifier, ip).as_deref(), Some(expected), "{ip}");
    }
}

#[test]
fn public_addresses_and_their_translated_forms_pass() {
    let classifier = registry_only();
    for ip in [
        "93.184.216.34",
        "1.1.1.1",
        "8.8.8.8",
        "100.128.0.1",
        "192.0.1.255",
        "192.0.3.0",
        "223.255.255.255",
        "2606:4700::1111",
        "2a00:1450:4001::1",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
    ] {
        assert_eq!(reason(&classifier, ip), None, "{ip}");
    }
}

#[test]
fn the_machines_own_addresses_are_forbidden_whatever_their_range() {
    let classifier = Classifier::with_own_addresses(vec![
        ("lo".into(), "127.0.0.1".parse().unwrap()),
        ("eth0".into(), "192.0.2.2".parse().unwrap()),
        ("eth1".into(), "8.8.4.4".parse().unwrap()),
        ("eth1".into(), "2a00:1450::7".parse().unwrap()),
    ]);
    for (ip, expected) in [
        ("192.0.2.2", "an address of this machine (interface eth0)"),
        ("8.8.4.4", "an address of this machine (interface eth1)"),
        (
            "2a00:1450::7",
            "an address of this machine (interface eth1)",
        ),
        (
            "::ffff:8.8.4.4",
            "an IPv4-mapped address (::ffff:0.0.0.0/96) carrying 8.8.4.4, an address of this machine (interface eth1)",
        ),
        (
            "64:ff9b::808:404",
            "a NAT64 address (64:ff9b::/96) carrying 8.8.4.4, an address of this machine (interface eth1)",
        ),
        // Loopback is named as loopback even though lo has it.
        ("127.0.0.1", "a loopback address (127.0.0.0/8)"),
    ] {
        assert_eq!(reason(&classifier, ip).as_deref(), Some(expected), "{ip}");
    }
    assert_eq!(reason(&classifier, "8.8.8.8"), None);
}

#[test]
fn when_the_interfaces_cannot_be_read_nothing_passes() {
    let classifier = Classifier::unverifiable("EPERM");
    assert_eq!(
        reason(&classifier, "8.8.8.8").as_deref(),
        Some("possibly an address of this machine (its interfaces cannot be read: EPERM)")
    );
    assert_eq!(
        reason(&classifier, "10.0.0.1").as_deref(),
        Some("a private (RFC 1918) address (10.0.0.0/8)")
    );
}

#[test]
fn every_address_of_this_machine_is_forbidden() {
    let own = interfaces::own_addresses().unwrap();
    // Both families are read: checked against the kernel's own IPv6 list, read another way.
    assert!(
        own.iter()
            .any(|(_, ip)| *ip == IpAddr::from([127, 0, 0, 1])),
        "getifaddrs lists 127.0.0.1: {own:?}"
    );
    let inet6 = std::fs::read_to_string("/proc/net/if_inet6")
        .expect("IPv6 is enabled on the test machine (/proc/net/if_inet6)");
    for line in inet6.lines() {
        let hex = line.split_whitespace().next().unwrap();
        let ip = IpAddr::from(u128::from_str_radix(hex, 16).unwrap().to_be_bytes());
        assert!(
            own.iter().any(|(_, own)| *own == ip),
            "{ip} missing from {own:?}"
        );
    }
    let classifier = Classifier::now();
    for (interface, ip) in own {
        assert!(classifier.forbidden(ip).is_some(), "{interface} {ip}");
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        /// Whatever the standard library knows to be internal is forbidden.
        #[test]
        fn what_std_calls_internal_is_forbidden(bits in any::<u32>(), bits6 in any::<u128>()) {
            let classifier = registry_only();
            let v4 = Ipv4Addr::from(bits);
            if v4.is_private() || v4.is_loopback() || v4.is_link_local() || v4.is_multicast()
                || v4.is_broadcast() || v4.is_documentation() || v4.is_unspecified()
            {
                prop_assert!(classifier.forbidden(IpAddr::V4(v4)).is_some(), "{}", v4);
            }
            let v6 = Ipv6Addr::from(bits6);
            if v6.is_loopback() || v6.is_unspecified() || v6.is_multicast()
                || v6.is_unique_local() || v6.is_unicast_link_local()
                || bits6 >> 125 != 1
            {
                prop_assert!(classifier.forbidden(IpAddr::V6(v6)).is_some(), "{}", v6);
            }
        }

        /// An IPv6 form that carries an IPv4 address is never a way around the IPv4 rules.
        #[test]
        fn carried_addresses_are_judged_as_themselves(bits in any::<u32>()) {
            let classifier = registry_only();
            let v4 = Ipv4Addr::from(bits);
            let plain = classifier.forbidden(IpAddr::V4(v4));
            for translated in [v4.to_ipv6_mapped(), nat64(v4)] {
                let verdict = classifier.forbidden(IpAddr::V6(translated));
                prop_assert_eq!(verdict.is_some(), plain.is_some(), "{}", translated);
                if let Some(Forbidden::Embeds { inner, inner_reason, .. }) = verdict {
                    prop_assert_eq!(inner, v4);
                    prop_assert_eq!(inner_reason.map(|r| *r), plain.clone());
                }
            }
            let six_to_four = Ipv6Addr::from((0x2002u128 << 112) | (u128::from(bits) << 80));
            let teredo = Ipv6Addr::from((0x2001u128 << 112) | u128::from(!bits));
            for outright in [six_to_four, teredo] {
                match classifier.forbidden(IpAddr::V6(outright)) {
                    Some(Forbidden::Embeds { inner, inner_reason, .. }) => {
                        prop_assert_eq!(inner, v4);
                        prop_assert_eq!(inner_reason.map(|r| *r), plain.clone());
                    }
                    other => prop_assert!(false, "{}: {:?}", outright, other),
                }
            }
        }

        /// Outside every block, an address passes.
        #[test]
        fn addresses_outside_every_block_pass(bits in any::<u32>(), bits6 in any::<u128>()) {
            let classifier = registry_only();
            let v4 = IpAddr::V4(Ipv4Addr::from(bits));
            if !special::V4.iter().any(|block| block.contains(v4)) {
                prop_assert_eq!(classifier.forbidden(v4), None);
            }
            let v6 = IpAddr::V6(Ipv6Addr::from(bits6));
            if !special::V6.iter().any(|block| block.contains(v6)) {
                prop_assert_eq!(classifier.forbidden(v6), None);
            }
        }
    }

    fn nat64(v4: Ipv4Addr) -> Ipv6Addr {
        Ipv6Addr::from((0x64u128 << 112) | (0xff9bu128 << 96) | u128::from(u32::from(v4)))
    }
}
