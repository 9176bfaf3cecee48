use super::*;

#[test]
fn request_ids_name_the_session_run_turn_and_attempt() {
    let session = SessionId::parse("phase-1").unwrap();
    let fresh = RequestIds::new(&session, 0);
    assert_eq!(fresh.turn(0).attempt(1), "phase-1:r0:t0:a1");
    assert_eq!(fresh.turn(12).attempt(3), "phase-1:r0:t12:a3");
    assert_eq!(fresh.summary(2).as_str(), "phase-1:r0:s2");
    let resumed = RequestIds::new(&session, 7);
    assert_eq!(resumed.turn(0).attempt(1), "phase-1:r7:t0:a1");
    assert_ne!(resumed.turn(0), fresh.turn(0));
}

#[test]
fn a_session_id_is_parsed_once_or_refused_saying_what_one_is() {
    assert_eq!(
        SessionId::parse("phase-2.review:1_a").unwrap().as_str(),
        "phase-2.review:1_a"
    );
    assert!(SessionId::parse(&"a".repeat(128)).is_ok());
    assert_eq!(SessionId::parse("p:1").unwrap().to_string(), "p:1");
    // New ids are UUIDv7s: valid ids that sort by creation time.
    let (first, second) = (SessionId::generate(), SessionId::generate());
    assert_eq!(SessionId::parse(first.as_str()), Ok(first.clone()));
    assert_eq!(
        uuid::Uuid::parse_str(first.as_str())
            .unwrap()
            .get_version_num(),
        7
    );
    assert!(first.as_str() < second.as_str());
    for bad in ["", ".hidden", "a/b", "x y", "a\r\nx", &"a".repeat(129)] {
        assert_eq!(
            SessionId::parse(bad).unwrap_err().to_string(),
            format!(
                "'{bad}' is not a session id: 1 to 128 of A-Z a-z 0-9 - _ . :, not starting with ."
            )
        );
    }
}
