//! File tools by zone: `read_file`, `list_files`, `write_file`.
//!
//! Anyone who can talk to the bot can steer these tools, so file access is by zone
//! ([`FileAccess`]):
//! - every path is resolved inside the workspace (`..`, absolute paths and symlinks that
//!   lead out are refused); the registered skill folders are readable too;
//! - private zones are never read or written: `chats/`, `logs/`, `members/` (other
//!   people's conversations and profiles), `memory/`, `strategy/` and `reminders.json`
//!   (what each chat keeps and plans), `config.toml` (secrets), `SYSTEM.md`, the lock
//!   file and control socket, dotfiles;
//! - a mode's knowledge folders (`mode.json` `context.knowledge`, in the workspace or
//!   its skill) are its own: unless that mode is the active one (another mode, or none)
//!   they are neither read, listed nor written;
//! - writing is allowed only below the writable folders: `notes/` and what the mode
//!   plugins declare (e.g. `cooking/recipes/`). The LLM never writes `action.json`,
//!   session files, skills or plugin indexes;
//! - only regular files with one name are opened: a FIFO, socket or device would block
//!   or never end, and a hard link in `notes/` to `config.toml` would carry the private
//!   file's content under a public path. Zones are by path, so a second name is refused
//!   (`nlink > 1`) rather than compared by inode with every private file: private zones
//!   hold files that come and go (every chat, every profile), and a household never
//!   needs a hard link here — a copy does;
//! - files are opened non-blocking and without following a last symlink, and checked by
//!   the opened file's metadata, not the path (no race between check and open); reads
//!   stop at the limit, they never load the whole file to cut it;
//! - each writable folder has a quota ([`ZoneLimits`]): total bytes and file count.
//!
//! These functions block on the disk; the agent runs them with `spawn_blocking`.
//!
//! What a file may be, and a writable folder's quota, are checked in `guard`.
//!
//! Paths and zones are resolved in `zones`.

use super::guard::{check_regular, check_zone, open_regular};
pub use super::guard::{FileError, ZoneLimits};
pub use super::zones::{resolve_in, FileAccess, PathError};
use crate::tools::result::ToolResult;
use std::io::Read;

pub const READ_LIMIT: usize = 64 * 1024;
pub const WRITE_LIMIT: usize = 256 * 1024;
const LIST_LIMIT: usize = 200;

#[cfg(test)]
fn read_file(fa: &FileAccess, path: &str) -> ToolResult {
    read_file_in(fa, path, None)
}

/// `read_file` for a turn in `mode` (the active mode's id, if any).
pub fn read_file_in(fa: &FileAccess, path: &str, mode: Option<&str>) -> ToolResult {
    let p = match fa.readable(path, mode) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let (file, size) = match open_regular(&p, path) {
        Ok(f) => f,
        Err(e) => return ToolResult::err(e),
    };
    let mut bytes = Vec::with_capacity((size as usize).min(READ_LIMIT) + 1);
    if let Err(e) = file.take(READ_LIMIT as u64 + 1).read_to_end(&mut bytes) {
        return ToolResult::err(FileError::Read {
            shown: path.to_string(),
            source: e,
        });
    }
    let truncated = bytes.len() > READ_LIMIT;
    bytes.truncate(READ_LIMIT);
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        // cut inside a character at the limit: keep the whole characters before it
        Err(e) if truncated && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut b = e.into_bytes();
            b.truncate(valid);
            String::from_utf8(b).expect("cut at the last valid UTF-8 boundary")
        }
        Err(_) => {
            return ToolResult::err(FileError::NotText {
                shown: path.to_string(),
            })
        }
    };
    if truncated {
        return ToolResult::ok(format!(
            "{text}\n\n[truncated: showing {} of {} bytes]",
            text.len(),
            size.max(text.len() as u64 + 1)
        ));
    }
    ToolResult::ok(text)
}

#[cfg(test)]
fn list_files(fa: &FileAccess, path: &str) -> ToolResult {
    list_files_in(fa, path, None)
}

