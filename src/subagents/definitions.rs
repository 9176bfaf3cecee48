//! Agent definitions: Markdown files with YAML front matter.
