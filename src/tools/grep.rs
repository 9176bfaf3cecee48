//! `grep {pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}`: search contents
//! in-process with ripgrep's own libraries (no `rg` binary needed).
//!
//! Files are searched in parallel when the tree is not small (see `walk`); results are sorted by path so the same tree gives the same
//! output. Output lines are `path:LINE: text` for matches and `path-LINE- text` for context,
//! like Pi's grep.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::access::Access;
use super::args::{Count, Flag};
use super::truncate::{Listing, cap_line};
use super::{ToolContext, ToolError, ToolSpec, TypedTool, paths, text_result, walk};
use crate::events::ToolResult;
use crate::sync::LockExt;

const DEFAULT_LIMIT: usize = 100;
const MAX_LINE_CHARS: usize = 500;

pub(super) struct GrepTool;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct GrepArgs {
    /// Search pattern (regex, or literal text with literal: true)
    pattern: String,
    /// Directory or file to search (default: current directory)
    path: Option<String>,
    /// Only search files matching this glob, e.g. '*.ts' or 'src/**/*.rs'
    glob: Option<String>,
    /// Case-insensitive search (default: false)
    ignore_case: Option<Flag>,
    /// Treat pattern as literal text, not a regex (default: false)
    literal: Option<Flag>,
    /// Lines to show before and after each match (default: 0)
    context: Option<Count>,
    /// Maximum number of matches to return (default: 100)
    limit: Option<Count>,
}

impl TypedTool for GrepTool {
    type Args = GrepArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "grep",
            description: "Search file contents for a regex (or literal) pattern. Respects .gitignore, searches \
                          hidden files, skips binary files. Returns `path:LINE: text` per matching line (context \
                          lines as `path-LINE- text`). Stops at 100 matches by default (see limit); long lines \
                          are cut at 500 characters and the output at 50KB.",
            snippet: Some("Search file contents for patterns (respects .gitignore)"),
            read_only: true,
        }
    }

    async fn run(&self, args: GrepArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let display = args.path.clone().unwrap_or_else(|| ".".to_string());
        let root = ctx.path(&display, Access::Read)?;
        let cancel = ctx.cancel().clone();
        let policy = ctx.policy.clone();
        tokio::task::spawn_blocking(move || {
            search(&root, &display, &args, policy, &|| cancel.is_cancelled())
        })
        .await
        .map_err(|err| ToolError::new(format!("grep failed: {err}")))?
    }
}

struct FileHits {
    path: PathBuf,
    lines: Vec<Hit>,
}

struct Hit {
    number: u64,
    is_match: bool,
    text: String,
}

fn search(
    root: &Path,
    display: &str,
    params: &GrepArgs,
    policy: Option<std::sync::Arc<super::access::PathPolicy>>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<ToolResult, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(params.ignore_case.is_some_and(|f| f.0))
        .fixed_strings(params.literal.is_some_and(|f| f.0))
        .line_terminator(Some(b'\n'))
        .build(&params.pattern)
        .map_err(|err| ToolError::new(format!("Invalid regex '{}': {err}", params.pattern)))?;
    let globs: Vec<String> = params
        .glob
        .iter()
        .filter(|g| !g.trim().is_empty())
        .cloned()
        .collect();
    let query = Query {
        matcher,
        globs,
        limit: params
            .limit
            .filter(|n| n.0 > 0)
            .map_or(DEFAULT_LIMIT, |n| n.0 as usize),
        context: params.context.map_or(0, |n| n.0 as usize),
        skip: 0,
        paged: false,
        policy,
    };
    run_query(root, display, &query, cancelled)
}

/// A content search: what to match, where, and how much to return.
pub(super) struct Query {
    pub matcher: RegexMatcher,
    /// Include globs, and `!`-prefixed exclude globs, relative to the search root.
    pub globs: Vec<String>,
    /// Matches to return.
    pub limit: usize,
    /// Lines before and after each match.
    pub context: usize,
    /// Matches to pass over first (a later page).
    pub skip: usize,
    /// More matches are fetched with a cursor (multi_grep), not a larger limit (grep).
    pub paged: bool,
    /// The sandbox's rules: hidden paths are not searched.
    pub policy: Option<std::sync::Arc<super::access::PathPolicy>>,
}

