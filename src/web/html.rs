//! A fetched page as readable markdown: html5ever parses it (through `htmd`), scripts,
//! styles, `<noscript>`, `<iframe>`, forms and comments are dropped, and headings, links,
//! lists and code blocks stay. The `<title>` comes from the same tree.

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;

/// Elements whose content is never text for a reader.
const SKIPPED: [&str; 9] = [
    "script", "style", "noscript", "iframe", "template", "svg", "canvas", "form", "head",
];

pub struct Page {
    pub title: Option<String>,
    pub markdown: String,
}

pub fn to_markdown(html: &str) -> Page {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let Ok(tree) = converter.html_to_tree(html) else {
        return Page {
            title: None,
            markdown: String::new(),
        };
    };
    let title = find_title(&tree).filter(|t| !t.is_empty());
    let markdown = converter.tree_to_markdown(&tree);
    Page { title, markdown }
}

fn find_title(node: &Rc<Node>) -> Option<String> {
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
    node.children.borrow().iter().find_map(find_title)
}

#[cfg(test)]
mod tests;
