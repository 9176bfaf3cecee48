//! `cargo bench -- tools`: the in-process `grep` and `find` tools on a generated tree,
//! against `rg` / `fd` when installed and against the subprocess tools every machine has
//! (`grep -rn`, `find -name`); the `bash` tool's overhead per call against spawning
//! `bash -c` directly; a contained call (`--sandbox none`: a PID namespace per command) and
//! `--sandbox linux` (its setup, and a sandboxed call) against the uncontained one. All in one process, so the ratios hold on a loaded machine.
//!
//! `BENCH_TREE_FILES` (default 50000) sizes the tree, kept in `target/bench-tree-<N>` between
//! runs; `BENCH_RUNS` (default 5) repeats each measurement.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use worker::tools::{BashSettings, FileLocks, Leftovers, RunServices, Tool, ToolContext, ToolSet};

/// Every 97th file has a match; each file is about 5 KB of code-like text.
fn build_tree(files: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-tree-{files}"));
    let marker = root.join(".complete");
    if marker.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let body: String = (0..120)
        .map(|i| format!("    let value_{i} = compute(input, {i}); // keeps the line realistic\n"))
        .collect();
    for n in 0..files {
        let dir = root.join(format!("pkg{:03}/mod{:02}", n % 500, (n / 500) % 100));
        std::fs::create_dir_all(&dir).unwrap();
        let needle = if n % 97 == 0 {
            format!("    // needle_{n} marks this file\n")
        } else {
            String::new()
        };
        let text = format!("fn f{n}(input: u64) -> u64 {{\n{body}{needle}    input\n}}\n");
        let ext = if n % 4 == 0 { "ts" } else { "rs" };
        std::fs::write(dir.join(format!("file{n}.{ext}")), text).unwrap();
    }
    std::fs::write(&marker, "").unwrap();
    root
}

fn context(cwd: &Path) -> ToolContext {
    ToolContext {
        cwd: Arc::new(cwd.to_path_buf()),
        call_id: std::sync::Arc::from(""),
        run: RunServices::detached(),
        progress: Arc::new(|_| {}),
        files: FileLocks::default(),
        leftovers: Leftovers::default(),
        bash: BashSettings::default(),
        policy: None,
        edit_scope: None,
    }
}

fn tool(name: &str) -> Arc<dyn Tool> {
    ToolSet::all_builtin()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap()
}

fn time_tool(
    rt: &tokio::runtime::Runtime,
    tool: &Arc<dyn Tool>,
    args: Value,
    cwd: &Path,
) -> (Duration, String) {
    time_in(rt, tool, args, context(cwd))
}

fn time_in(
    rt: &tokio::runtime::Runtime,
    tool: &Arc<dyn Tool>,
    args: Value,
    ctx: ToolContext,
) -> (Duration, String) {
    let started = Instant::now();
    let result = rt.block_on(tool.execute(args, ctx));
    let elapsed = started.elapsed();
    let text = match result {
        Ok(r) => r.text(),
        Err(e) => panic!("{} failed: {e}", tool.name()),
    };
    (elapsed, text)
}

fn time_command(program: &str, args: &[&str], cwd: &Path) -> Option<(Duration, usize)> {
    let started = Instant::now();
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    Some((
        started.elapsed(),
        out.stdout.iter().filter(|b| **b == b'\n').count(),
    ))
}

fn best(samples: impl Iterator<Item = Duration>) -> f64 {
    samples
        .map(|d| d.as_secs_f64() * 1000.0)
        .fold(f64::INFINITY, f64::min)
}

