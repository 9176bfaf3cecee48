//! Web research tools, `web_search` and `web_fetch`, as agentic-pi offers them.
//!
//! A provider is chosen by `--web-search-provider` (or `WEB_SEARCH_PROVIDER`), else by the
//! first API key the environment has: Tavily, then Exa, then Brave ([`selection`]). Without
//! one, or with `--no-web-search`, there are no web tools and the `web-search` status line
//! says why.
//! Provider APIs are reached directly (`TAVILY_BASE_URL`, `EXA_BASE_URL`,
//! `BRAVE_SEARCH_BASE_URL` re-point them); pages fetched locally go through the SSRF guard
//! ([`guard`]) and the rails of [`fetch`].

use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use serde_json::json;

use crate::config::Env;
use crate::events::{ExtensionState, ExtensionStatus};
use crate::extension::{Extension, StatusLine};
use crate::http::RetryPolicy;
use crate::secrets::Secrets;
use crate::tools::Tool;

mod fetch;
mod guard;
mod html;
mod providers;
mod selection;
mod tools;

pub use guard::{GuardError, Policy};
pub use providers::Account;
use selection::Selection;

/// The tools' names.
pub const SEARCH_TOOL: &str = "web_search";
/// The `web_fetch` tool's name.
pub const FETCH_TOOL: &str = "web_fetch";
/// Both web tools' names.
pub const TOOL_NAMES: [&str; 2] = [SEARCH_TOOL, FETCH_TOOL];

/// The default cap on web_search + web_fetch calls in one run.
pub const DEFAULT_MAX_CALLS: u32 = 30;
/// `name=ip,...`: resolve these names to these addresses (the guard still checks them).
pub const RESOLVE_VAR: &str = "WORKER_WEB_RESOLVE";

/// A web search API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Tavily: search and page extraction.
    Tavily,
    /// Exa: search and page contents.
    Exa,
    /// Brave Search: search only; pages are fetched locally.
    Brave,
}

impl Provider {
    /// In the order auto-detection tries them.
    pub const ALL: [Provider; 3] = [Provider::Tavily, Provider::Exa, Provider::Brave];
    /// In the order error messages list them (agentic-pi's).
    pub const NAMED: [Provider; 3] = [Provider::Tavily, Provider::Brave, Provider::Exa];

