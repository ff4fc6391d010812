//! The memory thread: applies commands in order, publishes snapshots, keeps up with
//! other writers, runs the daily maintenance. Ends when every handle is gone.
//!
//! It opens the database on the first command that needs it (the first turn's
//! [`super::Memory::ready`], an observation, a commit), not at start: a gateway that runs
//! no turn never loads SQLite. A database that cannot be opened is said once in the log;
//! from then on commits and maintenance are refused with that reason, observations are
//! dropped, and turns go on without scene memory.
//!
//! A snapshot reads the whole database, so its cost grows with the memories and scenes
//! kept: changes from observations and touches are published at most every
//! [`PUBLISH_GAP`] (together with whatever else queued up meanwhile), never once per
//! turn. Commits, maintenance and flushes publish before they answer, so a memory just
//! kept is recalled by the very next turn.

use super::messages::Cmd;
use super::{Index, Maintained, MemoryError, Store};
use crate::actor::gather;
use crate::config::MemoryConfig;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::time::{Duration, Instant};
use tracing::{debug, error, warn};

/// How often the thread looks for changes made by another process, and whether the
/// daily maintenance is due.
const IDLE_CHECK: Duration = Duration::from_secs(2);
const MAINTENANCE_EVERY: i64 = 86_400;
/// How long the thread lets observations gather after the first one wakes it (they are
/// off every turn's path; a commit or a flush never waits for this).
const GATHER: Duration = Duration::from_millis(5);
/// Commands applied before the queue is looked at again for a publish at most.
const MAX_BATCH: usize = 256;
/// Changes from observations reach the published index within this.
const PUBLISH_GAP: Duration = Duration::from_millis(200);

/// The database, as far as the thread has got with it.
enum Slot {
    Closed {
        path: PathBuf,
        cfg: MemoryConfig,
    },
    Open(Store),
    /// Could not be opened: why.
    Failed(String),
}

/// What the thread owns.
pub(super) struct Worker {
    slot: Slot,
    index: Arc<RwLock<Arc<Index>>>,
    clock: crate::clock::SharedClock,
    failed: Arc<AtomicBool>,
    /// The database's `data_version` when last looked at.
    version: i64,
    maintained_at: i64,
}

impl Worker {
    pub(super) fn new(
        path: PathBuf,
        cfg: MemoryConfig,
        index: Arc<RwLock<Arc<Index>>>,
        clock: crate::clock::SharedClock,
        failed: Arc<AtomicBool>,
    ) -> Self {
        Self {
            slot: Slot::Closed { path, cfg },
            index,
            clock,
            failed,
            version: 0,
            maintained_at: 0,
        }
    }

    /// The store, opened now if it was not (maintenance at opening, the first snapshot
    /// published); `None` when it cannot be opened.
    fn store(&mut self) -> Option<&mut Store> {
        if matches!(self.slot, Slot::Closed { .. }) {
            let Slot::Closed { path, cfg } =
                std::mem::replace(&mut self.slot, Slot::Failed(String::new()))
            else {
                unreachable!("checked just above")
            };
            let now = self.clock.now().timestamp();
            self.slot = match open(&path, cfg, now) {
                Ok((store, index)) => {
                    set(&self.index, index);
                    self.version = store.data_version();
                    self.maintained_at = now;
                    Slot::Open(store)
                }
                Err(e) => {
                    error!(error = %e, "scene memory is unavailable; running without it");
                    self.failed.store(true, Ordering::Release);
                    Slot::Failed(e.to_string())
                }
            };
        }
        match &mut self.slot {
            Slot::Open(store) => Some(store),
            _ => None,
        }
    }

    /// Apply one command; whether the index must be published (the commands that answer
    /// publish themselves first).
    fn apply(&mut self, cmd: Cmd) -> bool {
        match cmd {
            Cmd::Open { reply } => {
                let _ = reply.send(self.store().is_some());
                return false;
            }
            // nothing was written through a database that was never opened
            Cmd::Flush { reply } if matches!(self.slot, Slot::Closed { .. }) => {
                let _ = reply.send(());
                return false;
            }
            Cmd::Close { reply } => {
                if let Slot::Open(store) = &self.slot {
                    publish(store, &self.index);
                }
                // dropping the store closes its connection (without a checkpoint: the log
                // stays bounded by `WAL_PAGES`)
                self.slot = Slot::Failed("it was closed for the shutdown".into());
                let _ = reply.send(());
                return false;
            }
            _ => {}
        }
        if self.store().is_none() {
            let why = match &self.slot {
                Slot::Failed(why) => why.clone(),
                _ => String::new(),
            };
            refuse(cmd, &why);
            return false;
        }
        let Self {
            slot: Slot::Open(store),
            index,
            version,
            maintained_at,
            ..
        } = self
        else {
            unreachable!("opened just above")
        };
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
            // answered above, before the store was needed
            Cmd::Open { reply } => {
                let _ = reply.send(true);
                false
            }
            Cmd::Close { reply } => {
                let _ = reply.send(());
                false
            }
        }
    }
}

