//! `find {pattern, path?, limit?}`: files and directories whose name matches a glob, walked
//! in-process with the same ignore rules as `grep`.
//!
//! A pattern without `/` matches the entry's name (`*.rs`); a pattern with `/` matches the
//! path relative to the search root at any depth (`src/**/*.ts`), as `fd --glob` does in Pi.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Mutex;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::access::Access;
use super::args::Count;
use super::truncate::Listing;
use super::{ToolContext, ToolError, ToolSpec, TypedTool, paths, text_result, walk};
use crate::events::ToolResult;
use crate::sync::LockExt;

const DEFAULT_LIMIT: usize = 1000;

pub(super) struct FindTool;

#[derive(Deserialize, JsonSchema)]
pub(super) struct FindArgs {
    /// Glob pattern to match, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'
    pattern: String,
    /// Directory to search in (default: current directory)
    path: Option<String>,
    /// Maximum number of results (default: 1000)
    limit: Option<Count>,
}

impl TypedTool for FindTool {
    type Args = FindArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "find",
            description: "Find files and directories by glob pattern, e.g. '*.ts', '**/*.json' or \
                          'src/**/test_*.py'. Respects .gitignore and includes hidden files. Returns paths \
                          relative to the search directory (directories end in /), sorted, up to 1000 by \
                          default (see limit).",
            snippet: Some("Find files by glob pattern (respects .gitignore)"),
            read_only: true,
        }
    }

    async fn run(&self, args: FindArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let display = args.path.clone().unwrap_or_else(|| ".".to_string());
        let root = ctx.path(&display, Access::Read)?;
        let cancel = ctx.cancel().clone();
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || {
            find(&root, &display, &args, policy.as_ref(), &|| {
                cancel.is_cancelled()
            })
        })
        .await
        .map_err(|err| ToolError::new(format!("find failed: {err}")))?
    }
}

struct Pattern {
    glob: GlobMatcher,
    on_full_path: bool,
}

impl Pattern {
    fn new(raw: &str) -> Result<Self, ToolError> {
        let on_full_path = raw.contains('/');
        let text = if on_full_path && !raw.starts_with("**/") && !raw.starts_with('/') {
            format!("**/{raw}")
        } else {
            raw.trim_start_matches('/').to_string()
        };
        let glob = GlobBuilder::new(&text)
            .literal_separator(true)
            .build()
            .map_err(|err| ToolError::new(format!("Invalid glob pattern '{raw}': {err}")))?;
        Ok(Pattern {
            glob: glob.compile_matcher(),
            on_full_path,
        })
    }

    fn matches(&self, rel: &str, name: &str) -> bool {
        if self.on_full_path {
            self.glob.is_match(rel)
        } else {
            self.glob.is_match(name)
        }
    }
}

fn find(
    root: &Path,
    display: &str,
    params: &FindArgs,
    policy: Option<&std::sync::Arc<super::access::PathPolicy>>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<ToolResult, ToolError> {
    match std::fs::metadata(root) {
        Err(_) => return Err(ToolError::new(format!("Path not found: {display}"))),
        Ok(meta) if !meta.is_dir() => {
            return Err(ToolError::new(format!("Not a directory: {display}")));
        }
        Ok(_) => {}
    }
    let pattern = Pattern::new(params.pattern.trim())?;
    let limit = params
        .limit
        .filter(|n| n.0 > 0)
        .map_or(DEFAULT_LIMIT, |n| n.0 as usize);
    let found: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());
    walk::visit(&walk::builder(root, policy), || {
        let found = &found;
        let pattern = &pattern;
        Box::new(move |entry| {
            if cancelled() {
                return ControlFlow::Break(());
            }
            let Ok(entry) = entry else {
                return ControlFlow::Continue(());
            };
            if entry.depth() == 0 {
                return ControlFlow::Continue(());
            }
            let rel = paths::relative_posix(root, entry.path());
            let name = entry.file_name().to_string_lossy();
            if pattern.matches(&rel, &name) {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                found.lock_or_recover().push((rel, is_dir));
            }
            ControlFlow::Continue(())
        })
    });
    if cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    let mut found = found.into_inner_or_recover();
    Ok(render(&mut found, limit))
}

fn render(found: &mut [(String, bool)], limit: usize) -> ToolResult {
    if found.is_empty() {
        return text_result("No files found matching pattern", None);
    }
    found.sort();
    let shown: Vec<String> = found
        .iter()
        .take(limit)
        .map(|(rel, is_dir)| {
            if *is_dir {
                format!("{rel}/")
            } else {
                rel.clone()
            }
        })
        .collect();
    let mut listing = Listing::new(&shown);
    if found.len() > limit {
        listing.notice(
            format!(
                "{limit} results limit reached. Use limit={} for more, or refine pattern",
                limit * 2
            ),
            "resultLimitReached",
            json!(limit),
            true,
        );
    }
    listing.finish()
}

#[cfg(test)]
mod tests;
