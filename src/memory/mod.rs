//! Scene memory (SPEC §6, seed 001): memories recalled by *situation*, not by wording.
//!
//! Every turn yields a fingerprint ([`fingerprint`]): identity features `chan` and
//! `peer`, which make its hierarchical key ([`key`]: `chan:qq/peer:group_1027`), and
//! weak ones — `tool`, `topic` ([`topic`], jieba segmentation with a trimmed dictionary
//! that the first turn needing it builds), `part` of day. A scene is recognized on the
//! second similar occurrence of a key ([`scenes`]); memories committed in a turn
//! (`memory_commit`) attach to the turn's scene, and when that situation recurs they are
//! recalled into the dynamic tail of the user message — never the system prompt — even
//! if nothing in the wording matches ([`index`]). `ScenePolicy::None`
//! (per channel, per turn; internal channels by default) produces no features and no
//! keys. Links fade when unused; twin scenes are merged ([`maintain`]).
//!
//! Who talks to it: the agent (recall while preparing a turn, the observation after its
//! tool loop), the memory tools, the `homebot memory` command ([`cli`]). One thread, the
//! **memory thread**, owns the writing connection to `<workspace>/memory/memory.db`
//! ([`store`]): observations are sent to it and never awaited, so a turn neither waits
//! for SQLite nor fails because of it — a memory error is logged, the turn goes on.
//! After each write the thread publishes a fresh [`index::Index`] snapshot that recall
//! and search read without I/O; it also notices, every couple of seconds, when another
//! process (`homebot memory forget`) changed the database, and reloads.

pub mod cli;
pub mod fingerprint;
mod index;
pub mod key;
mod maintain;
mod scenes;
pub mod store;
pub mod topic;

pub use fingerprint::TurnScene;
pub use index::{estimate_tokens, Index, Recalled, SceneEntry};
pub use key::{KeyError, SceneKey};
pub use maintain::Maintained;
pub use scenes::{Observation, Observed};
pub use store::{MemoryError, Stats, Store};

use crate::config::MemoryConfig;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tracing::{debug, warn};

/// How often the memory thread looks for changes made by another process, and whether
/// the daily maintenance is due.
const IDLE_CHECK: Duration = Duration::from_secs(2);
const MAINTENANCE_EVERY: i64 = 86_400;

enum Cmd {
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
}

impl Cmd {
    /// Writes nobody waits for (a turn's observation, a recall's touch): these may
    /// wait a moment and share a transaction.
    fn is_background(&self) -> bool {
        matches!(self, Cmd::Observe { .. } | Cmd::Touch { .. })
    }
}

struct Inner {
    cfg: MemoryConfig,
    tx: Option<mpsc::Sender<Cmd>>,
    index: Arc<RwLock<Arc<Index>>>,
    clock: crate::clock::SharedClock,
}

/// The handle to scene memory; cheap to clone. A disabled or failed memory recalls
/// nothing and refuses commits with a reason.
#[derive(Clone)]
pub struct Memory {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("running", &self.inner.tx.is_some())
            .finish()
    }
}

impl Memory {
    /// Open the database at `path` and start the memory thread. An error leaves the
    /// household without scene memory (the caller logs it), never without a bot.
    pub fn open(
        path: &Path,
        cfg: MemoryConfig,
        clock: crate::clock::SharedClock,
    ) -> Result<Self, MemoryError> {
        if !cfg.enabled {
            return Ok(Self::disabled(cfg, clock));
        }
        let mut store = Store::open(path, cfg.clone())?;
        let now = clock.now().timestamp();
        match store.maintain(now) {
            Ok(m) if m != Maintained::default() => debug!(?m, "memory maintenance at start"),
            Ok(_) => {}
            Err(e) => warn!(error = %e, "memory maintenance failed"),
        }
        let index = Arc::new(RwLock::new(Arc::new(store.snapshot()?)));
        let (tx, rx) = mpsc::channel();
        let published = index.clone();
        let thread_clock = clock.clone();
        std::thread::Builder::new()
            .name("memory".into())
            // no warm-up of the segmentation dictionary: the first turn with topic words
            // builds it (see `topic`), so a process that runs none never holds it
            .spawn(move || run(store, rx, published, thread_clock, now))
            .map_err(|e| {
                MemoryError::Unavailable(format!("cannot start the memory thread: {e}"))
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                cfg,
                tx: Some(tx),
                index,
                clock,
            }),
        })
    }

    /// A memory that keeps nothing.
    pub fn disabled(cfg: MemoryConfig, clock: crate::clock::SharedClock) -> Self {
        Self {
            inner: Arc::new(Inner {
                cfg,
                tx: None,
                index: Default::default(),
                clock,
            }),
        }
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.inner.cfg
    }

    pub fn is_running(&self) -> bool {
        self.inner.tx.is_some()
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
        let scene = self.scene_of(turn, now);
        let found = self.recall(&scene, now.timestamp());
        if found.is_empty() {
            return None;
        }
        let mut body = String::from(
            "在这个场合之前记下的约定和事实（系统按场合取回，不是用户这次说的话；相关时遵守）：\n",
        );
        for r in &found {
            body.push_str(&format!("- [#{}] {}\n", r.memory, one_line(&r.content)));
        }
        Some(crate::prompt::TailSection {
            label: "场景记忆".into(),
            body,
        })
    }

    /// Record a finished turn's situation; returns at once (the memory thread does the work).
    pub fn observe(&self, scene: TurnScene, tools: Vec<String>, now: i64) {
        if scene.is_none() {
            return;
        }
        let tools = fingerprint::tool_features(&tools, self.inner.cfg.max_tool_features);
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

    pub fn now(&self) -> i64 {
        self.inner.clock.now().timestamp()
    }
}

