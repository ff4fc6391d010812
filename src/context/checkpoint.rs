//! A checkpoint: the summary of a history's first `through` records — `checkpoint.json`
//! in a mode session's folder, `<chat>.checkpoint.json` beside a normal chat's log.
//! Prompts replay the summary, then the records after it; the history file itself is
//! never rewritten (it stays the archive of what was compacted).
//!
//! Written atomically (temp file, fsync, rename, directory fsync). A file that cannot be
//! used — torn, not JSON, covering more records than the session has — is moved aside to
//! `checkpoint.json.corrupt` with a warning and the session replays without it (the
//! next compaction writes a new one).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tracing::warn;

pub const CHECKPOINT_FILE: &str = "checkpoint.json";
/// Largest checkpoint file read: a summary is bounded by the history budget, so anything
/// larger is not ours.
pub const MAX_CHECKPOINT_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Records `[0, through)` of `conversation.jsonl` are summarized here.
    pub through: usize,
    pub summary: String,
    /// When it was written (household time, RFC 3339).
    pub created_at: String,
    /// A normal chat: the ended mode session whose carried block this summary folded in
    /// (the block is then no longer sent, see [`crate::context::carry`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<String>,
}

pub fn path_in(session_dir: &Path) -> PathBuf {
    session_dir.join(CHECKPOINT_FILE)
}

/// The checkpoint at `path`, if it is a usable one. `records` is how many records the
/// history holds; a checkpoint covering more is stale (from a copy of another session,
/// or a conversation cut by hand) and set aside.
pub fn load(path: &Path, records: usize) -> Option<Checkpoint> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            warn!(path = %path.display(), error = %e, "cannot read the checkpoint; replaying without it");
            return None;
        }
    };
    let why = if !meta.is_file() {
        "not a regular file".to_string()
    } else if meta.len() > MAX_CHECKPOINT_BYTES {
        format!("{} bytes, more than a checkpoint can be", meta.len())
    } else {
        match std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Checkpoint>(&b).map_err(|e| e.to_string()))
        {
            Ok(c) if c.through <= records => return Some(c),
            Ok(c) => format!(
                "it covers {} records but the session has {records}",
                c.through
            ),
            Err(e) => e,
        }
    };
    match crate::fsutil::move_aside(path, "corrupt") {
        Ok(aside) => {
            warn!(path = %path.display(), aside = %aside.display(), why = %why, "unusable checkpoint moved aside; replaying without it")
        }
        Err(e) => {
            warn!(path = %path.display(), why = %why, error = %e, "unusable checkpoint could not be moved aside; replaying without it")
        }
    }
    None
}

/// Replace the checkpoint at `path` atomically.
pub fn save(path: &Path, c: &Checkpoint) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(c).expect("a checkpoint always serializes");
    crate::fsutil::write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(through: usize) -> Checkpoint {
        Checkpoint {
            through,
            summary: "前面做了番茄炒蛋。".into(),
            created_at: "2026-10-22T20:05:00+08:00".into(),
            carried: None,
        }
    }

    #[test]
    fn saved_then_loaded() {
        let d = tempfile::tempdir().unwrap();
        let chat = d.path().join("group_1.checkpoint.json");
        save(
            &chat,
            &Checkpoint {
                carried: Some("cooking-1".into()),
                ..cp(3)
            },
        )
        .unwrap();
        assert_eq!(
            load(&chat, 3).unwrap().carried.as_deref(),
            Some("cooking-1")
        );
        assert_eq!(load(&path_in(d.path()), 10), None);
        save(&path_in(d.path()), &cp(4)).unwrap();
        assert_eq!(load(&path_in(d.path()), 10), Some(cp(4)));
        save(&path_in(d.path()), &cp(8)).unwrap();
        assert_eq!(load(&path_in(d.path()), 8), Some(cp(8)));
    }

    #[test]
    fn torn_or_stale_checkpoints_are_set_aside_not_used() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(path_in(d.path()), b"{\"through\": 4, \"summ").unwrap();
        assert_eq!(load(&path_in(d.path()), 10), None);
        assert!(!path_in(d.path()).exists());
        assert!(d.path().join("checkpoint.json.corrupt").exists());
        save(&path_in(d.path()), &cp(12)).unwrap();
        assert_eq!(
            load(&path_in(d.path()), 10),
            None,
            "covers more than the session holds"
        );
        assert!(d.path().join("checkpoint.json.corrupt.1").exists());
        std::fs::create_dir(path_in(d.path())).unwrap();
        assert_eq!(load(&path_in(d.path()), 10), None);
        assert!(!path_in(d.path()).exists());
    }
}
