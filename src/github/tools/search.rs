//! Search across GitHub: repositories, issues and pull requests, code.

use schemars::JsonSchema;
use serde::Deserialize;

use super::args::{Paging, query};
use super::{Call, Handled, Output, Registry};
use crate::github::client::Method;
use crate::tools::args::Text;

pub(super) fn register(r: &mut Registry) {
    r.read(
        "github_search_repositories",
        "Search repositories with GitHub's query syntax, e.g. 'topic:rust stars:>100'.",
        |call| search(call, "repositories"),
    );
    r.read(
        "github_search_issues",
        "Search issues and pull requests, e.g. 'repo:o/r is:pr is:open label:bug'.",
        |call| search(call, "issues"),
    );
    r.read(
        "github_search_code",
        "Search code, e.g. 'repo:o/r fn main language:rust'.",
        |call| search(call, "code"),
    );
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct SearchArgs {
    /// Search query
    query: Text,
    #[serde(flatten)]
    paging: Paging,
}

fn search<'a>(call: Call<'a, SearchArgs>, kind: &'static str) -> Handled<'a> {
    Box::pin(async move {
        let mut pairs = vec![("q", Some(call.args.query.0.clone()))];
        pairs.extend(call.args.paging.pairs());
        let path = format!("/search/{kind}{}", query(&pairs));
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}
