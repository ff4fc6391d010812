//! The folders under the workspace's `modes/` that homebot treats as mode or session
//! folders, and their names. A leaf: every other file of `modes` may use it.

use std::path::{Path, PathBuf};

/// Sub-folders whose names are valid ids; anything else (a stray `backup copy`, a
/// non-UTF-8 name) is not a mode or session folder and is left alone, and hidden ones
/// (`.<session>.tmp` being made, `.<session>.empty` set aside) are homebot's own.
pub fn read_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .filter(|p| !file_name(p).starts_with('.'))
                .filter(|p| crate::config::is_safe_id(&file_name(p)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn file_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}
