//! Context budget and compaction: what of the history a request replays, so that every
//! request fits the model's window and consecutive requests share a byte-identical
//! prefix.
//!
//! - [`tokens`] — counting (a fine estimate and the conservative count from character
//!   classes, calibrated against the usage the provider reports);
//! - [`budget`] — the budget of one request and which records it replays (mode
//!   sessions: checkpoint + the records after it; normal chats: trimmed in chunks);
//! - [`checkpoint`] — the summary of a history's older records (a mode session's
//!   `checkpoint.json`, a normal chat's `<chat>.checkpoint.json`);
//! - [`compaction`] — writing a new checkpoint with the provider, after a turn is
//!   recorded, off every actor;
//! - [`carry`] — the block a normal chat carries for a day after a mode session it took
//!   part in ended.
//!
//! One [`Context`] per agent: the window, the calibration, and the checkpoints of the
//! sessions seen (cached; the file is the truth). The agent asks it for a plan when it
//! builds a prompt; the kernel hands it each recorded turn of a mode session.

pub mod budget;
pub mod carry;
pub mod checkpoint;
pub mod compaction;
pub mod tokens;

use crate::config::{Config, ConfigError, EnvOverrides};
use crate::history::HistoryView;
use crate::provider::ToolDef;
use checkpoint::Checkpoint;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokens::{Calibration, Counts};

pub use budget::{Plan, PlanError};

/// The histories whose checkpoints are kept in memory at most (one mode session is
/// active at a time; busy normal chats are a few dozen at most).
const MAX_CACHED_CHECKPOINTS: usize = 64;

/// Context policy of a mode session (`mode.json` `context`), as the budget needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModePolicy {
    pub history_limit: Option<usize>,
    pub summary_threshold_tokens: Option<u32>,
}

pub struct Context {
    /// The whole window, and what is left for input after the output reserve.
    pub window: u32,
    pub input: u32,
    /// Whether mode sessions are compacted (`context.compaction`).
    pub compaction: bool,
    /// Default compaction threshold in % of the history budget.
    pub compact_at_percent: u32,
    pub calibration: Calibration,
    /// The tool definitions' counts (they are sent with every request and never change).
    tools: Counts,
    /// Checkpoint file → its checkpoint (`None`: there is none).
    checkpoints: Mutex<HashMap<PathBuf, Option<Arc<Checkpoint>>>>,
    /// Histories (by checkpoint file) with a compaction under way.
    compacting: Mutex<HashSet<PathBuf>>,
    /// The most a carried block of an ended session may take (`context.carry_over_tokens`).
    pub carry_over_tokens: u32,
    /// Ended sessions' carried blocks as rendered (see [`carry`]).
    carried: carry::CarryCache,
    /// Each mode's `context` policy, by mode id.
    policies: HashMap<String, ModePolicy>,
    /// Each mode's own `context.compaction_instructions`, by mode id.
    compaction_focus: HashMap<String, Arc<str>>,
    /// Counts of the system messages seen (they repeat every turn), by content hash.
    system_counts: Mutex<HashMap<u64, Counts>>,
    /// A digest of the tool definitions as sent (the start of every prefix).
    tools_hash: u64,
    /// How earlier user messages are replayed (`context.replay`).
    pub replay: crate::config::Replay,
    /// Where background compactions run (the kernel's shutdown cancels them).
    background: crate::actor::Tasks,
}

/// FNV-1a, 64 bits: a stable digest for prefix hashes and cache keys.
pub fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
pub const FNV_SEED: u64 = 0xcbf29ce484222325;

impl Context {
    pub fn new(window: u32, input: u32, tools: &[ToolDef]) -> Self {
        let json = serde_json::to_string(tools).expect("tool definitions always serialize");
        Self {
            window,
            input,
            compaction: true,
            compact_at_percent: 50,
            calibration: Calibration::default(),
            tools: Counts::of(&json),
            checkpoints: Mutex::new(HashMap::new()),
            compacting: Mutex::new(HashSet::new()),
            carry_over_tokens: crate::config::DEFAULT_CARRY_OVER_TOKENS,
            carried: carry::CarryCache::default(),
            policies: HashMap::new(),
            compaction_focus: HashMap::new(),
            system_counts: Mutex::new(HashMap::new()),
            tools_hash: fnv1a(FNV_SEED, json.as_bytes()),
            replay: crate::config::Replay::default(),
            background: crate::actor::Tasks::default(),
        }
    }

    /// Run background compactions on `tasks` (the kernel's, so its shutdown sees them).
    pub fn with_tasks(mut self, tasks: crate::actor::Tasks) -> Self {
        self.background = tasks;
        self
    }

    /// Each registered mode's `context.history_limit` / `summary_threshold_tokens`.
    pub fn with_policies(mut self, registry: &crate::modes::ModeRegistry) -> Self {
        for m in registry.modes() {
            if let Some(c) = &m.manifest.context {
                self.policies.insert(
                    m.manifest.id.clone(),
                    ModePolicy {
                        history_limit: c.history_limit,
                        summary_threshold_tokens: c.summary_threshold_tokens,
                    },
                );
                if let Some(f) = c.compaction_instructions.as_deref().map(str::trim) {
                    self.compaction_focus
                        .insert(m.manifest.id.clone(), Arc::from(f));
                }
            }
        }
        self
    }

