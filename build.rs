//! Release builds place the functions a typical run executes together at the start of the
//! program's code (`build/symbol-order.txt`, written by `scripts/symbol-order.sh`).
//!
//! The kernel maps code 64 KiB at a time around each page a process touches, so a run whose
//! code is spread over the whole of `.text` maps most of it: clustered, a short run's peak RSS
//! and its page faults at startup fall by more than half. Only the layout changes; a symbol the
//! file names that no longer exists is skipped.
//!
//! The same builds pack their relative relocations (DT_RELR) when the C library they link
//! against reads them (glibc 2.36 and newer; the binary then needs such a glibc, as a binary
//! built there usually does anyway): startup no longer reads 1.1 MiB of relocations.
//!
//! They link the program position-dependent (`-no-pie`), as Go links its programs by default.
//! A position-independent executable is loaded at a random address, so the loader must write
//! every pointer in its read-only data (vtables, string tables, static maps: 0.8 MiB here, 217
//! pages) into private memory at each start: 217 copy-on-write page faults and 0.85 MiB of
//! memory no two runs share, about a millisecond of a short run's startup. Linked at a fixed
//! address, those pages are read from the page cache only when used and shared between runs.
//! What is given up is the random address of the program's own code and data; the heap, the
//! stack, every library and every mapping are still placed at random (SECURITY.md says so).
//! `WORKER_PIE=1` keeps a position-independent executable.
//!
//! The build also lists the providers the bundled price table prices
//! (`$OUT_DIR/priced_providers.rs`), so that a run whose provider has no list prices (every
//! `dynamo/…` run) learns so without reading the 100 KiB table.
//!
//! The options are given only to a linker known to take them: rustc's own `rust-lld`, the default
//! for x86_64 Linux since Rust 1.90, when no other linker is configured.
//! `WORKER_NO_SYMBOL_ORDER=1` turns all of it off.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    priced_providers();
    println!("cargo:rerun-if-changed=build/symbol-order.txt");
    println!("cargo:rerun-if-env-changed=WORKER_NO_SYMBOL_ORDER");
    println!("cargo:rerun-if-env-changed=WORKER_PIE");
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("build")
        .join("symbol-order.txt");
    if env::var("PROFILE").as_deref() == Ok("release")
        && env::var_os("WORKER_NO_SYMBOL_ORDER").is_none()
        && order.is_file()
        && default_rust_lld()
    {
        println!(
            "cargo:rustc-link-arg-bin=worker=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=worker=-Wl,--no-warn-symbol-ordering");
        if glibc_minor().is_some_and(|minor| minor >= 36) {
            // Relative relocations packed (DT_RELR, glibc 2.36): the loader reads 14 KiB of
            // them instead of 1.1 MiB.
            println!("cargo:rustc-link-arg-bin=worker=-Wl,-z,pack-relative-relocs");
        }
        if env::var_os("WORKER_PIE").is_none() {
            // After rustc's own `-pie`: the compiler driver takes the last of the two.
            println!("cargo:rustc-link-arg-bin=worker=-no-pie");
        }
    }
}

/// Writes `PRICED_PROVIDERS`, the sorted providers of `prices/models.json`'s keys. The table is
/// written by `scripts/prices-from-pi.sh` with one `"provider/model": {…}` entry per line;
/// `llm::pricing`'s tests check the list against the parsed table.
fn priced_providers() {
    println!("cargo:rerun-if-changed=prices/models.json");
    let table = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("prices")
        .join("models.json");
    let text = std::fs::read_to_string(&table).unwrap_or_default();
    let mut providers: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("    \""))
        .filter_map(|key| key.split_once('/').map(|(provider, _)| provider))
        .collect();
    providers.sort_unstable();
    providers.dedup();
    let list = format!(
        "/// The providers `prices/models.json` prices, sorted.\npub(crate) const PRICED_PROVIDERS: &[&str] = &{providers:?};\n"
    );
    let out = Path::new(&env::var("OUT_DIR").unwrap_or_default()).join("priced_providers.rs");
    if let Err(err) = std::fs::write(&out, list) {
        println!("cargo:warning=cannot write {}: {err}", out.display());
    }
}

/// Whether the binary is linked by rustc's bundled lld: x86_64 Linux (GNU), Rust 1.90 or
/// newer, and no linker chosen in the configuration or the flags.
fn default_rust_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu")
        || env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let Ok(output) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&output.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|minor| minor.parse::<u32>().ok());
    minor.is_some_and(|minor| minor >= 90)
}

/// The minor version of the build host's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36").
fn glibc_minor() -> Option<u32> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&output.stdout);
    version
        .trim()
        .strip_prefix("glibc 2.")?
        .split('.')
        .next()?
        .parse()
        .ok()
}
