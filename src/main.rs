//! `worker`: parse the command line, read the prompt, run, map the outcome to an exit code.
//!
//! Every exit code is an [`ExitStatus`] (see `worker::exit`). A second signal exits at once.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};
use worker::cli::{Cli, Command, ProcessEnv, TraceCommand, build_config, read_prompt};
use worker::{AbortReason, ExitStatus, RunControl, StdoutSink};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // --help and --version print to stdout and exit 0; real errors exit 2.
            let _ = err.print();
            return ExitCode::from(err.exit_code() as u8);
        }
    };
    let status = match cli.command {
        Command::Run(args) => run(&args),
        Command::Trace(TraceCommand::Perfetto { input, output }) => perfetto(&input, &output),
    };
    // Exit without waiting for blocking tool threads that may still be winding down.
    std::process::exit(status.into())
}

fn run(args: &worker::cli::RunArgs) -> ExitStatus {
    let config = match build_config(args, &ProcessEnv) {
        Ok((config, warnings)) => {
            for warning in &warnings {
                warn(warning);
            }
            config
        }
        Err(message) => return usage_error(&message),
    };
    let prompt = match read_prompt(args.prompt.as_deref()) {
        Ok(prompt) => prompt,
        Err(message) => return usage_error(&message),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            // Not the caller's mistake: the machine could not give us threads.
            warn(&format!("cannot start the async runtime: {err}"));
            return ExitStatus::Failed;
        }
    };
    runtime.block_on(async {
        watch_signals(config.control.clone());
        let result = worker::run(config, prompt, Box::new(StdoutSink)).await;
        for warning in &result.warnings {
            warn(warning);
        }
        result.exit
    })
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
                "wrote {}: {} slices, {} session(s), {} trajectories{skipped}",
                output.display(),
                summary.slices,
                summary.sessions,
                summary.trajectories,
            );
            ExitStatus::Ok
        }
        Err(err) => usage_error(&err.to_string()),
    }
}

/// First SIGINT/SIGTERM: abort the run (it ends its stream and exits 130/143). Second: exit now.
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
    tokio::spawn(async move {
        let first = tokio::select! {
            _ = interrupt.recv() => AbortReason::Interrupt,
            _ = terminate.recv() => AbortReason::Terminate,
        };
        control.abort(first);
        let second = tokio::select! {
            _ = interrupt.recv() => AbortReason::Interrupt,
            _ = terminate.recv() => AbortReason::Terminate,
        };
        std::process::exit(second.exit_status().into());
    });
}

fn usage_error(message: &str) -> ExitStatus {
    warn(message);
    ExitStatus::Usage
}

/// stderr may be closed too; a failed warning is not worth a panic.
fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "worker: {message}");
}
