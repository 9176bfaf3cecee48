//! `multi_grep {patterns, constraints?, context?, limit?, cursor?}`: one search for any of
//! several literal patterns, with FFF's name and parameters (agentic-pi's file-search tools).
//!
//! The patterns become one literal alternation for ripgrep's matcher (an Aho-Corasick or
//! SIMD search, not a regex per pattern), smart-case like FFF: case-insensitive unless a
//! pattern has an upper-case letter. `constraints` is FFF's file filter: space- or
//! comma-separated globs (`*.{ts,tsx}`), directory prefixes (`src/`) and exclusions (`!test/`).
//! The output is grep's (`path:LINE: text`); `cursor` continues after the matches shown.

use grep_regex::RegexMatcherBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::access::Access;
use super::args::{Count, List, OptText};
use super::grep::{Query, run_query};
use super::{ToolContext, ToolError, ToolSpec, TypedTool};
use crate::events::ToolResult;

const DEFAULT_LIMIT: usize = 20;
const MAX_CONTEXT: usize = 20;
const MAX_PATTERNS: usize = 100;

/// The `multi_grep` tool: one search for any of several literal patterns.
pub struct MultiGrepTool;

#[derive(Deserialize, JsonSchema)]
pub struct MultiGrepArgs {
    /// Literal patterns (OR). Include snake_case/camelCase/PascalCase variants.
    patterns: List,
    /// File filter, e.g. '*.{ts,tsx} !test/'
    #[serde(default)]
    constraints: OptText,
    /// Context lines before+after (0-20)
    context: Option<Count>,
    /// Max matches (default 20)
    limit: Option<Count>,
    /// Pagination cursor
    #[serde(default)]
    cursor: OptText,
}

impl TypedTool for MultiGrepTool {
    type Args = MultiGrepArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: "multi_grep",
            description: "Search file contents for ANY of multiple literal patterns (OR) in one pass. Faster \
                          than regex alternation. Smart-case (case-insensitive unless a pattern has an \
                          upper-case letter); respects .gitignore. Returns `path:LINE: text` per matching \
                          line. Default limit 20; continue with the cursor the result names.",
            snippet: Some("Multi-pattern OR content search"),
            read_only: true,
        }
    }

    async fn run(&self, args: MultiGrepArgs, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let patterns: Vec<String> = args
            .patterns
            .0
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        if patterns.is_empty() {
            return Err(ToolError::new(
                "patterns: must have at least 1 non-empty pattern",
            ));
        }
        if patterns.len() > MAX_PATTERNS {
            return Err(ToolError::new(format!(
                "patterns: at most {MAX_PATTERNS}, got {}",
                patterns.len()
            )));
        }
        let skip = match args.cursor.0.as_deref().map(str::trim) {
            None | Some("") => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ToolError::new(format!(
                    "cursor: '{cursor}' is not a cursor this tool returned"
                ))
            })?,
        };
        let smart_case = !patterns.iter().any(|p| p.chars().any(char::is_uppercase));
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(smart_case)
            .line_terminator(Some(b'\n'))
            .build_literals(&patterns)
            .map_err(|err| ToolError::new(format!("patterns: {err}")))?;
        let query = Query {
            matcher,
            globs: constraint_globs(args.constraints.0.as_deref().unwrap_or("")),
            limit: args
                .limit
                .filter(|n| n.0 > 0)
                .map_or(DEFAULT_LIMIT, |n| n.0 as usize),
            context: args.context.map_or(0, |n| (n.0 as usize).min(MAX_CONTEXT)),
            skip,
            paged: true,
            policy: ctx.policy.clone(),
        };
        let root = ctx.path(".", Access::Read)?;
        let cancel = ctx.cancel().clone();
        tokio::task::spawn_blocking(move || {
            run_query(&root, ".", &query, &|| cancel.is_cancelled())
        })
        .await
        .map_err(|err| ToolError::new(format!("multi_grep failed: {err}")))?
    }
}

/// FFF's constraint syntax as ignore-style override globs: `src/` is the directory and what
/// is under it, `!x` excludes, anything else is a glob.
fn constraint_globs(constraints: &str) -> Vec<String> {
    // Commas separate tokens, except inside a `{a,b}` alternation.
    let mut tokens = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in constraints.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ' ' | ',' if depth == 0 => {
                tokens.push(&constraints[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    tokens.push(&constraints[start..]);
    tokens
        .into_iter()
        .map(str::trim)
        .filter(|token| !token.is_empty() && *token != "!")
        .map(|token| {
            let (negate, body) = match token.strip_prefix('!') {
                Some(body) => ("!", body),
                None => ("", token),
            };
            match body.strip_suffix('/') {
                Some(dir) => format!("{negate}{dir}/**"),
                None => format!("{negate}{body}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
