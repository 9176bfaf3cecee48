use std::path::Path;
use std::time::Duration;

use super::*;

fn vars(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("tok-123456789".to_string()),
        "HOST" => Some("mcp.example.com".to_string()),
        _ => None,
    }
}

fn parse_text(text: &str) -> Vec<ServerConfig> {
    parse(Path::new("servers.json"), text, &vars).unwrap()
}

#[test]
fn a_stdio_server_has_its_command_args_env_and_cwd_expanded() {
    let servers = parse_text(
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server", "${HOST}"],
            "env": {"API_KEY": "${TOKEN}"}, "cwd": "sub"}}}"#,
    );
    assert_eq!(servers.len(), 1);
    let server = &servers[0];
    assert_eq!(server.name, "fs");
    assert_eq!(
        server.transport,
        Ok(Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server".into(), "mcp.example.com".into()],
            env: vec![("API_KEY".into(), "tok-123456789".into())],
            cwd: Some("sub".into()),
        })
    );
    assert_eq!(server.secrets, vec!["tok-123456789".to_string()]);
    assert!(!server.required);
    assert_eq!(server.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    assert_eq!(server.tool_timeout, DEFAULT_TOOL_TIMEOUT);
}

#[test]
fn an_http_server_has_its_url_and_headers_expanded_and_the_token_is_a_secret() {
    let servers = parse_text(
        r#"{"mcpServers": {"gh": {"type": "http", "url": "https://${HOST}/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"}, "required": true,
            "startupTimeoutMs": 1500, "toolTimeoutMs": 250}}}"#,
    );
    let server = &servers[0];
    assert_eq!(
        server.transport,
        Ok(Transport::Http {
            url: "https://mcp.example.com/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer tok-123456789".into())],
        })
    );
    assert!(server.secrets.contains(&"Bearer tok-123456789".to_string()));
    assert!(server.secrets.contains(&"tok-123456789".to_string()));
    assert!(server.required);
    assert_eq!(server.startup_timeout, Duration::from_millis(1500));
    assert_eq!(server.tool_timeout, Duration::from_millis(250));
}

#[test]
fn a_url_alone_means_http() {
    let servers = parse_text(r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}"#);
    assert!(matches!(servers[0].transport, Ok(Transport::Http { .. })));
}

#[test]
fn an_unset_variable_fails_that_server_only_and_a_default_fills_in() {
    let servers = parse_text(
        r#"{"mcpServers": {
            "a": {"command": "srv", "env": {"K": "${MISSING}"}},
            "b": {"command": "srv", "env": {"K": "${MISSING:-fallback}"}}}}"#,
    );
    assert_eq!(
        servers[0].transport,
        Err("${MISSING} is not set".to_string())
    );
    match &servers[1].transport {
        Ok(Transport::Stdio { env, .. }) => assert_eq!(env[0].1, "fallback"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_legacy_sse_transport_and_unknown_types_are_refused_with_the_reason() {
    let servers = parse_text(
        r#"{"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"},
            "odd": {"type": "websocket", "url": "ws://x"}, "bare": {"type": "stdio"}}}"#,
    );
    let reason = |name: &str| {
        servers
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .transport
            .clone()
            .unwrap_err()
    };
    assert!(
        reason("old").contains("legacy HTTP+SSE"),
        "{}",
        reason("old")
    );
    assert!(reason("odd").contains("unknown server type \"websocket\""));
    assert!(reason("bare").contains("needs \"command\""));
}

#[test]
fn enabled_and_disabled_tools_take_globs() {
    let servers = parse_text(
        r#"{"mcpServers": {"s": {"command": "srv",
            "enabledTools": ["get_*", "list"], "disabledTools": ["get_secret"]}}}"#,
    );
    let server = &servers[0];
    assert!(server.offers("get_issue"));
    assert!(server.offers("list"));
    assert!(!server.offers("get_secret"));
    assert!(!server.offers("delete_repo"));
}

#[test]
fn names_that_cannot_prefix_a_tool_name_are_usage_errors() {
    for name in ["a b", "a__b", "", "dots.too"] {
        let text = format!(r#"{{"mcpServers": {{"{name}": {{"command": "x"}}}}}}"#);
        let err = parse(Path::new("f.json"), &text, &vars).unwrap_err();
        assert!(
            matches!(err, ConfigError::Name { .. }),
            "{name:?} gave {err}"
        );
    }
}

#[test]
fn a_malformed_file_names_the_file_and_the_place() {
    let err = parse(
        Path::new("bad.json"),
        r#"{"mcpServers": {"s": {"args": "not a list"}}}"#,
        &vars,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("--mcp-config bad.json: mcpServers.s.args"),
        "{err}"
    );
    let err = parse(Path::new("bad.json"), "[]", &vars)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--mcp-config bad.json: "), "{err}");
}

#[test]
fn keys_other_tools_use_are_ignored() {
    let servers = parse_text(
        r#"{"mcpServers": {"s": {"command": "srv", "autoApprove": [], "timeout": 60}},
            "other": true}"#,
    );
    assert_eq!(servers.len(), 1);
}

#[test]
fn a_later_file_replaces_a_server_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.json");
    let second = dir.path().join("b.json");
    std::fs::write(
        &first,
        r#"{"mcpServers": {"s": {"command": "one"}, "t": {"command": "t"}}}"#,
    )
    .unwrap();
    std::fs::write(&second, r#"{"mcpServers": {"s": {"command": "two"}}}"#).unwrap();
    let servers = load(&[first, second], &vars).unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["t", "s"]);
    assert!(
        matches!(&servers[1].transport, Ok(Transport::Stdio { command, .. }) if command == "two")
    );
    let missing = load(&[dir.path().join("none.json")], &vars).unwrap_err();
    assert!(matches!(missing, ConfigError::Read { .. }));
}

#[test]
fn expansion_reports_an_unclosed_reference() {
    assert_eq!(expand("a${HOST}b", &vars).unwrap(), "amcp.example.comb");
    assert_eq!(expand("no refs", &vars).unwrap(), "no refs");
    assert!(expand("${HOST", &vars).unwrap_err().contains("unclosed"));
}

#[test]
fn servers_keep_the_file_s_order_and_their_network_allowance() {
    let servers = parse_text(
        r#"{"mcpServers": {"zeta": {"command": "z", "network": ["api.github.com", "10.0.0.1:8080"]},
            "alpha": {"command": "a"}, "mid": {"command": "m", "network": []}}}"#,
    );
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
    assert_eq!(
        servers[0].network.as_deref(),
        Some(&["api.github.com".to_string(), "10.0.0.1:8080".to_string()][..])
    );
    assert_eq!(servers[1].network, None);
    assert_eq!(servers[2].network.as_deref(), Some(&[][..]));
}
