//! One owner per workspace: the process that runs the kernel holds an exclusive lock on
//! `<workspace>/homebot.lock` (so there is never a second writer of `action.json` or the
//! session files). It is released when dropped, or when the process dies.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::workspace::LOCK_FILE;

/// The exclusive lock on a workspace; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct WorkspaceLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("workspace {path} is in use by another homebot process{}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Held { path: PathBuf, pid: Option<u32> },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl WorkspaceLock {
    /// Take the lock, waiting up to `wait` for a previous owner that is shutting down.
    pub fn acquire(root: &Path, wait: Duration) -> Result<Self, LockError> {
        let path = root.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut open = std::fs::OpenOptions::new();
        open.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            open.mode(0o600);
        }
        let file = open.open(&path).map_err(io)?;
        // a lock file made by an older homebot may be wider: it holds our pid only, but
        // every file homebot writes is the owner's alone
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
        }
        let deadline = std::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if std::time::Instant::now() >= deadline {
                        let pid = std::fs::read_to_string(&path)
                            .ok()
                            .and_then(|s| s.trim().parse().ok());
                        return Err(LockError::Held { path, pid });
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        let mut f = &file;
        file.set_len(0).map_err(io)?;
        write!(f, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: file })
    }
}
