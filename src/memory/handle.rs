//! `Memory`: the handle the agent, the memory tools and `homebot memory` hold — it starts the
//! memory thread, sends it observations, and reads recall and search from the published
//! snapshot without I/O.

use super::fingerprint::TurnScene;
use super::key::SceneKey;
use super::lines::memory_line;
use super::messages::Cmd;
use super::store::index::{Index, Recalled};
use super::store::maintain::Maintained;
use super::store::MemoryError;
use crate::config::MemoryConfig;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use tokio::sync::oneshot;
use tracing::warn;

pub(super) struct Inner {
    pub(super) cfg: MemoryConfig,
    pub(super) tx: Option<mpsc::Sender<Cmd>>,
    pub(super) index: Arc<RwLock<Arc<Index>>>,
    pub(super) clock: crate::clock::SharedClock,
    /// Set by the thread when the database could not be opened.
    pub(super) failed: Arc<AtomicBool>,
    /// Whether the first [`Memory::ready`] found scene memory running.
    pub(super) opened: tokio::sync::OnceCell<bool>,
}

/// The handle to scene memory; cheap to clone. A disabled or failed memory recalls
/// nothing and refuses commits with a reason.
#[derive(Clone)]
pub struct Memory {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("running", &self.inner.tx.is_some())
            .finish()
    }
}

