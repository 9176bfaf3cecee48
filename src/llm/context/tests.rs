use super::*;

#[test]
fn families_are_known_and_others_are_not() {
    assert_eq!(
        known_context_window("claude-sonnet-4-5-20250929"),
        Some(200_000)
    );
    assert_eq!(known_context_window("gpt-4.1-mini"), Some(1_047_576));
    assert_eq!(
        known_context_window("anthropic/claude-haiku-4-5"),
        Some(200_000)
    );
    assert_eq!(known_context_window("qwen3-32b"), None);
}
