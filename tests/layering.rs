//! Imports run one way (see `src/lib.rs`): no circles between the crate's top-level
//! modules, and the kernel side (`src/`) never imports `channels/`. Read from the source,
//! so a change that adds a circle fails here, not in a reviewer's head.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Top-level module → the top-level modules its non-test code names as `crate::x`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for base in ["src", "channels", "skills"] {
        let mut v = Vec::new();
        rust_files(&root.join(base), &mut v);
        for p in v {
            let module = if base == "src" {
                let rel = p.strip_prefix(root.join("src")).unwrap();
                let first = rel
                    .components()
                    .next()
                    .unwrap()
                    .as_os_str()
                    .to_string_lossy();
                first.trim_end_matches(".rs").to_string()
            } else {
                base.to_string()
            };
            let name = p.file_name().unwrap().to_string_lossy();
            if module == "lib" || module == "main" || name == "tests.rs" {
                continue;
            }
            files.entry(module).or_default().push(p);
        }
    }
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, paths) in &files {
        let deps = g.entry(module.clone()).or_default();
        for p in paths {
            let text = std::fs::read_to_string(p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for line in code.lines() {
                let line = line.split("//").next().unwrap();
                for (i, _) in line.match_indices("crate::") {
                    let name: String = line[i + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if name != *module && files.contains_key(&name) {
                        deps.insert(name);
                    }
                }
            }
        }
    }
    g
}

fn reaches(g: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(m) = stack.pop() {
        if m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(g.get(&m).into_iter().flatten().cloned());
        }
    }
    false
}

#[test]
fn imports_have_no_circles_and_the_kernel_never_imports_channels() {
    let g = graph();
    assert!(g.contains_key("kernel") && g.contains_key("modes") && g.contains_key("channels"));
    let mut circles = Vec::new();
    for (m, deps) in &g {
        for d in deps {
            if reaches(&g, d, m) {
                circles.push(format!("{m} -> {d} -> … -> {m}"));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
    for (m, deps) in &g {
        if m != "channels" && m != "skills" {
            assert!(!deps.contains("channels"), "{m} imports channels/");
        }
    }
    assert!(
        !reaches(&g, "modes", "skills"),
        "modes must get its plugin table from the caller"
    );
}
