use super::*;

#[test]
fn the_message_names_what_the_path_is_and_what_to_use_instead() {
    assert_eq!(
        not_regular("pipe", Irregular::Fifo, "read").message,
        "pipe is a FIFO, not a regular file; read only works on regular files. Use bash for pipes and devices."
    );
}
