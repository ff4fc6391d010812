//! Imports run one way (see `src/lib.rs`): no circles between the crate's top-level
//! modules, the kernel side (`src/`) never imports `channels/` nor `dashboard/`, the
//! kernel decides on typed facts rather than channel names, and inside each module folder
//! the files import each other one way.

use super::scan::{self, code, library, library_paths, named_paths, reaches, Module};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → the top-level modules its shipped code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let paths = library_paths();
    let tops: BTreeSet<String> = paths.keys().map(|m| m[0].clone()).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (me, named) in &paths {
        let deps = g.entry(me[0].clone()).or_default();
        for p in named {
            if let Some(top) = p.first().filter(|t| **t != me[0] && tops.contains(*t)) {
                deps.insert(top.clone());
            }
        }
    }
    g
}

#[test]
fn the_scanner_sees_grouped_imports_and_skips_only_test_modules() {
    let probe = "use crate::{kernel::Kernel, modes};\nfn f() { crate::tools::x(); }\n#[cfg(test)]\nfn helper() { crate::prompt::y(); }\n#[cfg(test)]\nmod tests {\n    use crate::channels::z;\n    fn g() { if true { } }\n}\npub fn after() { crate::agent::a(); } // crate::dashboard::b\n";
    let me = vec!["x".to_string()];
    let names: Vec<String> = named_paths(&code(probe), &me, &BTreeSet::new())
        .into_iter()
        .filter_map(|p| p.first().cloned())
        .collect();
    for n in ["kernel", "modes", "tools", "prompt", "agent"] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    assert!(!names.contains(&"channels".to_string()), "{names:?}");
    assert!(!names.contains(&"dashboard".to_string()), "{names:?}");
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
        !reaches(&g, &"modes".to_string(), &"skills".to_string()),
        "modes must get its plugin table from the caller"
    );
    for (m, deps) in &g {
        assert!(m == "demo" || !deps.contains("demo"), "{m} imports demo/");
    }
}

/// The files of `channels/` that may hold the whole kernel: the narrow view itself, the
/// gateway's start of the channels (which registers what they provide), and the
/// terminal's one-shot door (which starts a kernel of its own when no gateway runs).
const KERNEL_HOLDERS: &[&str] = &["channels::ctx", "channels::start", "channels::cli::door"];

#[test]
fn channels_reach_the_kernel_only_through_their_narrow_view() {
    let mut found = Vec::new();
    let mut seen_ctx = false;
    for (me, named) in library_paths() {
        if me.first().map(String::as_str) != Some("channels") {
            continue;
        }
        let shown = me.join("::");
        for p in named {
            let whole = p.len() >= 2
                && p[0] == "kernel"
                && matches!(p[1].as_str(), "Kernel" | "KernelInner");
            if whole && !KERNEL_HOLDERS.contains(&shown.as_str()) {
                found.push(format!("{shown} names crate::{}", p.join("::")));
            }
            seen_ctx |= p.len() >= 2 && p[0] == "channels" && p[1] == "ctx";
        }
    }
    // the scanner sees the view being used, so an empty list means something
    assert!(seen_ctx, "no channel file names channels::ctx");
    assert!(
        found.is_empty(),
        "a channel holds the whole kernel (take a ChannelCtx, channels/ctx.rs):\n{}",
        found.join("\n")
    );
}

/// Channel names and chat-id prefixes: the kernel neither names nor decides on them.
const CHANNEL_WORDS: &[&str] = &[
    "\"qq\"",
    "\"voice\"",
    "\"cli\"",
    "\"home_assistant\"",
    "\"group:",
    "\"private:",
];

#[test]
fn the_kernel_names_no_channel() {
    let root = scan::repo().join("src");
    let mut files = Vec::new();
    scan::rust_files(&root, &mut files);
    let mut found = Vec::new();
    for p in files {
        let rel = p.strip_prefix(&root).unwrap();
        let shown = rel.to_string_lossy().replace('\\', "/");
        // a configuration section naming its own channel; tests
        if shown.starts_with("config/") || scan::is_test_file(rel) {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in code(&text).lines().enumerate() {
            if let Some(w) = CHANNEL_WORDS.iter().find(|w| line.contains(*w)) {
                found.push(format!("src/{shown}:{}: {w}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "channel names in the kernel (channels state their facts and links; their names \
         live in channels/ and src/config/):\n{}",
        found.join("\n")
    );
}

/// Inside the module folder `folder`: file → the files of the folder its shipped code
/// names (as module paths inside the folder). With `strict`, the folder's own `mod.rs`
/// and a file's ancestors count like any file (`src/tools`: its `mod.rs` only declares
/// and re-exports); otherwise the `mod.rs` is the folder's façade, and naming what is
/// above oneself is not a step down.
pub fn file_graph(folder: &[String], strict: bool) -> BTreeMap<Module, BTreeSet<Module>> {
    let inside = |m: &Module| m.starts_with(folder).then(|| m[folder.len()..].to_vec());
    let known: BTreeSet<Module> = library().keys().filter_map(inside).collect();
    let mut g = BTreeMap::new();
    for (me, named) in library_paths() {
        let Some(me) = inside(&me) else { continue };
        if !strict && me.is_empty() {
            continue;
        }
        let deps: BTreeSet<Module> = named
            .iter()
            .filter_map(inside)
            .filter_map(|p| {
                // the deepest file the path lies in
                (0..=p.len())
                    .rev()
                    .map(|n| p[..n].to_vec())
                    .find(|m| known.contains(m))
            })
            .filter(|d| *d != me && (strict || (!d.is_empty() && !me.starts_with(d))))
            .collect();
        g.insert(me, deps);
    }
    g
}

#[test]
fn files_inside_a_module_import_each_other_one_way() {
    let root = scan::repo();
    let mut folders: Vec<(PathBuf, Module)> = vec![
        (root.join("demo"), vec!["demo".into()]),
        (root.join("dashboard"), vec!["dashboard".into()]),
    ];
    for base in ["src", "channels"] {
        for e in std::fs::read_dir(root.join(base)).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                let module = match base {
                    "channels" => vec!["channels".into(), name],
                    _ => vec![name],
                };
                folders.push((p, module));
            }
        }
    }
    let mut circles = Vec::new();
    for (dir, module) in folders {
        // strict where the folder's mod.rs only declares and re-exports: its files name
        // each other, never the façade (`src/tools`, `channels/qq`)
        let strict = module == ["tools"] || module == ["channels", "qq"];
        let g = file_graph(&module, strict);
        for (f, deps) in &g {
            for d in deps {
                if reaches(&g, d, f) {
                    circles.push(format!(
                        "{}: {} -> {} -> … -> {}",
                        dir.strip_prefix(&root).unwrap_or(Path::new("")).display(),
                        f.join("/"),
                        d.join("/"),
                        f.join("/")
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
