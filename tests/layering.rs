//! Imports run one way (see `src/lib.rs`): no circles between the crate's top-level
//! modules, and the kernel side (`src/`) never imports `channels/` nor `dashboard/`. Read from the source,
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
    for base in ["src", "channels", "skills", "demo", "dashboard"] {
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
            for name in crate_paths(&without_test_modules(&text)) {
                if name != *module && files.contains_key(&name) {
                    deps.insert(name);
                }
            }
        }
    }
    g
}

/// The source without its `#[cfg(test)] mod … { … }` blocks (other `#[cfg(test)]` items,
/// such as a test-only helper function, are only one item and are kept: harmless).
fn without_test_modules(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        if !trimmed.starts_with("mod ") {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        // skip `mod name;` or the braced block
        let open = trimmed.find(['{', ';']).unwrap_or(trimmed.len());
        if trimmed[open..].starts_with(';') {
            rest = &trimmed[open + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = trimmed.len();
        for (i, c) in trimmed[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &trimmed[end..];
    }
    out.push_str(rest);
    out
}

/// Top-level module names used through `crate::x` or `crate::{x, y::z}` (comments
/// stripped). Paths through `super::` stay inside a module, so they cannot cross one.
fn crate_paths(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap();
        for (i, _) in line.match_indices("crate::") {
            let tail = &line[i + 7..];
            if let Some(group) = tail.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or_default();
                names.extend(group.split(',').map(ident));
            } else {
                names.push(ident(tail));
            }
        }
    }
    names
}

#[test]
fn the_scanner_sees_grouped_imports_and_skips_only_test_modules() {
    let code = "use crate::{kernel::Kernel, modes};\nfn f() { crate::tools::x(); }\n#[cfg(test)]\nfn helper() { crate::prompt::y(); }\n#[cfg(test)]\nmod tests {\n    use crate::channels::z;\n    fn g() { if true { } }\n}\npub fn after() { crate::agent::a(); }\n";
    let names = crate_paths(&without_test_modules(code));
    for n in ["kernel", "modes", "tools", "prompt", "agent"] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    assert!(!names.contains(&"channels".to_string()), "{names:?}");
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
    assert!(g.contains_key("dashboard"));
    for (m, deps) in &g {
        // `demo/` drives the channels as a household would, from above them (only `main` imports it)
        if m != "channels" && m != "skills" && m != "demo" && m != "dashboard" {
            assert!(!deps.contains("channels"), "{m} imports channels/");
        }
        // the dashboard looks at the kernel like a channel does; only main and the demo start it
        if m != "dashboard" && m != "demo" {
            assert!(!deps.contains("dashboard"), "{m} imports dashboard/");
        }
    }
    assert!(
        !reaches(&g, "modes", "skills"),
        "modes must get its plugin table from the caller"
    );
    for (m, deps) in &g {
        assert!(m == "demo" || !deps.contains("demo"), "{m} imports demo/");
    }
}

/// Channel names and chat-id prefixes the kernel must not decide on.
const CHANNEL_WORDS: &[&str] = &[
    "== \"qq\"",
    "== \"voice\"",
    "== \"cli\"",
    "!= \"qq\"",
    "!= \"voice\"",
    "!= \"cli\"",
    "\"group:",
    "\"private:",
    "\"qq\" =>",
    "\"voice\" =>",
    "\"cli\" =>",
];

#[test]
fn the_kernel_decides_on_typed_facts_not_on_channel_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut found = Vec::new();
    for p in files {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // the registry itself; a configuration section naming its own channel; tests
        if rel == "turn/facts.rs"
            || rel.starts_with("config/")
            || rel.contains("/tests/")
            || rel.ends_with("tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in without_test_modules(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap();
            if let Some(w) = CHANNEL_WORDS.iter().find(|w| code.contains(*w)) {
                found.push(format!("src/{rel}:{}: {w}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "channel names compared outside the registry (src/turn/facts.rs):\n{}",
        found.join("\n")
    );
}

/// Inside each module folder, file → the sibling files (not `mod.rs`, the folder's
/// façade) its non-test code names through `super::` or `crate::<module>::` paths.
fn file_graph(module_dir: &Path, crate_name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(module_dir, &mut files);
    // file → its module path inside the folder ("core", "switch/judge", "switch" for switch/mod.rs)
    let node = |p: &Path| -> String {
        let rel = p
            .strip_prefix(module_dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let rel = rel.trim_end_matches(".rs").to_string();
        rel.strip_suffix("/mod").map(str::to_string).unwrap_or(rel)
    };
    let known: BTreeSet<String> = files.iter().map(|p| node(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &files {
        let me = node(p);
        let name = p.file_name().unwrap().to_string_lossy();
        if me == "mod" || name == "tests.rs" || name.ends_with("_tests.rs") || me.contains("tests/")
        {
            continue;
        }
        // the module `super::` names, as a path inside the folder (for `x/mod.rs`, whose
        // module is `x`, as for `x.rs`: the folder above)
        let mut parent: Vec<&str> = me.split('/').collect();
        parent.pop();
        let code = without_test_modules(&std::fs::read_to_string(p).unwrap());
        let mut deps = BTreeSet::new();
        for line in code.lines() {
            let line = line.split("//").next().unwrap();
            let mut starts: Vec<(Vec<String>, &str)> = Vec::new();
            for (i, _) in line.match_indices("super::") {
                // count chained super::super::
                let before = &line[..i];
                if before.ends_with("super::") {
                    continue;
                }
                let mut rest = &line[i..];
                let mut base: Vec<String> = parent.iter().map(|s| s.to_string()).collect();
                rest = &rest["super::".len()..];
                while let Some(r) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = r;
                }
                starts.push((base, rest));
            }
            let prefix = format!("crate::{crate_name}::");
            for (i, _) in line.match_indices(&prefix) {
                starts.push((Vec::new(), &line[i + prefix.len()..]));
            }
            for (base, rest) in starts {
                let heads: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or_default();
                    group.split(',').map(|s| s.trim().to_string()).collect()
                } else {
                    vec![rest.to_string()]
                };
                for h in heads {
                    // the longest path of known files this names
                    let mut path = base.clone();
                    let mut target = None;
                    for seg in h.split("::") {
                        let seg: String = seg
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if seg.is_empty() {
                            break;
                        }
                        path.push(seg);
                        let candidate = path.join("/");
                        if known.contains(&candidate) {
                            target = Some(candidate);
                        } else {
                            break;
                        }
                    }
                    if let Some(t) =
                        target.filter(|t| *t != me && !me.starts_with(&format!("{t}/")))
                    {
                        deps.insert(t);
                    }
                }
            }
        }
        g.insert(me, deps);
    }
    g
}

#[test]
fn files_inside_a_module_import_each_other_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut circles = Vec::new();
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    dirs.push((root.join("demo"), "demo".to_string()));
    dirs.push((root.join("dashboard"), "dashboard".to_string()));
    for base in ["src", "channels"] {
        for e in std::fs::read_dir(root.join(base)).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                let crate_name = if base == "channels" {
                    format!("channels::{name}")
                } else {
                    name
                };
                dirs.push((p, crate_name));
            }
        }
    }
    for (dir, crate_name) in dirs {
        let g = file_graph(&dir, &crate_name);
        for (f, deps) in &g {
            for d in deps {
                if reaches(&g, d, f) {
                    circles.push(format!(
                        "{}: {f} -> {d} -> … -> {f}",
                        dir.strip_prefix(root).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "file import circles:\n{}",
        circles.join("\n")
    );
}
