//! `worker`: parse the command line, read the prompt, run, map the outcome to an exit code.
//!
//! Every exit code is an [`ExitStatus`] (see `worker::exit`). A second signal exits at once.
//!
//! The process starts at [`main`] below rather than through Rust's runtime start, which
//! before `main` also finds the main thread's stack by reading and parsing
//! `/proc/self/maps` and sets up a stack-overflow handler with an alternate signal stack: a
//! tenth of a millisecond of every start on a slow machine, for a message on a stack
//! overflow. [`prepare_process`] does the rest of what that start does.
#![no_main]

use std::io::Write;

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

use clap::{CommandFactory, FromArgMatches};
use futures_util::FutureExt;
use tokio::signal::unix::{SignalKind, signal};
use worker::cli::{
    Cli, Command, McpCheck, McpCheckArgs, McpCommand, ProcessEnv, PromptError, TraceCommand,
    build_config, compat, read_prompt, read_prompt_command,
};
use worker::live::{CommandLines, ControlSource};
use worker::secrets::Secrets;
use worker::{AbortReason, ExitStatus, RunControl, StdoutSink};

/// The process's entry, called by the C library's start with the program's arguments
/// (which `std::env::args_os` reads on its own). A panic that escapes [`worker_main`] exits
/// 101, as from Rust's own start.
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    prepare_process();
    let code = std::panic::catch_unwind(worker_main).unwrap_or(101);
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// What Rust's runtime start does before `main`, but finding the stack: a standard
/// descriptor the parent left closed is opened on `/dev/null`, so that no file the run opens
/// later takes its number (events written into a session file, a prompt read from one); and
/// SIGPIPE is ignored, so that a reader that went away is an error on the write
/// ([`ExitStatus::ClosedStdout`]) rather than a silent death. Commands started later get the
/// default SIGPIPE back (std's `Command` and the containment both restore it).
fn prepare_process() {
    use nix::libc;
    for fd in 0..=2 {
        // SAFETY: F_GETFD only asks whether the descriptor is open.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
        if closed {
            // SAFETY: a plain open; the descriptors below `fd` are open, so it gets `fd`.
            let opened = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if opened != fd {
                // As Rust's start does: running on would let a file take the number.
                std::process::abort();
            }
        }
    }
    // SAFETY: no other thread runs yet, and ignoring a signal installs no handler.
    let _ = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigIgn,
        )
    };
}

/// The program: the exit code to end with.
fn worker_main() -> i32 {
    // `worker __sandbox …`: the sandbox launcher `bash` starts under --sandbox linux.
    // `worker __reap`: what a contained command's init becomes while background jobs run.
    let launched =
        worker::sandbox::launch::main_if_launcher().or_else(worker::tools::contain::main_if_reaper);
    if let Some(code) = launched {
        return u8::try_from(code).map_or(1, i32::from);
    }
    // A panic anywhere is reported as worker's own error line, never as a bare trace.
    std::panic::set_hook(Box::new(|info| {
        warn(&format!("internal error: {info}"));
    }));
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut command = Cli::command().name(compat::program_name(argv.first()));
    if argv.len() <= 1 {
        // No arguments: the help, as asked for.
        let _ = writeln!(std::io::stdout(), "{}", command.render_help());
        return ExitStatus::Ok.into();
    }
    let argv = match compat::normalize(argv) {
        Ok(argv) => argv,
        Err(err) => return usage_error(&err.to_string()).into(),
    };
    let parsed = command
        .try_get_matches_from_mut(argv)
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            // A value that does not parse is one line naming the flag, like every usage error.
            if let Some(line) = invalid_value(&err) {
                return usage_error(&line).into();
            }
            // --help and --version print to stdout and exit 0; real errors exit 2.
            let code = err.exit_code();
            let _ = err.format(&mut command).print();
            return u8::try_from(code).map_or(ExitStatus::Usage.into(), i32::from);
        }
    };
    // The parser's definition is not needed past this point, and the process ends with the
    // command. Dropping its hundred arguments would be the last thing a run did before it
    // exits: 65,000 instructions, a thirtieth of a replayed run's.
    std::mem::forget(command);
    let status = match cli.command {
        Command::Run(args) => run(&args),
        Command::Trace(TraceCommand::Perfetto { input, output }) => perfetto(&input, &output),
        Command::Completions { shell } => {
            print_generated(|out| out.write_all(&worker::cli::manual::completions(shell)))
        }
        Command::Mcp(McpCommand::Check(args)) => mcp_check(&args),
        Command::Man => print_generated(worker::cli::manual::man_page),
    };
    // [`main`] exits without waiting for blocking tool threads that may still be winding down.
    status.into()
}

