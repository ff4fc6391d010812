//! Where things live inside a workspace. One place for every path so that the layout
//! is documented once:
//!
//! ```text
//! <workspace>/config.toml            household configuration
//! <workspace>/SYSTEM.md              optional extra base system prompt (read at start)
//! <workspace>/members/<id>/USER.md   a member's profile (normal operation only)
//! <workspace>/skills/                the household's own skills (before built-in ones)
//! <workspace>/modes/action.json      the run-mode lifecycle document
//! <workspace>/modes/sessions/<mode>/<session>/   system_prompt.md, conversation.jsonl, summary.md
//! <workspace>/chats/<channel>/<chat>.jsonl       normal-operation history per chat
//! <workspace>/logs/usage.jsonl       provider usage per call
//! <workspace>/<plugin data>/         e.g. cooking/ (kept by the mode's plugin)
//! ```

use std::path::{Path, PathBuf};

/// The workspace holds API keys, tokens and family conversations: only its owner may
/// enter it (0700), which also protects the control socket inside it.
fn private_dir(root: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?;
            tracing::info!(path = %root.display(), was = format!("{mode:o}"), "workspace permissions tightened to 700");
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Open (and create if missing) a workspace. The root is made absolute so that
    /// paths recorded in `action.json` stay valid whatever the current directory.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(root)?;
        let root = std::fs::canonicalize(root)?;
        private_dir(&root)?;
        for sub in ["modes/sessions", "chats", "logs", "members", "skills"] {
            std::fs::create_dir_all(root.join(sub))?;
        }
        Ok(Self { root })
    }

    /// Default location: `$HOMEBOT_WORKSPACE` or `~/.homebot/workspace`.
    pub fn default_root() -> PathBuf {
        if let Ok(p) = std::env::var("HOMEBOT_WORKSPACE") {
            return PathBuf::from(p);
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        home.join(".homebot").join("workspace")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn modes_dir(&self) -> PathBuf {
        self.root.join("modes")
    }
    pub fn action_file(&self) -> PathBuf {
        self.modes_dir().join("action.json")
    }
    pub fn sessions_dir(&self, mode_id: &str) -> PathBuf {
        self.modes_dir().join("sessions").join(mode_id)
    }
    pub fn chats_dir(&self) -> PathBuf {
        self.root.join("chats")
    }
    pub fn usage_log(&self) -> PathBuf {
        self.root.join("logs").join("usage.jsonl")
    }
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }
    pub fn user_profile(&self, member_id: &str) -> PathBuf {
        self.root.join("members").join(member_id).join("USER.md")
    }
    pub fn system_extra(&self) -> PathBuf {
        self.root.join("SYSTEM.md")
    }
}
