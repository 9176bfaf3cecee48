//! Serving hints: what each request tells Dynamo so it can schedule and cache it well, and
//! the request for Dynamo's serving report.
//!
//! Per request, to the `dynamo` provider:
//! - `nvext.agent_hints` (unless `--no-serving-hints`):
//!   - `priority`: `--priority` (default 0 when `--timeout` is set), raised as the run's
//!     budget runs out ([`escalation`]), so a phase about to miss its deadline is served first;
//!   - `strict_priority`: `--strict-priority`;
//!   - `osl`: the expected output tokens, the largest completion of this run's last
//!     [`OSL_WINDOW`] responses, capped by `--max-tokens` (absent before the first response);
//!   - `speculative_prefill: true` when the request offers tools: the next request will
//!     extend this one, so Dynamo may prefill it while the tools run.
//! - `nvext.extra_fields: ["worker_id", "timing"]`: the response reports the serving worker
//!   and timing (`turn_end.serving`).
//! - `x-tenant-id: --tenant`: a tenant-scoped prefix cache.
//!
//! None of this may fail a run. Dynamo 1.3+ answers a field it does not know with HTTP 400
//! (``unknown field `osl` ``): that field is dropped for the rest of the run and the request is
//! sent again at once, one resend per field, so it can never loop. Dynamo 1.2.x ignores what
//! it does not know. The fields dropped are reported in `trace_summary.hintsRefused` and
//! on stderr.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::sync::LockExt;

/// Responses whose completion sizes predict the next one.
pub const OSL_WINDOW: usize = 4;

/// What the flags ask for.
#[derive(Debug, Clone, Default)]
pub struct HintSettings {
    /// Send `nvext.agent_hints` at all.
    pub agent_hints: bool,
    /// `--priority`: the base of `nvext.agent_hints.priority` (higher is served first). `None`
    /// sends no priority, unless `deadline` is set: then it escalates from 0.
    pub priority: Option<i32>,
    /// `--strict-priority`: `nvext.agent_hints.strict_priority`, the router queue tier; `None`
    /// sends none.
    pub strict_priority: Option<u32>,
    /// `--max-tokens`: the cap of `osl`.
    pub max_tokens: Option<u32>,
    /// When the run's budget started and how long it is (`--timeout`).
    pub deadline: Option<(Instant, Duration)>,
    /// `--tenant`: sent as `x-tenant-id` on every request, hints on or off; `None` sends no
    /// header.
    pub tenant: Option<String>,
}

/// A field a server may refuse, in the order a refusal is matched (a hint before the object
/// that holds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `nvext.agent_hints.speculative_prefill`, sent when the request offers tools.
    SpeculativePrefill,
    /// `nvext.agent_hints.strict_priority`.
    StrictPriority,
    /// `nvext.agent_hints.osl`: the expected output tokens.
    Osl,
    /// `nvext.agent_hints.priority`.
    Priority,
    /// The whole `nvext.agent_hints` object.
    AgentHints,
    /// `nvext.extra_fields`: the request for the serving report (`worker_id`, `timing`).
    ExtraFields,
}

impl Field {
    const ALL: [Field; 6] = [
        Field::SpeculativePrefill,
        Field::StrictPriority,
        Field::Osl,
        Field::Priority,
        Field::AgentHints,
        Field::ExtraFields,
    ];

