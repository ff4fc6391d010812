//! The tools the agent offers the model, in a fixed order (part of the stable prompt
//! prefix): `switch_mode`, then workspace-scoped `read_file`, `list_files`, `write_file`.
//!
//! File tools resolve every path inside the workspace (absolute or relative, `..` and
//! symlinks included) and refuse anything outside it. They never touch `modes/` for
//! writing (the LLM never writes `action.json` or session files) and never read or write
//! `config.toml` (it may hold API keys).

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
    pub root: PathBuf,
    pub modes: ModesHandle,
    pub turn_id: TurnId,
    /// The user's original words of this turn (for `switch_mode` validation).
    pub user_text: String,
    /// The channel's permission rule for this sender.
    pub may_switch_modes: bool,
}

/// Tool definitions, always in this order, so the prefix stays byte-identical.
pub fn definitions(mode_ids: &[String]) -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "switch_mode".into(),
            description: "Enter or exit a run mode. Call ONLY when the user's own words explicitly name the mode (e.g. 做饭模式) AND say to enter it (打开/进入/开始/切换/启用) or exit it (关闭/退出/结束). The backend checks the user's words and refuses otherwise; relay the refusal reason. On exit you may give a one- or two-sentence summary of the session.".into(),
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
            description: "Create or replace a text file in the household workspace, e.g. save a recipe to cooking/recipes/<name>.md. Not allowed under modes/ or for config.toml.".into(),
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
                return ToolResult::err(
                    "refused: this sender may not switch modes in this chat (channel permission). 这位成员在这个群里没有切换模式的权限。",
                );
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
                Ok(msg) => ToolResult::ok(msg),
                Err(msg) => ToolResult::err(msg),
            }
        }
        "read_file" => match parse_args::<PathArgs>(call) {
            Ok(a) => read_file(&env.root, a.path.as_deref().unwrap_or("")),
            Err(e) => e,
        },
        "list_files" => match parse_args::<PathArgs>(call) {
            Ok(a) => list_files(&env.root, a.path.as_deref().unwrap_or(".")),
            Err(e) => e,
        },
        "write_file" => match parse_args::<WriteArgs>(call) {
            Ok(a) => write_file(&env.root, &a.path, &a.content),
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

fn relative<'a>(root: &Path, p: &'a Path) -> &'a Path {
    p.strip_prefix(root).unwrap_or(p)
}

fn is_secret_file(root: &Path, p: &Path) -> bool {
    relative(root, p) == Path::new(crate::config::CONFIG_FILE)
}

fn read_file(root: &Path, path: &str) -> ToolResult {
    let p = match resolve_in(root, path) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    if is_secret_file(root, &p) {
        return ToolResult::err(
            "error: config.toml is not readable by tools (it may hold secrets)",
        );
    }
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

fn list_files(root: &Path, path: &str) -> ToolResult {
    let p = match resolve_in(root, if path.trim().is_empty() { "." } else { path }) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let entries = match std::fs::read_dir(&p) {
        Ok(e) => e,
        Err(e) => return ToolResult::err(format!("error: cannot list {path}: {e}")),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
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
    let mut out = format!("{}/ ({} entries)\n", relative(root, &p).display(), total);
    for n in &names {
        out.push_str(n);
        out.push('\n');
    }
    if total > LIST_LIMIT {
        out.push_str(&format!("[{} more not shown]\n", total - LIST_LIMIT));
    }
    ToolResult::ok(out)
}

fn write_file(root: &Path, path: &str, content: &str) -> ToolResult {
    let p = match resolve_in(root, path) {
        Ok(p) => p,
        Err(e) => return ToolResult::err(e),
    };
    let rel = relative(root, &p).to_path_buf();
    if is_secret_file(root, &p) {
        return ToolResult::err("error: config.toml cannot be written by tools");
    }
    if rel.starts_with("modes") || rel.starts_with("chats") || rel.starts_with("logs") {
        return ToolResult::err(format!(
            "error: {path} is kept by the backend (modes/, chats/, logs/); tools may not write there"
        ));
    }
    if rel.as_os_str().is_empty() || p.is_dir() {
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

    fn root() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(d.path()).unwrap();
        (d, r)
    }

    #[test]
    fn paths_stay_inside() {
        let (_d, r) = root();
        assert_eq!(
            resolve_in(&r, "cooking/x.md").unwrap(),
            r.join("cooking/x.md")
        );
        assert_eq!(resolve_in(&r, "a/../b").unwrap(), r.join("b"));
        assert!(resolve_in(&r, "../etc/passwd").is_err());
        assert!(resolve_in(&r, "/etc/passwd").is_err());
        assert!(resolve_in(&r, "a/../../x").is_err());
        let abs = r.join("cooking/y.md");
        assert_eq!(resolve_in(&r, abs.to_str().unwrap()).unwrap(), abs);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_out_is_refused() {
        let (_d, r) = root();
        std::os::unix::fs::symlink("/etc", r.join("etc")).unwrap();
        assert!(resolve_in(&r, "etc/passwd").is_err());
        assert!(read_file(&r, "etc/passwd").is_error);
    }

    #[test]
    fn write_rules() {
        let (_d, r) = root();
        assert!(!write_file(&r, "cooking/recipes/番茄炒蛋.md", "# 番茄炒蛋").is_error);
        assert_eq!(
            std::fs::read_to_string(r.join("cooking/recipes/番茄炒蛋.md")).unwrap(),
            "# 番茄炒蛋"
        );
        assert!(write_file(&r, "modes/action.json", "{}").is_error);
        assert!(write_file(&r, "./modes/../modes/action.json", "{}").is_error);
        assert!(write_file(&r, "config.toml", "x").is_error);
        assert!(read_file(&r, "config.toml").is_error);
        assert!(write_file(&r, "big.md", &"x".repeat(WRITE_LIMIT + 1)).is_error);
        assert!(!r.join("modes/action.json").exists());
    }

    #[test]
    fn list_and_read() {
        let (_d, r) = root();
        std::fs::create_dir_all(r.join("cooking/recipes")).unwrap();
        std::fs::write(r.join("cooking/history.md"), "# 做饭历史").unwrap();
        let l = list_files(&r, "cooking");
        assert!(l.content.contains("history.md\n"), "{}", l.content);
        assert!(l.content.contains("recipes/\n"), "{}", l.content);
        assert_eq!(read_file(&r, "cooking/history.md").content, "# 做饭历史");
        assert!(read_file(&r, "nope.md").content.contains("does not exist"));
    }

    #[test]
    fn definitions_have_a_fixed_order() {
        let names: Vec<_> = definitions(&["cooking".into()])
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(
            names,
            ["switch_mode", "read_file", "list_files", "write_file"]
        );
    }
}
