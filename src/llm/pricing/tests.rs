use super::*;

#[test]
fn the_bundled_table_prices_snapshots_by_family_and_nothing_else() {
    let table = PriceTable::bundled();
    assert!(table.models.len() >= 15);
    let sonnet = table
        .lookup("anthropic", "claude-sonnet-4-5-20250929")
        .unwrap();
    assert_eq!(
        sonnet,
        table.lookup("anthropic", "claude-sonnet-4-5").unwrap()
    );
    assert!(
        table
            .lookup("anthropic", "claude-sonnet-4-5-latest")
            .is_some()
    );
    assert!(table.lookup("anthropic", "claude-sonnet-9").is_none());
    assert!(table.lookup("dynamo", "claude-sonnet-4-5").is_none());
    assert!(
        table.lookup("openai", "gpt-4o-2024-08-06").is_none(),
        "not an 8-digit date"
    );
}

#[test]
fn cost_is_per_million_tokens_for_each_kind() {
    let price = Price {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    let usage = Usage {
        input: 1_000_000,
        output: 200_000,
        cache_read: 2_000_000,
        cache_write: 400_000,
        ..Usage::default()
    };
    let cost = price.cost(&usage);
    assert_eq!(
        (cost.input, cost.output, cost.cache_read, cost.cache_write),
        (3.0, 3.0, 0.6, 1.5)
    );
    assert!((cost.total - 8.1).abs() < 1e-9);
}

#[test]
fn price_flags_parse_or_say_what_is_wrong() {
    assert_eq!(
        Price::parse("input=3, output=15,cacheRead=0.3,cache_write=3.75").unwrap(),
        Price {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75
        }
    );
    assert_eq!(
        Price::parse("input=3").unwrap_err(),
        "input and output are required, e.g. input=3,output=15"
    );
    assert!(
        Price::parse("input=-1,output=2")
            .unwrap_err()
            .starts_with("input: expected")
    );
    assert!(
        Price::parse("input=1,output=2,tips=3")
            .unwrap_err()
            .starts_with("unknown price 'tips'")
    );
    assert!(Price::parse("input=1,output=NaN").is_err());
}

#[test]
fn a_prices_file_adds_and_replaces_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.json");
    std::fs::write(
            &path,
            r#"{"models": {"dynamo/qwen3": {"input": 0.1, "output": 0.2}, "openai/gpt-4o": {"input": 1, "output": 2}}}"#,
        )
        .unwrap();
    let mut table = PriceTable::bundled();
    table.merge_file(&path).unwrap();
    assert_eq!(table.lookup("dynamo", "qwen3").unwrap().input, 0.1);
    assert_eq!(table.lookup("openai", "gpt-4o").unwrap().output, 2.0);
    std::fs::write(&path, r#"{"models": {"x/y": {"input": 1}}}"#).unwrap();
    assert!(table.merge_file(&path).is_err());
}

#[test]
fn a_prices_file_with_a_negative_or_endless_price_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.json");
    std::fs::write(
        &path,
        r#"{"models": {"x/y": {"input": 1, "output": 2, "cacheRead": -0.5}}}"#,
    )
    .unwrap();
    let mut table = PriceTable::bundled();
    assert_eq!(
        table.merge_file(&path).unwrap_err(),
        "models.x/y.cacheRead: expected a non-negative number, got -0.5"
    );
    assert!(table.lookup("x", "y").is_none(), "nothing was merged");
    std::fs::write(
        &path,
        r#"{"models": {"x/y": {"input": 1e400, "output": 2}}}"#,
    )
    .unwrap();
    assert!(table.merge_file(&path).is_err());
}