/// `list_files` for a turn in `mode`.
pub fn list_files_in(fa: &FileAccess, path: &str, mode: Option<&str>) -> ToolResult {
    let p = match fa.readable(if path.trim().is_empty() { "." } else { path }, mode) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let entries = match std::fs::read_dir(&p) {
        Ok(e) => e,
        Err(e) => {
            return ToolResult::err(FileError::List {
                shown: path.to_string(),
                source: e,
            })
        }
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            if p.starts_with(&fa.root) {
                !fa.is_private(&e.path()) && fa.other_modes_knowledge(&e.path(), mode).is_none()
            } else {
                !e.file_name().to_string_lossy().starts_with('.')
            }
        })
        .map(|e| {
            let mut n = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                n.push('/');
            }
            n
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(LIST_LIMIT);
    let mut out = format!("{}/ ({} entries)\n", fa.rel(&p).display(), total);
    for n in &names {
        out.push_str(n);
        out.push('\n');
    }
    if total > LIST_LIMIT {
        out.push_str(&format!("[{} more not shown]\n", total - LIST_LIMIT));
    }
    ToolResult::ok(out)
}

#[cfg(test)]
fn write_file(fa: &FileAccess, path: &str, content: &str) -> ToolResult {
    write_file_in(fa, path, content, None, &ZoneLimits::default())
}

