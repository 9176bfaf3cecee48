use super::*;

#[test]
fn a_block_is_well_formed_only_with_no_bits_past_its_prefix_and_a_prefix_that_fits() {
    assert!(Block::v4(10, 0, 0, 0, 8, "t").is_well_formed());
    assert!(
        !Block::v4(10, 0, 0, 1, 8, "t").is_well_formed(),
        "a host bit set"
    );
    assert!(
        !Block::v4(10, 0, 0, 0, 33, "t").is_well_formed(),
        "longer than IPv4"
    );
    assert!(Block::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "t").is_well_formed());
    assert!(!Block::v6([0xfe80, 0, 0, 0, 0, 0, 0, 1], 10, "t").is_well_formed());
    assert!(!Block::v6([0, 0, 0, 0, 0, 0, 0, 0], 129, "t").is_well_formed());
}

#[test]
fn masks_cover_every_prefix_length_of_both_widths() {
    assert_eq!(mask(32, 0), 0);
    assert_eq!(mask(32, 8), 0xff00_0000);
    assert_eq!(mask(32, 32), 0xffff_ffff);
    assert_eq!(mask(128, 0), 0, "the whole space: no bit fixed");
    assert_eq!(mask(128, 1), 1 << 127);
    assert_eq!(mask(128, 128), u128::MAX);
    assert_eq!(mask(32, 33), 0, "a prefix past the width fixes nothing");
    // ::/0 holds every IPv6 address.
    let everything = Block::v6([0; 8], 0, "t");
    assert!(everything.contains(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    assert!(everything.contains(IpAddr::V6(Ipv6Addr::new(0xffff, 1, 2, 3, 4, 5, 6, 7))));
}
