//! `web_search` and `web_fetch`, with agentic-pi's names and parameters. Both draw on one
//! per-run budget of calls (`--web-search-max-calls`); past it a call is a structured
//! rate-limit error and the run goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::FetchFormat;
use super::fetch::{FetchError, Fetcher, cap_text};
use super::providers::{self, Account, MAX_RESULTS, ProviderError, SearchRequest};
use crate::events::ToolResult;
use crate::http::RetryPolicy;
use crate::tools::args::{Count, Flag, OptList, OptText, Text};
use crate::tools::{ToolContext, ToolError, ToolSpec, TypedTool, text_result};

/// What both tools share.
pub(super) struct Web {
    pub account: Account,
    pub client: reqwest::Client,
    pub fetcher: Fetcher,
    pub retry: RetryPolicy,
    /// What web_fetch returns when a call does not say.
    pub fetch_format: FetchFormat,
    pub max_calls: u32,
    pub calls: AtomicU32,
    /// Fetches the SSRF guard refused.
    pub blocked: AtomicU32,
}

impl Web {
    /// Takes one call from the budget, or says it is spent.
    fn spend(&self) -> Result<(), ToolError> {
        let used = self.calls.fetch_add(1, Ordering::SeqCst);
        if used >= self.max_calls {
            return Err(ToolError::new(format!(
                "Web tool budget exhausted: this run may make {} web_search/web_fetch calls and has made them all. Continue with what you have.",
                self.max_calls
            ))
            .with_details(json!({
                "error": "rate_limited",
                "limit": self.max_calls,
                "used": used,
            })));
        }
        Ok(())
    }
}

fn provider_error(err: ProviderError) -> ToolError {
    ToolError::new(format!(
        "{} failed: {}. {}",
        err.provider.name(),
        err.message,
        err.hint()
    ))
    .with_details(json!({
        "error": err.message,
        "provider": err.provider.name(),
        "status": err.status,
        "transient": err.transient,
        "hint": err.hint(),
    }))
}

pub(super) struct WebSearchTool(pub Arc<Web>);

#[derive(Deserialize, JsonSchema)]
pub(super) struct WebSearchArgs {
    /// What to search for
    query: Text,
    /// How many results (1-10, default 5)
    max_results: Option<Count>,
    /// Only results whose host is one of these domains or below one, e.g. ["docs.rs"]
    #[serde(default)]
    include_domains: OptList,
    /// No results whose host is one of these domains or below one
    #[serde(default)]
    exclude_domains: OptList,
    /// basic (default) or advanced (slower, more thorough)
    #[serde(default)]
    search_depth: OptText,
    /// Include page text with each result (default false: snippets)
    include_content: Option<Flag>,
}

impl TypedTool for WebSearchTool {
    type Args = WebSearchArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: super::SEARCH_TOOL,
            description: "Search the web. Returns up to 10 results, each with title, URL, published date when known, \
                          a snippet, and the page text too with include_content (Tavily, Exa); Tavily adds a summary \
                          answer. Use web_fetch to read a result in full.",
            snippet: Some("Search the web"),
            read_only: true,
        }
    }

    async fn run(&self, args: WebSearchArgs, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let query = args.query.0.trim().to_string();
        if query.is_empty() {
            return Err(ToolError::new("query: must not be empty"));
        }
        let depth = args.search_depth.0.filter(|d| !d.trim().is_empty());
        if let Some(depth) = &depth
            && !matches!(depth.as_str(), "basic" | "advanced")
        {
            return Err(ToolError::new(format!(
                "search_depth: expected basic or advanced, got \"{depth}\""
            )));
        }
        self.0.spend()?;
        let request = SearchRequest {
            query,
            max_results: args
                .max_results
                .map_or(5, |n| n.0 as usize)
                .clamp(1, MAX_RESULTS),
            include_domains: args.include_domains.0.unwrap_or_default(),
            exclude_domains: args.exclude_domains.0.unwrap_or_default(),
            search_depth: depth,
            include_content: args.include_content.is_some_and(|f| f.0),
        };
        let web = &self.0;
        let found = providers::search(&web.client, &web.account, &request, &web.retry)
            .await
            .map_err(provider_error)?;
        let results: Vec<_> = found
            .hits
            .iter()
            .map(|h| {
                json!({"title": h.title, "url": h.url, "snippet": h.snippet, "score": h.score,
                       "publishedDate": h.published, "hasContent": h.content.is_some()})
            })
            .collect();
        let mut details = json!({"provider": web.account.provider.name(), "results": results});
        if let Some(answer) = &found.answer {
            details["answer"] = json!(answer);
        }
        let mut text = String::new();
        if let Some(answer) = &found.answer {
            text.push_str(&format!("Answer: {}\n\n", answer.trim()));
        }
        if found.hits.is_empty() {
            text.push_str(&format!("No results for \"{}\".", request.query));
        }
        for (i, hit) in found.hits.iter().enumerate() {
            text.push_str(&format!("{}. {}\n   {}\n", i + 1, hit.title, hit.url));
            if let Some(date) = &hit.published {
                text.push_str(&format!("   Published: {date}\n"));
            }
            indent(&mut text, hit.snippet.trim());
            if let Some(content) = hit.content.as_deref().map(str::trim)
                && content != hit.snippet.trim()
            {
                text.push_str("   Content:\n");
                indent(&mut text, cap_text(content).0);
            }
            text.push('\n');
        }
        Ok(text_result(text.trim_end(), Some(details)))
    }
}

