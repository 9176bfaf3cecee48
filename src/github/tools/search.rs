//! Search across GitHub: repositories, issues and pull requests, code.

use super::args::query;
use super::{Call, Handled, Output, Spec, paging, schema, string};
use crate::github::client::Method;

pub fn specs() -> Vec<Spec> {
    vec![
        Spec {
            name: "github_search_repositories",
            description: "Search repositories with GitHub's query syntax, e.g. 'topic:rust stars:>100'.",
            read_only: true,
            parameters: || {
                schema(
                    [vec![("query", string("Search query"))], paging(30)].concat(),
                    &["query"],
                )
            },
            handler: |call| search(call, "repositories"),
        },
        Spec {
            name: "github_search_issues",
            description: "Search issues and pull requests, e.g. 'repo:o/r is:pr is:open label:bug'.",
            read_only: true,
            parameters: || {
                schema(
                    [vec![("query", string("Search query"))], paging(30)].concat(),
                    &["query"],
                )
            },
            handler: |call| search(call, "issues"),
        },
        Spec {
            name: "github_search_code",
            description: "Search code, e.g. 'repo:o/r fn main language:rust'.",
            read_only: true,
            parameters: || {
                schema(
                    [vec![("query", string("Search query"))], paging(30)].concat(),
                    &["query"],
                )
            },
            handler: |call| search(call, "code"),
        },
    ]
}

fn search<'a>(call: Call<'a>, kind: &'static str) -> Handled<'a> {
    Box::pin(async move {
        let mut pairs = vec![("q", Some(call.args.str("query")?))];
        pairs.extend(call.args.paging(30)?);
        let path = format!("/search/{kind}{}", query(&pairs));
        Ok(Output::Json(call.gh.json(Method::Get, &path, None).await?))
    })
}
