//! A small repository on disk for the checks' own tests: the files given, and nothing
//! else.

use crate::corpus::Repo;
use std::ops::Deref;

pub struct Fixture {
    repo: Repo,
    _dir: tempfile::TempDir,
}

impl Deref for Fixture {
    type Target = Repo;
    fn deref(&self) -> &Repo {
        &self.repo
    }
}

/// A repository of `(path, content)` files.
pub fn repo(files: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (path, content) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("a file has a folder")).expect("mkdir");
        std::fs::write(&p, content).expect("write");
    }
    Fixture {
        repo: Repo::at(dir.path()),
        _dir: dir,
    }
}
