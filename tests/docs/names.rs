//! A doc that names a file or a test names one that exists.
//!
//! - **Files**: a code span whose first word starts with one of [`ROOTS`] (`src/…`,
//!   `tests/…`, `docs/…`, …) is a path in the repository and must exist; `path:37`,
//!   `path:37-40` and `path::item` name the file `path`. Spans with a placeholder (`<`,
//!   `*`, `{`, `…`) are patterns, not files.
//! - **Tests**, in three forms: a file span followed by `(` or `,` and one or more
//!   snake_case spans — ``` `tests/it/ha_agent_wakes.rs` (`a_mode_ended_at_a_satellite_reaches_its_next_wake`) ```
//!   — each a `fn` in that file (or folder); a module path of the test binaries —
//!   ``` `cache_units::memories_recalled_turn_after_turn_keep_the_prefix_in_a_chat` ```, for
//!   `tests/it/cache_units.rs` or `tests/cache_units.rs` — a `fn` in that module; a
//!   snake_case span after the word "test" or "tests" — ``` test `the_kernel_names_no_channel` ```
//!   — a `fn` anywhere in the crate's sources. A test name has at least one `_`.

use crate::corpus::{Inline, Repo};
use crate::Problem;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a path in a code span is taken to be one of this repository's files.
pub const ROOTS: [&str; 10] = [
    "src/",
    "channels/",
    "tests/",
    "docs/",
    "dashboard/",
    "demo/",
    "benches/",
    "skills/",
    "custom_components/",
    "scripts/",
];

/// The folders whose `.rs` files hold the crate's functions and tests.
const SOURCES: [&str; 7] = [
    "src",
    "tests",
    "channels",
    "dashboard",
    "demo",
    "benches",
    "skills",
];

pub fn check(repo: &Repo) -> Vec<Problem> {
    let sources = Sources::read(&repo.root);
    let everywhere = format!("{}/", SOURCES.join("/, "));
    let mut problems = Vec::new();
    for doc in &repo.docs {
        let mut add =
            |line: usize, what: String| problems.push(Problem::new(&doc.path, line, what));
        for block in &doc.blocks {
            for (i, item) in block.iter().enumerate() {
                let Inline::Code(span, line) = item else {
                    continue;
                };
                if let Some(path) = repo_path(span) {
                    let full = repo.root.join(&path);
                    if !full.exists() {
                        add(*line, format!("`{span}`: no file {path}"));
                    } else if path.ends_with(".rs") || full.is_dir() {
                        for (name, at) in names_after(block, i, &[",", "("]) {
                            if sources.where_defined(&name, Some(&path)).is_empty() {
                                let hint = sources.elsewhere(&name);
                                add(at, format!("test `{name}` is not in {path}{hint}"));
                            }
                        }
                    }
                } else if let Some((module, name)) = test_item(span, &repo.root) {
                    if sources.where_defined(&name, Some(&module)).is_empty() {
                        let hint = sources.elsewhere(&name);
                        add(*line, format!("`{span}`: no fn {name} in {module}{hint}"));
                    }
                } else if i > 0 && is_test_name(span) && after_the_word_test(&block[i - 1]) {
                    let mut named = vec![(span.clone(), *line)];
                    named.extend(names_after(block, i, &[",", "and", ", and"]));
                    for (name, at) in named {
                        if sources.where_defined(&name, None).is_empty() {
                            add(at, format!("test `{name}`: no fn {name} in {everywhere}"));
                        }
                    }
                }
            }
        }
    }
    problems
}