/// A memory as one line that cannot close or open a block of the tail: what a chat
/// member once said must not pass for the system's own markers.
fn one_line(content: &str) -> String {
    content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('[', "［")
        .replace(']', "］")
}

/// The memory thread: applies commands in order, publishes snapshots, keeps up with
/// other writers, runs the daily maintenance. Ends when every handle is gone.
///
/// A snapshot reads the whole database, so its cost grows with the memories and scenes
/// kept: changes from observations and touches are published at most every
/// [`PUBLISH_GAP`] (together with whatever else queued up meanwhile), never once per
/// turn. Commits, maintenance and flushes publish before they answer, so a memory just
/// kept is recalled by the very next turn.
fn run(
    mut store: Store,
    rx: mpsc::Receiver<Cmd>,
    index: Arc<RwLock<Arc<Index>>>,
    clock: crate::clock::SharedClock,
    mut maintained_at: i64,
) {
    let mut version = store.data_version();
    // changes applied and not yet published, and when the last snapshot went out
    let mut stale = false;
    let mut published = Instant::now();
    loop {
        let wait = if stale {
            PUBLISH_GAP.saturating_sub(published.elapsed())
        } else {
            IDLE_CHECK
        };
        match rx.recv_timeout(wait) {
            Ok(cmd) => {
                if cmd.is_background() {
                    // let the turns finishing together queue up: one wake, one commit
                    std::thread::sleep(GATHER);
                }
                let mut next = Some(cmd);
                let mut batch = 0;
                // consecutive observations and touches share one transaction; anything
                // that answers a caller commits it first and runs on its own
                let (mut in_batch, mut unbatched) = (false, false);
                while let Some(cmd) = next.take() {
                    let background = cmd.is_background();
                    if background && !in_batch && !unbatched {
                        match store.begin_batch() {
                            Ok(()) => in_batch = true,
                            Err(e) => {
                                // each goes on as a transaction of its own
                                warn!(error = %e, "memory batch not begun");
                                unbatched = true;
                            }
                        }
                    } else if !background && in_batch {
                        if let Err(e) = store.end_batch() {
                            warn!(error = %e, "memory batch not committed");
                        }
                        in_batch = false;
                    }
                    if apply(&mut store, &index, &mut version, &mut maintained_at, cmd) {
                        stale = true;
                    } else {
                        // it published: everything applied so far is out
                        stale = false;
                        published = Instant::now();
                    }
                    batch += 1;
                    if batch < MAX_BATCH {
                        next = rx.try_recv().ok();
                    }
                }
                if in_batch {
                    if let Err(e) = store.end_batch() {
                        warn!(error = %e, "memory batch not committed");
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = clock.now().timestamp();
        if now - maintained_at >= MAINTENANCE_EVERY {
            maintained_at = now;
            if let Err(e) = store.maintain(now) {
                warn!(error = %e, "memory maintenance failed");
            }
            stale = true;
        }
        let v = store.data_version();
        if v != version {
            version = v;
            stale = true;
        }
        if stale && published.elapsed() >= PUBLISH_GAP {
            publish(&store, &index);
            stale = false;
            published = Instant::now();
        }
    }
}

/// How long the thread lets observations gather after the first one wakes it (they are
/// off every turn's path; a commit or a flush never waits for this).
const GATHER: Duration = Duration::from_millis(5);
/// Commands applied before the queue is looked at again for a publish at most.
const MAX_BATCH: usize = 256;
/// Changes from observations reach the published index within this.
const PUBLISH_GAP: Duration = Duration::from_millis(200);

/// Apply one command; whether the index must be published (the commands that answer
/// publish themselves first).
fn apply(
    store: &mut Store,
    index: &RwLock<Arc<Index>>,
    version: &mut i64,
    maintained_at: &mut i64,
    cmd: Cmd,
) -> bool {
    match cmd {
        Cmd::Observe { scene, tools, now } => {
            match store.observe(&scene, &tools, now) {
                Ok(obs) => {
                    for o in obs {
                        debug!(key = %o.key, observed = ?o.observed, similarity = o.similarity, "turn observed");
                    }
                }
                Err(e) => warn!(error = %e, "turn not observed"),
            }
            true
        }
        Cmd::Commit {
            content,
            keys,
            origin,
            now,
            reply,
        } => {
            let r = store.commit(&content, &keys, &origin, now);
            publish(store, index);
            let _ = reply.send(r);
            false
        }
        Cmd::Touch { links, now } => {
            if let Err(e) = store.touch(&links, now) {
                warn!(error = %e, "recalled links not refreshed");
            }
            true
        }
        Cmd::Maintain { now, reply } => {
            let r = store.maintain(now);
            *maintained_at = now;
            publish(store, index);
            let _ = reply.send(r);
            false
        }
        Cmd::Flush { reply } => {
            // whatever another process changed is in the published index too
            *version = store.data_version();
            publish(store, index);
            let _ = reply.send(());
            false
        }
    }
}

fn publish(store: &Store, index: &RwLock<Arc<Index>>) {
    let prev = index
        .read()
        .expect("the index lock is never poisoned: only a pointer swap holds it")
        .clone();
    match store.snapshot_after(Some(&prev)) {
        Ok(i) => {
            *index
                .write()
                .expect("the index lock is never poisoned: only a pointer swap holds it") =
                Arc::new(i)
        }
        Err(e) => warn!(error = %e, "memory index not refreshed"),
    }
}

#[cfg(test)]
mod tests;
