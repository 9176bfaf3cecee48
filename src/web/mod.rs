//! Web research tools, `web_search` and `web_fetch`, as agentic-pi offers them.
//!
//! A provider is chosen by `--web-search-provider` (or `WEB_SEARCH_PROVIDER`), else by the
//! first API key the environment has: Tavily, then Exa, then Brave. Without one, or with
//! `--no-web-search`, there are no web tools and the `web-search` status line says why.
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
use crate::llm::RetryPolicy;
use crate::secrets::Secrets;
use crate::tools::Tool;

mod fetch;
mod guard;
mod html;
mod providers;
mod tools;

pub use guard::Policy;
pub use providers::Account;

/// The tools' names.
pub const SEARCH_TOOL: &str = "web_search";
pub const FETCH_TOOL: &str = "web_fetch";
pub const TOOL_NAMES: [&str; 2] = [SEARCH_TOOL, FETCH_TOOL];

/// The default cap on web_search + web_fetch calls in one run.
pub const DEFAULT_MAX_CALLS: u32 = 30;
/// `name=ip,...`: resolve these names to these addresses (the guard still checks them).
pub const RESOLVE_VAR: &str = "WORKER_WEB_RESOLVE";

/// A web search API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Tavily,
    Exa,
    Brave,
}

impl Provider {
    /// In the order auto-detection tries them.
    pub const ALL: [Provider; 3] = [Provider::Tavily, Provider::Exa, Provider::Brave];

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

    fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// The web tools' settings, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub enabled: bool,
    /// `--web-search-provider`, as given.
    pub provider: Option<String>,
    pub max_calls: u32,
    pub allow_hosts: Vec<String>,
    pub allow_private: bool,
    pub retry: RetryPolicy,
}

/// The `web-search` extension: its status line and, with a provider, its two tools.
pub struct WebSearch {
    status: ExtensionStatus,
    tools: Vec<Arc<dyn Tool>>,
    web: Option<Arc<tools::Web>>,
}

impl WebSearch {
    /// The extension, and warnings for stderr (a named provider that cannot be used).
    pub fn configure(
        settings: &Settings,
        env: &dyn Env,
        secrets: &Secrets,
    ) -> Result<(WebSearch, Vec<String>), String> {
        let mut warnings = Vec::new();
        let skipped = |reason: &str, message: String| WebSearch {
            status: ExtensionStatus {
                extension: "web-search".into(),
                status: ExtensionState::Skipped,
                reason: Some(reason.to_string()),
                message: Some(message),
                extra: serde_json::Map::new(),
            },
            tools: Vec::new(),
            web: None,
        };
        if !settings.enabled {
            return Ok((
                skipped("disabled-by-flag", "--no-web-search".into()),
                warnings,
            ));
        }
        let named = settings
            .provider
            .as_deref()
            .filter(|p| !p.trim().is_empty());
        let chosen = match named.map(|name| (name, Provider::from_name(name))) {
            Some((_, Some(provider))) => match env.get(provider.key_var()) {
                Some(key) => Some((provider, key)),
                None => {
                    let message = format!(
                        "--web-search-provider {} needs {}",
                        provider.name(),
                        provider.key_var()
                    );
                    warnings.push(format!("{message}; no web tools"));
                    return Ok((skipped("no-credentials", message), warnings));
                }
            },
            Some((name, None)) => {
                warnings.push(format!(
                    "--web-search-provider {name}: unknown; expected tavily, exa or brave (choosing by the keys set)"
                ));
                None
            }
            None => None,
        };
        let chosen = chosen.or_else(|| {
            Provider::ALL
                .into_iter()
                .find_map(|p| env.get(p.key_var()).map(|key| (p, key)))
        });
        let Some((provider, key)) = chosen else {
            let vars: Vec<_> = Provider::ALL.iter().map(|p| p.key_var()).collect();
            return Ok((
                skipped(
                    "no-credentials",
                    format!("none of {} is set", vars.join(", ")),
                ),
                warnings,
            ));
        };
        secrets.add(key.clone());
        let base_url = match env.get(provider.base_url_var()) {
            Some(url) => {
                crate::config::http_url(provider.base_url_var(), &url)?;
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
        let built = crate::llm::http_client(Duration::from_secs(10), true)
            .map_err(|err| err.to_string())
            .and_then(|client| Ok((client, fetch::Fetcher::new(policy)?)));
        let (client, fetcher) = match built {
            Ok(parts) => parts,
            Err(err) => {
                warnings.push(format!("web tools unavailable: {err}"));
                return Ok((skipped("unavailable", err), warnings));
            }
        };
        let web = Arc::new(tools::Web {
            account,
            client,
            fetcher,
            retry: settings.retry.clone(),
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
            message: None,
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