/// `text`'s lines, each indented under its result.
fn indent(out: &mut String, text: &str) {
    for line in text.lines() {
        out.push_str(&format!("   {line}\n"));
    }
}

pub(super) struct WebFetchTool(pub Arc<Web>);

#[derive(Deserialize, JsonSchema)]
pub(super) struct WebFetchArgs {
    /// The http(s) URL to read
    url: Text,
    /// markdown (headings, links, lists and code kept) or text (plain text); default: the
    /// run's --web-fetch-format
    #[serde(default)]
    format: OptText,
}

impl TypedTool for WebFetchTool {
    type Args = WebFetchArgs;

    fn spec(&self) -> &ToolSpec {
        &ToolSpec {
            name: super::FETCH_TOOL,
            description: "Read a web page as text: HTML becomes markdown (scripts and styles removed; headings, links, \
                          lists and code kept) or, with format text, plain text; JSON is pretty-printed. http(s) only; pages over 1 MiB, binary content \
                          and internal network addresses are refused; the text is cut at 200 KiB.",
            snippet: Some("Read a web page as markdown"),
            read_only: true,
        }
    }

    async fn run(&self, args: WebFetchArgs, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let web = &self.0;
        let url = args.url.0.trim().to_string();
        if url.is_empty() {
            return Err(ToolError::new("url: must not be empty"));
        }
        let format = match args.format.0.as_deref().map(str::trim) {
            None | Some("") => web.fetch_format,
            Some(name) => FetchFormat::from_name(name).ok_or_else(|| {
                ToolError::new(format!("format: expected markdown or text, got \"{name}\""))
            })?,
        };
        web.spend()?;
        // The provider's extractor first, where there is one; then our own fetch.
        let extracted = providers::extract(&web.client, &web.account, &url, &web.retry).await;
        if let Ok(Some(page)) = extracted {
            return Ok(page_result(
                &url,
                page.title.as_deref(),
                &page.text,
                format,
                json!({"url": url, "via": web.account.provider.name()}),
            ));
        }
        match web.fetcher.fetch(&url, format).await {
            Ok(fetched) => Ok(page_result(
                &fetched.final_url,
                fetched.title.as_deref(),
                &fetched.text,
                format,
                json!({
                    "url": url,
                    "finalUrl": fetched.final_url,
                    "contentType": fetched.content_type,
                    "bytes": fetched.bytes,
                    "via": "local",
                    "format": format.name(),
                }),
            )),
            Err(FetchError::Blocked(rule)) => {
                web.blocked.fetch_add(1, Ordering::SeqCst);
                Err(ToolError::new(format!("Fetch of {url} {rule}"))
                    .with_details(json!({"url": url, "blocked": true, "rule": rule})))
            }
            Err(FetchError::Failed(message)) => {
                Err(ToolError::new(format!("Fetch of {url} failed: {message}"))
                    .with_details(json!({"url": url})))
            }
        }
    }
}

fn page_result(
    url: &str,
    title: Option<&str>,
    text: &str,
    format: FetchFormat,
    mut details: serde_json::Value,
) -> ToolResult {
    let (body, cut) = cap_text(text.trim());
    let mut out = String::new();
    if let Some(title) = title.filter(|t| !t.trim().is_empty()) {
        match format {
            FetchFormat::Markdown => out.push_str(&format!("# {}\n\n", title.trim())),
            FetchFormat::Text => out.push_str(&format!("Title: {}\n", title.trim())),
        }
    }
    out.push_str(&format!("Source: {url}\n\n{body}"));
    if cut {
        out.push_str(&format!(
            "\n\n[Truncated: showing the first {} KiB of {} KiB of text]",
            body.len() / 1024,
            text.len() / 1024
        ));
    }
    details["truncated"] = json!(cut);
    text_result(out, Some(details))
}