/// `write_file` for a turn in `mode`, within the writable folder's quota.
pub fn write_file_in(
    fa: &FileAccess,
    path: &str,
    content: &str,
    mode: Option<&str>,
    limits: &ZoneLimits,
) -> ToolResult {
    let p = match fa.writable_path(path, mode) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let rel = fa.rel(&p).to_path_buf();
    let existing = match std::fs::symlink_metadata(&p) {
        Ok(m) => {
            if let Err(e) = check_regular(&m, path) {
                return ToolResult::err(e);
            }
            Some(m.len())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return ToolResult::err(FileError::Write {
                shown: path.to_string(),
                source: e,
            })
        }
    };
    if content.len() > WRITE_LIMIT {
        return ToolResult::err(FileError::TooBig {
            len: content.len(),
            max: WRITE_LIMIT,
        });
    }
    if let Some(zone) = fa.writable.iter().find(|w| p.starts_with(w)) {
        let name = format!("{}/", fa.rel(zone).display());
        if let Err(e) = check_zone(&name, zone, existing, content.len() as u64, limits) {
            return ToolResult::err(e);
        }
    }
    match crate::fsutil::write_atomic(&p, content.as_bytes()) {
        Ok(()) => ToolResult::ok(format!(
            "ok: wrote {} ({} bytes)",
            rel.display(),
            content.len()
        )),
        Err(e) => ToolResult::err(FileError::Write {
            shown: path.to_string(),
            source: e,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn access() -> (tempfile::TempDir, FileAccess) {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let skills =
            std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")).unwrap();
        let fa = FileAccess {
            writable: vec![root.join("notes"), root.join("cooking/recipes")],
            readable_outside: vec![skills],
            mode_knowledge: vec![
                ("cooking".into(), root.join("cooking/recipes")),
                ("homework".into(), root.join("homework/notes")),
            ],
            root,
        };
        (d, fa)
    }

    #[test]
    fn paths_stay_inside() {
        let (_d, fa) = access();
        let r = &fa.root;
        assert_eq!(
            resolve_in(r, "cooking/x.md").unwrap(),
            r.join("cooking/x.md")
        );
        assert_eq!(resolve_in(r, "a/../b").unwrap(), r.join("b"));
        assert!(resolve_in(r, "../etc/passwd").is_err());
        assert!(resolve_in(r, "/etc/passwd").is_err());
        assert!(resolve_in(r, "a/../../x").is_err());
        let abs = r.join("cooking/y.md");
        assert_eq!(resolve_in(r, abs.to_str().unwrap()).unwrap(), abs);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_out_is_refused() {
        let (_d, fa) = access();
        std::os::unix::fs::symlink("/etc", fa.root.join("etc")).unwrap();
        assert!(resolve_in(&fa.root, "etc/passwd").is_err());
        assert!(read_file(&fa, "etc/passwd").is_error);
    }

    #[test]
    fn writes_only_below_writable_folders() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        // the recipes folder is cooking's knowledge: written in cooking mode
        let in_cooking = write_file_in(
            &fa,
            "cooking/recipes/番茄炒蛋.md",
            "# 番茄炒蛋",
            Some("cooking"),
            &ZoneLimits::default(),
        );
        assert!(!in_cooking.is_error, "{}", in_cooking.content);
        assert_eq!(
            std::fs::read_to_string(r.join("cooking/recipes/番茄炒蛋.md")).unwrap(),
            "# 番茄炒蛋"
        );
        assert!(!write_file(&fa, "notes/购物清单.md", "鸡蛋").is_error);
        for bad in [
            "modes/action.json",
            "./modes/../modes/action.json",
            "config.toml",
            "homebot.lock",
            "control.sock",
            "SYSTEM.md",
            "skills/evil/SKILL.md",
            "members/mom/USER.md",
            "cooking/history.md",
            "cooking/recipes",
            "notes/.hidden",
            "anything.md",
            "Chats/x.jsonl",
            "config.toml.bak",
        ] {
            let r = write_file(&fa, bad, "x");
            assert!(r.is_error, "{bad} was writable");
            assert!(
                r.content.contains("notes/") || r.content.contains("outside"),
                "{}",
                r.content
            );
        }
        assert!(write_file(&fa, "notes/big.md", &"x".repeat(WRITE_LIMIT + 1)).is_error);
        assert!(!r.join("modes/action.json").exists() && !r.join("homebot.lock").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_inside_the_workspace_does_not_open_a_private_zone() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        std::fs::create_dir_all(r.join("chats/qq")).unwrap();
        std::fs::write(r.join("chats/qq/p.jsonl"), "秘密").unwrap();
        std::fs::create_dir_all(r.join("cooking")).unwrap();
        std::os::unix::fs::symlink(r.join("chats"), r.join("notes")).unwrap();
        std::os::unix::fs::symlink(r.join("chats"), r.join("cooking/recipes")).unwrap();
        assert!(read_file(&fa, "notes/qq/p.jsonl").is_error);
        assert!(write_file(&fa, "notes/qq/x.jsonl", "x").is_error);
        assert!(write_file(&fa, "cooking/recipes/x.md", "x").is_error);
        assert!(!r.join("chats/qq/x.jsonl").exists() && !r.join("chats/x.md").exists());
    }

    #[test]
    fn only_regular_files_with_one_name_are_opened() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        std::fs::write(r.join("config.toml"), "api_key = \"sk-x\"").unwrap();
        std::fs::create_dir_all(r.join("notes")).unwrap();
        std::fs::hard_link(r.join("config.toml"), r.join("notes/link.md")).unwrap();
        let w = write_file(&fa, "notes/link.md", "overwritten");
        assert!(
            w.is_error && w.content.contains("more than one name"),
            "{}",
            w.content
        );
        assert!(read_file(&fa, "notes/link.md").is_error);
        assert_eq!(
            std::os::unix::fs::MetadataExt::nlink(
                &std::fs::metadata(r.join("notes/link.md")).unwrap()
            ),
            2,
            "the link was left alone"
        );
        let c = std::ffi::CString::new(r.join("notes/pipe").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let w = write_file(&fa, "notes/pipe", "x");
        assert!(
            w.is_error && w.content.contains("not a regular file"),
            "{}",
            w.content
        );
        assert!(read_file(&fa, "notes/pipe")
            .content
            .contains("not a regular file"));
    }

    #[test]
    fn a_long_file_is_read_up_to_the_limit_on_a_character_boundary() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        std::fs::create_dir_all(r.join("notes")).unwrap();
        // 3-byte characters after two ASCII bytes: the limit (65536) falls inside one
        std::fs::write(
            r.join("notes/long.md"),
            format!("ab{}", "字".repeat(READ_LIMIT)),
        )
        .unwrap();
        let out = read_file(&fa, "notes/long.md");
        assert!(!out.is_error, "{}", &out.content[..100]);
        let (text, note) = out.content.rsplit_once("\n\n").unwrap();
        assert_eq!(text.len(), READ_LIMIT - 2);
        assert_eq!(
            note,
            format!(
                "[truncated: showing {} of {} bytes]",
                READ_LIMIT - 2,
                2 + 3 * READ_LIMIT
            )
        );
    }

    #[test]
    fn private_zones_are_unreadable() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        for (p, body) in [
            ("chats/qq/private_1.jsonl", "秘密"),
            ("members/mom/USER.md", "档案"),
            ("logs/usage.jsonl", "{}"),
            ("config.toml", "api_key"),
            ("config.toml.bak", "api_key"),
            ("Members/mom/USER.md", "档案"),
            ("strategy/state.json", "{\"pending\": \"私聊里的计划\"}"),
            ("reminders.json", "[]"),
        ] {
            std::fs::create_dir_all(r.join(p).parent().unwrap()).unwrap();
            std::fs::write(r.join(p), body).unwrap();
            assert!(read_file(&fa, p).is_error, "{p} was readable");
        }
        assert!(list_files(&fa, "chats").is_error);
        let root_listing = list_files(&fa, ".").content;
        assert!(
            !root_listing.contains("chats") && !root_listing.contains("config.toml"),
            "{root_listing}"
        );
    }

    #[test]
    fn list_and_read_shared_files_and_skills() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        std::fs::create_dir_all(r.join("cooking/recipes")).unwrap();
        std::fs::write(r.join("cooking/history.md"), "# 做饭历史").unwrap();
        let l = list_files_in(&fa, "cooking", Some("cooking"));
        assert!(l.content.contains("history.md\n"), "{}", l.content);
        assert!(l.content.contains("recipes/\n"), "{}", l.content);
        assert_eq!(read_file(&fa, "cooking/history.md").content, "# 做饭历史");
        assert!(read_file(&fa, "nope.md").content.contains("does not exist"));
        let skill = fa.readable_outside[0].join("home-cooking/SKILL.md");
        assert!(read_file(&fa, skill.to_str().unwrap())
            .content
            .contains("做饭模式"));
    }

    #[test]
    fn a_modes_knowledge_is_its_own() {
        let (_d, fa) = access();
        let r = fa.root.clone();
        std::fs::create_dir_all(r.join("homework/notes")).unwrap();
        std::fs::write(r.join("homework/notes/数学.md"), "勾股定理").unwrap();
        std::fs::create_dir_all(r.join("cooking/recipes")).unwrap();
        std::fs::write(r.join("cooking/recipes/鱼.md"), "清蒸").unwrap();
        // in cooking mode, homework's knowledge is out of reach; its own is not
        let read = read_file_in(&fa, "homework/notes/数学.md", Some("cooking"));
        assert!(
            read.is_error && read.content.contains("homework"),
            "{}",
            read.content
        );
        assert!(list_files_in(&fa, "homework/notes", Some("cooking")).is_error);
        assert!(!list_files_in(&fa, "homework", Some("cooking"))
            .content
            .contains("notes/"));
        assert_eq!(
            read_file_in(&fa, "cooking/recipes/鱼.md", Some("cooking")).content,
            "清蒸"
        );
        // homework sees its own, not cooking's (and cannot write there either)
        assert!(!read_file_in(&fa, "homework/notes/数学.md", Some("homework")).is_error);
        assert!(read_file_in(&fa, "cooking/recipes/鱼.md", Some("homework")).is_error);
        assert!(
            write_file_in(
                &fa,
                "cooking/recipes/x.md",
                "x",
                Some("homework"),
                &ZoneLimits::default()
            )
            .is_error
        );
        // outside every mode it is closed too: a mode's knowledge is read only in it
        let outside = read_file_in(&fa, "homework/notes/数学.md", None);
        assert!(
            outside.is_error && outside.content.contains("only while that mode is on"),
            "{}",
            outside.content
        );
        assert!(!list_files_in(&fa, "cooking", None)
            .content
            .contains("recipes/"));
    }
}
