//! The benchmarks, one binary: `cargo bench -- <name>` runs one, `cargo bench` runs them all,
//! each in a process of its own. One binary, because each bench target linked on its own
//! (thin LTO over the mock servers, tokio and the library) cost most of a minute to build.
//!
//! Each benchmark's module says what it measures and which variables tune it.

// A benchmark stops on any failure; unwrapping is how it says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/launcher.rs"]
mod launcher;
#[path = "support/layout.rs"]
mod layout;
#[path = "../tests/it/support/mock_llm.rs"]
mod mock_llm;
#[path = "support/peer_mock.rs"]
mod peer_mock;
#[path = "support/runs.rs"]
mod runs;
#[path = "support/wait.rs"]
mod wait;

mod fanout;
mod fleet;
mod long;
mod mcp;
mod peers;
mod run;
mod tee;
mod tools;
mod turns;

/// Every benchmark, in the order `cargo bench` runs them.
const BENCHES: &[(&str, fn())] = &[
    ("run", run::main),
    ("tee", tee::main),
    ("fleet", fleet::main),
    ("long", long::main),
    ("turns", turns::main),
    ("fanout", fanout::main),
    ("mcp", mcp::main),
    ("tools", tools::main),
    ("peers", peers::main),
];

fn main() {
    // cargo adds `--bench`; a name is any other argument.
    let names: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    match names.as_slice() {
        [] => {
            // Each in a fresh process: a benchmark forks its launcher while it is still small.
            let me = std::env::current_exe().unwrap();
            for (name, _) in BENCHES {
                println!("\n== cargo bench -- {name}");
                let status = std::process::Command::new(&me).arg(name).status().unwrap();
                assert!(status.success(), "benchmark {name} failed: {status}");
            }
        }
        [name] => match BENCHES.iter().find(|(known, _)| known == name) {
            Some((_, bench)) => bench(),
            None => {
                let known: Vec<&str> = BENCHES.iter().map(|(known, _)| *known).collect();
                eprintln!("no benchmark named {name}; one of: {}", known.join(", "));
                std::process::exit(2);
            }
        },
        _ => {
            eprintln!("one benchmark name at most: cargo bench -- <name>");
            std::process::exit(2);
        }
    }
}
