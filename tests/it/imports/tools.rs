//! Imports inside `src/tools` run one way (see `src/tools/mod.rs`): no file reaches back
//! to a file that reaches it, through `super::`, `crate::tools::` or a child module's
//! name. Stricter than the other folders (`layering`): the folder's `mod.rs` only
//! declares and re-exports, the tools import the state and rules they use, never the
//! other way round.

use super::layering::file_graph;
use super::scan::{named_paths, Module};
use std::collections::{BTreeMap, BTreeSet};

/// File → the files it names, inside `src/tools`.
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    file_graph(&["tools".to_string()], true)
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "tools".into()
    } else {
        format!("tools::{}", m.join("::"))
    }
}

fn path(s: &str) -> Module {
    s.split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn the_scanner_sees_the_imports_it_must() {
    let g = graph();
    let deps = |m: &str| {
        g.get(&path(m))
            .unwrap_or_else(|| panic!("no file for {m}"))
            .clone()
    };
    let has = |from: &str, to: &str| deps(from).contains(&path(to));
    assert!(
        has("files::tool", "files::access"),
        "{:?}",
        deps("files::tool")
    );
    assert!(has("files::tool", "env"));
    assert!(has("registry", "choice::tool"), "{:?}", deps("registry"));
    assert!(
        has("env", "memory::rules")
            && has("env", "choice::rules")
            && has("env", "set_strategy::rules")
    );
    assert!(
        has("", "registry"),
        "mod.rs re-exports the registry: {:?}",
        deps("")
    );
    let probe = "use super::{env::ToolEnv, result};\nfn f() { crate::tools::tool::x(); }\n";
    let me = path("tools::x");
    let named = named_paths(probe, &me, &BTreeSet::new());
    for want in ["tools::env::ToolEnv", "tools::result", "tools::tool::x"] {
        assert!(
            named.iter().any(|p| *p == path(want)),
            "{want} missing from {named:?}"
        );
    }
}

#[test]
fn no_file_in_src_tools_reaches_back_to_itself() {
    let g = graph();
    let mut circles = Vec::new();
    for start in g.keys() {
        // depth-first from `start`: a path back to it is a circle
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((m, path)) = stack.pop() {
            for d in g.get(&m).into_iter().flatten() {
                if d == start {
                    let names: Vec<String> = path.iter().map(|p| show(p)).collect();
                    circles.push(format!("{} → {}", names.join(" → "), show(start)));
                } else if seen.insert(d.clone()) {
                    let mut p = path.clone();
                    p.push(d.clone());
                    stack.push((d.clone(), p));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