    /// The policy of `mode_id` (defaults when it declares none, or no longer loads).
    pub fn policy(&self, mode_id: &str) -> ModePolicy {
        self.policies.get(mode_id).copied().unwrap_or_default()
    }

    /// What a compaction of `mode_id`'s history must keep, in the mode's own words
    /// (`None`: the generic [`compaction::DEFAULT_FOCUS`]).
    pub fn compaction_focus(&self, mode_id: &str) -> Option<Arc<str>> {
        self.compaction_focus.get(mode_id).cloned()
    }

    /// The digest of the tool definitions (where every request's prefix starts).
    pub fn tools_hash(&self) -> u64 {
        self.tools_hash
    }

    /// The raw counts of a system message, computed once per distinct text.
    pub fn system_counts(&self, system: &str) -> Counts {
        let key = fnv1a(FNV_SEED, system.as_bytes());
        let mut cache = self.system_counts.lock().expect("system count cache lock");
        if let Some(c) = cache.get(&key) {
            return *c;
        }
        let c = Counts::message(system);
        if cache.len() >= MAX_CACHED_CHECKPOINTS {
            cache.clear();
        }
        cache.insert(key, c);
        c
    }

    /// From the configuration and the environment (`HOMEBOT_CONTEXT_WINDOW`); the error
    /// names the key or variable at fault.
    pub fn from_config(
        cfg: &Config,
        env: &EnvOverrides,
        tools: &[ToolDef],
        registry: &crate::modes::ModeRegistry,
    ) -> Result<Self, ConfigError> {
        let provider = cfg.resolve_provider(env);
        let model = provider
            .as_ref()
            .and_then(|p| p.model.name().map(str::to_string));
        let max_tokens = provider
            .as_ref()
            .and_then(|p| p.max_tokens)
            .unwrap_or(crate::config::DEFAULT_MAX_TOKENS);
        let bad = |key: &str, message: String| ConfigError::Invalid {
            path: PathBuf::from("environment / config.toml"),
            key: key.into(),
            message,
        };
        let window = cfg
            .context
            .window_for(model.as_deref(), env.context_window.as_deref())
            .map_err(|e| bad("HOMEBOT_CONTEXT_WINDOW", e.to_string()))?;
        let input = crate::config::input_budget(window, max_tokens)
            .map_err(|e| bad("context.window_tokens", e.to_string()))?;
        let mut c = Self::new(window, input, tools);
        c.compaction = cfg.context.compaction;
        c.compact_at_percent = cfg.context.compact_at_percent;
        c.carry_over_tokens = cfg.context.carry_over_tokens;
        c.replay = cfg.context.replay;
        Ok(c.with_policies(registry))
    }

    /// Tokens a request may hold at most: 90 % of the input budget (the rest is slack
    /// for the difference between our count and the provider's).
    pub fn request_limit(&self) -> u32 {
        (u64::from(self.input) * 9 / 10) as u32
    }

    pub fn tools_tokens(&self) -> u32 {
        self.calibration
            .combine(self.tools.tokenizer, self.tools.conservative)
    }

    /// The checkpoint at `path` (from the cache, else from the file).
    pub fn checkpoint(&self, path: &Path, history: &HistoryView) -> Option<Arc<Checkpoint>> {
        let mut cache = self.checkpoints.lock().expect("checkpoint cache lock");
        if let Some(c) = cache.get(path) {
            return c.clone();
        }
        let loaded = checkpoint::load(path, history.latest().len()).map(Arc::new);
        evict_one(&mut cache);
        cache.insert(path.to_path_buf(), loaded.clone());
        loaded
    }

    /// Drop the cached checkpoint of `path`: the next request reads the file again.
    fn forget_checkpoint(&self, path: &Path) {
        let mut cache = self.checkpoints.lock().expect("checkpoint cache lock");
        cache.remove(path);
    }

    fn set_checkpoint(&self, path: &Path, c: Checkpoint) {
        let mut cache = self.checkpoints.lock().expect("checkpoint cache lock");
        evict_one(&mut cache);
        cache.insert(path.to_path_buf(), Some(Arc::new(c)));
    }

    /// Mark a compaction of the history checkpointed at `path` as under way; `None` if
    /// one already is.
    fn begin_compaction(self: &Arc<Self>, path: &Path) -> Option<CompactionSlot> {
        let mut set = self.compacting.lock().expect("compaction set lock");
        set.insert(path.to_path_buf()).then(|| CompactionSlot {
            ctx: self.clone(),
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
struct CompactionSlot {
    ctx: Arc<Context>,
    path: PathBuf,
}

impl Drop for CompactionSlot {
    fn drop(&mut self) {
        if let Ok(mut set) = self.ctx.compacting.lock() {
            set.remove(&self.path);
        }
    }
}
