//! The YAML frontmatter of a `SKILL.md`: the subset skills use, read into flat string fields.
//!
//! Top-level `key: value` pairs with plain, single- or double-quoted values, plain values
//! continued on indented lines, and `>` / `|` block scalars. Nested mappings (`metadata:`)
//! and lists are passed over: a skill's header needs `name`, `description` and flags.

use std::collections::HashMap;

/// Why a `SKILL.md`'s frontmatter could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrontmatterError {
    /// The first line is not `---`.
    #[error("the file must start with a --- line")]
    NoOpening,
    /// No `---` (or `...`) line ends the frontmatter.
    #[error("no closing --- line")]
    NoClosing,
    /// A top-level line has no `:`; `line` counts the file's lines from 1.
    #[error("line {line}: expected 'key: value'")]
    NotKeyValue {
        /// The line's number in the file, counting from 1.
        line: usize,
    },
    /// A double-quoted value has no closing quote; carries the key.
    #[error("{0}: unclosed double quote")]
    UnclosedDoubleQuote(String),
    /// A single-quoted value has no closing quote; carries the key.
    #[error("{0}: unclosed single quote")]
    UnclosedSingleQuote(String),
}

/// The frontmatter's top-level scalar fields, by key.
pub(crate) fn parse(text: &str) -> Result<HashMap<String, String>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(FrontmatterError::NoOpening);
    }
    let mut body = Vec::new();
    let mut closed = false;
    for line in lines {
        if matches!(line.trim_end(), "---" | "...") {
            closed = true;
            break;
        }
        body.push(line);
    }
    if !closed {
        return Err(FrontmatterError::NoClosing);
    }
    let mut fields = HashMap::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(FrontmatterError::NotKeyValue { line: i + 1 });
        };
        let key = key.trim().to_string();
        let value = value.trim();
        // The lines that belong to this key: indented, or blank within the block.
        let start = i;
        while i < body.len() && (body[i].starts_with([' ', '\t']) || body[i].trim().is_empty()) {
            i += 1;
        }
        let more: Vec<&str> = body[start..i].iter().map(|l| l.trim()).collect();
        let parsed = match value.chars().next() {
            Some('>') => more
                .iter()
                .filter(|l| !l.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" "),
            Some('|') => more.join("\n").trim_end().to_string(),
            Some('"') => unquote(value, '"')
                .ok_or_else(|| FrontmatterError::UnclosedDoubleQuote(key.clone()))?,
            Some('\'') => unquote(value, '\'')
                .ok_or_else(|| FrontmatterError::UnclosedSingleQuote(key.clone()))?,
            // An empty value with indented lines is a nested mapping or a list: not ours.
            None => continue,
            Some(_) => std::iter::once(value)
                .chain(more.iter().filter(|l| !l.is_empty()).copied())
                .collect::<Vec<_>>()
                .join(" "),
        };
        fields.insert(key, parsed);
    }
    Ok(fields)
}

/// The text between matching quotes (`\"` and `''` are the escaped quote).
fn unquote(value: &str, quote: char) -> Option<String> {
    let inner = value.strip_prefix(quote)?;
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quote == '"' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c if c == quote => {
                if quote == '\'' && chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Some(out);
                }
            }
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests;
