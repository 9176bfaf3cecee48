//! `--tools` naming a tool this run does not offer. agentic-pi hands its list to Pi, which
//! activates the names it has and passes over the rest, so `--tools read,bash,
//! github_get_repository` without `--profile` is a run with read and bash. worker does the
//! same for a tool it could offer in another run (a GitHub tool without `--profile`, a web
//! tool without a search key, a built-in with `--no-builtin-tools`), and says so on stderr;
//! a name no run could offer is a typo, and still a usage error listing what exists.

use std::sync::Arc;

use crate::tools::Tool;

/// Every tool name some run could offer.
fn catalogue() -> Vec<String> {
    let mut tools = crate::tools::ToolSet::all_builtin();
    tools.push(Arc::new(crate::tools::MultiGrepTool));
    let mut names: Vec<String> = tools.iter().map(|tool| tool.name().to_string()).collect();
    names.extend(crate::web::TOOL_NAMES.map(str::to_string));
    names.extend(crate::github::tools::TOOL_NAMES.map(str::to_string));
    names
}

/// Leaves out of `allow` the names of tools that are not in `available` but that another
/// run could offer, and returns the warning that says which.
pub(super) fn keep_offered(allow: &mut Vec<String>, available: &[Arc<dyn Tool>]) -> Option<String> {
    let known = catalogue();
    let (kept, left_out): (Vec<String>, Vec<String>) = allow.drain(..).partition(|name| {
        available.iter().any(|tool| tool.name() == name) || !known.contains(name)
    });
    *allow = kept;
    (!left_out.is_empty()).then(|| {
        format!(
            "--tools {}: not offered in this run (no --profile, web search key or built-in tools for {}); left out",
            left_out.join(","),
            if left_out.len() == 1 { "it" } else { "them" }
        )
    })
}
