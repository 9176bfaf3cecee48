use std::io::Cursor;

use super::*;

fn all(lines: &CommandLines) -> Vec<Line> {
    let mut out = Vec::new();
    while let Next::Line(line) = lines.next(Some(Duration::from_secs(5))) {
        out.push(line);
    }
    out
}

#[test]
fn lines_come_in_order_and_eof_closes() {
    let lines = CommandLines::spawn(Cursor::new(b"one\r\ntwo\n\nthree".to_vec())).unwrap();
    assert_eq!(
        all(&lines),
        vec![
            Line::Text("one\r".into()),
            Line::Text("two".into()),
            Line::Text(String::new()),
            Line::Text("three".into()),
        ]
    );
    assert_eq!(lines.next(None), Next::Closed);
}

#[test]
fn an_oversized_line_is_skipped_not_kept_and_the_next_one_still_reads() {
    let mut input = vec![b'x'; line_cap() as usize + 10];
    input.extend_from_slice(b"\n\xff\xfe\nafter\n");
    let lines = CommandLines::spawn(Cursor::new(input)).unwrap();
    assert_eq!(
        all(&lines),
        vec![Line::TooLong, Line::NotUtf8, Line::Text("after".into())]
    );
    assert!(Line::TooLong.problem().unwrap().contains("16 MiB"));
}

#[test]
fn waiting_for_a_line_times_out_on_a_silent_pipe() {
    let (reader, _writer) = std::io::pipe().unwrap();
    let lines = CommandLines::spawn(std::io::BufReader::new(reader)).unwrap();
    assert_eq!(lines.next(Some(Duration::from_millis(50))), Next::TimedOut);
}
