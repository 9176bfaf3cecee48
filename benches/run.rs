//! `cargo bench -- run`: the release binary on a scripted 3-turn task against the
//! in-process mock server (ls, read, answer), plus `--version`.
//!
//! Reports wall time per run, time from exec to the first model request, and peak RSS, each
//! next to a baseline measured in the same process (`/bin/true`: the cost of exec and wait on
//! this machine right now), so figures from a loaded machine can still be compared. Variants
//! of the same run are interleaved so that noise falls on all of them alike:
//! - telemetry: `--otel` with a collector that answers, with its port refused, and with one
//!   that accepts connections and never answers (the bounded flush at exit); and with only
//!   spans or only metrics exported (`OTEL_METRICS_EXPORTER=none`, `OTEL_TRACES_EXPORTER=none`),
//!   which shows what each signal costs;
//! - `WORKER_BASELINE_BIN`: another build to compare against, e.g. one without the `otel`
//!   feature (`scripts/bench-telemetry-off.sh` builds it and runs this);
//! - live control: `--control stdin` with the prompt as its first command and no other (what
//!   an orchestrator pays for keeping the channel open), and `--heartbeat`.
//!
//!
//! Each round runs the variants in a rotated order, and one variant is the reference run
//! again: its ratio, which should read 1.00x, shows how finely this machine resolves the
//! others.
//!
//! Then a steer: sent while a 200 ms bash call runs, it must reach the very next model request
//! (one turn), and the time from the call's end to that request is reported.
//!
//! `BENCH_RUNS` sets the number of runs (default 30).

use crate::launcher;
use crate::layout;
use crate::mock_llm;
use crate::runs;

use std::process::Command;
use std::time::Duration;

use launcher::{Cmd, Launcher, Sample};
use mock_llm::*;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn wall(samples: &[Sample]) -> f64 {
    median(samples.iter().map(|s| ms(s.wall)).collect())
}

/// Prints how much of the release link's symbol order the binary still has: what keeps the
/// peak RSS row low (see `support/layout.rs`). With `BENCH_STALE_LAYOUT_FAILS` set (CI sets
/// it), a stale list fails the benchmark, so a change cannot land the memory it costs unseen.
fn symbol_order(binary: &str) {
    let order = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("build/symbol-order.txt");
    match layout::order_coverage(std::path::Path::new(binary), &order) {
        Ok((found, listed)) => {
            let share = found as f64 / listed.max(1) as f64;
            let verdict = if share >= layout::FRESH_SHARE {
                String::new()
            } else {
                format!(
                    "   stale (below {:.0}%): run scripts/symbol-order.sh",
                    layout::FRESH_SHARE * 100.0
                )
            };
            println!(
                "symbol order: {found} of {listed} listed functions in the binary ({:.0}%){verdict}",
                share * 100.0
            );
            if !verdict.is_empty() && std::env::var_os("BENCH_STALE_LAYOUT_FAILS").is_some() {
                eprintln!(
                    "bench run: build/symbol-order.txt is stale; run scripts/symbol-order.sh and commit it"
                );
                std::process::exit(1);
            }
        }
        Err(err) => println!("symbol order: not checked: {err}"),
    }
}

/// The user and system time a run took, in milliseconds.
fn cpu_ms(sample: &Sample) -> f64 {
    ms(sample.user + sample.sys)
}

/// The reference variant's run of the round `sample` ran in: the one that started nearest.
fn same_round<'a>(reference: &'a Variant, sample: &'a Sample) -> &'a Sample {
    reference
        .samples
        .iter()
        .min_by_key(|run| {
            run.started
                .max(sample.started)
                .duration_since(run.started.min(sample.started))
        })
        .unwrap_or(sample)
}

fn rss(samples: &[Sample]) -> f64 {
    samples.iter().map(|s| s.max_rss_kib).max().unwrap_or(0) as f64 / 1024.0
}

/// An OTLP/HTTP endpoint that takes everything (the "collector up" case).
fn collector() -> String {
    format!(
        "http://{}",
        serve(axum::Router::new().fallback(|| async { "" }))
    )
}

struct Variant {
    label: String,
    binary: String,
    args: Vec<String>,
    /// Run only every fifth round: a dead-collector case measures a bound, not noise.
    sparse: bool,
    /// What is written to stdin; `None`: the prompt as text.
    stdin: Option<Vec<u8>>,
    /// Environment variables beside the ones every run gets.
    env: Vec<(String, String)>,
    /// The most its wall time may be, as a ratio to the reference run.
    target: Option<f64>,
    /// The most its CPU time (user and system) may be, as a ratio to the reference run.
    cpu_target: Option<f64>,
    samples: Vec<Sample>,
}

