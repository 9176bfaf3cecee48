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
    pub priority: Option<i32>,
    pub strict_priority: Option<u32>,
    /// `--max-tokens`: the cap of `osl`.
    pub max_tokens: Option<u32>,
    /// When the run's budget started and how long it is (`--timeout`).
    pub deadline: Option<(Instant, Duration)>,
    pub tenant: Option<String>,
}

/// A field a server may refuse, in the order a refusal is matched (a hint before the object
/// that holds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    SpeculativePrefill,
    StrictPriority,
    Osl,
    Priority,
    AgentHints,
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
            let offers_tools = body
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|tools| !tools.is_empty());
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
mod tests {
    use super::*;

    fn hints(settings: HintSettings) -> Hints {
        Hints::new(HintSettings {
            agent_hints: true,
            ..settings
        })
    }

    fn decorated(hints: &Hints, body: Value) -> (Value, Vec<(String, String)>) {
        let mut body = body;
        let mut headers = Vec::new();
        hints.decorate(&mut body, &mut headers);
        (body, headers)
    }

    #[test]
    fn a_first_turn_with_tools_asks_for_prefill_and_the_serving_report() {
        let h = hints(HintSettings {
            priority: Some(3),
            strict_priority: Some(1),
            tenant: Some("team-a".into()),
            ..HintSettings::default()
        });
        let (body, headers) = decorated(
            &h,
            json!({"model": "m", "tools": [{"type": "function"}], "nvext": {"agent_context": {}}}),
        );
        assert_eq!(
            body["nvext"],
            json!({"agent_context": {}, "agent_hints": {"priority": 3, "strict_priority": 1, "speculative_prefill": true},
                   "extra_fields": ["worker_id", "timing"]})
        );
        assert_eq!(
            headers,
            vec![("x-tenant-id".to_string(), "team-a".to_string())]
        );
    }

    #[test]
    fn osl_follows_recent_completions_capped_by_max_tokens() {
        let h = hints(HintSettings {
            max_tokens: Some(300),
            ..HintSettings::default()
        });
        let (body, _) = decorated(&h, json!({"tools": []}));
        assert_eq!(
            body["nvext"],
            json!({"extra_fields": ["worker_id", "timing"]}),
            "nothing to predict from yet"
        );
        for tokens in [40, 900, 12, 20, 30] {
            h.completed(tokens);
        }
        let (body, _) = decorated(&h, json!({}));
        assert_eq!(
            body["nvext"]["agent_hints"],
            json!({"osl": 300}),
            "900 capped"
        );
        h.completed(25);
        let (body, _) = decorated(&h, json!({}));
        assert_eq!(
            body["nvext"]["agent_hints"],
            json!({"osl": 30}),
            "900 left the window"
        );
    }

    #[test]
    fn the_priority_rises_as_the_deadline_nears() {
        assert_eq!(
            [0.0, 0.49, 0.5, 0.74, 0.75, 0.89, 0.9, 1.5].map(escalation),
            [0, 0, 1, 1, 2, 2, 4, 4]
        );
        let budget = Duration::from_secs(100);
        let at = |used: u64, priority: Option<i32>| {
            let start = Instant::now()
                .checked_sub(Duration::from_secs(used))
                .unwrap();
            let h = hints(HintSettings {
                priority,
                deadline: Some((start, budget)),
                ..HintSettings::default()
            });
            decorated(&h, json!({})).0["nvext"]["agent_hints"]["priority"].clone()
        };
        assert_eq!(at(10, None), json!(0), "a deadline alone sends priority 0");
        assert_eq!(at(60, Some(5)), json!(6));
        assert_eq!(at(80, Some(5)), json!(7));
        assert_eq!(at(95, Some(-2)), json!(2));
    }

    #[test]
    fn no_serving_hints_keeps_the_serving_report_and_the_tenant() {
        let h = Hints::new(HintSettings {
            agent_hints: false,
            priority: Some(9),
            tenant: Some("t".into()),
            ..HintSettings::default()
        });
        h.completed(10);
        let (body, headers) = decorated(&h, json!({"tools": [{}]}));
        assert_eq!(
            body["nvext"],
            json!({"extra_fields": ["worker_id", "timing"]})
        );
        assert_eq!(headers.len(), 1);
    }

    /// Dynamo 1.6.1's wording, captured from a real frontend.
    const REFUSED_BOGUS_HINT: &str = r#"{"message":"Failed to deserialize the JSON body into the target type: unknown field `bogus`, expected one of `priority`, `strict_priority`, `osl`, `speculative_prefill`, `latency_sensitivity` at line 1 column 159","type":"Bad Request","code":400}"#;

    #[test]
    fn each_refused_field_is_dropped_once_and_only_that_field() {
        let h = hints(HintSettings {
            priority: Some(1),
            strict_priority: Some(2),
            ..HintSettings::default()
        });
        h.completed(50);
        let body = json!({"tools": [{}]});
        decorated(&h, body.clone());
        // A field that is not ours, though the message lists ours as known: nothing dropped.
        assert_eq!(h.rejected(400, REFUSED_BOGUS_HINT), None);
        assert_eq!(h.rejected(500, "unknown field `osl`"), None);
        for (field, message) in [
            (
                Field::Osl,
                "unknown field `osl`, expected one of `priority`",
            ),
            (
                Field::SpeculativePrefill,
                "unknown field `speculative_prefill`",
            ),
            (
                Field::StrictPriority,
                "{\"error\": \"strict_priority is not supported\"}",
            ),
            (
                Field::ExtraFields,
                "unknown field `extra_fields`, expected `agent_hints`",
            ),
            (Field::Priority, "unknown field `priority`"),
        ] {
            assert_eq!(h.rejected(400, message), Some(field), "{message}");
            let (sent, _) = decorated(&h, body.clone());
            assert!(
                !sent.to_string().contains(&format!("\"{}\"", field.key())),
                "{} still sent: {sent}",
                field.key()
            );
            assert_eq!(
                h.rejected(400, message),
                None,
                "{} is already off",
                field.key()
            );
        }
        assert_eq!(
            decorated(&h, body).0,
            json!({"tools": [{}]}),
            "everything off"
        );
        assert_eq!(
            h.refused(),
            [
                "nvext.agent_hints.speculative_prefill",
                "nvext.agent_hints.strict_priority",
                "nvext.agent_hints.osl",
                "nvext.agent_hints.priority",
                "nvext.extra_fields"
            ]
        );
    }

    #[test]
    fn a_server_refusing_agent_hints_loses_them_all() {
        let h = hints(HintSettings {
            priority: Some(1),
            ..HintSettings::default()
        });
        decorated(&h, json!({}));
        assert_eq!(
            h.rejected(
                400,
                "unknown field `agent_hints`, expected one of `greed_sampling`"
            ),
            Some(Field::AgentHints)
        );
        assert_eq!(
            decorated(&h, json!({})).0["nvext"],
            json!({"extra_fields": ["worker_id", "timing"]})
        );
    }

    #[test]
    fn words_are_matched_whole() {
        assert!(names_word("bad strict_priority", "strict_priority"));
        assert!(!names_word("bad strict_priority", "priority"));
        assert!(names_word("priority: must be >= 0", "priority"));
        assert!(!names_word("oslo", "osl"));
    }
}
