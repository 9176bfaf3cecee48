use super::*;

fn parse(line: &str) -> Result<Command, NotACommand> {
    Command::parse(line).expect("not blank")
}

#[test]
fn every_command_reads_with_its_fields_and_id() {
    assert_eq!(
        parse(r#"{"type":"prompt","message":"fix it"}"#),
        Ok(Command::Prompt {
            message: "fix it".into(),
            id: None
        })
    );
    assert_eq!(
        parse(r#"{"type":"steer","message":"stop","id":"s1"}"#),
        Ok(Command::Steer {
            message: "stop".into(),
            id: Some("s1".into())
        })
    );
    assert_eq!(
        parse(r#"{"type":"follow_up","message":"and docs"}"#).map(|c| c.name()),
        Ok("follow_up")
    );
    assert_eq!(
        parse(r#"{"type":"abort"}"#),
        Ok(Command::Abort {
            reason: None,
            id: None
        })
    );
    let decide =
        parse(r#"{"type":"decide","id":"approval-1","allow":false,"reason":"no"}"#).unwrap();
    assert_eq!(decide.id(), Some("approval-1"));
    assert_eq!(
        decide,
        Command::Decide {
            id: "approval-1".into(),
            allow: false,
            reason: Some("no".into())
        }
    );
}

#[test]
fn a_line_that_is_not_a_command_says_why_and_keeps_what_could_be_read() {
    assert_eq!(Command::parse("   "), None);
    let garbage = parse("hello").unwrap_err();
    assert_eq!((garbage.command, garbage.id), (None, None));
    assert!(garbage.error.starts_with("not JSON"), "{}", garbage.error);
    assert!(parse("[1]").unwrap_err().error.contains("JSON object"));
    let unknown = parse(r#"{"type":"pause","id":7}"#).unwrap_err();
    assert_eq!(unknown.command.as_deref(), Some("pause"));
    assert_eq!(unknown.id.as_deref(), Some("7"));
    assert!(unknown.error.contains("unknown command \"pause\""));
    let missing = parse(r#"{"type":"decide","id":"a"}"#).unwrap_err();
    assert!(missing.error.contains("allow"), "{}", missing.error);
    let extra = parse(r#"{"type":"steer","message":"x","mesage":"y"}"#).unwrap_err();
    assert!(extra.error.contains("mesage"), "{}", extra.error);
    let empty = parse(r#"{"type":"steer","message":"  "}"#).unwrap_err();
    assert_eq!(empty.error, "steer needs a non-empty \"message\"");
    assert!(
        parse(r#"{"id":"x"}"#)
            .unwrap_err()
            .error
            .contains("\"type\"")
    );
}
