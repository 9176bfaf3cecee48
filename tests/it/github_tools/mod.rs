//! Every GitHub tool against a mock GitHub REST server (wiremock, real HTTP on 127.0.0.1):
//! the request it makes (method, path, query, body) and the result it returns; failures and
//! retries; GitHub App auth with a freshly generated RSA key; cloning a local bare repository.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};
use worker::config::MapEnv;
use worker::tools::{BashSettings, FileLocks, Leftovers, RunServices, Tool, ToolContext};

const TOKEN: &str = "ghp_testtoken123";

struct Gh {
    server: MockServer,
    tools: Vec<Arc<dyn Tool>>,
    dir: tempfile::TempDir,
}

async fn setup_with(profile: &str, env: &[(&str, &str)]) -> Gh {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("git/credentials");
    let uri = server.uri();
    let mut pairs: Vec<(&str, &str)> = vec![
        ("GITHUB_API_URL", &uri),
        ("WORKER_GIT_CREDENTIALS", creds.to_str().unwrap()),
    ];
    pairs.extend_from_slice(env);
    let configured = worker::github::configure(
        &MapEnv::from_pairs(&pairs),
        Some(profile),
        None,
        Duration::from_millis(5),
        &worker::secrets::Secrets::default(),
    )
    .unwrap();
    let extension = configured.extension;
    let tools = worker::agent::Extension::tools(&extension);
    Gh { server, tools, dir }
}

async fn setup() -> Gh {
    setup_with("repo-write", &[("GITHUB_TOKEN", TOKEN)]).await
}

impl Gh {
    async fn call(&self, name: &str, args: Value) -> Result<String, (String, Value)> {
        let tool = self
            .tools
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no tool {name}"));
        let ctx = ToolContext {
            cwd: Arc::new(self.dir.path().to_path_buf()),
            call_id: std::sync::Arc::from(""),
            run: RunServices::detached(),
            progress: Arc::new(|_| {}),
            files: FileLocks::default(),
            leftovers: Leftovers::default(),
            bash: BashSettings::default(),
            policy: None,
            edit_scope: None,
        };
        tool.execute(args, ctx)
            .await
            .map(|r| r.text())
            .map_err(|e| (e.message, e.details.unwrap_or(Value::Null)))
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        let text = self
            .call(name, args)
            .await
            .unwrap_or_else(|(m, _)| panic!("{name} failed: {m}"));
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }

    async fn mock(&self, verb: &str, route: &str, status: u16, body: Value) {
        Mock::given(method(verb))
            .and(path(route))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .expect(1)
            .mount(&self.server)
            .await;
    }

    async fn bodies(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
            .collect()
    }
}

fn issue(number: u64) -> Value {
    json!({
        "url": format!("https://api.github.com/repos/o/r/issues/{number}"), "html_url": format!("https://github.com/o/r/issues/{number}"),
        "id": 100 + number, "node_id": "I_x", "number": number, "title": "Crash on start", "state": "open",
        "user": {"login": "octocat", "id": 1, "avatar_url": "x", "site_admin": false},
        "labels": [{"id": 1, "node_id": "L", "name": "bug", "color": "f00"}], "body": "It crashes.", "comments_url": "x"
    })
}

mod app_auth;
mod clone;
mod failures;
mod reads;
mod writes;
