use super::*;
use crate::config::MapEnv;

fn reason(settings: &Settings, env: &[(&str, &str)]) -> (Option<String>, Option<String>) {
    let (web, _) =
        WebSearch::configure(settings, &MapEnv::from_pairs(env), &Secrets::default()).unwrap();
    let provider = web
        .status
        .extra
        .get("provider")
        .and_then(|p| p.as_str().map(str::to_string));
    (web.status.reason, provider)
}

#[test]
fn the_status_says_why_there_are_no_web_tools() {
    let on = Settings {
        enabled: true,
        provider: None,
        max_calls: 30,
        fetch_format: FetchFormat::Markdown,
        allow_hosts: Vec::new(),
        allow_private: false,
        retry: RetryPolicy::new(0, Duration::from_millis(1)),
    };
    assert_eq!(reason(&on, &[]).0.as_deref(), Some("no-credentials"));
    // Tavily wins over Brave when both keys are there.
    assert_eq!(
        reason(
            &on,
            &[("BRAVE_SEARCH_API_KEY", "b"), ("TAVILY_API_KEY", "t")]
        ),
        (None, Some("tavily".into()))
    );
    let forced = Settings {
        provider: Some("exa".into()),
        ..on.clone()
    };
    assert_eq!(
        reason(&forced, &[("TAVILY_API_KEY", "t")]).0.as_deref(),
        Some("no-credentials")
    );
    let off = Settings {
        enabled: false,
        ..on
    };
    assert_eq!(
        reason(&off, &[("TAVILY_API_KEY", "t")]).0.as_deref(),
        Some("disabled-by-flag")
    );
}