impl Variant {
    fn new(label: &str, binary: &str, args: Vec<String>, sparse: bool) -> Variant {
        Variant {
            label: label.to_string(),
            binary: binary.to_string(),
            args,
            sparse,
            stdin: None,
            env: Vec::new(),
            target: None,
            cpu_target: None,
            samples: Vec::new(),
        }
    }

    fn with_stdin(mut self, stdin: Vec<u8>) -> Variant {
        self.stdin = Some(stdin);
        self
    }

    fn with_env(mut self, key: &str, value: &str) -> Variant {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    fn with_target(mut self, ratio: f64) -> Variant {
        self.target = Some(ratio);
        self
    }

    fn with_cpu_target(mut self, ratio: f64) -> Variant {
        self.cpu_target = Some(ratio);
        self
    }
}

pub(crate) fn main() {
    let launcher = Launcher::start();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let mut worker = env!("CARGO_BIN_EXE_worker").to_string();
    let mut baseline_bin = std::env::var("WORKER_BASELINE_BIN")
        .ok()
        .filter(|p| !p.is_empty());
    // Two builds are compared as copies made now: the linker's output and an older copy sit
    // differently in the page cache, which alone moved startup by 0.4 ms.
    let copies = tempfile::tempdir().expect("tempdir");
    if let Some(baseline) = baseline_bin.as_mut() {
        for (path, name) in [(&mut worker, "worker"), (baseline, "baseline")] {
            let copy = copies.path().join(name);
            std::fs::copy(&*path, &copy).unwrap();
            *path = copy.display().to_string();
        }
        println!(
            "comparing fresh copies of both builds, in {}",
            copies.path().display()
        );
    }
    let workspace = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        workspace.path().join("README.md"),
        "# bench\n\nA two-line toy README.\n",
    )
    .unwrap();
    std::fs::create_dir(workspace.path().join("src")).unwrap();
    std::fs::write(workspace.path().join("src/main.rs"), "fn main() {}\n").unwrap();

    let mock = MockLlm::start_cycling(vec![
        Reply::Sse(vec![
            role(),
            tool_call(0, "c1", "ls", "{}"),
            finish("tool_calls"),
            usage(600, 10, 0),
            done(),
        ]),
        Reply::Sse(vec![
            role(),
            tool_call(0, "c2", "read", "{\"path\":\"README.md\"}"),
            finish("tool_calls"),
            usage(650, 12, 512),
            done(),
        ]),
        Reply::Sse(vec![
            role(),
            text("A toy project"),
            text(" with a README."),
            finish("stop"),
            usage(700, 8, 640),
            done(),
        ]),
    ]);
    let prompt = b"List the files here and read the README, then summarize.";
    let task = |variant: &Variant, stdin: &[u8]| {
        let mut cmd = Cmd::new(&variant.binary)
            .args(["run", "--model", "dynamo/mock-model", "--no-context-files"])
            .args(variant.args.iter().cloned())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DYNAMO_BASE_URL", &mock.url)
            .cwd(workspace.path())
            .stdin(stdin.to_vec());
        for (key, value) in &variant.env {
            cmd = cmd.env(key, value);
        }
        cmd
    };
    let sessions = workspace.path().join("sessions");
    let no_session = || vec!["--no-session".to_string()];
    let with = |extra: Vec<String>| [no_session(), extra].concat();

