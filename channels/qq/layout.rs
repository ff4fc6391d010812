//! The layout check of the QQ channel: its files import each other one way only.

/// The files of this channel import each other one way only: no circle among the
/// `use super::…` lines (outside test modules).
#[test]
fn no_import_circle_inside_the_qq_channel() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("channels/qq");
    let mut uses: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let deps = uses.entry(name.clone()).or_default();
        for line in code.lines() {
            let Some(rest) = line.trim().strip_prefix("use super::") else {
                continue;
            };
            let first: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if first.is_empty() {
                // `use super::{a, b}`: every name in the braces
                let inner = rest.trim_start_matches('{').split('}').next().unwrap();
                deps.extend(
                    inner
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap().to_string()),
                );
            } else {
                deps.push(first);
            }
        }
    }
    // super:: of mod.rs is `channels`, not a sibling
    uses.remove("mod");
    // a file's imports, followed: it must never reach itself
    for start in uses.keys() {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = uses[start].clone();
        while let Some(m) = todo.pop() {
            assert_ne!(&m, start, "import circle through {start}: {uses:?}");
            if seen.insert(m.clone()) {
                todo.extend(uses.get(&m).cloned().unwrap_or_default());
            }
        }
    }
    // the files that import mod.rs's names (`use super::{Qq, …}`) would name them
    for (file, deps) in &uses {
        for d in deps {
            assert!(
                uses.contains_key(d),
                "{file} imports {d} from mod.rs: import it from its own file"
            );
        }
    }
}
