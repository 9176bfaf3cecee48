//! The dependency rules of docs/ARCHITECTURE.md, checked: each top-level module of `src/` may
//! use only the modules listed for it (test code excepted), and the graph has no cycle. A new
//! dependency is a design decision: add it here and to ARCHITECTURE.md together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module -> the modules it may use.
const ALLOWED: &[(&str, &[&str])] = &[
    ("exit", &[]),
    ("sync", &[]),
    ("text", &[]),
    ("ids", &[]),
    ("input_file", &[]),
    ("net", &[]),
    ("http", &[]),
    ("bless", &[]),
    ("secrets", &["sync"]),
    ("events", &["ids", "secrets", "sync"]),
    (
        "tools",
        &[
            "bless",
            "control",
            "events",
            "input_file",
            "secrets",
            "sync",
            "text",
        ],
    ),
    (
        "llm",
        &["events", "http", "input_file", "secrets", "sync", "text"],
    ),
    ("control", &["exit"]),
    (
        "live",
        &[
            "control",
            "events",
            "extension",
            "input_file",
            "sync",
            "text",
            "tools",
        ],
    ),
    ("extension", &["events", "llm", "sync", "tools"]),
    ("sandbox", &["events", "net", "tools"]),
    ("output", &[]),
    (
        "session",
        &["events", "ids", "input_file", "secrets", "sync"],
    ),
    ("skills", &["events", "extension", "input_file"]),
    (
        "subagents",
        &[
            "events",
            "extension",
            "input_file",
            "output",
            "skills",
            "tools",
        ],
    ),
    ("file_search", &["events", "extension", "tools"]),
    (
        "mcp",
        &[
            "config",
            "events",
            "extension",
            "http",
            "output",
            "secrets",
            "sync",
            "tools",
        ],
    ),
    (
        "web",
        &[
            "config",
            "events",
            "extension",
            "http",
            "net",
            "secrets",
            "text",
            "tools",
        ],
    ),
    (
        "config",
        &[
            "control",
            "events",
            "extension",
            "ids",
            "llm",
            "output",
            "sandbox",
            "secrets",
            "session",
            "tools",
        ],
    ),
    (
        "agent",
        &[
            "config",
            "control",
            "events",
            "exit",
            "extension",
            "http",
            "ids",
            "input_file",
            "llm",
            "output",
            "sandbox",
            "secrets",
            "session",
            "sync",
            "text",
            "tools",
        ],
    ),
    (
        "dynamo",
        &[
            "config",
            "events",
            "extension",
            "http",
            "ids",
            "input_file",
            "llm",
            "secrets",
            "sync",
        ],
    ),
    (
        "github",
        &[
            "config",
            "events",
            "extension",
            "http",
            "input_file",
            "secrets",
            "sync",
            "text",
            "tools",
        ],
    ),
    (
        "telemetry",
        &[
            "config",
            "dynamo",
            "events",
            "extension",
            "http",
            "ids",
            "secrets",
            "sync",
        ],
    ),
    (
        "cli",
        &[
            "bless",
            "config",
            "dynamo",
            "events",
            "exit",
            "file_search",
            "github",
            "http",
            "ids",
            "input_file",
            "live",
            "llm",
            "mcp",
            "output",
            "sandbox",
            "secrets",
            "session",
            "skills",
            "subagents",
            "telemetry",
            "tools",
            "web",
        ],
    ),
];

/// `crate::x` references of each top-level module, outside comments and `#[cfg(test)]` code.
fn used_modules() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let module = rel
                .iter()
                .next()
                .unwrap()
                .to_string_lossy()
                .replace(".rs", "");
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            let found = uses.entry(module.clone()).or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for part in line.split("crate::").skip(1) {
                    let name: String = part
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != module {
                        found.insert(name);
                    }
                }
            }
        }
    }
    uses
}

#[test]
fn modules_use_only_what_the_architecture_allows() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for (module, used) in used_modules() {
        let Some(permitted) = allowed.get(module.as_str()) else {
            violations.push(format!("{module}: not in the architecture table"));
            continue;
        };
        for dependency in used {
            if !permitted.contains(&dependency.as_str()) {
                violations.push(format!("{module} -> {dependency}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "dependencies outside docs/ARCHITECTURE.md: {violations:#?}"
    );
}

#[test]
fn the_allowed_graph_has_no_cycle() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    // Depth-first search with colours: reaching a module still on the path is a cycle.
    fn visit<'a>(
        module: &'a str,
        allowed: &BTreeMap<&'a str, &'a [&'a str]>,
        on_path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(module) {
            return;
        }
        assert!(!on_path.contains(&module), "cycle: {on_path:?} -> {module}");
        on_path.push(module);
        for next in allowed.get(module).copied().unwrap_or_default() {
            visit(next, allowed, on_path, done);
        }
        on_path.pop();
        done.insert(module);
    }
    let mut done = BTreeSet::new();
    for module in allowed.keys() {
        visit(module, &allowed, &mut Vec::new(), &mut done);
    }
}
