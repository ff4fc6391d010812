//! The skills shipped inside the binary: unpacked into the workspace on first use
//! (`unpack_builtin`), and where the search path finds them (`builtin_dir`).

use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/builtin_skills.rs"));

/// The skills shipped with homebot: this folder while the source tree is there; else
/// the copy embedded in the binary, unpacked into `<workspace>/skills-builtin/` (kept
/// equal to the binary's version at every start).
pub fn builtin_dir(ws: &crate::workspace::Workspace) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    if dir.is_dir() {
        return Some(dir);
    }
    let dest = ws.builtin_skills_dir();
    match unpack_builtin(&dest) {
        Ok(()) => Some(dest),
        Err(e) => {
            tracing::warn!(path = %dest.display(), error = %e, "cannot unpack the built-in skills");
            None
        }
    }
}

/// Make `dest` hold exactly the embedded skill files: write those that differ, remove
/// files this binary no longer ships (the folder is homebot's own, not the user's).
pub fn unpack_builtin(dest: &Path) -> std::io::Result<()> {
    for (rel, bytes) in BUILTIN_SKILL_FILES {
        let path = dest.join(rel);
        if std::fs::read(&path).ok().as_deref() != Some(*bytes) {
            crate::fsutil::write_atomic(&path, bytes)?;
        }
    }
    let shipped: std::collections::HashSet<PathBuf> = BUILTIN_SKILL_FILES
        .iter()
        .map(|(rel, _)| dest.join(rel))
        .collect();
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !shipped.contains(&p) {
                std::fs::remove_file(&p)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::PLUGINS;

    #[test]
    fn the_embedded_copy_matches_the_source_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("retired")).unwrap();
        std::fs::write(dir.path().join("retired/mode.json"), "{}").unwrap();
        unpack_builtin(dir.path()).unwrap();
        assert!(
            !dir.path().join("retired/mode.json").exists(),
            "a skill no longer shipped is gone"
        );
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
        assert!(BUILTIN_SKILL_FILES
            .iter()
            .any(|(p, _)| *p == "home-cooking/SKILL.md"));
        for (rel, _) in BUILTIN_SKILL_FILES {
            assert_eq!(
                std::fs::read(dir.path().join(rel)).unwrap(),
                std::fs::read(src.join(rel)).unwrap(),
                "{rel}"
            );
        }
        let reg = crate::modes::ModeRegistry::load(&[dir.path().to_path_buf()], PLUGINS);
        assert!(reg.issues().is_empty(), "{:?}", reg.issues());
        assert!(reg.get("cooking").is_some());
    }
}