/// A command to a database that could not be opened: answered with the reason.
fn refuse(cmd: Cmd, why: &str) {
    let unavailable = || MemoryError::Unavailable(format!("scene memory is unavailable: {why}"));
    match cmd {
        Cmd::Commit { reply, .. } => {
            let _ = reply.send(Err(unavailable()));
        }
        Cmd::Maintain { reply, .. } => {
            let _ = reply.send(Err(unavailable()));
        }
        Cmd::Flush { reply } | Cmd::Close { reply } => {
            let _ = reply.send(());
        }
        Cmd::Open { reply } => {
            let _ = reply.send(false);
        }
        Cmd::Observe { .. } | Cmd::Touch { .. } => {}
    }
}

/// Open the database, run the maintenance that is due and take the first snapshot.
fn open(
    path: &std::path::Path,
    cfg: MemoryConfig,
    now: i64,
) -> Result<(Store, Index), MemoryError> {
    let mut store = Store::open(path, cfg)?;
    match store.maintain(now) {
        Ok(m) if m != Maintained::default() => debug!(?m, "memory maintenance at opening"),
        Ok(_) => {}
        Err(e) => warn!(error = %e, "memory maintenance failed"),
    }
    let index = store.snapshot()?;
    Ok((store, index))
}

pub(super) fn run(mut w: Worker, rx: mpsc::Receiver<Cmd>) {
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
                // the turns finishing together share one wake and one commit; a command
                // someone waits for ends the gathering
                let batch = gather(&rx, cmd, GATHER, MAX_BATCH, |c| !c.is_background());
                if apply_queued(&mut w, batch, &rx) {
                    stale = true;
                } else {
                    // something published: everything applied so far is out
                    stale = false;
                    published = Instant::now();
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = w.clock.now().timestamp();
        let Slot::Open(store) = &mut w.slot else {
            continue;
        };
        if now - w.maintained_at >= MAINTENANCE_EVERY {
            w.maintained_at = now;
            if let Err(e) = store.maintain(now) {
                warn!(error = %e, "memory maintenance failed");
            }
            stale = true;
        }
        let v = store.data_version();
        if v != w.version {
            w.version = v;
            stale = true;
        }
        if stale && published.elapsed() >= PUBLISH_GAP {
            publish(store, &w.index);
            stale = false;
            published = Instant::now();
        }
    }
}

/// Apply `batch` and whatever queued behind it (at most [`MAX_BATCH`]): consecutive
/// observations and touches share one transaction; anything that answers a caller
/// commits it first and runs on its own. Whether the last command left the index stale
/// (one that answers publishes everything applied before it).
fn apply_queued(w: &mut Worker, batch: Vec<Cmd>, rx: &mpsc::Receiver<Cmd>) -> bool {
    let mut stale = false;
    let mut batch = batch.into_iter();
    let mut next = batch.next();
    let mut applied = 0;
    let (mut in_batch, mut unbatched) = (false, false);
    while let Some(cmd) = next.take() {
        let background = cmd.is_background();
        if background && !in_batch && !unbatched {
            match w.store().map(Store::begin_batch) {
                Some(Ok(())) => in_batch = true,
                Some(Err(e)) => {
                    // each goes on as a transaction of its own
                    warn!(error = %e, "memory batch not begun");
                    unbatched = true;
                }
                None => unbatched = true,
            }
        } else if !background && in_batch {
            end_batch(w);
            in_batch = false;
        }
        stale = w.apply(cmd);
        applied += 1;
        if applied < MAX_BATCH {
            next = batch.next().or_else(|| rx.try_recv().ok());
        }
    }
    if in_batch {
        end_batch(w);
    }
    stale
}

fn end_batch(w: &mut Worker) {
    if let Some(Err(e)) = w.store().map(Store::end_batch) {
        warn!(error = %e, "memory batch not committed");
    }
}

fn set(index: &RwLock<Arc<Index>>, i: Index) {
    *index
        .write()
        .expect("the index lock is never poisoned: only a pointer swap holds it") = Arc::new(i);
}

fn publish(store: &Store, index: &RwLock<Arc<Index>>) {
    let prev = index
        .read()
        .expect("the index lock is never poisoned: only a pointer swap holds it")
        .clone();
    match store.snapshot_after(Some(&prev)) {
        Ok(i) => set(index, i),
        Err(e) => warn!(error = %e, "memory index not refreshed"),
    }
}
