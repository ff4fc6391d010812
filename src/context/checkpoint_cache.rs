//! The checkpoints of the histories seen, cached (the file is the truth; a full cache lets
//! one go), and the compactions under way, one per history (`CompactionSlot`).

use super::checkpoint::Checkpoint;
use crate::history::HistoryView;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The histories whose checkpoints are kept in memory at most (one mode session is
/// active at a time; busy normal chats are a few dozen at most).
pub(super) const MAX_CACHED_CHECKPOINTS: usize = 64;

/// The checkpoints of the histories seen (checkpoint file → its checkpoint, `None`: there
/// is none), and the histories (by checkpoint file) with a compaction under way.
#[derive(Default)]
pub(super) struct Checkpoints {
    cache: Mutex<HashMap<PathBuf, Option<Arc<Checkpoint>>>>,
    compacting: Arc<Mutex<HashSet<PathBuf>>>,
}

impl Checkpoints {
    /// The checkpoint at `path` (from the cache, else from the file).
    pub(super) fn get(&self, path: &Path, history: &HistoryView) -> Option<Arc<Checkpoint>> {
        let mut cache = self.cache.lock().expect("checkpoint cache lock");
        if let Some(c) = cache.get(path) {
            return c.clone();
        }
        let loaded = super::checkpoint::load(path, history.latest().len()).map(Arc::new);
        evict_one(&mut cache);
        cache.insert(path.to_path_buf(), loaded.clone());
        loaded
    }

    /// Drop the cached checkpoint of `path`: the next request reads the file again.
    pub(super) fn forget(&self, path: &Path) {
        let mut cache = self.cache.lock().expect("checkpoint cache lock");
        cache.remove(path);
    }

    pub(super) fn set(&self, path: &Path, c: Checkpoint) {
        let mut cache = self.cache.lock().expect("checkpoint cache lock");
        evict_one(&mut cache);
        cache.insert(path.to_path_buf(), Some(Arc::new(c)));
    }

    /// Mark a compaction of the history checkpointed at `path` as under way; `None` if
    /// one already is.
    pub(super) fn begin_compaction(&self, path: &Path) -> Option<CompactionSlot> {
        let mut set = self.compacting.lock().expect("compaction set lock");
        set.insert(path.to_path_buf()).then(|| CompactionSlot {
            compacting: self.compacting.clone(),
            path: path.to_path_buf(),
        })
    }
}

/// Room for one more checkpoint in a full cache (any one goes: it reloads from its file).
fn evict_one(cache: &mut HashMap<PathBuf, Option<Arc<Checkpoint>>>) {
    if cache.len() >= MAX_CACHED_CHECKPOINTS {
        if let Some(k) = cache.keys().next().cloned() {
            cache.remove(&k);
        }
    }
}

/// Held while a history is compacted; frees it when dropped.
pub(super) struct CompactionSlot {
    compacting: Arc<Mutex<HashSet<PathBuf>>>,
    path: PathBuf,
}

impl Drop for CompactionSlot {
    fn drop(&mut self) {
        if let Ok(mut set) = self.compacting.lock() {
            set.remove(&self.path);
        }
    }
}
