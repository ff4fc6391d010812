//! Every link between the repository's docs resolves: a relative link names a file or
//! folder that exists, and an `#anchor` into a Markdown file (or the same file) names one
//! of its headings' anchors. Links with a scheme (`https:`, `mailto:`) are the web's.

use crate::corpus::Repo;
use crate::Problem;
use std::path::{Component, Path, PathBuf};

pub fn check(repo: &Repo) -> Vec<Problem> {
    let mut problems = Vec::new();
    for doc in &repo.docs {
        for link in &doc.links {
            if has_scheme(&link.dest) {
                continue;
            }
            let (file, anchor) = match link.dest.split_once('#') {
                Some((f, a)) => (f, Some(decode(a))),
                None => (link.dest.as_str(), None),
            };
            let problem = |what: String| Problem::new(&doc.path, link.line, what);
            let target = if file.is_empty() {
                doc.path.clone()
            } else {
                let Some(t) = resolve(&doc.path, &decode(file)) else {
                    problems.push(problem(format!(
                        "link `{}` leaves the repository",
                        link.dest
                    )));
                    continue;
                };
                if !repo.root.join(&t).exists() {
                    problems.push(problem(format!(
                        "link `{}`: no file {}",
                        link.dest,
                        t.display()
                    )));
                    continue;
                }
                t
            };
            let Some(anchor) = anchor else { continue };
            // an anchor into source code (`#L10`) is GitHub's line, not a heading
            let Some(target_doc) = repo.doc(&target) else {
                continue;
            };
            if !target_doc.has_anchor(&anchor) {
                problems.push(problem(format!(
                    "link `{}`: no heading in {} has the anchor #{anchor}",
                    link.dest,
                    target.display()
                )));
            }
        }
    }
    problems
}

/// `https:`, `mailto:`, `//host`: not a path in this repository.
fn has_scheme(dest: &str) -> bool {
    if dest.starts_with("//") {
        return true;
    }
    match dest.split_once(':') {
        Some((scheme, _)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        }
        None => false,
    }
}

/// `dest` as written in `from` (both relative to the root), as a path relative to the
/// root; `None` if it climbs out of it.
fn resolve(from: &Path, dest: &str) -> Option<PathBuf> {
    let base = if dest.starts_with('/') {
        PathBuf::new()
    } else {
        from.parent().unwrap_or(Path::new("")).to_path_buf()
    };
    let mut out = PathBuf::new();
    for c in base.join(dest.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            // above the root: not in the repository
            Component::ParentDir => out.pop().then_some(())?,
            _ => {}
        }
    }
    Some(out)
}

/// Percent-decoding (`%E5%81%9A` → 做): a link may encode what a heading spells.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::repo;

    #[test]
    fn a_missing_file_or_anchor_is_found_with_its_file_and_line() {
        let r = repo(&[
            (
                "README.md",
                "# R\n\n[ok](docs/a.md#part-two) [gone](docs/b.md)\n\n[bad](docs/a.md#part-three)\n\n[here](#r) [not here](#s)\n",
            ),
            ("docs/a.md", "# A\n\n## Part two\n\n[up](../README.md#r) [out](../../x.md)\n"),
        ]);
        let got: Vec<String> = check(&r).iter().map(|p| p.to_string()).collect();
        assert_eq!(
            got,
            [
                "README.md:3: link `docs/b.md`: no file docs/b.md",
                "README.md:5: link `docs/a.md#part-three`: no heading in docs/a.md has the anchor #part-three",
                "README.md:7: link `#s`: no heading in README.md has the anchor #s",
                "docs/a.md:5: link `../../x.md` leaves the repository",
            ]
        );
    }

    #[test]
    fn web_links_source_lines_folders_and_encoded_anchors_pass() {
        let r = repo(&[
            (
                "README.md",
                "# 做饭模式\n\n[w](https://example.com/x.md#y) [m](mailto:a@b.c) [d](docs/) \
                 [l](src/x.rs#L3) [e](#%E5%81%9A%E9%A5%AD%E6%A8%A1%E5%BC%8F)\n",
            ),
            ("docs/a.md", "# A\n"),
            ("src/x.rs", "fn x() {}\n"),
        ]);
        let got: Vec<String> = check(&r).iter().map(|p| p.to_string()).collect();
        assert!(got.is_empty(), "{got:?}");
    }
}
