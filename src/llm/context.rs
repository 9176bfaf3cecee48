//! Context windows of well-known hosted models, for compaction when the server does not say
//! (self-hosted servers do: vLLM and Dynamo list `max_model_len`). Model ids match by family:
//! a dated snapshot uses its family's window.

/// (model id prefix, context window in tokens), longest prefixes first where they overlap.
const KNOWN: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
];

/// The context window of a hosted model, if it is a known family.
pub fn known_context_window(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model);
    KNOWN
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests;
