//! Cutting UTF-8 text at byte budgets without splitting a character.

/// The largest char boundary at or before `index`.
pub fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary at or after `index`.
pub fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// At most `max` bytes of `text` (on a char boundary), marked when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    let cut = floor_char_boundary(text, max);
    format!("{}…", &text[..cut])
}
