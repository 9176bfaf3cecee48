use super::*;

#[test]
fn base_urls_lose_trailing_slashes_and_bare_origins_gain_v1() {
    assert_eq!(
        normalize_base_url("http://h:8000"),
        "http://h:8000/v1".to_string()
    );
    assert_eq!(
        normalize_base_url("http://h:8000/"),
        "http://h:8000/v1".to_string()
    );
    assert_eq!(
        normalize_base_url("http://h/v1/"),
        "http://h/v1".to_string()
    );
    assert_eq!(
        normalize_base_url("https://api.x.com/openai/v1"),
        "https://api.x.com/openai/v1".to_string()
    );
}