    let refused = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", free.local_addr().unwrap())
    };
    let black_hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let black_hole_url = format!("http://{}", black_hole.local_addr().unwrap());
    let otel = |endpoint: &str| {
        vec![
            "--otel".to_string(),
            "--otel-endpoint".to_string(),
            endpoint.to_string(),
        ]
    };
    // The first variant is the reference the others are compared with: no session file, no
    // telemetry, no control channel.
    let mut variants = vec![Variant::new(
        "--no-session, telemetry off",
        &worker,
        no_session(),
        false,
    )];
    if let Some(bin) = &baseline_bin {
        variants.push(Variant::new(
            "baseline build, telemetry off",
            bin,
            no_session(),
            false,
        ));
    }
    variants.extend([
        // The reference run once more: what the bench reads for two identical runs, the
        // resolution every other row is read against.
        Variant::new(
            "--no-session again (same as the first)",
            &worker,
            no_session(),
            false,
        ),
        Variant::new(
            "session file (the default)",
            &worker,
            vec!["--session-dir".to_string(), sessions.display().to_string()],
            false,
        )
        .with_target(1.03),
        Variant::new(
            "--otel, collector up",
            &worker,
            with(otel(&collector())),
            false,
        )
        .with_target(1.2)
        .with_cpu_target(1.3),
        // What each signal costs: the two rows add up to about the one above.
        Variant::new(
            "--otel, spans only",
            &worker,
            with(otel(&collector())),
            false,
        )
        .with_env("OTEL_METRICS_EXPORTER", "none"),
        Variant::new(
            "--otel, metrics only",
            &worker,
            with(otel(&collector())),
            false,
        )
        .with_env("OTEL_TRACES_EXPORTER", "none"),
        Variant::new(
            "--otel, collector port refused",
            &worker,
            with(otel(&refused)),
            true,
        ),
        Variant::new(
            "--otel, collector never answers",
            &worker,
            with(otel(&black_hole_url)),
            true,
        ),
        Variant::new(
            "--control stdin, no commands",
            &worker,
            with(vec!["--control".to_string(), "stdin".to_string()]),
            false,
        )
        .with_stdin(prompt_command(prompt)),
        Variant::new(
            "--heartbeat 1s",
            &worker,
            with(vec!["--heartbeat".to_string(), "1s".to_string()]),
            false,
        ),
    ]);

    for variant in &variants {
        let input = variant.stdin.as_deref().unwrap_or(prompt);
        let sample = launcher.run(&task(variant, input));
        assert_eq!(sample.code, 0, "{} failed", variant.label);
    }

    let mut baseline = Vec::new();
    let mut version = Vec::new();
    let mut version_baseline = Vec::new();
    let mut first_request = Vec::new();
    let mut first_request_baseline = Vec::new();
    let mut sync_floor = SyncFloor::new(&sessions);
    for round in 0..runs {
        sync_floor.sample();
        baseline.push(launcher.run(&Cmd::new("/bin/true")));
        version.push(launcher.run(&Cmd::new(&worker).arg("--version")));
        if let Some(bin) = &baseline_bin {
            version_baseline.push(launcher.run(&Cmd::new(bin).arg("--version")));
        }
        for i in runs::rotated(variants.len(), round) {
            let variant = &mut variants[i];
            if variant.sparse && round % 5 != 0 {
                continue;
            }
            mock.clear_requests();
            let input = variant.stdin.as_deref().unwrap_or(prompt);
            let sample = launcher.run(&task(variant, input));
            assert_eq!(sample.code, 0, "{} failed", variant.label);
            // The reference run, and the baseline build's when one is given (the variant after it).
            if i == 0 || (i == 1 && baseline_bin.is_some()) {
                let requests = mock.requests();
                assert_eq!(requests.len(), 3, "3 model requests per run");
                let first = ms(requests[0].at.duration_since(sample.started));
                if i == 0 {
                    first_request.push(first);
                } else {
                    first_request_baseline.push(first);
                }
            }
            variant.samples.push(sample);
        }
    }
    drop(black_hole);

    let base = wall(&baseline);
    let default_run = wall(&variants[0].samples);
    println!("worker run benchmark: {runs} rounds, medians (baseline = /bin/true, same process)");
    println!(
        "{:<40} {:>10} {:>12} {:>12}",
        "measure", "value", "ratio", "target"
    );
    println!(
        "{:<40} {:>8.2}ms {:>12} {:>12}",
        "baseline: exec + wait of /bin/true", base, "1.0x", "-"
    );
    println!(
        "{:<40} {:>8.2}ms {:>11.1}x {:>12}",
        "worker --version",
        wall(&version),
        wall(&version) / base,
        "< 2 ms"
    );
    if !version_baseline.is_empty() {
        println!(
            "{:<40} {:>8.2}ms {:>11.2}x {:>12}",
            "  baseline build --version (vs worker)",
            wall(&version_baseline),
            wall(&version_baseline) / wall(&version),
            "-"
        );
    }
    let first = median(first_request);
    println!(
        "{:<40} {:>8.2}ms {:>11.1}x {:>12}",
        "exec to first model request",
        first,
        first / base,
        "-"
    );
    println!(
        "{:<40} {:>8.2}ms {:>12} {:>12}",
        "  less the baseline's exec + wait",
        first - base,
        "-",
        "<= 2 ms"
    );
    if !first_request_baseline.is_empty() {
        let baseline_first = median(first_request_baseline);
        println!(
            "{:<40} {:>8.2}ms {:>11.2}x {:>12}",
            "  baseline build's (vs worker)",
            baseline_first,
            baseline_first / first,
            "-"
        );
    }
    println!(
        "{:<40} {:>8.2}ms {:>11.1}x {:>12}",
        "3-turn run (ls, read, answer)",
        default_run,
        default_run / base,
        "< 35 ms"
    );
    println!(
        "{:<40} {:>7.1}MiB {:>11.1}x {:>12}",
        "peak RSS, 3-turn run (max)",
        rss(&variants[0].samples),
        rss(&variants[0].samples) / rss(&baseline).max(0.001),
        "<= 9 MiB"
    );
    println!(
        "{:<40} {:>7.1}MiB {:>12} {:>12}",
        "peak RSS, --version (max)",
        rss(&version),
        "-",
        "-"
    );
    symbol_order(&worker);
    println!(
        "\n3-turn run variants (ratio to the first, median of per-round ratios; target in brackets):"
    );
    for variant in &variants[1..] {
        // Per round, against the reference run of the same round: noise that falls on one
        // round falls on both.
        let ratios = |measure: fn(&Sample) -> f64| -> f64 {
            median(
                variant
                    .samples
                    .iter()
                    .map(|sample| measure(sample) / measure(same_round(&variants[0], sample)))
                    .collect(),
            )
        };
        let shown =
            |target: Option<f64>| target.map_or(String::new(), |t| format!(" [<= {t:.2}x]"));
        println!(
            "  {:<38} {:>8.2}ms {:>6.2}x{:<11} CPU {:>5.2}x{:<11} peak RSS {:.1}MiB   ({} runs)",
            variant.label,
            wall(&variant.samples),
            ratios(|sample| ms(sample.wall)),
            shown(variant.target),
            ratios(cpu_ms),
            shown(variant.cpu_target),
            rss(&variant.samples),
            variant.samples.len()
        );
    }
    sync_floor.report(default_run);
    steer(&worker, workspace.path(), runs.min(10));
}