/// The async runtime; when the machine cannot give it what it needs, the warning is printed and
/// the status to exit with returned.
///
/// One thread: the loop, its I/O and every task it spawns run on the thread that started the
/// run, so a reply that arrives wakes no other thread to hand it over. A run waits on the
/// network and on child processes, not on the CPU; what blocks (file tools, DNS) runs on the
/// runtime's blocking threads. A second stop is handled in the signal handler itself (see
/// [`watch_signals`]), so a loop that cannot go on still ends at once.
fn runtime() -> Result<tokio::runtime::Runtime, ExitStatus> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            // Not the caller's mistake: the machine could not give us an event queue.
            warn(&format!("cannot start the async runtime: {err}"));
            ExitStatus::Failed
        })
}

/// `worker mcp check`: one JSON line per server; exit 2 when a required one is not ready.
fn mcp_check(args: &McpCheckArgs) -> ExitStatus {
    let secrets = SECRETS.get_or_init(Secrets::default);
    let check = match McpCheck::new(args, &ProcessEnv, secrets) {
        Ok(check) => check,
        Err(err) => return usage_error(&err.to_string()),
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let outcome = runtime.block_on(check.run());
    let mut out = std::io::stdout().lock();
    for line in &outcome.lines {
        if writeln!(out, "{line}").is_err() {
            return ExitStatus::ClosedStdout;
        }
    }
    for warning in &outcome.warnings {
        warn(warning);
    }
    if outcome.ready {
        ExitStatus::Ok
    } else {
        ExitStatus::Usage
    }
}

fn run(args: &worker::cli::RunArgs) -> ExitStatus {
    let secrets = SECRETS.get_or_init(Secrets::default);
    // With --control stdin, stdin is the controller's: the prompt command, then the rest.
    let commands = match args.control {
        Some(ControlSource::Stdin) => match CommandLines::stdin() {
            Ok(lines) => Some(lines),
            Err(err) => return usage_error(&format!("--control stdin: cannot read stdin: {err}")),
        },
        None => None,
    };
    let config = match build_config(args, &ProcessEnv, secrets, commands.clone()) {
        Ok((config, warnings)) => {
            for warning in &warnings {
                warn(warning);
            }
            config
        }
        Err(err) => return usage_error(&err.to_string()),
    };
    // The budget covers waiting for the prompt too: it runs from `config.budget_start`.
    let read = match &commands {
        Some(lines) => read_prompt_command(args.prompt.as_deref(), lines, config.limits.timeout),
        None => read_prompt(args.prompt.as_deref(), config.limits.timeout),
    };
    let prompt = match read {
        Ok(prompt) => prompt,
        Err(PromptError::Invalid(err)) => return usage_error(&err.to_string()),
        Err(timed_out @ PromptError::TimedOut(_)) => {
            warn(&timed_out.to_string());
            return ExitStatus::Limit;
        }
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(status) => return status,
    };
    let status = runtime.block_on(async {
        watch_signals(config.control.clone());
        let run = AssertUnwindSafe(worker::run(config, prompt, Box::new(StdoutSink)));
        match run.catch_unwind().await {
            Ok(result) => {
                for warning in &result.warnings {
                    warn(warning);
                }
                // Last, so a caller keeping only the stderr tail still learns the cause.
                if let Some(failure) = &result.failure {
                    warn(failure);
                }
                result.exit
            }
            // The run ends its own stream on a panic in the loop; this is the last resort for
            // one outside it (the panic hook has already said what happened).
            Err(_) => ExitStatus::Failed,
        }
    });
    // The stream is complete: do not wait for blocking threads (a DNS lookup stuck on a dead
    // resolver, a tool's file read) to wind down.
    runtime.shutdown_background();
    status
}

fn perfetto(input: &std::path::Path, output: &std::path::Path) -> ExitStatus {
    match worker::dynamo::perfetto::convert_file(input, output) {
        Ok(summary) => {
            let skipped = match summary.skipped_lines {
                0 => String::new(),
                n => format!(", {n} lines skipped"),
            };
            let _ = writeln!(
                std::io::stdout(),
                "wrote {}: {} slices, {} flows, {} session(s), {} trajectories{skipped}",
                output.display(),
                summary.slices,
                summary.flows,
                summary.sessions,
                summary.trajectories,
            );
            ExitStatus::Ok
        }
        Err(err) => usage_error(&err.to_string()),
    }
}

/// A completion script or the manual page on stdout; a reader that went away is
/// [`ExitStatus::ClosedStdout`], like a run's.
fn print_generated(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> ExitStatus {
    let mut stdout = std::io::stdout().lock();
    match write(&mut stdout).and_then(|()| stdout.flush()) {
        Ok(()) => ExitStatus::Ok,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::ClosedStdout,
        Err(err) => {
            warn(&format!("cannot write to stdout: {err}"));
            ExitStatus::Failed
        }
    }
}

/// First SIGINT/SIGTERM: abort the run (it ends its stream and exits 130/143). Second, or a
/// signal after an `abort` command, or a second `abort` command: exit now.
///
/// The first stop goes through the loop, which winds down. A signal that must end the process
/// at once is handled in the signal handler, not by a task: the task runs on the loop's
/// thread, and a loop that cannot go on (blocked writing to a reader that stopped reading)
/// would never run it.
fn watch_signals(control: RunControl) {
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        warn(
            "cannot install signal handlers; SIGINT/SIGTERM will kill the process without a final event",
        );
        return;
    };
    exit_on_a_second_signal(&control);
    tokio::spawn(async move {
        let first = tokio::select! {
            _ = interrupt.recv() => AbortReason::Interrupt,
            _ = terminate.recv() => AbortReason::Terminate,
            () = control.hurried() => {
                std::process::exit(exit_now(&control));
            }
        };
        control.abort(first);
        // A second signal is the handler's; a second `abort` command is this task's.
        control.hurried().await;
        std::process::exit(exit_now(&control));
    });
}

/// Installs, beside the runtime's own handler, an action that ends the process at a second
/// signal, or at a first one once the run was stopped another way (a command, the budget),
/// with that signal's exit code.
fn exit_on_a_second_signal(control: &RunControl) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SIGNALS: AtomicU32 = AtomicU32::new(0);
    for (number, reason) in [
        (nix::libc::SIGINT, AbortReason::Interrupt),
        (nix::libc::SIGTERM, AbortReason::Terminate),
    ] {
        let control = control.clone();
        let code = reason.exit_status().into();
        let action = move || {
            let earlier = SIGNALS.fetch_add(1, Ordering::SeqCst);
            if earlier > 0 || control.reason().is_some() {
                // SAFETY: `_exit` is async-signal-safe.
                unsafe { nix::libc::_exit(code) };
            }
        };
        // SAFETY: the action is async-signal-safe: it reads an atomic and a `OnceLock` (an
        // atomic load once set), takes no lock, allocates nothing, and `_exit`s.
        if unsafe { signal_hook_registry::register(number, action) }.is_err() {
            warn(
                "cannot install the second-signal handler; a second SIGINT/SIGTERM may wait for the run to wind down",
            );
        }
    }
}

