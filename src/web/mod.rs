//! Web research tools (`web_search`, `web_fetch`) and their settings.
//!
//! A provider is chosen by `--web-search-provider`, else by the first API key the environment
//! has (Tavily, then Exa, then Brave, as agentic-pi does). This build does not ship the tools
//! yet: the `web-search` status line says so, with the provider that would be used, instead of
//! pretending they are there.

use serde_json::json;

use crate::config::Env;
use crate::events::{ExtensionState, ExtensionStatus};
use crate::extension::{Extension, StatusLine};

/// The default cap on web_search + web_fetch calls in one run.
pub const DEFAULT_MAX_CALLS: u32 = 30;

/// A web search API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
}

/// The web tools' settings, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub enabled: bool,
    pub provider: Option<Provider>,
    pub max_calls: u32,
}

/// The `web-search` extension: its status line (and, once built, its tools).
pub struct WebSearch {
    status: ExtensionStatus,
}

impl WebSearch {
    pub fn configure(settings: &Settings, env: &dyn Env) -> WebSearch {
        let skipped = |reason: &str, message: String| ExtensionStatus {
            extension: "web-search".into(),
            status: ExtensionState::Skipped,
            reason: Some(reason.to_string()),
            message: Some(message),
            extra: serde_json::Map::new(),
        };
        if !settings.enabled {
            return WebSearch {
                status: skipped("disabled-by-flag", "--no-web-search".into()),
            };
        }
        let chosen = match settings.provider {
            Some(provider) => env.get(provider.key_var()).map(|_| provider).ok_or(format!(
                "--web-search-provider {} needs {}",
                provider.name(),
                provider.key_var()
            )),
            None => Provider::ALL
                .into_iter()
                .find(|p| env.get(p.key_var()).is_some())
                .ok_or_else(|| {
                    let vars: Vec<_> = Provider::ALL.iter().map(|p| p.key_var()).collect();
                    format!("none of {} is set", vars.join(", "))
                }),
        };
        let status = match chosen {
            Err(message) => skipped("no-credentials", message),
            Ok(provider) => {
                let mut status = skipped(
                    "not-available",
                    "web_search and web_fetch are not part of this build".into(),
                );
                status
                    .extra
                    .insert("provider".into(), json!(provider.name()));
                status
                    .extra
                    .insert("maxCalls".into(), json!(settings.max_calls));
                status
            }
        };
        WebSearch { status }
    }
}

impl Extension for WebSearch {
    fn status(&self) -> Vec<StatusLine> {
        vec![StatusLine::Extension(self.status.clone())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MapEnv;

    fn reason(settings: &Settings, env: &[(&str, &str)]) -> (Option<String>, Option<String>) {
        let web = WebSearch::configure(settings, &MapEnv::from_pairs(env));
        let provider = web
            .status
            .extra
            .get("provider")
            .and_then(|p| p.as_str().map(str::to_string));
        (web.status.reason, provider)
    }

    #[test]
    fn the_status_says_why_there_are_no_web_tools() {
        let on = Settings {
            enabled: true,
            provider: None,
            max_calls: 30,
        };
        assert_eq!(reason(&on, &[]).0.as_deref(), Some("no-credentials"));
        // Tavily wins over Brave when both keys are there.
        assert_eq!(
            reason(
                &on,
                &[("BRAVE_SEARCH_API_KEY", "b"), ("TAVILY_API_KEY", "t")]
            ),
            (Some("not-available".into()), Some("tavily".into()))
        );
        let forced = Settings {
            provider: Some(Provider::Exa),
            ..on.clone()
        };
        assert_eq!(
            reason(&forced, &[("TAVILY_API_KEY", "t")]).0.as_deref(),
            Some("no-credentials")
        );
        let off = Settings {
            enabled: false,
            ..on
        };
        assert_eq!(
            reason(&off, &[("TAVILY_API_KEY", "t")]).0.as_deref(),
            Some("disabled-by-flag")
        );
    }
}
