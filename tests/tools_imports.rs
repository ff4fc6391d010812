//! Imports inside `src/tools` run one way (see `src/tools/mod.rs`): no file reaches back
//! to a file that reaches it, through `super::`, `crate::tools::` or a child module's
//! name. Read from the source, like tests/layering.rs, but per file: the folder's
//! `mod.rs` only declares and re-exports, the tools import the state and rules they use,
//! never the other way round.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools")
}

/// Every `.rs` file below `dir` as its module path (`mod.rs` is its folder's module).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let mut path = prefix.to_vec();
        if p.is_dir() {
            path.push(name);
            modules(&p, &path, out);
        } else if p.extension().is_some_and(|x| x == "rs") && name != "tests" {
            if name != "mod" {
                path.push(name);
            }
            out.insert(path, p);
        }
    }
}

/// The source without comments and without `#[cfg(test)] mod … { … }` blocks.
fn code(text: &str) -> String {
    let text: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        if !after.starts_with("mod ") {
            rest = after;
            continue;
        }
        let open = after.find(['{', ';']).unwrap();
        if after[open..].starts_with(';') {
            rest = &after[open + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
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
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The paths a file names, each as segments, resolved against its module `me`:
/// `super::a::b`, `crate::tools::a`, `self::a`, and `a::b` for a child module `a`,
/// with one level of `{a, b::c}` groups.
fn named_paths(code: &str, me: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let segments = |s: &str| -> Vec<String> {
        let mut v = Vec::new();
        let mut rest = s;
        loop {
            let id = ident(rest);
            if id.is_empty() {
                break;
            }
            rest = &rest[id.len()..];
            v.push(id);
            match rest.strip_prefix("::") {
                Some(r) if !r.starts_with('{') => rest = r,
                _ => break,
            }
        }
        v
    };
    let mut out = Vec::new();
    let mut push = |base: Vec<String>, tail: &str| {
        let head = segments(tail);
        let after = &tail[head
            .iter()
            .map(|h| h.len() + 2)
            .sum::<usize>()
            .min(tail.len())..];
        let mut full = base.clone();
        full.extend(head.iter().cloned());
        if let Some(group) = after
            .strip_prefix('{')
            .or_else(|| tail.strip_prefix('{'))
            .map(|g| g.split('}').next().unwrap())
        {
            for item in group.split(',') {
                let mut p = full.clone();
                p.extend(segments(item.trim()));
                out.push(p);
            }
        } else {
            out.push(full);
        }
    };
    let bytes = code.as_bytes();
    for (i, _) in code.match_indices("::") {
        // the start of the path this `::` belongs to
        let mut s = i;
        while s > 0
            && (bytes[s - 1].is_ascii_alphanumeric()
                || bytes[s - 1] == b'_'
                || bytes[s - 1] == b':')
        {
            s -= 1;
        }
        if s != i - ident_len_before(bytes, i) {
            continue; // not the first `::` of its path
        }
        let first = &code[s..i];
        let tail = &code[i + 2..];
        match first {
            "super" => {
                let mut base = me.to_vec();
                base.pop();
                let mut t = tail;
                while let Some(r) = t.strip_prefix("super::") {
                    base.pop();
                    t = r;
                }
                push(base, t);
            }
            "self" => push(me.to_vec(), tail),
            "crate" => {
                if let Some(t) = tail.strip_prefix("tools::") {
                    push(Vec::new(), t);
                }
            }
            c if children.contains(c) => {
                let mut base = me.to_vec();
                base.push(c.to_string());
                push(base, tail);
            }
            _ => {}
        }
    }
    out
}

fn ident_len_before(bytes: &[u8], i: usize) -> usize {
    let mut n = 0;
    while n < i && (bytes[i - n - 1].is_ascii_alphanumeric() || bytes[i - n - 1] == b'_') {
        n += 1;
    }
    n
}

/// File → the files it names.
fn graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = BTreeMap::new();
    modules(&root(), &[], &mut files);
    let mut g = BTreeMap::new();
    for (me, path) in &files {
        let text = code(&std::fs::read_to_string(path).unwrap());
        let children: BTreeSet<String> = files
            .keys()
            .filter(|k| k.len() == me.len() + 1 && k.starts_with(me))
            .map(|k| k.last().unwrap().clone())
            .collect();
        let deps: BTreeSet<Vec<String>> = named_paths(&text, me, &children)
            .into_iter()
            .filter_map(|p| {
                // the deepest file the path lies in
                (0..=p.len())
                    .rev()
                    .map(|n| p[..n].to_vec())
                    .find(|m| files.contains_key(m))
            })
            .filter(|d| d != me)
            .collect();
        g.insert(me.clone(), deps);
    }
    g
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "tools".into()
    } else {
        format!("tools::{}", m.join("::"))
    }
}

#[test]
fn the_scanner_sees_the_imports_it_must() {
    let g = graph();
    let deps = |m: &str| {
        let key: Vec<String> = m
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        g.get(&key)
            .unwrap_or_else(|| panic!("no file for {m}"))
            .clone()
    };
    let has = |from: &str, to: &str| {
        let to: Vec<String> = to
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        deps(from).contains(&to)
    };
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
    let me = vec!["x".to_string()];
    let named = named_paths(probe, &me, &BTreeSet::new());
    for want in [vec!["env", "ToolEnv"], vec!["result"], vec!["tool", "x"]] {
        assert!(
            named.iter().any(|p| p == &want),
            "{want:?} missing from {named:?}"
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
