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
//! <workspace>/memory/memory.db       scene memory (SQLite, WAL: also -wal and -shm)
//! <workspace>/<plugin data>/         e.g. cooking/ (kept by the mode's plugin)
//! ```

use std::path::{Path, PathBuf};

pub const CONFIG_FILE: &str = "config.toml";
pub const SYSTEM_FILE: &str = "SYSTEM.md";
pub const LOCK_FILE: &str = "homebot.lock";
pub const SOCKET_FILE: &str = "control.sock";
pub const CHATS_DIR: &str = "chats";
pub const LOGS_DIR: &str = "logs";
pub const MEMBERS_DIR: &str = "members";
/// The household's reminders (the Cron actor's).
pub const REMINDERS_FILE: &str = "reminders.json";
/// Scene memory: the SQLite database and its WAL files (the memory thread's alone).
pub const MEMORY_DIR: &str = "memory";
/// Sub-folders made when a workspace is opened.
const SUB_DIRS: &[&str] = &["modes/sessions", CHATS_DIR, LOGS_DIR, MEMBERS_DIR, "skills"];

/// Top-level names that belong to the household's members or the backend alone: other
/// people's conversations and profiles, the usage log, secrets, the lock and the socket.
/// The file tools never open them (see `tools`).
pub const PRIVATE_ZONES: &[&str] = &[
    CHATS_DIR,
    LOGS_DIR,
    MEMBERS_DIR,
    CONFIG_FILE,
    SYSTEM_FILE,
    LOCK_FILE,
    SOCKET_FILE,
    REMINDERS_FILE,
    MEMORY_DIR,
    STRATEGY_DIR,
];

/// The strategy state: the household's strategy, pending plans, open questions of each
/// chat (a private chat's among them).
pub const STRATEGY_DIR: &str = "strategy";

/// A workspace (or its `config.toml`) owned by another user: whoever owns it can replace
/// the configuration — the endpoint the family's conversations go to — so it is refused,
/// never adopted (tightening its mode would leave that owner in control).
#[derive(Debug, thiserror::Error)]
#[error("{path} is owned by uid {owner}, but homebot runs as uid {running}: refusing to use it (give it to uid {running}, or run homebot as uid {owner})")]
pub struct NotOwned {
    pub path: PathBuf,
    pub owner: u32,
    pub running: u32,
}

#[cfg(unix)]
fn effective_uid() -> u32 {
    unsafe extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { geteuid() }
}

/// Refuse `path` unless the running user owns it (a missing path is fine: it will be
/// ours). The error is an `io::Error` of kind `PermissionDenied` carrying [`NotOwned`].
fn check_owner(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let running = effective_uid();
        if meta.uid() != running {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                NotOwned {
                    path: path.to_path_buf(),
                    owner: meta.uid(),
                    running,
                },
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

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
    /// paths recorded in `action.json` stay valid whatever the current directory. A
    /// workspace or `config.toml` owned by another user is refused ([`NotOwned`]) before
    /// anything in it is touched.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        crate::fsutil::create_private_dirs(root)?;
        let root = std::fs::canonicalize(root)?;
        check_owner(&root)?;
        check_owner(&root.join(CONFIG_FILE))?;
        private_dir(&root)?;
        for sub in SUB_DIRS {
            crate::fsutil::create_private_dirs(&root.join(sub))?;
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
    /// `modes/sessions/`: one folder per mode, one per session inside.
    pub fn sessions_root(&self) -> PathBuf {
        self.modes_dir().join("sessions")
    }
    /// Where the model may keep what the family asks it to save.
    pub fn notes_dir(&self) -> PathBuf {
        self.root.join("notes")
    }
    /// The interactive CLI's line history.
    pub fn cli_history(&self) -> PathBuf {
        self.root.join(LOGS_DIR).join("cli_history")
    }
    /// Where the skills shipped in the binary are unpacked when the source tree is gone.
    pub fn builtin_skills_dir(&self) -> PathBuf {
        self.root.join("skills-builtin")
    }
    pub fn sessions_dir(&self, mode_id: &str) -> PathBuf {
        self.sessions_root().join(mode_id)
    }
    pub fn chats_dir(&self) -> PathBuf {
        self.root.join(CHATS_DIR)
    }
    pub fn usage_log(&self) -> PathBuf {
        self.root.join(LOGS_DIR).join("usage.jsonl")
    }
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }
    pub fn user_profile(&self, member_id: &str) -> PathBuf {
        self.root.join(MEMBERS_DIR).join(member_id).join("USER.md")
    }
    pub fn config_file(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }
    pub fn reminders_file(&self) -> PathBuf {
        self.root.join(REMINDERS_FILE)
    }
    /// `memory/memory.db`: scenes, memories, links, evidence.
    pub fn memory_db(&self) -> PathBuf {
        self.root.join(MEMORY_DIR).join("memory.db")
    }
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }
    pub fn system_extra(&self) -> PathBuf {
        self.root.join(SYSTEM_FILE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_new_workspace_is_private_all_the_way_down() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("home/ws");
        let ws = Workspace::open(&root).unwrap();
        for sub in [
            ".",
            "modes",
            "modes/sessions",
            "chats",
            "logs",
            "members",
            "skills",
        ] {
            let mode = std::fs::metadata(ws.root().join(sub))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o700, "{sub} is {mode:o}");
        }
        let lock =
            crate::lock::WorkspaceLock::acquire(ws.root(), std::time::Duration::ZERO).unwrap();
        let mode = std::fs::metadata(ws.lock_file())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "homebot.lock is {mode:o}");
        drop(lock);
    }
}
