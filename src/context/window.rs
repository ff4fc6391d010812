//! `Context`, one per agent: the window and what is left for input, the calibration, each
//! mode's context policy (`ModePolicy`), and the counts of what every request repeats (the
//! tools, the system messages).

use super::checkpoint::Checkpoint;
use super::checkpoint_cache::MAX_CACHED_CHECKPOINTS;
use super::tokens::{Calibration, Counts};
use super::{fnv1a, FNV_SEED};
use crate::config::{Config, ConfigError, EnvOverrides};
use crate::provider::ToolDef;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
    pub(super) tools: Counts,
    /// Checkpoint file → its checkpoint (`None`: there is none).
    pub(super) checkpoints: Mutex<HashMap<PathBuf, Option<Arc<Checkpoint>>>>,
    /// Histories (by checkpoint file) with a compaction under way.
    pub(super) compacting: Mutex<HashSet<PathBuf>>,
    /// The most a carried block of an ended session may take (`context.carry_over_tokens`).
    pub carry_over_tokens: u32,
    /// Ended sessions' carried blocks as rendered (see [`carry`]).
    pub(super) carried: super::carry::CarryCache,
    /// Each mode's `context` policy, by mode id.
    pub(super) policies: HashMap<String, ModePolicy>,
    /// Each mode's own `context.compaction_instructions`, by mode id.
    pub(super) compaction_focus: HashMap<String, Arc<str>>,
    /// Counts of the system messages seen (they repeat every turn), by content hash.
    pub(super) system_counts: Mutex<HashMap<u64, Counts>>,
    /// A digest of the tool definitions as sent (the start of every prefix).
    pub(super) tools_hash: u64,
    /// How earlier user messages are replayed (`context.replay`).
    pub replay: crate::config::Replay,
    /// Where background compactions run (the kernel's shutdown cancels them).
    pub(super) background: crate::actor::Tasks,
}

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
            carried: super::carry::CarryCache::default(),
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
    /// (`None`: the generic [`super::compaction::DEFAULT_FOCUS`]).
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
}
