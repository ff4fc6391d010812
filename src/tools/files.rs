//! File tools by zone: `read_file`, `list_files`, `write_file`.
//!
//! Anyone who can talk to the bot can steer these tools, so file access is by zone
//! ([`FileAccess`]):
//! - every path is resolved inside the workspace (`..`, absolute paths and symlinks that
//!   lead out are refused); the registered skill folders are readable too;
//! - private zones are never read or written: `chats/`, `logs/`, `members/` (other
//!   people's conversations and profiles), `config.toml` (secrets), `SYSTEM.md`, the
//!   lock file and control socket, dotfiles;
//! - a mode's knowledge folders (`mode.json` `context.knowledge`) are its own: while
//!   another mode is active they are neither read, listed nor written;
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
//! (Past 500 lines only because its unit tests live beside the code; the code is ~420.)

pub use super::guard::ZoneLimits;
use super::guard::{check_regular, check_zone, open_regular};
use super::ToolResult;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

pub const READ_LIMIT: usize = 64 * 1024;
pub const WRITE_LIMIT: usize = 256 * 1024;
const LIST_LIMIT: usize = 200;

/// Top-level names the tools never touch.
const PRIVATE: &[&str] = crate::workspace::PRIVATE_ZONES;

/// Where the file tools may read and write.
#[derive(Debug, Clone)]
pub struct FileAccess {
    /// The canonical workspace root.
    pub root: PathBuf,
    /// Folders (under the root) the tools may write below.
    pub writable: Vec<PathBuf>,
    /// Folders outside the workspace the tools may read (the registered skills).
    pub readable_outside: Vec<PathBuf>,
    /// Knowledge folders of each mode (under the root): off limits while another mode
    /// is active.
    pub mode_knowledge: Vec<(String, PathBuf)>,
}

impl FileAccess {
    /// What the file tools may touch: `notes/` and the plugins' writable folders for
    /// writing; the registered skill folders (wherever they are) for reading.
    pub fn for_registry(
        ws: &crate::workspace::Workspace,
        registry: &crate::modes::ModeRegistry,
    ) -> Self {
        let mut writable = vec![ws.notes_dir()];
        let mut readable_outside = Vec::new();
        for m in registry.modes() {
            let ctx = crate::modes::plugin::PluginContext {
                workspace: ws,
                manifest: &m.manifest,
                skill_dir: &m.skill_dir,
                skill_name: &m.skill_name,
            };
            writable.extend(m.plugin.writable_dirs(&ctx));
            readable_outside.push(m.skill_dir.clone());
        }
        for s in registry.skills() {
            if let Some(d) = s.path.parent() {
                readable_outside.push(d.to_path_buf());
            }
        }
        let mode_knowledge = registry
            .modes()
            .iter()
            .flat_map(|m| {
                m.manifest
                    .context
                    .iter()
                    .flat_map(|c| c.knowledge.iter())
                    .map(|k| (m.manifest.id.clone(), ws.root().join(&k.path)))
            })
            .collect();
        let readable_outside = readable_outside
            .into_iter()
            .filter_map(|d| std::fs::canonicalize(d).ok())
            // inside the workspace the zone rules apply; a folder holding the workspace
            // would open all of it
            .filter(|d| !d.starts_with(ws.root()) && !ws.root().starts_with(d))
            .collect();
        FileAccess {
            root: ws.root().to_path_buf(),
            writable,
            readable_outside,
            mode_knowledge,
        }
    }

    /// The knowledge folder of another mode than `active` that `p` lies in, if any
    /// (outside every mode, knowledge is ordinary workspace content).
    fn other_modes_knowledge(&self, p: &Path, active: Option<&str>) -> Option<&str> {
        let active = active?;
        let owned_by_active = self
            .mode_knowledge
            .iter()
            .any(|(m, d)| m == active && p.starts_with(d));
        if owned_by_active {
            return None;
        }
        self.mode_knowledge
            .iter()
            .find(|(m, d)| m != active && p.starts_with(d))
            .map(|(m, _)| m.as_str())
    }

    fn check_knowledge(
        &self,
        p: &Path,
        requested: &str,
        active: Option<&str>,
    ) -> Result<(), String> {
        match self.other_modes_knowledge(p, active) {
            Some(owner) => Err(format!(
                "error: {requested} is knowledge of the {owner:?} mode; it is not available in the current mode"
            )),
            None => Ok(()),
        }
    }

