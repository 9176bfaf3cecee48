use super::*;

#[tokio::test]
async fn a_server_that_never_answers_costs_the_timeout_not_more() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    // Accepts, reads nothing, answers nothing.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let policy = Arc::new(Policy {
        allow_private: true,
        ..Policy::default()
    });
    let fetcher = Fetcher::with_timeout(policy, Duration::from_millis(300)).unwrap();
    let started = std::time::Instant::now();
    let err = fetcher
        .fetch(&format!("http://{address}/slow"), FetchFormat::Markdown)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.to_string().contains("timed out") || err.to_string().contains("timeout"),
        "{err}"
    );
}

#[test]
fn text_is_capped_on_a_character_boundary() {
    let long = "é".repeat(MAX_TEXT);
    let (cut, truncated) = cap_text(&long);
    assert!(truncated);
    assert!(cut.len() <= MAX_TEXT && cut.len() > MAX_TEXT - 2);
    assert_eq!(cap_text("short"), ("short", false));
}
