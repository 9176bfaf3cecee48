use super::*;
use serde_json::{Value, json};

#[test]
fn the_bundled_table_prices_snapshots_by_family_and_nothing_else() {
    let table = PriceTable::bundled();
    let opus = table.lookup("anthropic", "claude-opus-4-5").unwrap();
    assert_eq!(
        table.lookup("anthropic", "claude-opus-4-5-20990101"),
        Some(opus.clone()),
        "an unlisted snapshot uses its family's entry"
    );
    assert_eq!(
        table.lookup("anthropic", "claude-opus-4-5-latest"),
        Some(opus)
    );
    assert!(table.lookup("anthropic", "claude-sonnet-9").is_none());
    assert!(table.lookup("dynamo", "claude-sonnet-4-5").is_none());
    assert!(
        table.lookup("openai", "gpt-4o-2099-08-06").is_none(),
        "not an 8-digit date"
    );
}

#[test]
fn the_build_lists_every_provider_of_the_bundled_table_and_no_other() {
    let mut providers: Vec<&str> = bundled_models()
        .keys()
        .filter_map(|key| key.split_once('/').map(|(provider, _)| provider))
        .collect();
    providers.sort_unstable();
    providers.dedup();
    assert!(providers.len() > 10, "{providers:?}");
    assert_eq!(PRICED_PROVIDERS, providers.as_slice());
    assert!(!lists_provider("dynamo"));
    assert!(lists_provider("anthropic"));
}

/// Pi's model registry, as `scripts/prices-from-pi.sh` pins it.
const SCRIPT: &str = include_str!("../../../scripts/prices-from-pi.sh");

#[test]
fn every_model_of_pis_registry_prices_as_its_own_entry() {
    let table = PriceTable::bundled();
    let models: Vec<(&str, &Price)> = table.models().collect();
    // @earendil-works/pi-ai 0.80.10 knows 1072 models across 35 providers.
    assert_eq!(models.len(), 1072);
    let providers: std::collections::BTreeSet<&str> = models
        .iter()
        .filter_map(|(key, _)| key.split_once('/').map(|(provider, _)| provider))
        .collect();
    assert_eq!(providers.len(), 35);
    for (key, price) in &models {
        let (provider, model) = key.split_once('/').unwrap();
        assert_eq!(
            table.lookup(provider, model).as_ref(),
            Some(*price),
            "{key}"
        );
    }
    let nano = table.lookup("openai", "gpt-5.4-nano").unwrap();
    assert_eq!(
        (nano.input, nano.output, nano.cache_read),
        (0.2, 1.25, 0.02)
    );
}

#[test]
fn the_bundled_table_names_the_registry_the_script_pins() {
    let file: Value = serde_json::from_str(BUNDLED).unwrap();
    let pinned = |name: &str| {
        SCRIPT
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .map(|value| value.trim_matches('\''))
            .unwrap()
    };
    assert_eq!(
        file["source"],
        json!({"package": pinned("PACKAGE"), "version": pinned("VERSION"), "integrity": pinned("INTEGRITY")})
    );
    assert_eq!(
        pinned("VERSION"),
        "0.80.10",
        "the version agentic-pi 0.3.0 locks"
    );
}

#[test]
fn a_long_request_is_priced_by_its_tier_as_pi_does() {
    let table = PriceTable::bundled();
    let gpt = table.lookup("openai", "gpt-5.4").unwrap();
    let usage = |input: u64, cache_read: u64| Usage {
        input,
        output: 1_000_000,
        cache_read,
        ..Usage::default()
    };
    // 272000 input tokens is the base price; one more (counting cache reads) is the tier's.
    let short = gpt.cost(&usage(272_000, 0));
    assert!((short.output - 15.0).abs() < 1e-9);
    let long = gpt.cost(&usage(200_000, 72_001));
    assert!((long.output - 22.5).abs() < 1e-9);
    assert!((long.input - 1.0).abs() < 1e-9, "200k at $5");
}

#[test]
fn cost_is_per_million_tokens_for_each_kind() {
    let price = Price {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
        tiers: Vec::new(),
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
            cache_write: 3.75,
            tiers: Vec::new(),
        }
    );
    assert_eq!(
        Price::parse("input=3").unwrap_err().to_string(),
        "input and output are required, e.g. input=3,output=15"
    );
    assert!(
        Price::parse("input=-1,output=2")
            .unwrap_err()
            .to_string()
            .starts_with("input: expected")
    );
    assert!(
        Price::parse("input=1,output=2,tips=3")
            .unwrap_err()
            .to_string()
            .starts_with("unknown price 'tips'")
    );
    assert_eq!(
        Price::parse("input=1,output=NaN").unwrap_err().to_string(),
        "output: expected a non-negative number, got 'NaN'"
    );
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
    assert!(
        table
            .merge_file(&path)
            .unwrap_err()
            .to_string()
            .starts_with("missing field `output`")
    );
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
        table.merge_file(&path).unwrap_err().to_string(),
        "models.x/y.cacheRead: expected a non-negative number, got -0.5"
    );
    assert!(table.lookup("x", "y").is_none(), "nothing was merged");
    std::fs::write(
        &path,
        r#"{"models": {"x/y": {"input": 1e400, "output": 2}}}"#,
    )
    .unwrap();
    assert!(
        table
            .merge_file(&path)
            .unwrap_err()
            .to_string()
            .starts_with("number out of range")
    );
    assert!(table.lookup("x", "y").is_none(), "nothing was merged");
}
