use super::*;

#[test]
fn codes_are_distinct_and_in_order() {
    let codes: Vec<u8> = ExitStatus::ALL.iter().map(|s| s.code()).collect();
    assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 130, 141, 143]);
}

#[test]
fn an_incomplete_output_replaces_the_run_s_own_outcome_but_not_a_signal() {
    for status in ExitStatus::ALL {
        let expected = match status {
            ExitStatus::Ok | ExitStatus::Failed | ExitStatus::Limit => ExitStatus::OutputIncomplete,
            other => other,
        };
        assert_eq!(status.with_incomplete_output(), expected, "{status:?}");
    }
}