    /// The name as `--web-search-provider` and the status line spell it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Tavily => "tavily",
            Provider::Exa => "exa",
            Provider::Brave => "brave",
        }
    }

    /// The variable holding the provider's API key.
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::Tavily => "TAVILY_API_KEY",
            Provider::Exa => "EXA_API_KEY",
            Provider::Brave => "BRAVE_SEARCH_API_KEY",
        }
    }

    /// The provider of exactly this name (`TAVILY` is not one).
    fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Why the web tools could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// `--web-search-provider` was given an empty value.
    #[error("--web-search-provider requires a value")]
    EmptyProvider,
    /// The provider named (by the flag or `WEB_SEARCH_PROVIDER`) is not one; carries the name.
    #[error("Unknown web-search provider '{0}'. Expected one of: {names}", names = provider_names())]
    UnknownProvider(String),
    /// The provider's base-URL variable is not an http(s) URL; the message names the variable.
    #[error(transparent)]
    BaseUrl(#[from] crate::config::UrlError),
    /// The provider's HTTP client could not be built.
    #[error("{0}")]
    Client(#[source] reqwest::Error),
    /// `web_fetch`'s HTTP client could not be built; the message is the error with its causes.
    #[error("{}", crate::http::error_chain(.0))]
    FetchClient(#[source] reqwest::Error),
}

/// The providers' names, as error messages list them.
fn provider_names() -> String {
    let names: Vec<&str> = Provider::NAMED.iter().map(|p| p.name()).collect();
    names.join(", ")
}

/// How web_fetch renders an HTML page it fetched itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FetchFormat {
    /// Headings, links, lists and code blocks kept (the default).
    #[default]
    Markdown,
    /// agentic-pi's plain text: the words, a line per block element.
    Text,
}

impl FetchFormat {
    /// The format as the flag and a call's `format` argument spell it.
    pub fn name(self) -> &'static str {
        match self {
            FetchFormat::Markdown => "markdown",
            FetchFormat::Text => "text",
        }
    }

    fn from_name(name: &str) -> Option<FetchFormat> {
        [FetchFormat::Markdown, FetchFormat::Text]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

/// The web tools' settings, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Offer the web tools at all (`--no-web-search` clears it).
    pub enabled: bool,
    /// `--web-search-provider`, as given on the command line (`None` leaves the choice to
    /// `WEB_SEARCH_PROVIDER`, then to the keys set).
    pub provider: Option<String>,
    /// The most `web_search` + `web_fetch` calls in one run (`--web-search-max-calls`).
    pub max_calls: u32,
    /// `--web-fetch-format`: what web_fetch returns unless the call asks otherwise.
    pub fetch_format: FetchFormat,
    /// `--web-allow-host`: hosts `web_fetch` may reach although they are private or local.
    pub allow_hosts: Vec<String>,
    /// `--web-allow-private`: no SSRF guard at all.
    pub allow_private: bool,
    /// Retries of the search provider's transient failures (search and extract calls).
    pub retry: RetryPolicy,
}

/// The `web-search` extension: its status line and, with a provider, its two tools.
pub struct WebSearch {
    status: ExtensionStatus,
    tools: Vec<Arc<dyn Tool>>,
    web: Option<Arc<tools::Web>>,
}

impl WebSearch {
    /// The extension, and warnings for stderr (a named provider that cannot be used, a
    /// choice among several keys). A provider name that is not one is an error.
    pub fn configure(
        settings: &Settings,
        env: &dyn Env,
        secrets: &Secrets,
    ) -> Result<(WebSearch, Vec<String>), WebError> {
        let mut warnings = Vec::new();
        let skipped = |reason: &str, message: Option<String>, extra| WebSearch {
            status: ExtensionStatus {
                extension: "web-search".into(),
                status: ExtensionState::Skipped,
                reason: Some(reason.to_string()),
                message,
                extra,
            },
            tools: Vec::new(),
            web: None,
        };
        let selection = selection::select(settings.enabled, settings.provider.as_deref(), env)?;
        warnings.extend(selection.warning());
        let (provider, key, advisory) = match selection {
            Selection::Configured {
                provider,
                key,
                message,
            } => (provider, key, message),
            Selection::Skipped {
                reason,
                message,
                provider,
            } => {
                let mut extra = serde_json::Map::new();
                if let Some(provider) = provider {
                    extra.insert("provider".into(), json!(provider.name()));
                }
                extra.insert("toolCount".into(), json!(0));
                return Ok((skipped(reason, message, extra), warnings));
            }
        };
        secrets.add(key.clone());
        let base_url = match env.get(provider.base_url_var()) {
            Some(url) => {
                crate::config::http_url(provider.base_url_var(), &url)
                    .map_err(WebError::BaseUrl)?;
                url
            }
            None => provider.default_base_url().to_string(),
        };
        let account = Account {
            provider,
            base_url,
            key,
        };
        let policy = Arc::new(Policy {
            allow_hosts: settings
                .allow_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            allow_private: settings.allow_private,
            pinned: env.get(RESOLVE_VAR).map(|v| pins(&v)).unwrap_or_default(),
        });
        let built = crate::http::client(Duration::from_secs(10), true)
            .map_err(WebError::Client)
            .and_then(|client| Ok((client, fetch::Fetcher::new(policy)?)));
        let (client, fetcher) = match built {
            Ok(parts) => parts,
            Err(err) => {
                warnings.push(format!("web tools unavailable: {err}"));
                let mut extra = serde_json::Map::new();
                extra.insert("provider".into(), json!(provider.name()));
                extra.insert("toolCount".into(), json!(0));
                return Ok((
                    skipped("unavailable", Some(err.to_string()), extra),
                    warnings,
                ));
            }
        };
        let web = Arc::new(tools::Web {
            account,
            client,
            fetcher,
            retry: settings.retry.clone(),
            fetch_format: settings.fetch_format,
            max_calls: settings.max_calls,
            calls: AtomicU32::new(0),
            blocked: AtomicU32::new(0),
        });
        let mut extra = serde_json::Map::new();
        extra.insert("provider".into(), json!(provider.name()));
        extra.insert("toolCount".into(), json!(2));
        extra.insert("maxCalls".into(), json!(settings.max_calls));
        let status = ExtensionStatus {
            extension: "web-search".into(),
            status: ExtensionState::Configured,
            reason: None,
            message: advisory,
            extra,
        };
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(tools::WebSearchTool(web.clone())),
            Arc::new(tools::WebFetchTool(web.clone())),
        ];
        let web = Some(web);
        Ok((WebSearch { status, tools, web }, warnings))
    }
}

/// `name=ip,name=ip`; entries that do not parse are left out.
fn pins(value: &str) -> Vec<(String, std::net::IpAddr)> {
    value
        .split(',')
        .filter_map(|pair| {
            let (name, ip) = pair.split_once('=')?;
            Some((name.trim().to_ascii_lowercase(), ip.trim().parse().ok()?))
        })
        .collect()
}

impl Extension for WebSearch {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.status.clone())]
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        use std::sync::atomic::Ordering;
        match &self.web {
            // Calls past the budget are attempts too; the budget is what they were refused by.
            Some(web) => vec![
                (
                    "webCalls",
                    u64::from(web.calls.load(Ordering::SeqCst).min(web.max_calls)),
                ),
                (
                    "webFetchesBlocked",
                    u64::from(web.blocked.load(Ordering::SeqCst)),
                ),
            ],
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
