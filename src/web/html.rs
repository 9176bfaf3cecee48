//! A fetched page as readable markdown or plain text: html5ever parses it (through `htmd`),
//! scripts, styles, `<noscript>`, `<iframe>`, forms and comments are dropped. Markdown keeps
//! headings, links, lists and code blocks; plain text is agentic-pi's: the text of the page
//! with a line break at each block element, whitespace collapsed, at most one blank line in a
//! row. The `<title>` comes from the same tree.

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;

/// Elements whose content is never text for a reader.
const SKIPPED: [&str; 9] = [
    "script", "style", "noscript", "iframe", "template", "svg", "canvas", "form", "head",
];

/// Elements that begin and end a line of plain text (agentic-pi's block elements).
const BLOCKS: [&str; 32] = [
    "p",
    "br",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "nav",
    "aside",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "td",
    "th",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "hr",
    "pre",
    "code",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
];

pub(super) struct Page {
    pub title: Option<String>,
    pub text: String,
}

pub(super) fn to_markdown(html: &str) -> Page {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let Ok(tree) = converter.html_to_tree(html) else {
        return Page {
            title: None,
            text: String::new(),
        };
    };
    let title = find_title(&tree).filter(|t| !t.is_empty());
    let text = converter.tree_to_markdown(&tree);
    Page { title, text }
}

pub(super) fn to_text(html: &str) -> Page {
    let Ok(tree) = HtmlToMarkdown::builder().build().html_to_tree(html) else {
        return Page {
            title: None,
            text: String::new(),
        };
    };
    let title = find_title(&tree).filter(|t| !t.is_empty());
    Page {
        title,
        text: tidy(&raw_text(&tree)),
    }
}

/// The text of the tree, a newline at each block element's start and end. A loop, not
/// recursion: a page may nest elements deeper than the stack would allow.
fn raw_text(root: &Rc<Node>) -> String {
    enum Step {
        Visit(Rc<Node>),
        Newline,
    }
    let mut out = String::new();
    let mut steps = vec![Step::Visit(root.clone())];
    while let Some(step) = steps.pop() {
        let node = match step {
            Step::Newline => {
                out.push('\n');
                continue;
            }
            Step::Visit(node) => node,
        };
        let block = match &node.data {
            NodeData::Text { contents } => {
                out.push_str(&contents.borrow());
                continue;
            }
            NodeData::Element { name, .. } if SKIPPED.contains(&&*name.local) => continue,
            NodeData::Element { name, .. } => BLOCKS.contains(&&*name.local),
            NodeData::Document => false,
            _ => continue,
        };
        if block {
            out.push('\n');
            steps.push(Step::Newline);
        }
        steps.extend(
            node.children
                .borrow()
                .iter()
                .rev()
                .cloned()
                .map(Step::Visit),
        );
    }
    out
}

/// Runs of spaces collapsed, lines trimmed, at most one blank line in a row.
fn tidy(raw: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for line in raw.replace("\r\n", "\n").replace('\r', "\n").split('\n') {
        let line = line
            .split([' ', '\t', '\u{0b}', '\u{0c}', '\u{a0}'])
            .filter(|word| !word.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if line.is_empty() && lines.last().is_some_and(String::is_empty) {
            continue;
        }
        lines.push(line);
    }
    lines.join("\n").trim().to_string()
}

/// The first `<title>`'s text, whitespace collapsed; a loop, like [`raw_text`].
fn find_title(root: &Rc<Node>) -> Option<String> {
    let mut nodes = vec![root.clone()];
    while let Some(node) = nodes.pop() {
        if let NodeData::Element { name, .. } = &node.data
            && &*name.local == "title"
        {
            let mut text = String::new();
            for child in node.children.borrow().iter() {
                if let NodeData::Text { contents } = &child.data {
                    text.push_str(&contents.borrow());
                }
            }
            return Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        nodes.extend(node.children.borrow().iter().rev().cloned());
    }
    None
}

#[cfg(test)]
mod tests;