/// Runs a search under `root` (shown to the model as `display`).
pub(super) fn run_query(
    root: &Path,
    display: &str,
    query: &Query,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<ToolResult, ToolError> {
    if std::fs::symlink_metadata(root).is_err() {
        return Err(ToolError::new(format!("Path not found: {display}")));
    }
    let Query {
        matcher,
        limit,
        context,
        skip,
        ..
    } = query;
    let (limit, context, skip) = (*limit, *context, *skip);
    // The search collects the skipped matches too, then leaves them out of the output.
    let wanted = limit.saturating_add(skip);

    let mut walker = walk::builder(root, query.policy.as_ref());
    if !query.globs.is_empty() {
        let base = if root.is_dir() {
            root
        } else {
            root.parent().unwrap_or(root)
        };
        let mut overrides = OverrideBuilder::new(base);
        for glob in &query.globs {
            overrides
                .add(glob)
                .map_err(|err| ToolError::new(format!("Invalid glob '{glob}': {err}")))?;
        }
        let overrides = overrides
            .build()
            .map_err(|err| ToolError::new(format!("Invalid glob: {err}")))?;
        walker.overrides(overrides);
    }

    let found: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let matches = AtomicUsize::new(0);
    walk::visit(&walker, || {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let found = &found;
        let matches = &matches;
        Box::new(move |entry| {
            if cancelled() || matches.load(Ordering::Relaxed) >= wanted {
                return ControlFlow::Break(());
            }
            let Ok(entry) = entry else {
                return ControlFlow::Continue(());
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ControlFlow::Continue(());
            }
            let policy = query.policy.as_deref();
            let opened = open_entry(entry.path(), entry.depth() > 0, policy);
            let Some(file) = opened else {
                return ControlFlow::Continue(());
            };
            if let Some(hits) = search_file(&mut searcher, &matcher, &file, entry.path(), wanted) {
                let count = hits.lines.iter().filter(|h| h.is_match).count();
                matches.fetch_add(count, Ordering::Relaxed);
                found.lock_or_recover().push(hits);
            }
            ControlFlow::Continue(())
        })
    });
    if cancelled() {
        return Err(ToolError::new("Operation aborted"));
    }
    let mut files = found.into_inner_or_recover();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(render(root, files, limit, skip, query.paged))
}

/// Opens a file the walk found. Below the root, a symlink there now was swapped in after the
/// walk listed a file, and is skipped; under a sandbox, a file that turns out to be a hidden
/// one once open (a directory on its path swapped for a link) is skipped too.
fn open_entry(
    path: &Path,
    below_root: bool,
    policy: Option<&super::access::PathPolicy>,
) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = nix::fcntl::OFlag::O_NONBLOCK;
    if below_root {
        flags |= nix::fcntl::OFlag::O_NOFOLLOW;
    }
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .ok()?;
    super::confined::verify_opened(policy, &file, "").ok()?;
    Some(file)
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: &std::fs::File,
    path: &Path,
    limit: usize,
) -> Option<FileHits> {
    let mut collector = Collector {
        lines: Vec::new(),
        matches: 0,
        limit,
    };
    searcher.search_file(matcher, file, &mut collector).ok()?;
    (collector.matches > 0).then(|| FileHits {
        path: path.to_path_buf(),
        lines: collector.lines,
    })
}

struct Collector {
    lines: Vec<Hit>,
    matches: usize,
    limit: usize,
}

impl Collector {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        self.lines.push(Hit {
            number: number.unwrap_or(0),
            is_match,
            text: text.to_string(),
        });
    }
}

impl Sink for Collector {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.push(mat.line_number(), mat.bytes(), true);
        self.matches += 1;
        Ok(self.matches < self.limit)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(ctx.line_number(), ctx.bytes(), false);
        Ok(true)
    }
}

fn render(root: &Path, files: Vec<FileHits>, limit: usize, skip: usize, paged: bool) -> ToolResult {
    let base = if root.is_dir() {
        root.to_path_buf()
    } else {
        root.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let mut out = Vec::new();
    let mut shown = 0;
    let mut passed = 0;
    let mut lines_cut = false;
    'files: for file in &files {
        let rel = paths::relative_posix(&base, &file.path);
        for hit in &file.lines {
            if hit.is_match {
                if shown == limit {
                    break 'files;
                }
                if passed < skip {
                    passed += 1;
                    continue;
                }
                shown += 1;
            } else if passed < skip {
                continue;
            }
            let (text, cut) = cap_line(&hit.text, MAX_LINE_CHARS);
            lines_cut |= cut;
            let sep = if hit.is_match { ':' } else { '-' };
            out.push(format!("{rel}{sep}{}{sep} {text}", hit.number));
        }
    }
    if out.is_empty() {
        return text_result("No matches found", None);
    }
    // The search stops once `limit` matches are in, so reaching it means there may be more.
    let limit_reached = shown == limit;
    let mut listing = Listing::new(&out);
    if limit_reached && paged {
        listing.notice(
            format!(
                "{limit} matches limit reached. Continue with cursor=\"{}\", or refine the patterns",
                skip + limit
            ),
            "matchLimitReached",
            json!(limit),
            true,
        );
    } else if limit_reached {
        listing.notice(
            format!(
                "{limit} matches limit reached. Use limit={} for more, or refine pattern",
                limit * 2
            ),
            "matchLimitReached",
            json!(limit),
            true,
        );
    }
    if lines_cut {
        listing.notice(
            format!(
                "Some lines truncated to {MAX_LINE_CHARS} chars. Use read tool to see full lines"
            ),
            "linesTruncated",
            json!(true),
            false,
        );
    }
    listing.finish()
}

#[cfg(test)]
mod tests;
