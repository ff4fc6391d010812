//! A type's methods in one place: no inherent `impl` of one type spans more than two
//! files, except inside one folder named after the type (`src/modes/mode_core/`,
//! `src/memory/store/`) that holds nothing else — every file in it has methods of the
//! type. "Where is `Kernel::begin`?" is answered by looking, not by grep.

use super::scan::{code, library, Module};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each inherent `impl Name` (or `impl<…> Name<…>`) opening in `text`: the type's name.
fn inherent_impls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("impl") else {
            continue;
        };
        let rest = match rest.strip_prefix('<') {
            // `impl<'a, T: X<Y>>`: skip the generics, nesting included
            Some(g) => {
                let mut depth = 1;
                let mut end = 0;
                for (i, c) in g.char_indices() {
                    match c {
                        '<' => depth += 1,
                        '>' => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                &g[end..]
            }
            None if rest.starts_with(' ') => rest,
            None => continue,
        };
        let head = rest.split('{').next().unwrap_or_default();
        if head.contains(" for ") || !line.contains('{') {
            continue;
        }
        let name: String = head
            .trim()
            .rsplit("::")
            .next()
            .unwrap_or_default()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.chars().next().is_some_and(char::is_uppercase) {
            out.push(name);
        }
    }
    out
}

/// Where each type is defined (`struct Name` / `enum Name`): its files' module paths.
fn definitions(files: &BTreeMap<Module, (PathBuf, String)>) -> BTreeMap<String, Vec<Module>> {
    let mut defs: BTreeMap<String, Vec<Module>> = BTreeMap::new();
    for (module, (_, text)) in files {
        for line in text.lines() {
            let l = line.trim_start();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
            let l = l.strip_prefix("pub(super) ").unwrap_or(l);
            for kw in ["struct ", "enum "] {
                if let Some(rest) = l.strip_prefix(kw) {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    defs.entry(name).or_default().push(module.clone());
                }
            }
        }
    }
    defs
}

fn shared_prefix(a: &Module, b: &Module) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Type (named by where it is defined) → the files holding its inherent impls.
fn spread() -> BTreeMap<(String, Module), BTreeSet<PathBuf>> {
    let files: BTreeMap<Module, (PathBuf, String)> = library()
        .into_iter()
        .map(|(m, p)| {
            let text = code(&std::fs::read_to_string(&p).unwrap());
            (m, (p, text))
        })
        .collect();
    let defs = definitions(&files);
    let mut out: BTreeMap<(String, Module), BTreeSet<PathBuf>> = BTreeMap::new();
    for (module, (path, text)) in &files {
        for name in inherent_impls(text) {
            // the definition nearest the impl (two types may share a name)
            let Some(home) = defs
                .get(&name)
                .and_then(|d| d.iter().max_by_key(|m| shared_prefix(m, module)))
            else {
                continue;
            };
            out.entry((name, home.clone()))
                .or_default()
                .insert(path.clone());
        }
    }
    out
}

/// Whether `files` all lie in one folder named after `name` whose every shipped file has
/// methods of it.
fn in_its_own_folder(name: &str, files: &BTreeSet<PathBuf>) -> bool {
    let folders: BTreeSet<&Path> = files.iter().filter_map(|f| f.parent()).collect();
    let [folder] = folders.into_iter().collect::<Vec<_>>()[..] else {
        return false;
    };
    if folder
        .file_name()
        .is_none_or(|n| n.to_string_lossy() != snake(name))
    {
        return false;
    }
    std::fs::read_dir(folder).unwrap().all(|e| {
        let p = e.unwrap().path();
        let rel = p.file_name().unwrap();
        p.is_dir()
            || p.extension().is_none_or(|x| x != "rs")
            || super::scan::is_test_file(Path::new(rel))
            || files.contains(&p)
    })
}

#[test]
fn the_scanner_sees_inherent_impls_and_skips_trait_impls() {
    let probe = "impl Kernel {\nimpl<'k> TurnRun<'k> {\nimpl Drop for TurnGuard {\nimpl<T: Into<X>> Holder<T> {\nimpl crate::a::Deep {\nfn implement() {}\n";
    assert_eq!(
        inherent_impls(probe),
        ["Kernel", "TurnRun", "Holder", "Deep"]
    );
    assert_eq!(snake("ModeCore"), "mode_core");
}

#[test]
fn a_types_methods_live_in_at_most_two_files_or_its_own_folder() {
    let spread = spread();
    let files_of = |name: &str| -> Vec<String> {
        let mut v: Vec<String> = spread
            .iter()
            .filter(|((n, _), _)| n == name)
            .flat_map(|(_, f)| f.iter().map(|p| p.display().to_string()))
            .collect();
        v.sort();
        v
    };
    // the scanner finds what is there, so an empty list below means something
    let kernel = files_of("Kernel");
    assert!(
        kernel.len() == 2 && kernel.iter().all(|f| f.contains("src/kernel/")),
        "{kernel:?}"
    );
    assert!(
        files_of("ModeCore").len() >= 3,
        "{:?}",
        files_of("ModeCore")
    );
    let mut over = Vec::new();
    for ((name, home), files) in &spread {
        if files.len() > 2 && !in_its_own_folder(name, files) {
            let root = super::scan::repo();
            let shown: Vec<String> = files
                .iter()
                .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
                .collect();
            over.push(format!(
                "{name} ({}): {}",
                home.join("::"),
                shown.join(", ")
            ));
        }
    }
    assert!(
        over.is_empty(),
        "a type's methods spread over more than two files (put them in at most two, or in \
         one folder named after the type that holds nothing else):\n{}",
        over.join("\n")
    );
}
