//! The provider table: everything worker knows about a model provider, one row each.
//!
//! A row says where the provider lives (base URL, and the variables that re-point it), how it
//! is authenticated (the key variable and when a key is required), which wire format it speaks
//! ([`Dialect`]: request body, stream, usage, errors) and what it serves beyond the format
//! (Dynamo's agent identity, serving hints and context windows). The rest of worker asks the
//! row and never matches on a provider's name: adding a provider that speaks a known format is
//! one row in [`BUILT_IN`]; a new format is one more [`Dialect`] and its file. `--providers`
//! entries reuse the generic rows ([`Provider::for_api`]) with their own URL and key.

use super::Dialect;

/// When a request may go out without a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRule {
    /// The run fails before its first request when there is no key.
    Required,
    /// A key is sent when there is one (a local server may need none).
    Optional,
    /// Required at the default base URL (the vendor itself); optional once re-pointed (a
    /// compatible server elsewhere).
    RequiredAtDefaultUrl,
}

/// One model provider.
#[derive(Debug, PartialEq, Eq)]
pub struct Provider {
    /// The name `--model provider/id` uses and a recorded fixture names.
    pub name: &'static str,
    /// The wire format it speaks.
    pub dialect: Dialect,
    /// The API root when no variable names one (`""` for a generic row, whose `--providers`
    /// entry always gives one).
    pub default_base_url: &'static str,
    /// The variables that re-point it, the first one set wins.
    pub base_url_vars: &'static [&'static str],
    /// The variable its key comes from (`""` for a generic row: `<NAME>_API_KEY`).
    pub key_var: &'static str,
    /// Whether a request may go out without a key.
    pub key: KeyRule,
    /// The request field that caps an answer's length (`max_completion_tokens` for OpenAI,
    /// which rejects `max_tokens` for its reasoning models).
    pub max_tokens_field: &'static str,
    /// Served by NVIDIA Dynamo: requests carry the agent identity and serving hints, and the
    /// model list reports each model's context window.
    pub dynamo: bool,
}

/// NVIDIA Dynamo's OpenAI-compatible frontend.
pub const DYNAMO: Provider = Provider {
    name: "dynamo",
    dialect: Dialect::ChatCompletions,
    default_base_url: "http://127.0.0.1:8000/v1",
    base_url_vars: &["DYNAMO_BASE_URL", "OPENAI_BASE_URL"],
    key_var: "DYNAMO_API_KEY",
    key: KeyRule::Optional,
    max_tokens_field: "max_tokens",
    dynamo: true,
};

/// OpenAI; never sent Dynamo-only fields.
pub const OPENAI: Provider = Provider {
    name: "openai",
    dialect: Dialect::ChatCompletions,
    default_base_url: "https://api.openai.com/v1",
    base_url_vars: &["OPENAI_BASE_URL"],
    key_var: "OPENAI_API_KEY",
    key: KeyRule::RequiredAtDefaultUrl,
    max_tokens_field: "max_completion_tokens",
    dynamo: false,
};

/// Anthropic's Messages API; also the row of a `--providers` entry that speaks it.
pub const ANTHROPIC: Provider = Provider {
    name: "anthropic",
    dialect: Dialect::AnthropicMessages,
    default_base_url: "https://api.anthropic.com",
    base_url_vars: &["ANTHROPIC_BASE_URL"],
    key_var: "ANTHROPIC_API_KEY",
    key: KeyRule::Required,
    max_tokens_field: "max_tokens",
    dynamo: false,
};

/// OpenRouter, an OpenAI-compatible gateway to many vendors' models.
pub const OPENROUTER: Provider = Provider {
    name: "openrouter",
    dialect: Dialect::ChatCompletions,
    default_base_url: "https://openrouter.ai/api/v1",
    base_url_vars: &[],
    key_var: "OPENROUTER_API_KEY",
    key: KeyRule::Required,
    max_tokens_field: "max_tokens",
    dynamo: false,
};

/// Any other OpenAI-compatible server: the row of a `--providers` entry that speaks
/// `openai-completions`, and of a built-in one re-pointed with that `api`.
pub const COMPATIBLE: Provider = Provider {
    name: "compatible",
    dialect: Dialect::ChatCompletions,
    default_base_url: "",
    base_url_vars: &[],
    key_var: "",
    key: KeyRule::Optional,
    max_tokens_field: "max_tokens",
    dynamo: false,
};

/// The providers `--model` knows by name, in the order errors list them.
pub const BUILT_IN: [&Provider; 4] = [&DYNAMO, &OPENAI, &ANTHROPIC, &OPENROUTER];

impl Provider {
    /// The built-in provider called `name`.
    pub fn named(name: &str) -> Option<&'static Provider> {
        BUILT_IN.into_iter().find(|provider| provider.name == name)
    }

    /// The generic row of a `--providers` entry's `api` (Pi's names for the wire formats).
    pub fn for_api(api: &str) -> Option<&'static Provider> {
        [&COMPATIBLE, &ANTHROPIC]
            .into_iter()
            .find(|provider| provider.dialect.api_name() == api)
    }

    /// The `api` values a `--providers` entry may give.
    pub fn api_names() -> [&'static str; 2] {
        [COMPATIBLE.dialect.api_name(), ANTHROPIC.dialect.api_name()]
    }

    /// Whether a request to `base_url` (normalized) must carry a key.
    pub fn key_required(&self, base_url: &str) -> bool {
        match self.key {
            KeyRule::Required => true,
            KeyRule::Optional => false,
            KeyRule::RequiredAtDefaultUrl => base_url == self.default_base_url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_row_is_whole_and_named_once() {
        for provider in BUILT_IN {
            assert_eq!(Provider::named(provider.name), Some(provider));
            assert!(
                provider.default_base_url.starts_with("http"),
                "{provider:?}"
            );
            assert!(provider.key_var.ends_with("_API_KEY"), "{provider:?}");
        }
        assert_eq!(Provider::named("compatible"), None);
        assert_eq!(Provider::named("replay"), None);
    }

    #[test]
    fn a_providers_entry_picks_its_row_by_api() {
        assert_eq!(Provider::for_api("openai-completions"), Some(&COMPATIBLE));
        assert_eq!(Provider::for_api("anthropic-messages"), Some(&ANTHROPIC));
        assert_eq!(Provider::for_api("openai-responses"), None);
        assert_eq!(
            Provider::api_names(),
            ["openai-completions", "anthropic-messages"]
        );
    }

    #[test]
    fn openai_needs_a_key_only_at_openai() {
        assert!(OPENAI.key_required("https://api.openai.com/v1"));
        assert!(!OPENAI.key_required("http://vllm.local:8000/v1"));
        assert!(ANTHROPIC.key_required("https://gw.example"));
        assert!(!DYNAMO.key_required(DYNAMO.default_base_url));
    }
}
