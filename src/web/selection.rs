//! Which search provider a run uses, decided from the flags and the environment alone (no
//! I/O), by agentic-pi's rules so that its status lines and warnings read the same:
//!
//! 1. `--no-web-search`: skipped, `disabled-by-flag`.
//! 2. A provider named by `--web-search-provider` (or else `WEB_SEARCH_PROVIDER`): it must be
//!    exactly `tavily`, `exa` or `brave` (anything else is a configuration error, exit 2);
//!    without its key the extension is skipped, `no-credentials`, naming the variable, and a
//!    warning says so.
//! 3. Otherwise the first key set, Tavily then Exa then Brave; when several are set the
//!    status line's `message` (and a warning) says which was used and how to choose.
//! 4. No key: skipped, `no-credentials`, silently (no message, no warning).
//!
//! A key or a name that is only whitespace counts as unset.

use super::{Provider, WebError};
use crate::config::Env;

/// The variable that names a provider when the flag does not.
const PROVIDER_VAR: &str = "WEB_SEARCH_PROVIDER";

/// What the selection came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Selection {
    Configured {
        provider: Provider,
        key: String,
        /// An advisory for the status line and stderr (several keys set).
        message: Option<String>,
    },
    Skipped {
        reason: &'static str,
        message: Option<String>,
        /// The provider asked for by name, echoed back.
        provider: Option<Provider>,
    },
}

impl Selection {
    /// The stderr warning this selection deserves, if any (a provider named without its key,
    /// or a choice among several keys).
    pub(super) fn warning(&self) -> Option<String> {
        match self {
            Selection::Skipped {
                reason,
                message: Some(message),
                provider: Some(_),
            } => Some(format!(
                "web-search extension disabled ({reason}): {message}"
            )),
            Selection::Configured {
                message: Some(message),
                ..
            } => Some(format!("web-search: {message}")),
            _ => None,
        }
    }
}

/// `flag` is `--web-search-provider` as given, `None` when absent.
pub(super) fn select(
    enabled: bool,
    flag: Option<&str>,
    env: &dyn Env,
) -> Result<Selection, WebError> {
    if !enabled {
        return Ok(Selection::Skipped {
            reason: "disabled-by-flag",
            message: None,
            provider: None,
        });
    }
    let named = match flag {
        Some(value) if value.trim().is_empty() => {
            return Err(WebError::EmptyProvider);
        }
        Some(value) => Some(value.trim().to_string()),
        None => env
            .get(PROVIDER_VAR)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty()),
    };
    let key = |provider: Provider| {
        env.get(provider.key_var())
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
    };
    if let Some(name) = named {
        let provider =
            Provider::from_name(&name).ok_or_else(|| WebError::UnknownProvider(name.clone()))?;
        return Ok(match key(provider) {
            Some(key) => Selection::Configured {
                provider,
                key,
                message: None,
            },
            None => Selection::Skipped {
                reason: "no-credentials",
                message: Some(format!(
                    "--web-search-provider={} set but {} is empty",
                    provider.name(),
                    provider.key_var()
                )),
                provider: Some(provider),
            },
        });
    }
    let present: Vec<(Provider, String)> = Provider::ALL
        .into_iter()
        .filter_map(|p| key(p).map(|k| (p, k)))
        .collect();
    let Some((provider, key)) = present.first().cloned() else {
        return Ok(Selection::Skipped {
            reason: "no-credentials",
            message: None,
            provider: None,
        });
    };
    let message = (present.len() > 1).then(|| {
        let names: Vec<&str> = present.iter().map(|(p, _)| p.name()).collect();
        format!(
            "multiple provider keys present ({}); using {} — set {PROVIDER_VAR} to override",
            names.join(", "),
            provider.name()
        )
    });
    Ok(Selection::Configured {
        provider,
        key,
        message,
    })
}
