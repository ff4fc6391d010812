//! What the handle sends the memory thread (`Cmd`): observations never awaited, commits
//! and maintenance answered on a oneshot.

use super::fingerprint::TurnScene;
use super::key::SceneKey;
use super::store::maintain::Maintained;
use super::store::MemoryError;
use tokio::sync::oneshot;

pub(super) enum Cmd {
    /// Open the database now if it is not (the first turn, before its recall).
    Open {
        reply: oneshot::Sender<bool>,
    },
    Observe {
        scene: TurnScene,
        tools: Vec<String>,
        now: i64,
    },
    Commit {
        content: String,
        keys: Vec<SceneKey>,
        origin: String,
        now: i64,
        reply: oneshot::Sender<Result<i64, MemoryError>>,
    },
    Touch {
        links: Vec<(i64, i64)>,
        now: i64,
    },
    Maintain {
        now: i64,
        reply: oneshot::Sender<Result<Maintained, MemoryError>>,
    },
    Flush {
        reply: oneshot::Sender<()>,
    },
    /// Close the database (at shutdown, after everything before it is written); later
    /// commands are refused.
    Close {
        reply: oneshot::Sender<()>,
    },
}

impl Cmd {
    /// Writes nobody waits for (a turn's observation, a recall's touch): these may
    /// wait a moment and share a transaction.
    pub(super) fn is_background(&self) -> bool {
        matches!(self, Cmd::Observe { .. } | Cmd::Touch { .. })
    }
}
