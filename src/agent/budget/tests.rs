use super::*;

#[test]
fn each_budget_warns_once_at_80_percent_and_stops_at_100() {
    let limits = Limits {
        max_tool_calls: Some(10),
        max_total_tokens: Some(1000),
        max_cost: Some(1.0),
        max_turns: Some(5),
        ..Limits::default()
    };
    let mut stats = UsageStats::default();
    let mut budgets = Budgets::default();
    assert!(
        budgets
            .warnings(&limits, &stats, 0, Duration::ZERO)
            .is_empty()
    );
    stats.tool_calls = 8;
    let notes = budgets.warnings(&limits, &stats, 4, Duration::ZERO);
    let kinds: Vec<LimitKind> = notes.iter().map(|n| n.budget).collect();
    assert_eq!(kinds, [LimitKind::MaxTurns, LimitKind::MaxToolCalls]);
    assert!(
        notes[1]
            .message
            .starts_with("Budget note: 8 of 10 tool calls used (2 left).")
    );
    assert!(
        budgets
            .warnings(&limits, &stats, 4, Duration::ZERO)
            .is_empty(),
        "once"
    );
    assert_eq!(Budgets::exhausted(&limits, &stats), None);
    stats.tokens.total = 1000;
    assert_eq!(
        Budgets::exhausted(&limits, &stats),
        Some(LimitKind::MaxTotalTokens)
    );
    stats.cost = 0.85;
    let notes = budgets.warnings(&limits, &stats, 4, Duration::ZERO);
    let kinds: Vec<LimitKind> = notes.iter().map(|n| n.budget).collect();
    assert_eq!(kinds, [LimitKind::MaxTotalTokens, LimitKind::MaxCost]);
    assert!(notes[1].message.contains("0.8500 of 1.0000 US dollars"));
}

#[test]
fn time_warns_at_80_percent_of_the_timeout() {
    let limits = Limits {
        timeout: Some(Duration::from_secs(100)),
        ..Limits::default()
    };
    let stats = UsageStats::default();
    let mut budgets = Budgets::default();
    assert!(
        budgets
            .warnings(&limits, &stats, 1, Duration::from_secs(79))
            .is_empty()
    );
    let notes = budgets.warnings(&limits, &stats, 1, Duration::from_secs(81));
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0]
            .message
            .starts_with("Budget note: 81 of 100 seconds used (19 left).")
    );
}

#[test]
fn a_zero_limit_gets_no_note() {
    // A budget of zero has no 80 % to warn at: the run stops on it instead.
    let limits = Limits {
        max_cost: Some(0.0),
        max_turns: Some(0),
        ..Limits::default()
    };
    let notes = Budgets::default().warnings(&limits, &UsageStats::default(), 0, Duration::ZERO);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        Budgets::exhausted(&limits, &UsageStats::default()),
        Some(LimitKind::MaxCost)
    );
}
