//! A text file's BOM and CRLF line endings, set aside so edits match on plain `\n` text and
//! put back when the file is written (atomically, through [`WriteTarget::replace`]).

use std::io;

use super::confined::WriteTarget;

/// A text file's BOM and CRLF line endings, set aside so edits match on plain `\n` text and
/// put back when the file is written.
pub(super) struct Encoding {
    bom: &'static str,
    crlf: bool,
}

impl Encoding {
    /// The file's text without BOM and with `\n` line endings, and how to restore them.
    pub(super) fn strip(text: &str) -> (Encoding, String) {
        let (bom, body) = match text.strip_prefix('\u{FEFF}') {
            Some(rest) => ("\u{FEFF}", rest),
            None => ("", text),
        };
        let crlf = body.contains("\r\n");
        let plain = if crlf {
            body.replace("\r\n", "\n")
        } else {
            body.to_string()
        };
        (Encoding { bom, crlf }, plain)
    }

    /// Writes `plain` atomically with the BOM and line endings the file had.
    pub(super) fn write(&self, target: &WriteTarget, plain: &str) -> io::Result<()> {
        let body = if self.crlf {
            plain.replace('\n', "\r\n")
        } else {
            plain.to_string()
        };
        target.replace(format!("{}{body}", self.bom).as_bytes())
    }
}
