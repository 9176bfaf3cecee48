use super::*;

#[test]
fn codes_are_distinct_and_in_order() {
    let codes: Vec<u8> = ExitStatus::ALL.iter().map(|s| s.code()).collect();
    assert_eq!(codes, vec![0, 1, 2, 3, 130, 141, 143]);
}