impl Memory {
    /// Start the memory thread for the database at `path`. The database itself is opened
    /// by the first turn ([`Memory::ready`]) or the first command that needs it, so a
    /// gateway that runs no turn never loads SQLite (about 1.1 MiB resident); a database
    /// that cannot be opened is logged then and leaves the household without scene
    /// memory, never without a bot. An error here is a thread that could not start.
    pub fn open(
        path: &Path,
        cfg: MemoryConfig,
        clock: crate::clock::SharedClock,
    ) -> Result<Self, MemoryError> {
        if !cfg.enabled {
            return Ok(Self::disabled(cfg, clock));
        }
        let index: Arc<RwLock<Arc<Index>>> = Default::default();
        let failed = Arc::new(AtomicBool::new(false));
        let worker = super::thread::Worker::new(
            path.to_path_buf(),
            cfg.clone(),
            index.clone(),
            clock.clone(),
            failed.clone(),
        );
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("memory".into())
            // no warm-up of the segmentation dictionary: the first turn with topic words
            // builds it (see `topic`), so a process that runs none never holds it
            .spawn(move || super::thread::run(worker, rx))
            .map_err(|e| {
                MemoryError::Unavailable(format!("cannot start the memory thread: {e}"))
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                cfg,
                tx: Some(tx),
                index,
                clock,
                failed,
                opened: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// Open the database if nobody has yet, and wait for its first snapshot — the kernel
    /// calls this before every turn's recall, so a memory kept before a restart is
    /// recalled by the very first turn after it; only the first call waits. Whether
    /// scene memory is running.
    pub async fn ready(&self) -> bool {
        if self.inner.tx.is_none() {
            return false;
        }
        *self
            .inner
            .opened
            .get_or_init(|| async {
                let (reply, rx) = oneshot::channel();
                if !self.send(Cmd::Open { reply }) {
                    return false;
                }
                rx.await.unwrap_or(false)
            })
            .await
    }

    /// A memory that keeps nothing.
    pub fn disabled(cfg: MemoryConfig, clock: crate::clock::SharedClock) -> Self {
        Self {
            inner: Arc::new(Inner {
                cfg,
                tx: None,
                index: Default::default(),
                clock,
                failed: Arc::new(AtomicBool::new(true)),
                opened: tokio::sync::OnceCell::new(),
            }),
        }
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.inner.cfg
    }

    /// Whether scene memory runs: on, and its database not found unusable (before the
    /// first turn it has not been opened yet: see [`Memory::ready`]).
    pub fn is_running(&self) -> bool {
        self.inner.tx.is_some() && !self.inner.failed.load(Ordering::Acquire)
    }

    /// The current snapshot.
    pub fn index(&self) -> Arc<Index> {
        self.inner
            .index
            .read()
            .expect("the index lock is never poisoned: only a pointer swap holds it")
            .clone()
    }

    fn send(&self, cmd: Cmd) -> bool {
        match &self.inner.tx {
            Some(tx) => tx.send(cmd).is_ok(),
            None => false,
        }
    }

    /// Where `turn` stands (its keys and weak features), at `now`.
    pub fn scene_of(
        &self,
        turn: &crate::turn::Turn,
        now: chrono::DateTime<chrono::FixedOffset>,
    ) -> TurnScene {
        TurnScene::of(turn, now, &self.inner.cfg)
    }

    /// The memories recalled for a turn's scene (no I/O; the links used are refreshed
    /// in the background).
    pub fn recall(&self, scene: &TurnScene, now: i64) -> Vec<Recalled> {
        let found = self.index().recall(scene, &self.inner.cfg, now);
        if !found.is_empty() {
            self.send(Cmd::Touch {
                links: found.iter().map(|r| (r.scene, r.memory)).collect(),
                now,
            });
        }
        found
    }

    /// The recall block for the dynamic tail, or `None` when nothing is recalled.
    pub fn recall_section(
        &self,
        turn: &crate::turn::Turn,
        now: chrono::DateTime<chrono::FixedOffset>,
    ) -> Option<crate::prompt::TailSection> {
        recall_section_of(&self.recall(&self.scene_of(turn, now), now.timestamp()))
    }

    /// The memories the turn's words find (see [`super::wording`]) beside the `by_scene`
    /// its scene recall brought, among those `visible` to the chat (no I/O).
    pub fn recall_wording(
        &self,
        scene: &TurnScene,
        text: &str,
        by_scene: &[Recalled],
        visible: impl Fn(i64, &str, &[&SceneKey]) -> bool,
    ) -> Vec<super::wording::Worded> {
        super::wording::recall(
            &self.index(),
            &self.inner.cfg,
            scene,
            text,
            by_scene,
            visible,
        )
    }

    /// Record a finished turn's situation; returns at once (the memory thread does the work).
    pub fn observe(&self, scene: TurnScene, tools: Vec<String>, now: i64) {
        if scene.is_none() {
            return;
        }
        let tools = super::fingerprint::tool_features(&tools, self.inner.cfg.max_tool_features);
        if !self.send(Cmd::Observe { scene, tools, now }) && self.is_running() {
            warn!("memory thread is gone; turn not observed");
        }
    }

    /// Keep `content` under `keys`; the new (or existing, same content) memory's id.
    pub async fn commit(
        &self,
        content: String,
        keys: Vec<SceneKey>,
        origin: String,
        now: i64,
    ) -> Result<i64, MemoryError> {
        let (reply, rx) = oneshot::channel();
        if !self.send(Cmd::Commit {
            content,
            keys,
            origin,
            now,
            reply,
        }) {
            return Err(MemoryError::Unavailable("scene memory is off".into()));
        }
        rx.await
            .unwrap_or_else(|_| Err(MemoryError::Unavailable("the memory thread stopped".into())))
    }

    /// Run maintenance now (decay, dedupe, expiry).
    pub async fn maintain(&self, now: i64) -> Result<Maintained, MemoryError> {
        let (reply, rx) = oneshot::channel();
        if !self.send(Cmd::Maintain { now, reply }) {
            return Err(MemoryError::Unavailable("scene memory is off".into()));
        }
        rx.await
            .unwrap_or_else(|_| Err(MemoryError::Unavailable("the memory thread stopped".into())))
    }

    /// Wait until everything sent before has been written and published (for tests and
    /// shutdown; turns never wait for it).
    pub async fn flush(&self) {
        let (reply, rx) = oneshot::channel();
        if self.send(Cmd::Flush { reply }) {
            let _ = rx.await;
        }
    }

    /// Write everything sent before, then close the database (the shutdown's last use
    /// of scene memory: later commands are refused).
    pub async fn close(&self) {
        let (reply, rx) = oneshot::channel();
        if self.send(Cmd::Close { reply }) {
            let _ = rx.await;
        }
    }

    pub fn now(&self) -> i64 {
        self.inner.clock.now().timestamp()
    }
}

/// A recalled memory's line in the recall block (`- [#id] content`, without its line
/// end): what a replayed window is searched for, so a memory is sent once while it holds it.
pub fn recall_line(r: &Recalled) -> String {
    memory_line(r.memory, &r.content)
}

/// The label of the block of memories recalled by scene.
pub const SCENE_LABEL: &str = "场景记忆";

/// The recall block for `found`, or `None` when nothing was recalled.
pub fn recall_section_of(found: &[Recalled]) -> Option<crate::prompt::TailSection> {
    if found.is_empty() {
        return None;
    }
    let mut body = String::from(
        "在这个场合之前记下的约定和事实（系统按场合取回，不是用户这次说的话；相关时遵守）：\n",
    );
    for r in found {
        body.push_str(&recall_line(r));
        body.push('\n');
    }
    Some(crate::prompt::TailSection {
        label: SCENE_LABEL.into(),
        body,
    })
}