pub(crate) fn main() {
    let files: usize = std::env::var("BENCH_TREE_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let setup = Instant::now();
    let tree = build_tree(files);
    let size: u64 = walk_size(&tree);
    println!(
        "tree: {files} files, {:.0} MB ({}); best of {runs} runs, page cache warm",
        size as f64 / 1e6,
        if setup.elapsed() > Duration::from_secs(1) {
            "generated"
        } else {
            "cached"
        }
    );
    let expected_matches = files.div_ceil(97);

    // grep: all matches (a limit above the match count, so nothing stops early).
    let grep = tool("grep");
    let grep_args = json!({"pattern": "needle_[0-9]+", "limit": 1_000_000});
    let (_, text) = time_tool(&rt, &grep, grep_args.clone(), &tree);
    let found = text.lines().filter(|l| l.contains("needle_")).count();
    assert!(
        found == expected_matches || text.contains("limit reached"),
        "grep found {found}, expected {expected_matches}"
    );
    let ours = best((0..runs).map(|_| time_tool(&rt, &grep, grep_args.clone(), &tree).0));
    println!("\ngrep 'needle_[0-9]+' ({expected_matches} matching lines)");
    println!("  {:<34} {:>9.1} ms", "worker grep tool (in-process)", ours);
    report(
        &tree,
        runs,
        ours,
        "rg",
        &["-n", "--no-heading", "needle_[0-9]+"],
        "ripgrep (rg -n)",
        1.3,
    );
    report(
        &tree,
        runs,
        ours,
        "grep",
        &["-rnE", "needle_[0-9]+", "."],
        "subprocess grep -rnE",
        f64::NAN,
    );

    // find: every .ts file.
    let find = tool("find");
    let find_args = json!({"pattern": "*.ts", "limit": 1_000_000});
    let ours = best((0..runs).map(|_| time_tool(&rt, &find, find_args.clone(), &tree).0));
    println!("\nfind '*.ts' ({} files)", files.div_ceil(4));
    println!("  {:<34} {:>9.1} ms", "worker find tool (in-process)", ours);
    // Debian installs fd as `fdfind`.
    let fd = if time_command("fd", &["--version"], &tree).is_some() {
        "fd"
    } else {
        "fdfind"
    };
    report(
        &tree,
        runs,
        ours,
        fd,
        &["--glob", "--hidden", "*.ts"],
        "fd --glob",
        f64::NAN,
    );
    report(
        &tree,
        runs,
        ours,
        "find",
        &[".", "-name", "*.ts"],
        "subprocess find -name",
        f64::NAN,
    );

    // bash: per-call overhead beyond the command itself.
    let bash = tool("bash");
    let calls = 200;
    let direct = Instant::now();
    for _ in 0..calls {
        Command::new("/bin/bash")
            .args(["-c", "true"])
            .status()
            .unwrap();
    }
    let direct = direct.elapsed().as_secs_f64() * 1000.0 / calls as f64;
    let via_tool = Instant::now();
    for _ in 0..calls {
        time_tool(&rt, &bash, json!({"command": "true"}), &tree);
    }
    let via_tool = via_tool.elapsed().as_secs_f64() * 1000.0 / calls as f64;
    println!("\nbash 'true', mean of {calls} calls");
    println!("  {:<34} {:>9.2} ms", "spawn /bin/bash -c directly", direct);
    println!("  {:<34} {:>9.2} ms", "worker bash tool", via_tool);
    println!(
        "  {:<34} {:>9.2} ms   (target < 3 ms)",
        "overhead per call",
        via_tool - direct
    );
    sandbox(&rt, &bash, &tree, calls, via_tool);
}

/// `--sandbox linux`: the preflight and setup a run pays once, and a sandboxed `bash` call
/// against the unconfined one measured just before.
fn sandbox(
    rt: &tokio::runtime::Runtime,
    bash: &Arc<dyn Tool>,
    tree: &Path,
    calls: usize,
    unconfined: f64,
) {
    use worker::sandbox::linux::{LinuxRunner, preflight};
    let rounds = 20;
    let setup = Instant::now();
    for _ in 0..rounds {
        preflight(None).unwrap();
    }
    let setup = setup.elapsed().as_secs_f64() * 1000.0 / f64::from(rounds);
    // `--sandbox none` as the binary runs it: each command contained.
    let mut contained_ctx = context(tree);
    contained_ctx.bash.contain = Some(worker::tools::contain::Containment::new());
    let contained = Instant::now();
    for _ in 0..calls {
        let (_, text) = time_in(rt, bash, json!({"command": "true"}), contained_ctx.clone());
        assert_eq!(text, "(no output)", "the contained call failed");
    }
    let contained = contained.elapsed().as_secs_f64() * 1000.0 / calls as f64;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut ctx = context(tree);
    ctx.bash.runner = Some(worker::tools::Runner(Arc::new(LinuxRunner::new(
        PathBuf::from(env!("CARGO_BIN_EXE_worker")),
        worker::sandbox::hidden_paths(home.as_deref(), &[]),
        false,
        None,
    ))));
    let sandboxed = Instant::now();
    for _ in 0..calls {
        let (_, text) = time_in(rt, bash, json!({"command": "true"}), ctx.clone());
        assert_eq!(text, "(no output)", "the sandboxed call failed");
    }
    let sandboxed = sandboxed.elapsed().as_secs_f64() * 1000.0 / calls as f64;
    // As a run meets them: a model turn between calls, in which the sandbox sets up the next
    // command's launcher.
    let paused = calls / 4;
    let contained_paused = paused_calls(rt, bash, &contained_ctx, paused);
    let sandboxed_paused = paused_calls(rt, bash, &ctx, paused);
    // The run's end: what its commands left is removed (under --sandbox linux, the mount
    // points the views made in the private temp directory too), and the launcher left
    // waiting is let go.
    let run_end = |ctx: &ToolContext| {
        std::thread::sleep(MODEL_TURN);
        let ending = Instant::now();
        ctx.leftovers.clean_up();
        ending.elapsed().as_secs_f64() * 1000.0
    };
    let contained_end = run_end(&contained_ctx);
    let sandboxed_end = run_end(&ctx);
    println!(
        "
--sandbox none (contained: a PID namespace per command)"
    );
    println!(
        "  {:<34} {:>9.2} ms   = {:.2}x the uncontained call, {:.2} ms added",
        "contained bash 'true'",
        contained,
        contained / unconfined,
        contained - unconfined
    );
    println!(
        "
--sandbox linux"
    );
    println!(
        "  {:<34} {:>9.2} ms   (target < 20 ms)",
        "setup (preflight), once a run", setup
    );
    println!(
        "  {:<34} {:>9.2} ms   = {:.2}x the unconfined call",
        "sandboxed bash 'true'",
        sandboxed,
        sandboxed / unconfined
    );
    println!(
        "  {:<34} {:>9.2} ms   (target < 5 ms)",
        "added per call",
        sandboxed - unconfined
    );
    println!(
        "  {:<34} {:>9.2} ms   = {:.2}x the contained call",
        "added over --sandbox none",
        sandboxed - contained,
        sandboxed / contained
    );
    println!(
        "
with {} ms between calls (a model turn; mean of {paused} calls each)",
        MODEL_TURN.as_millis()
    );
    println!(
        "  {:<34} {:>9.2} ms",
        "contained bash 'true'", contained_paused
    );
    println!(
        "  {:<34} {:>9.2} ms",
        "sandboxed bash 'true'", sandboxed_paused
    );
    println!(
        "  {:<34} {:>9.2} ms   (target <= 3 ms)",
        "added over --sandbox none",
        sandboxed_paused - contained_paused
    );
    println!(
        "  {:<34} {:>9.2} ms   (once a run; contained {:.2} ms)",
        "the run's end, sandboxed", sandboxed_end, contained_end
    );
}

/// The pause the `bash` calls of [`paused_calls`] are apart.
const MODEL_TURN: Duration = Duration::from_millis(20);

/// The mean time of `calls` calls of `bash 'true'`, each after [`MODEL_TURN`] (not timed).
fn paused_calls(
    rt: &tokio::runtime::Runtime,
    bash: &Arc<dyn Tool>,
    ctx: &ToolContext,
    calls: usize,
) -> f64 {
    let mut total = Duration::ZERO;
    for _ in 0..calls {
        std::thread::sleep(MODEL_TURN);
        let (took, text) = time_in(rt, bash, json!({"command": "true"}), ctx.clone());
        assert_eq!(text, "(no output)", "the call failed");
        total += took;
    }
    total.as_secs_f64() * 1000.0 / calls as f64
}

fn report(
    tree: &Path,
    runs: usize,
    ours: f64,
    program: &str,
    args: &[&str],
    label: &str,
    target: f64,
) {
    let Some((_, lines)) = time_command(program, args, tree) else {
        println!("  {label:<34} {:>9}    (not installed)", "-");
        return;
    };
    let theirs = best((0..runs).filter_map(|_| time_command(program, args, tree).map(|(d, _)| d)));
    let ratio = ours / theirs;
    let goal = if target.is_nan() {
        String::new()
    } else {
        format!("   target <= {target}x")
    };
    println!(
        "  {label:<34} {theirs:>9.1} ms   worker/{program} = {ratio:.2}x{goal}   ({lines} lines)"
    );
}

fn walk_size(root: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}
