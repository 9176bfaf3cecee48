use super::*;
use serde_json::json;

#[derive(Deserialize, Debug, PartialEq)]
struct P {
    n: Option<Count>,
    b: Option<Flag>,
}

#[test]
fn numbers_and_booleans_may_arrive_as_strings() {
    let p: P = serde_json::from_value(json!({"n": "10", "b": "TRUE"})).unwrap();
    assert_eq!(
        p,
        P {
            n: Some(Count(10)),
            b: Some(Flag(true))
        }
    );
    let p: P = serde_json::from_value(json!({"n": 3.0, "b": null})).unwrap();
    assert_eq!(
        p,
        P {
            n: Some(Count(3)),
            b: None
        }
    );
    let p: P = serde_json::from_value(json!({})).unwrap();
    assert_eq!(p, P { n: None, b: None });
}

#[test]
fn negative_fractional_and_wrong_types_are_rejected() {
    for (bad, complaint) in [
        (json!({"n": -1}), "expected a non-negative integer, got -1"),
        (
            json!({"n": 1.5}),
            "expected a non-negative integer, got 1.5",
        ),
        (
            json!({"n": "x"}),
            "expected a non-negative integer, got \"x\"",
        ),
        (json!({"b": 1}), "expected a boolean, got 1"),
    ] {
        let err = serde_json::from_value::<P>(bad.clone()).unwrap_err();
        assert_eq!(err.to_string(), complaint, "{bad}");
    }
    let err = serde_json::from_value::<P>(json!({"n": "ten"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a non-negative integer, got \"ten\""
    );
}

#[derive(Deserialize, Debug, PartialEq)]
struct G {
    name: Text,
    #[serde(default)]
    note: OptText,
    #[serde(default)]
    labels: OptList,
}

#[test]
fn texts_take_numbers_blank_optionals_are_absent_and_lists_split_on_commas() {
    let g: G =
        serde_json::from_value(json!({"name": 42, "note": " ", "labels": "bug, ui"})).unwrap();
    assert_eq!(
        g,
        G {
            name: Text("42".into()),
            note: OptText(None),
            labels: OptList(Some(vec!["bug".into(), "ui".into()]))
        }
    );
    let g: G = serde_json::from_value(json!({"name": "x", "labels": []})).unwrap();
    assert_eq!(g.labels, OptList(Some(vec![])));
    assert_eq!(g.note, OptText(None));
    let err = serde_json::from_value::<G>(json!({"name": ""})).unwrap_err();
    assert_eq!(err.to_string(), "required (a non-empty string)");
    let err = serde_json::from_value::<G>(json!({"name": "x", "labels": [1]})).unwrap_err();
    assert_eq!(err.to_string(), "expected a list of strings");
    let err = serde_json::from_value::<List>(json!([])).unwrap_err();
    assert_eq!(err.to_string(), "required (a non-empty list of strings)");
}
