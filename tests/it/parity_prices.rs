//! agentic-pi 0.3.0's `test/models.test.ts` (a model is `provider/id`, split on the first
//! slash) carried through to what agentic-pi does with the model next: price its usage from
//! Pi's model registry. Each run talks to a scripted model server on 127.0.0.1 that reports
//! 10 input and 5 output tokens; the price table is `prices/models.json`, generated from that
//! registry by `scripts/prices-from-pi.sh`.

use crate::support::mock_llm::*;
use crate::support::{Run, run_worker};
use serde_json::{Value, json};

/// The bundled table's entry for `key`.
fn listed(key: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("prices/models.json");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    table["models"][key].clone()
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let run = run_worker(dir.path(), args, "hi", env);
    run.assert_code(0);
    run
}

/// The cost of the run's one answer, each part checked against 10 input and 5 output tokens
/// at `input` and `output` dollars per million.
fn assert_cost(run: &Run, input: f64, output: f64) {
    let cost = &run.all("message_end")[1]["message"]["usage"]["cost"];
    let near = |field: &str, want: f64| {
        let got = cost[field].as_f64().unwrap();
        assert!(
            (got - want).abs() < 1e-12,
            "{field}: {got} != {want} in {cost}"
        );
    };
    near("input", 10.0 * input / 1e6);
    near("output", 5.0 * output / 1e6);
    near("total", (10.0 * input + 5.0 * output) / 1e6);
}

#[test]
fn models_test_openai_gpt_5_4_nano_splits_on_the_first_slash_and_is_priced() {
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run(
        &["--model", "openai/gpt-5.4-nano"],
        &[("OPENAI_BASE_URL", &mock.url)],
    );
    assert_eq!(mock.requests()[0].body["model"], "gpt-5.4-nano");
    // Pi's registry: $0.20 in, $1.25 out per million (it cost 0 before the table was Pi's).
    assert_eq!(
        listed("openai/gpt-5.4-nano"),
        json!({"input": 0.2, "output": 1.25, "cacheRead": 0.02, "cacheWrite": 0})
    );
    assert_cost(&run, 0.2, 1.25);
}

#[test]
fn models_test_preserves_slashes_inside_the_model_id_openrouter_style_and_prices_it() {
    let mock = MockLlm::start(vec![answer("ok")]);
    let providers = json!({"openrouter": {"baseUrl": mock.url}}).to_string();
    let run = run(
        &[
            "--model",
            "openrouter/anthropic/claude-haiku-4.5",
            "--providers",
            &providers,
        ],
        &[("OPENROUTER_API_KEY", "sk-or-test")],
    );
    assert_eq!(
        mock.requests()[0].body["model"],
        "anthropic/claude-haiku-4.5"
    );
    let price = listed("openrouter/anthropic/claude-haiku-4.5");
    assert_cost(
        &run,
        price["input"].as_f64().unwrap(),
        price["output"].as_f64().unwrap(),
    );
}

#[test]
fn models_test_a_prices_file_still_overrides_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.json");
    std::fs::write(
        &file,
        r#"{"models": {"openai/gpt-5.4-nano": {"input": 1, "output": 2}}}"#,
    )
    .unwrap();
    let mock = MockLlm::start(vec![answer("ok")]);
    let run = run(
        &[
            "--model",
            "openai/gpt-5.4-nano",
            "--prices-file",
            file.to_str().unwrap(),
        ],
        &[("OPENAI_BASE_URL", &mock.url)],
    );
    assert_cost(&run, 1.0, 2.0);
}
