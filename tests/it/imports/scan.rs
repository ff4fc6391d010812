//! The one import scanner: reads the crate's source (`src/` and the folders `src/lib.rs`
//! mounts with `#[path]`), gives every file its module path in the crate, strips what is
//! not shipped code (comments, `#[cfg(test)] mod …` blocks, test files), and resolves
//! the paths a file names (`crate::`, `super::`, `self::`, a child module's name) to
//! module paths. The rules over what it finds are in the sibling modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside the crate, `[]` being the crate root.
pub type Module = Vec<String>;

/// The folders of the library crate, each with the module path it is mounted at.
const ROOTS: &[(&str, &[&str])] = &[
    ("src", &[]),
    ("channels", &["channels"]),
    ("skills", &["skills"]),
    ("demo", &["demo"]),
    ("dashboard", &["dashboard"]),
];

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A test file: `tests.rs`, `*_tests.rs`, or anything in a `tests/` folder.
pub fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().unwrap().to_string_lossy();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

/// Every shipped file of the library (not `lib.rs`, `main.rs` nor test files), by its
/// module path (`x/mod.rs` and `x.rs` are both `x`).
pub fn library() -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    for (dir, at) in ROOTS {
        let base = repo().join(dir);
        let mut files = Vec::new();
        rust_files(&base, &mut files);
        for p in files {
            let rel = p.strip_prefix(&base).unwrap();
            let stem = rel.with_extension("");
            let mut module: Module = at.iter().map(|s| s.to_string()).collect();
            module.extend(
                stem.components()
                    .map(|c| c.as_os_str().to_string_lossy().into()),
            );
            if module.last().is_some_and(|l| l == "mod") {
                module.pop();
            }
            let top_file =
                *dir == "src" && (rel == Path::new("lib.rs") || rel == Path::new("main.rs"));
            if !top_file && !is_test_file(rel) {
                out.insert(module, p);
            }
        }
    }
    out
}

/// The source without comments and without `#[cfg(test)] mod … { … }` blocks (other
/// `#[cfg(test)]` items, such as a test-only helper function, are one item each and
/// kept: harmless). Comments go first, line by line, so lines keep their numbers up to
/// the first test module.
pub fn code(text: &str) -> String {
    let text: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = text.as_str();
    // `#[cfg(test)]`, and `#[cfg(all(test, …))]` too
    let next_test_attr = |s: &str| -> Option<(usize, usize)> {
        ["#[cfg(test)]", "#[cfg(all(test"]
            .iter()
            .filter_map(|m| s.find(m))
            .min()
            .map(|at| (at, at + s[at..].find(")]").map_or(s.len() - at, |e| e + 2)))
    };
    while let Some((at, attr_end)) = next_test_attr(rest) {
        out.push_str(&rest[..at]);
        let attr = &rest[at..attr_end];
        let after = &rest[attr_end..];
        let trimmed = after.trim_start();
        if !trimmed.starts_with("mod ") {
            out.push_str(attr);
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

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// `a::b::c` at the start of `s` (stopping before a `{` group).
fn segments(s: &str) -> Vec<String> {
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
}

fn ident_len_before(bytes: &[u8], i: usize) -> usize {
    let mut n = 0;
    while n < i && (bytes[i - n - 1].is_ascii_alphanumeric() || bytes[i - n - 1] == b'_') {
        n += 1;
    }
    n
}

/// The paths `code` names, as module paths in the crate, for the file of module `me`
/// whose child modules are `children`: `crate::a::b`, `super::a` (chained too),
/// `self::a`, and `a::b` for a child `a`, with one level of `{a, b::c}` groups.
pub fn named_paths(code: &str, me: &[String], children: &BTreeSet<String>) -> Vec<Module> {
    let mut out = Vec::new();
    let mut push = |base: Module, tail: &str| {
        let head = segments(tail);
        let after = &tail[head
            .iter()
            .map(|h| h.len() + 2)
            .sum::<usize>()
            .min(tail.len())..];
        let mut full = base;
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
        let tail = code[i + 2..].trim_start();
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
            "crate" => push(Vec::new(), tail),
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

/// Every shipped file → the module paths its code names.
pub fn library_paths() -> BTreeMap<Module, Vec<Module>> {
    let files = library();
    files
        .iter()
        .map(|(me, path)| {
            let text = code(&std::fs::read_to_string(path).unwrap());
            let children: BTreeSet<String> = files
                .keys()
                .filter(|k| k.len() == me.len() + 1 && k.starts_with(me))
                .map(|k| k.last().unwrap().clone())
                .collect();
            (me.clone(), named_paths(&text, me, &children))
        })
        .collect()
}

/// Whether `from` reaches `to` in `g`.
pub fn reaches<N: Ord + Clone>(g: &BTreeMap<N, BTreeSet<N>>, from: &N, to: &N) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.clone()];
    while let Some(m) = stack.pop() {
        if m == *to {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(g.get(&m).into_iter().flatten().cloned());
        }
    }
    false
}
