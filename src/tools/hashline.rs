//! Line anchors (`LINE#TAG`) that go stale when the line changes.
//!
//! `read` with `hashline: true` prints each line as `12#KJ:content`; `hashline_edit` accepts
//! `12#KJ` as an anchor and refuses it unless line 12 still hashes to `KJ`. The tag is the low
//! byte of xxh32 over the line with whitespace removed (so re-indentation alone doesn't stale
//! it), written as two letters. Lines with no letters or digits (`}`, blank lines) are
//! seeded with their line number, or every `}` would share a tag.

use xxhash_rust::xxh32::xxh32;

const ALPHABET: &[u8; 16] = b"ZPMQVRWSNKTXJBYH";

pub(super) fn line_tag(line: &str, line_number: usize) -> String {
    let stripped: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let seed = if line.chars().any(char::is_alphanumeric) {
        0
    } else {
        line_number as u32
    };
    let low = (xxh32(stripped.as_bytes(), seed) & 0xff) as usize;
    let mut tag = String::with_capacity(2);
    tag.push(ALPHABET[low >> 4] as char);
    tag.push(ALPHABET[low & 0xf] as char);
    tag
}

/// `12#KJ:` for line 12.
pub(super) fn line_prefix(line_number: usize, line: &str) -> String {
    format!("{line_number}#{}:", line_tag(line, line_number))
}

/// Parses `12#KJ` (a copied `12#KJ:content` also works) into the line number and tag.
pub(super) fn parse_anchor(anchor: &str) -> Option<(usize, String)> {
    let (number, rest) = anchor.trim().split_once('#')?;
    let number: usize = number.trim().parse().ok().filter(|n| *n > 0)?;
    let tag: String = rest.split(':').next()?.trim().to_string();
    (tag.len() == 2 && tag.bytes().all(|b| ALPHABET.contains(&b))).then_some((number, tag))
}

#[cfg(test)]
mod tests;