    fn rel<'a>(&self, p: &'a Path) -> &'a Path {
        p.strip_prefix(&self.root).unwrap_or(p)
    }

    /// Private: a dotfile anywhere, or a top-level name of [`PRIVATE`] — compared without
    /// case and as a prefix, so `Chats/` or `config.toml.bak` are private too.
    fn is_private(&self, p: &Path) -> bool {
        let rel = self.rel(p);
        let dotted = rel
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().to_lowercase());
        dotted || top.is_some_and(|t| PRIVATE.iter().any(|x| t.starts_with(&x.to_lowercase())))
    }

    /// A file inside a registered skill folder outside the workspace (no dotfiles).
    fn in_skill_folder(&self, real: &Path) -> bool {
        self.readable_outside.iter().any(|d| {
            real.strip_prefix(d).is_ok_and(|rel| {
                !rel.components()
                    .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
            })
        })
    }

    /// A path to read or list: a registered skill folder, or a non-private workspace path.
    fn readable(&self, requested: &str, mode: Option<&str>) -> Result<PathBuf, String> {
        let req = Path::new(requested.trim());
        if req.is_absolute() {
            if let Ok(real) = std::fs::canonicalize(req) {
                if !real.starts_with(&self.root) && self.in_skill_folder(&real) {
                    return Ok(real);
                }
            }
        }
        let p = real_path(&resolve_in(&self.root, requested)?);
        if self.is_private(&p) {
            return Err(format!(
                "error: {requested} is private to the household's members or the backend; tools may not open it"
            ));
        }
        self.check_knowledge(&p, requested, mode)?;
        Ok(p)
    }

    /// A path to write: only below a writable folder, never private.
    fn writable_path(&self, requested: &str, mode: Option<&str>) -> Result<PathBuf, String> {
        let p = real_path(&resolve_in(&self.root, requested)?);
        if self.is_private(&p) || !self.writable.iter().any(|w| p.starts_with(w) && p != *w) {
            let allowed: Vec<String> = self
                .writable
                .iter()
                .map(|w| format!("{}/", self.rel(w).display()))
                .collect();
            return Err(format!(
                "error: tools may write only below {}; {requested} is not there",
                allowed.join(", ")
            ));
        }
        self.check_knowledge(&p, requested, mode)?;
        Ok(p)
    }

    /// The writable folders as the model should name them.
    pub fn writable_names(&self) -> Vec<String> {
        self.writable
            .iter()
            .map(|w| format!("{}/", self.rel(w).display()))
            .collect()
    }
}

/// `p` with its deepest existing ancestor resolved through symlinks, so the zone checks
/// see where a path really leads (a `notes` symlink to `chats/` is `chats/`).
fn real_path(p: &Path) -> PathBuf {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(n) => rest.push(n.to_os_string()),
            None => return p.to_path_buf(),
        }
        if !existing.pop() {
            return p.to_path_buf();
        }
    }
    let mut real = std::fs::canonicalize(&existing).unwrap_or(existing);
    for n in rest.into_iter().rev() {
        real.push(n);
    }
    real
}

/// `..`, by absolute paths elsewhere, and by symlinks pointing out.
/// Resolve `requested` inside `root` (which must be canonical). Refuses escapes by
/// `..`, by absolute paths elsewhere, and by symlinks pointing out.
pub fn resolve_in(root: &Path, requested: &str) -> Result<PathBuf, String> {
    let requested = requested.trim();
    if requested.is_empty() {
        return Err("error: a path is required".into());
    }
    let p = Path::new(requested);
    let rel = if p.is_absolute() {
        p.strip_prefix(root)
            .map_err(|_| format!("error: {requested:?} is outside the workspace; use a path relative to the workspace"))?
            .to_path_buf()
    } else {
        p.to_path_buf()
    };
    let mut out = root.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || !out.starts_with(root) {
                    return Err(format!("error: {requested:?} is outside the workspace"));
                }
            }
            _ => return Err(format!("error: {requested:?} is outside the workspace")),
        }
    }
    if !out.starts_with(root) {
        return Err(format!("error: {requested:?} is outside the workspace"));
    }
    // Symlinks: the deepest existing ancestor must still be inside.
    let mut probe = out.clone();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    let real = std::fs::canonicalize(&probe).map_err(|e| format!("error: {requested:?}: {e}"))?;
    if !real.starts_with(root) {
        return Err(format!("error: {requested:?} leads outside the workspace"));
    }
    Ok(out)
}

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
        return ToolResult::err(format!("error: cannot read {path}: {e}"));
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
        Err(_) => return ToolResult::err(format!("error: {path} is not a UTF-8 text file")),
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
        Err(e) => return ToolResult::err(format!("error: cannot list {path}: {e}")),
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
        Err(e) => return ToolResult::err(format!("error: cannot write {path}: {e}")),
    };
    if content.len() > WRITE_LIMIT {
        return ToolResult::err(format!(
            "error: content is {} bytes; the limit is {WRITE_LIMIT}",
            content.len()
        ));
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
        Err(e) => ToolResult::err(format!("error: cannot write {path}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!write_file(&fa, "cooking/recipes/番茄炒蛋.md", "# 番茄炒蛋").is_error);
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
        let l = list_files(&fa, "cooking");
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
        // outside every mode it is ordinary workspace content
        assert!(!read_file_in(&fa, "homework/notes/数学.md", None).is_error);
    }
}