    /// The key on the wire.
    pub fn key(self) -> &'static str {
        match self {
            Field::SpeculativePrefill => "speculative_prefill",
            Field::StrictPriority => "strict_priority",
            Field::Osl => "osl",
            Field::Priority => "priority",
            Field::AgentHints => "agent_hints",
            Field::ExtraFields => "extra_fields",
        }
    }

    /// Where it lives in the body, as reported.
    pub fn path(self) -> &'static str {
        match self {
            Field::SpeculativePrefill => "nvext.agent_hints.speculative_prefill",
            Field::StrictPriority => "nvext.agent_hints.strict_priority",
            Field::Osl => "nvext.agent_hints.osl",
            Field::Priority => "nvext.agent_hints.priority",
            Field::AgentHints => "nvext.agent_hints",
            Field::ExtraFields => "nvext.extra_fields",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// How much the priority rises with the share of the `--timeout` budget used: nothing in the
/// first half, +1 up to 75%, +2 up to 90%, +4 after.
pub fn escalation(used: f64) -> i32 {
    match used {
        u if u < 0.5 => 0,
        u if u < 0.75 => 1,
        u if u < 0.9 => 2,
        _ => 4,
    }
}

#[derive(Debug, Default)]
struct State {
    /// Fields refused by the server, as bits of [`Field`].
    refused: u8,
    /// Fields in the request last sent, as bits.
    sent: u8,
    /// Completion tokens of recent responses, newest last.
    completions: Vec<u64>,
}

/// The hints, request by request.
#[derive(Debug)]
pub struct Hints {
    settings: HintSettings,
    state: Mutex<State>,
}

impl Hints {
    /// Hints for one run, nothing refused and no completion seen yet.
    pub fn new(settings: HintSettings) -> Self {
        Hints {
            settings,
            state: Mutex::new(State::default()),
        }
    }

    /// A response arrived with this many completion tokens.
    pub fn completed(&self, completion_tokens: u64) {
        let mut state = self.state.lock_or_recover();
        state.completions.push(completion_tokens);
        if state.completions.len() > OSL_WINDOW {
            state.completions.remove(0);
        }
    }

    /// The fields refused so far, as body paths.
    pub fn refused(&self) -> Vec<&'static str> {
        let refused = self.state.lock_or_recover().refused;
        Field::ALL
            .iter()
            .filter(|f| refused & f.bit() != 0)
            .map(|f| f.path())
            .collect()
    }

    /// Adds `x-tenant-id` and this request's `nvext.agent_hints` and `nvext.extra_fields`,
    /// leaving out every field refused earlier, and remembers what went out so a refusal can
    /// be matched to it.
    pub fn decorate(&self, body: &mut Value, headers: &mut Vec<(String, String)>) {
        if let Some(tenant) = &self.settings.tenant {
            headers.push(("x-tenant-id".into(), tenant.clone()));
        }
        let mut state = self.state.lock_or_recover();
        let on = |field: Field| state.refused & field.bit() == 0;
        let mut sent = 0u8;
        let mut hints = Map::new();
        if self.settings.agent_hints && on(Field::AgentHints) {
            let priority = match (self.settings.priority, self.settings.deadline) {
                (base, Some((start, budget))) if !budget.is_zero() => {
                    let used = start.elapsed().as_secs_f64() / budget.as_secs_f64();
                    Some(base.unwrap_or(0).saturating_add(escalation(used)))
                }
                (base, _) => base,
            };
            if let Some(priority) = priority.filter(|_| on(Field::Priority)) {
                hints.insert(Field::Priority.key().into(), json!(priority));
                sent |= Field::Priority.bit();
            }
            if let Some(tier) = self
                .settings
                .strict_priority
                .filter(|_| on(Field::StrictPriority))
            {
                hints.insert(Field::StrictPriority.key().into(), json!(tier));
                sent |= Field::StrictPriority.bit();
            }
            let recent = state.completions.iter().copied().max();
            let osl = recent.map(|tokens| {
                let tokens = tokens.max(1);
                self.settings
                    .max_tokens
                    .map_or(tokens, |cap| tokens.min(u64::from(cap)))
            });
            if let Some(osl) = osl.filter(|_| on(Field::Osl)) {
                hints.insert(Field::Osl.key().into(), json!(osl));
                sent |= Field::Osl.bit();
            }
            // A body whose tools are spliced in when sent (`llm::Spliced`) holds a `null`
            // placeholder, there only when tools are offered.
            let offers_tools = body
                .get("tools")
                .is_some_and(|tools| tools.as_array().is_none_or(|tools| !tools.is_empty()));
            if offers_tools && on(Field::SpeculativePrefill) {
                hints.insert(Field::SpeculativePrefill.key().into(), json!(true));
                sent |= Field::SpeculativePrefill.bit();
            }
            if !hints.is_empty() {
                sent |= Field::AgentHints.bit();
            }
        }
        let extra_fields = on(Field::ExtraFields);
        if extra_fields {
            sent |= Field::ExtraFields.bit();
        }
        state.sent = sent;
        drop(state);
        if hints.is_empty() && !extra_fields {
            return;
        }
        let Some(nvext) = nvext_of(body) else { return };
        if !hints.is_empty() {
            nvext.insert(Field::AgentHints.key().into(), Value::Object(hints));
        }
        if extra_fields {
            nvext.insert(
                Field::ExtraFields.key().into(),
                json!(["worker_id", "timing"]),
            );
        }
    }

    /// The server refused a request: if it named a field this run sent, that field is
    /// dropped for good and the request should go again. Returns the field dropped.
    pub fn rejected(&self, status: u16, body: &str) -> Option<Field> {
        if status != 400 {
            return None;
        }
        let mut state = self.state.lock_or_recover();
        let sent = state.sent;
        let candidates = Field::ALL.iter().copied().filter(|f| sent & f.bit() != 0);
        let field = match unknown_field(body) {
            // Serde's refusal names the field, then lists every field it knows: only the
            // name counts.
            Some(name) => candidates.into_iter().find(|f| f.key() == name),
            // Another server's wording: a field it names, if exactly one of ours.
            None => {
                let named: Vec<Field> = candidates.filter(|f| names_word(body, f.key())).collect();
                match named.as_slice() {
                    [one] => Some(*one),
                    // A hint and the object holding it: the hint is the one refused.
                    [hint, Field::AgentHints] => Some(*hint),
                    _ => None,
                }
            }
        }?;
        state.refused |= field.bit();
        Some(field)
    }
}

/// The body's `nvext` object, created if missing (and replacing anything else there).
fn nvext_of(body: &mut Value) -> Option<&mut Map<String, Value>> {
    let body = body.as_object_mut()?;
    let nvext = body
        .entry("nvext")
        .or_insert_with(|| Value::Object(Map::new()));
    if !nvext.is_object() {
        *nvext = Value::Object(Map::new());
    }
    nvext.as_object_mut()
}

/// `X` in serde's "unknown field `X`".
fn unknown_field(body: &str) -> Option<&str> {
    let start = body.find("unknown field `")? + "unknown field `".len();
    let rest = &body[start..];
    rest.find('`').map(|end| &rest[..end])
}

/// Whether `word` occurs in `text` with no identifier character on either side.
fn names_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests;
