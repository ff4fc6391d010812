//! The docs tell the truth about the repository, and keep telling it: a test binary of
//! its own that only reads files (no network, no homebot process, nothing of the crate),
//! and runs in well under a second.
//!
//! Which files: every `.md` under the repository's root except in hidden folders
//! (`.git`, `.venv`, `.venv-ha`: Python packages bring their own Markdown), `target`,
//! `node_modules` and `vendor`. Code blocks are never read as claims.
//!
//! - [`links`]: every relative link names a file that exists, and every `#anchor` a
//!   heading of its target, as GitHub makes anchors ([`slug`]).
//! - [`names`]: a code span that names a repository path (`src/…`, `tests/…`, …) names
//!   one that exists, and a test named beside its file, as a test binary's module path
//!   or after the word "test" names a `fn` that is there.
//! - [`figures`]: every figure in the README is a link to its one source, an entry of
//!   `docs/operations.md` with the commit and command that measured it, and says there
//!   what the README says.
//!
//! Each failure names the file, the line and what is wrong; each check's own tests run
//! it on a small repository written for the purpose, to show what it finds.

mod corpus;
mod figures;
#[cfg(test)]
mod fixture;
mod links;
mod names;
mod slug;

use std::fmt;
use std::path::{Path, PathBuf};

/// One thing a doc says that is not so.
#[derive(Debug)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub what: String,
}

impl Problem {
    pub fn new(file: &Path, line: usize, what: String) -> Problem {
        Problem {
            file: file.to_path_buf(),
            line,
            what,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
    }
}

/// Fails with every problem, one a line.
fn assert_none(check: &str, problems: Vec<Problem>) {
    let lines: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        lines.is_empty(),
        "{check}: {} problem(s)\n{}",
        lines.len(),
        lines.join("\n")
    );
}

#[test]
fn every_link_and_anchor_in_the_docs_resolves() {
    let repo = corpus::Repo::here();
    assert!(
        repo.doc(Path::new("README.md")).is_some() && repo.docs.len() > 10,
        "the docs were not found under {}",
        repo.root.display()
    );
    assert_none("links", links::check(&repo));
}

#[test]
fn every_file_and_test_the_docs_name_exists() {
    assert_none("names", names::check(&corpus::Repo::here()));
}

#[test]
fn every_readme_figure_is_its_source_in_operations_md() {
    assert_none("figures", figures::check(&corpus::Repo::here()));
}