/// What the disk makes the session row cost at the least. A session run waits, before it
/// exits, for an `fdatasync` that starts after its last entry is written (what makes the
/// session durable), so its wall time is at least the reference run's plus one such sync.
/// Measured once a round, beside the runs, on a file in the session directory that grows as
/// a session file does: a line appended, then synced. The floor is the median sync over the
/// reference run's median wall time (the row beside it is a median of per-round ratios).
struct SyncFloor {
    path: std::path::PathBuf,
    file: std::fs::File,
    syncs: Vec<f64>,
}

impl SyncFloor {
    fn new(dir: &std::path::Path) -> SyncFloor {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(".bench-sync-floor.jsonl");
        let file = std::fs::File::create(&path).unwrap();
        SyncFloor {
            path,
            file,
            syncs: Vec::new(),
        }
    }

    fn sample(&mut self) {
        use std::io::Write;
        let mut line = vec![b'x'; 600];
        line.push(b'\n');
        self.file.write_all(&line).unwrap();
        let started = std::time::Instant::now();
        self.file.sync_data().unwrap();
        self.syncs.push(ms(started.elapsed()));
    }

    fn report(self, reference_ms: f64) {
        std::fs::remove_file(&self.path).unwrap();
        let sync = median(self.syncs);
        println!(
            "  the session row's floor on this disk: one fdatasync of a growing file there takes {sync:.2}ms (median), so a durable end is at least {:.2}x",
            1.0 + sync / reference_ms
        );
    }
}

/// The prompt as the first command of `--control stdin`.
fn prompt_command(prompt: &[u8]) -> Vec<u8> {
    let message = String::from_utf8_lossy(prompt);
    let mut line =
        serde_json::to_vec(&serde_json::json!({"type": "prompt", "message": message})).unwrap();
    line.push(b'\n');
    line
}

/// A steer sent while a bash call runs reaches the next model request: the time from the
/// call's end (its `tool_execution_end` line) to that request, over `runs` runs.
fn steer(worker: &str, cwd: &std::path::Path, runs: usize) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let mock = MockLlm::start_cycling(vec![
        call("c1", "bash", r#"{"command":"sleep 0.2"}"#),
        answer("steered"),
    ]);
    let mut latencies = Vec::new();
    for _ in 0..runs {
        mock.clear_requests();
        let mut child = Command::new(worker)
            .args(["run", "--model", "dynamo/mock-model", "--no-context-files"])
            .args(["--no-session", "--control", "stdin"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DYNAMO_BASE_URL", &mock.url)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(&prompt_command(b"run the command"))
            .unwrap();
        let mut ended = None;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if line.contains(r#""type":"tool_execution_start""#) {
                stdin
                    .write_all(b"{\"type\":\"steer\",\"message\":\"stop and answer\"}\n")
                    .unwrap();
            }
            if line.contains(r#""type":"tool_execution_end""#) {
                ended = Some(std::time::Instant::now());
            }
        }
        drop(stdin);
        assert!(child.wait().unwrap().success(), "the steered run failed");
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "the steer rides the next request");
        let last = requests[1].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(
            last["content"], "stop and answer",
            "one turn after the steer"
        );
        latencies.push(ms(requests[1].at.duration_since(ended.unwrap())));
    }
    println!(
        "\nsteer during a 200 ms bash call: delivered with the next request in {runs}/{runs} runs; \
         call end to that request {:.2}ms (median)",
        median(latencies)
    );
}