/// The exit code of a second `abort` command: the first stop's.
fn exit_now(control: &RunControl) -> i32 {
    control
        .reason()
        .unwrap_or(AbortReason::Command)
        .exit_status()
        .into()
}

/// `invalid value 'X' for --flag: why`, for a flag (or its variable) whose value its parser
/// refused.
fn invalid_value(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    };
    let flag = text(ContextKind::InvalidArg)?.split_whitespace().next()?;
    let value = text(ContextKind::InvalidValue)?;
    let why = std::error::Error::source(err)?;
    Some(format!("invalid value '{value}' for {flag}: {why}"))
}

fn usage_error(message: &str) -> ExitStatus {
    warn(message);
    ExitStatus::Usage
}

/// The run's secrets, filled while the configuration is built: every line on stderr passes
/// them (a panic message and a server's error body included).
static SECRETS: OnceLock<Secrets> = OnceLock::new();

/// Every line worker writes to stderr, redacted, in one write: a stderr shared with other
/// processes (a guardian, sibling runs) gets whole lines, never pieces of two. stderr may be
/// closed too; a failed warning is not worth a panic.
fn warn(message: &str) {
    let message = match SECRETS.get() {
        Some(secrets) => secrets.redact(message),
        None => message.into(),
    };
    let line = format!("worker: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}
