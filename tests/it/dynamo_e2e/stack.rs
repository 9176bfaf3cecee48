//! Real Dynamo processes (frontend + CPU mocker) for one version, started and stopped by
//! process group, on free loopback ports.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(super) fn cache() -> PathBuf {
    match std::env::var_os("WORKER_DYNAMO_E2E") {
        Some(dir) => PathBuf::from(dir),
        None => panic!("WORKER_DYNAMO_E2E is not set: run scripts/dynamo-e2e.sh"),
    }
}

/// `N` distinct free ports below 32768 (Dynamo reads `DYN_SYSTEM_PORT` as an i16). Each
/// is held until all are chosen, so none is picked twice.
pub(super) fn free_ports<const N: usize>() -> [u16; N] {
    let start = 20000 + (std::process::id() % 10000) as u16;
    let mut held = Vec::with_capacity(N);
    for port in (start..32000).chain(20000..start) {
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push((port, listener));
            if held.len() == N {
                break;
            }
        }
    }
    std::array::from_fn(|i| held[i].0)
}

pub(super) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A Dynamo frontend and CPU mocker, stopped by pid (process group) on drop.
pub(super) struct Stack {
    pub(super) version: &'static str,
    pub(super) dir: tempfile::TempDir,
    pub(super) port: u16,
    pub(super) zmq_port: u16,
    pub(super) model: String,
    pub(super) children: Vec<Child>,
}

impl Stack {
    pub(super) fn boot(cache: &Path, version: &'static str) -> Stack {
        let venv = cache.join(format!("v{}", version.replace('.', "")));
        let python = venv.join("bin/python");
        let model = cache.join("tinymodel").display().to_string();
        let dir = tempfile::tempdir().unwrap();
        let [port, zmq_port, system_port] = free_ports::<3>();
        let common = |cmd: &mut Command| {
            cmd.env("HF_HUB_OFFLINE", "1")
                .env("TRANSFORMERS_OFFLINE", "1")
                .env("DYN_LOG", "info")
                .env("DYN_TCP_RPC_HOST", "127.0.0.1")
                .env("DYN_TCP_RESPONSE_STREAM_HOST", "lo")
                .env("DYN_EVENT_PLANE_HOST", "lo")
                .env("DYN_DISCOVERY_BACKEND", "file")
                .env("DYN_FILE_KV", dir.path().join("kv"))
                .env("DYN_REQUEST_PLANE", "tcp")
                .env("DYN_EVENT_PLANE", "zmq")
                .stdin(Stdio::null())
                .process_group(0);
        };
        use std::os::unix::process::CommandExt;
        let ingest = format!("tcp://127.0.0.1:{zmq_port}");
        let mut frontend = Command::new(&python);
        frontend.args([
            "-m",
            "dynamo.frontend",
            "--http-host",
            "127.0.0.1",
            "--http-port",
            &port.to_string(),
        ]);
        frontend.args([
            "--discovery-backend",
            "file",
            "--request-plane",
            "tcp",
            "--event-plane",
            "zmq",
            // KV-aware routing over two workers: a request goes where its prefix is cached.
            "--router-mode",
            "kv",
        ]);
        common(&mut frontend);
        if version == "1.2.1" {
            frontend
                .env("DYN_AGENT_TRACE_SINKS", "jsonl")
                .env(
                    "DYN_AGENT_TRACE_OUTPUT_PATH",
                    dir.path().join("dynamo-trace.jsonl"),
                )
                .env("DYN_AGENT_TRACE_JSONL_FLUSH_INTERVAL_MS", "100")
                .env("DYN_AGENT_TRACE_TOOL_EVENTS_ZMQ_ENDPOINT", &ingest);
        } else {
            frontend
                .env("DYN_REQUEST_TRACE", "1")
                .env("DYN_REQUEST_TRACE_SINKS", "file")
                .env("DYN_REQUEST_TRACE_FILE_FORMAT", "jsonl")
                .env(
                    "DYN_REQUEST_TRACE_FILE_PATH",
                    dir.path().join("dynamo-trace.jsonl"),
                )
                .env("DYN_REQUEST_TRACE_FILE_FLUSH_INTERVAL_MS", "100")
                .env("DYN_REQUEST_TRACE_TOOL_EVENTS_ZMQ_ENDPOINT", &ingest);
        }
        frontend
            .stdout(log(dir.path(), "frontend.log"))
            .stderr(log(dir.path(), "frontend.err"));
        let mut mocker = Command::new(&python);
        mocker.args([
            "-m",
            "dynamo.mocker",
            "--model-path",
            &model,
            "--discovery-backend",
            "file",
        ]);
        mocker.args([
            "--request-plane",
            "tcp",
            "--event-plane",
            "zmq",
            "--speedup-ratio",
            "10",
            "--num-workers",
            "2",
        ]);
        common(&mut mocker);
        mocker.env("DYN_SYSTEM_PORT", system_port.to_string());
        mocker
            .stdout(log(dir.path(), "mocker.log"))
            .stderr(log(dir.path(), "mocker.err"));
        let mut stack = Stack {
            version,
            dir,
            port,
            zmq_port,
            model,
            children: Vec::new(),
        };
        stack
            .children
            .push(frontend.spawn().expect("start the Dynamo frontend"));
        stack
            .children
            .push(mocker.spawn().expect("start the Dynamo mocker"));
        let started = Instant::now();
        let models_url = format!("{}/models", stack.url());
        let client = worker::http::client(Duration::from_secs(2), false).unwrap();
        while !block_on(async {
            match client.get(&models_url).send().await {
                Ok(r) => r.text().await.unwrap_or_default().contains("tinymodel"),
                Err(_) => false,
            }
        }) {
            let exited = stack
                .children
                .iter_mut()
                .any(|c| c.try_wait().ok().flatten().is_some());
            assert!(
                !exited && started.elapsed() < Duration::from_secs(90),
                "Dynamo {version} did not come up:\n{}",
                stack.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!(
            "Dynamo {version} up in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        stack
    }

    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub(super) fn ingest(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.zmq_port)
    }

    pub(super) fn logs(&self) -> String {
        ["frontend.log", "frontend.err", "mocker.log", "mocker.err"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
                let tail: Vec<&str> = text
                    .lines()
                    .rev()
                    .take(15)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("--- {f}\n{}", tail.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Dynamo's trace rows, once `done` holds for them (it flushes every 100 ms).
    pub(super) fn rows_until(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let rows: Vec<Value> = std::fs::read_dir(self.dir.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("dynamo-trace"))
                .flat_map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .lines()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .filter_map(|l| serde_json::from_str(&l).ok())
                .collect();
            if done(&rows) || started.elapsed() > Duration::from_secs(15) {
                return rows;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        for child in &self.children {
            let _ = killpg(Pid::from_raw(child.id().cast_signed()), Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for child in &mut self.children {
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = killpg(Pid::from_raw(child.id().cast_signed()), Signal::SIGKILL);
            let _ = child.wait();
        }
        eprintln!("Dynamo {} stopped", self.version);
    }
}

pub(super) fn log(dir: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(dir.join(name)).unwrap()
}
