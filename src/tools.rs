//! The tools the agent offers the model, in a fixed order (part of the stable prompt
//! prefix): `switch_mode`, then workspace-scoped `read_file`, `list_files`, `write_file`.
//!
//! Anyone who can talk to the bot can steer these tools, so file access is by zone
//! ([`FileAccess`]):
//! - every path is resolved inside the workspace (`..`, absolute paths and symlinks that
//!   lead out are refused); the registered skill folders are readable too;
//! - private zones are never read or written: `chats/`, `logs/`, `members/` (other
//!   people's conversations and profiles), `config.toml` (secrets), `SYSTEM.md`, the
//!   lock file and control socket, dotfiles;
//! - writing is allowed only below the writable folders: `notes/` and what the mode
//!   plugins declare (e.g. `cooking/recipes/`). The LLM never writes `action.json`,
//!   session files, skills or plugin indexes.

use crate::modes::core::TurnId;
use crate::modes::switch::SwitchAction;
use crate::modes::ModesHandle;
use crate::provider::{ToolCall, ToolDef};
use serde::Deserialize;
use serde_json::json;
use std::path::{Component, Path, PathBuf};

pub const READ_LIMIT: usize = 64 * 1024;
pub const WRITE_LIMIT: usize = 256 * 1024;
const LIST_LIMIT: usize = 200;

/// Everything a tool call may touch during one turn.
pub struct ToolEnv {
    pub files: std::sync::Arc<FileAccess>,
    pub modes: ModesHandle,
    pub turn_id: TurnId,
    /// The user's original words of this turn (for `switch_mode` validation).
    pub user_text: String,
    /// The channel's permission rule for this sender.
    pub may_switch_modes: bool,
}

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
}

impl FileAccess {
    /// What the file tools may touch: `notes/` and the plugins' writable folders for
    /// writing; the registered skill folders (wherever they are) for reading.
    pub fn for_registry(
        ws: &crate::workspace::Workspace,
        registry: &crate::modes::ModeRegistry,
    ) -> Self {
        let mut writable = vec![ws.root().join("notes")];
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
    fn readable(&self, requested: &str) -> Result<PathBuf, String> {
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
        Ok(p)
    }

    /// A path to write: only below a writable folder, never private.
    fn writable_path(&self, requested: &str) -> Result<PathBuf, String> {
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

/// Tool definitions, always in this order, so the prefix stays byte-identical.
pub fn definitions(mode_ids: &[String], writable: &[String]) -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "switch_mode".into(),
            description: format!(
                "Enter or exit a run mode. Call ONLY when the user's own words explicitly name the mode (its display name, as listed in the system prompt) AND say to enter it ({}) or exit it ({}). The backend checks the user's words and refuses otherwise; relay the refusal reason. On exit you may give a one- or two-sentence summary of the session.",
                crate::modes::switch::DEFAULT_ENTER_VERBS.join("/"),
                crate::modes::switch::DEFAULT_EXIT_VERBS.join("/")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["enter", "exit"]},
                    "mode_id": {"type": "string", "enum": mode_ids},
                    "summary": {"type": "string", "description": "exit only: what happened in this session, briefly"}
                },
                "required": ["action", "mode_id"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "read_file".into(),
            description: "Read a UTF-8 text file in the household workspace (e.g. cooking/history.md, a recipe, a summary). Paths are relative to the workspace.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "list_files".into(),
            description: "List a folder of the household workspace (folders end with /).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "default: the workspace root"}},
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "write_file".into(),
            description: format!(
                "Create or replace a text file in the household workspace, e.g. save a recipe the family asked you to keep. Allowed only below: {}.",
                writable.join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        },
    ]
}

/// What a tool call did: the text returned to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
}

impl ToolResult {
    fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }
    fn err(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SwitchArgs {
    action: SwitchAction,
    mode_id: String,
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

fn parse_args<T: for<'de> Deserialize<'de>>(call: &ToolCall) -> Result<T, ToolResult> {
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    serde_json::from_str(raw).map_err(|e| {
        ToolResult::err(format!(
            "error: invalid arguments for {}: {e}. Call it again with valid JSON arguments.",
            call.name
        ))
    })
}

pub async fn execute(env: &ToolEnv, call: &ToolCall) -> ToolResult {
    match call.name.as_str() {
        "switch_mode" => {
            let a: SwitchArgs = match parse_args(call) {
                Ok(a) => a,
                Err(e) => return e,
            };
            if !env.may_switch_modes {
                return ToolResult::err(crate::modes::Refusal::NotPermitted.to_string());
            }
            match env
                .modes
                .switch(
                    a.action,
                    Some(a.mode_id),
                    a.summary,
                    Some((env.turn_id, env.user_text.clone())),
                )
                .await
            {
                Ok(done) => ToolResult::ok(done.to_string()),
                Err(e) => ToolResult::err(e.to_string()),
            }
        }
        "read_file" => match parse_args::<PathArgs>(call) {
            Ok(a) => read_file(&env.files, a.path.as_deref().unwrap_or("")),
            Err(e) => e,
        },
        "list_files" => match parse_args::<PathArgs>(call) {
            Ok(a) => list_files(&env.files, a.path.as_deref().unwrap_or(".")),
            Err(e) => e,
        },
        "write_file" => match parse_args::<WriteArgs>(call) {
            Ok(a) => write_file(&env.files, &a.path, &a.content),
            Err(e) => e,
        },
        other => ToolResult::err(format!(
            "error: there is no tool named {other:?}; available: switch_mode, read_file, list_files, write_file"
        )),
    }
}

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

fn read_file(fa: &FileAccess, path: &str) -> ToolResult {
    let p = match fa.readable(path) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let bytes = match std::fs::read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolResult::err(format!("error: {path} does not exist"))
        }
        Err(e) => return ToolResult::err(format!("error: cannot read {path}: {e}")),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolResult::err(format!("error: {path} is not a UTF-8 text file"));
    };
    if text.len() > READ_LIMIT {
        let mut cut = READ_LIMIT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        return ToolResult::ok(format!(
            "{}\n\n[truncated: showing {cut} of {} bytes]",
            &text[..cut],
            text.len()
        ));
    }
    ToolResult::ok(text)
}

fn list_files(fa: &FileAccess, path: &str) -> ToolResult {
    let p = match fa.readable(if path.trim().is_empty() { "." } else { path }) {
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
                !fa.is_private(&e.path())
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

fn write_file(fa: &FileAccess, path: &str, content: &str) -> ToolResult {
    let p = match fa.writable_path(path) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let rel = fa.rel(&p).to_path_buf();
    if p.is_dir() {
        return ToolResult::err(format!("error: {path} is a folder"));
    }
    if content.len() > WRITE_LIMIT {
        return ToolResult::err(format!(
            "error: content is {} bytes; the limit is {WRITE_LIMIT}",
            content.len()
        ));
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
    fn definitions_have_a_fixed_order() {
        let names: Vec<_> = definitions(&["cooking".into()], &["notes/".into()])
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(
            names,
            ["switch_mode", "read_file", "list_files", "write_file"]
        );
    }
}
