//! `ModeError`: why a mode operation or a turn's recording failed. A leaf: every file of
//! `modes` may use it.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ModeError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Action(#[from] super::action::ActionError),
    #[error("turn {0} is not in flight (already ended, or never begun)")]
    UnknownTurn(u64),
    #[error("the mode manager failed while handling this request and was restarted from disk")]
    Restarted,
    #[error("the mode manager is recovering from repeated failures; try again in {secs} s")]
    Recovering { secs: u64 },
    #[error("the mode manager has stopped")]
    Gone,
    #[error("turns cannot be recorded since {since} ({error}); new turns wait until the disk takes writes again")]
    DiskFull { since: String, error: String },
}

pub(super) fn io<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> ModeError + 'a {
    move |source| ModeError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}