/// The repository path a code span names, if it names one.
fn repo_path(span: &str) -> Option<String> {
    let word = span.split_whitespace().next()?;
    if !ROOTS.iter().any(|r| word.starts_with(r)) || word.contains(['<', '*', '{', '…']) {
        return None;
    }
    let path = word.split("::").next().unwrap_or(word);
    let path = match path.split_once(':') {
        Some((p, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '-') => p,
        _ => path,
    };
    Some(path.to_string())
}

/// `module::…::name` where the modules are a test binary's file or folder: the module's
/// path and the name.
fn test_item(span: &str, root: &Path) -> Option<(String, String)> {
    let segs: Vec<&str> = span.split("::").collect();
    if segs.len() < 2 || !segs.iter().all(|s| is_ident(s)) {
        return None;
    }
    let (name, modules) = segs.split_last()?;
    let rel = modules.join("/");
    // `provider::slots` is the crate's module, even with a `tests/it/provider.rs`
    let crate_module = [format!("src/{rel}.rs"), format!("src/{rel}")];
    if !is_test_name(name) || crate_module.iter().any(|p| root.join(p).exists()) {
        return None;
    }
    ["tests/it", "tests"]
        .iter()
        .flat_map(|base| [format!("{base}/{rel}.rs"), format!("{base}/{rel}")])
        .find(|p| root.join(p).exists())
        .map(|p| (p, name.to_string()))
}

/// The test names that follow code span `i` of `block`, each after one of `seps`.
fn names_after(block: &[Inline], i: usize, seps: &[&str]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut j = i + 1;
    while let (Some(Inline::Text(sep)), Some(Inline::Code(name, line))) =
        (block.get(j), block.get(j + 1))
    {
        if !seps.contains(&sep.trim()) || !is_test_name(name) {
            break;
        }
        out.push((name.clone(), *line));
        j += 2;
    }
    out
}

/// Whether `before` ends with the word "test" or "tests" ("the test ", "(test ", "tests: ").
fn after_the_word_test(before: &Inline) -> bool {
    let Inline::Text(t) = before else {
        return false;
    };
    let t = t.trim_end().trim_end_matches(['(', ':']).trim_end();
    let last = t
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    matches!(last.to_lowercase().as_str(), "test" | "tests")
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_test_name(s: &str) -> bool {
    is_ident(s) && s.contains('_')
}

/// The crate's `.rs` files, read once.
struct Sources {
    files: BTreeMap<PathBuf, String>,
}

impl Sources {
    fn read(root: &Path) -> Sources {
        let mut files = BTreeMap::new();
        for top in SOURCES {
            read_rs(root, &root.join(top), &mut files);
        }
        Sources { files }
    }

    /// The files (under `within`, a file or a folder, when given) with `fn name`.
    fn where_defined(&self, name: &str, within: Option<&str>) -> Vec<&Path> {
        self.files
            .iter()
            .filter(|(p, _)| within.is_none_or(|w| p.starts_with(w)))
            .filter(|(_, text)| defines(text, name))
            .map(|(p, _)| p.as_path())
            .collect()
    }

    /// " (it is in …)" where `fn name` is, or " (no fn of that name anywhere)".
    fn elsewhere(&self, name: &str) -> String {
        let found = self.where_defined(name, None);
        if found.is_empty() {
            return " (no fn of that name anywhere)".into();
        }
        let paths: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        format!(" (it is in {})", paths.join(", "))
    }
}

fn read_rs(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            read_rs(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file is UTF-8");
            out.insert(path.strip_prefix(root).expect("under root").into(), text);
        }
    }
}

/// Whether `text` has `fn name(` or `fn name<`.
fn defines(text: &str, name: &str) -> bool {
    let needle = format!("fn {name}");
    text.match_indices(&needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && matches!(after, Some('(' | '<'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::repo;

    const FILES: [(&str, &str); 3] = [
        (
            "tests/it/ha_agent_wakes.rs",
            "#[test]\nfn a_mode_reaches_the_next_wake() {}\n",
        ),
        ("tests/it/ha_agent.rs", "fn helper_here() {}\n"),
        (
            "tests/it/cache_units.rs",
            "async fn kept_blocks_keep_the_prefix() {}\n",
        ),
    ];

    fn problems(doc: &str) -> Vec<String> {
        let mut files = FILES.to_vec();
        files.push(("docs/x.md", doc));
        check(&repo(&files)).iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn a_test_named_in_the_wrong_file_is_found() {
        assert_eq!(
            problems("# X\n\nTested in `tests/it/ha_agent.rs`\n(`a_mode_reaches_the_next_wake`).\n"),
            ["docs/x.md:4: test `a_mode_reaches_the_next_wake` is not in tests/it/ha_agent.rs (it is in tests/it/ha_agent_wakes.rs)"]
        );
        assert!(problems(
            "Tested in `tests/it/ha_agent_wakes.rs` (`a_mode_reaches_the_next_wake`).\n"
        )
        .is_empty());
    }

    #[test]
    fn a_missing_file_module_test_or_named_test_is_found() {
        let doc = "See `src/gone.rs:12` and `tests/it/ha_agent.rs::helper_here`.\n\n\
                   Message by message: `cache_units::kept_blocks_lose_the_prefix`.\n\n\
                   Checked by the test `no_such_test_here`, and tests `helper_here`, `nor_this_one`.\n\n\
                   Names no channel (test `not_here_either`); the latest `helper_function` is no claim.\n";
        assert_eq!(
            problems(doc),
            [
                "docs/x.md:1: `src/gone.rs:12`: no file src/gone.rs",
                "docs/x.md:3: `cache_units::kept_blocks_lose_the_prefix`: no fn kept_blocks_lose_the_prefix in tests/it/cache_units.rs (no fn of that name anywhere)",
                "docs/x.md:5: test `no_such_test_here`: no fn no_such_test_here in src/, tests/, channels/, dashboard/, demo/, benches/, skills/",
                "docs/x.md:5: test `nor_this_one`: no fn nor_this_one in src/, tests/, channels/, dashboard/, demo/, benches/, skills/",
                "docs/x.md:7: test `not_here_either`: no fn not_here_either in src/, tests/, channels/, dashboard/, demo/, benches/, skills/",
            ]
        );
    }

    #[test]
    fn patterns_keys_and_other_code_are_not_taken_for_files_or_tests() {
        let doc = "`skills/<name>/SKILL.md`, `max_calls_per_turn` (`agent.max_tool_rounds`), \
                   `provider::cached_bytes`, `modes/sessions/x` and `scripts/demo.sh --llama M.gguf` \
                   and `tests/it/cache_units.rs` (`PLUGINS`).\n\n```text\n`src/not_here.rs`\n```\n";
        let mut files = FILES.to_vec();
        files.push(("scripts/demo.sh", "#!/bin/sh\n"));
        files.push(("src/provider/mod.rs", "pub mod encode;\n"));
        files.push(("tests/it/provider.rs", "fn a_provider_test() {}\n"));
        files.push(("docs/x.md", doc));
        let got: Vec<String> = check(&repo(&files)).iter().map(|p| p.to_string()).collect();
        assert!(got.is_empty(), "{got:?}");
    }
}
