//! `Context`, one per agent: the window and what is left for input, the calibration, each
//! mode's context policy (`ModePolicy`), and the counts of what every request repeats (the
//! tools, the system messages).

use super::budget::{
    carried_messages, checkpoint_messages, chunked_start, record_counts, Plan, PlanError, Source,
    FALLBACK_STEP,
};
use super::checkpoint::Checkpoint;
use super::checkpoint_cache::{Checkpoints, MAX_CACHED_CHECKPOINTS};
use super::tokens::{Calibration, Counts};
use super::{fnv1a, FNV_SEED};
use crate::chats::carried::CarriedSession;
use crate::config::{Config, ConfigError, EnvOverrides};
use crate::history::HistoryView;
use crate::provider::ToolDef;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
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
    /// The checkpoints of the histories seen, and the compactions under way.
    pub(super) checkpoints: Checkpoints,
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
            checkpoints: Checkpoints::default(),
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

    /// The checkpoint at `path` (from the cache, else from the file).
    pub fn checkpoint(&self, path: &Path, history: &HistoryView) -> Option<Arc<Checkpoint>> {
        self.checkpoints.get(path, history)
    }

    /// The carried block's user message for `s`: `None` when carrying is off or the
    /// session left nothing to carry (rendered once, see [`super::carry`]).
    pub fn carried_block(&self, s: &CarriedSession) -> Option<Arc<str>> {
        if self.carry_over_tokens == 0 {
            return None;
        }
        self.carried
            .block(s, &self.calibration, self.carry_over_tokens)
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

impl Context {
    /// Which history the request with this `system` message and current user messages
    /// `tail` (the message and its aside) replays, within the budget.
    pub fn plan(
        &self,
        system: &str,
        tail: &[&str],
        history: &HistoryView,
        source: Source<'_>,
    ) -> Result<Plan, PlanError> {
        let mut plan = self.fixed_part(system, tail)?;
        let ckpt = source.checkpoint.and_then(|p| self.checkpoint(p, history));
        self.add_summaries(&mut plan, source.carried, ckpt.as_ref());
        let lo = ckpt.as_ref().map_or(0, |c| c.through.min(history.len()));
        self.fit_records(&mut plan, history, lo, source.policy);
        Ok(plan)
    }

    /// The part of a request that is always sent — the system message, the tools, the
    /// tail — and what that leaves the history, or why the request cannot be made.
    fn fixed_part(&self, system: &str, tail: &[&str]) -> Result<Plan, PlanError> {
        let count = |c: Counts| self.calibration.combine(c.tokenizer, c.conservative);
        let sys = self.system_counts(system);
        let tl = tail
            .iter()
            .fold(Counts::default(), |acc, t| acc.plus(Counts::message(t)));
        let mut plan = Plan {
            system_tokens: count(sys),
            tools_tokens: self.tools_tokens(),
            tail_tokens: count(tl),
            tokenizer_total: u64::from(sys.tokenizer)
                + u64::from(self.tools.tokenizer)
                + u64::from(tl.tokenizer),
            ..Plan::default()
        };
        let limit = self.request_limit();
        let needed = plan.system_tokens + plan.tools_tokens + plan.tail_tokens;
        if needed > limit {
            return Err(PlanError::TooBig {
                needed,
                limit,
                window: self.window,
            });
        }
        plan.history_budget = limit - needed;
        Ok(plan)
    }

    /// The carried block (unless the checkpoint folded it in already) and the checkpoint,
    /// each only if it fits what history may take.
    fn add_summaries(
        &self,
        plan: &mut Plan,
        carried: Option<(&str, &Arc<str>)>,
        ckpt: Option<&Arc<Checkpoint>>,
    ) {
        let count = |c: Counts| self.calibration.combine(c.tokenizer, c.conservative);
        if let Some((session, block)) = carried {
            let folded = ckpt.is_some_and(|c| c.carried.as_deref() == Some(session));
            let (u, a) = carried_messages(block);
            let raw = Counts::message(&u).plus(Counts::message(&a));
            let t = count(raw);
            // bounded by `carry_over_tokens` when rendered; never more than half of what
            // history may take
            if !folded && t <= plan.history_budget / 2 {
                plan.carried_tokens = t;
                plan.carried = Some(block.clone());
                plan.tokenizer_total += u64::from(raw.tokenizer);
            }
        }
        if let Some(c) = ckpt {
            let (u, a) = checkpoint_messages(c);
            let raw = Counts::message(&u).plus(Counts::message(&a));
            let t = count(raw);
            // a checkpoint is at most 60 % of the budget it was written for; one that does
            // not fit this request's is left out, never the request cut
            if t <= plan.history_budget - plan.carried_tokens {
                plan.checkpoint_tokens = t;
                plan.checkpoint = Some(c.clone());
                plan.tokenizer_total += u64::from(raw.tokenizer);
            }
        }
    }

    /// The records after the checkpoint (from `lo`) that fit what is left, dropped from
    /// the oldest on the caps' grid; and whether the history wants a compaction.
    fn fit_records(&self, plan: &mut Plan, history: &HistoryView, lo: usize, policy: ModePolicy) {
        let len = history.len();
        let (cap, threshold) = (
            policy.history_limit,
            self.threshold(plan.history_budget, policy),
        );
        let records_budget =
            u64::from(plan.history_budget - plan.carried_tokens - plan.checkpoint_tokens);
        let mut start = chunked_start(lo, len, cap);
        // per record, the larger of the calibrated and the conservative count, so the sum
        // bounds the request under either way of counting
        let (costs, raw): (Vec<u64>, Vec<u64>) = history.with_range(start, |records, caches| {
            records
                .iter()
                .zip(caches)
                .map(|(r, c)| {
                    let [t, k] = record_counts(r, c, self.replay);
                    (u64::from(self.calibration.combine(t, k)), u64::from(t))
                })
                .unzip()
        });
        let mut total: u64 = costs.iter().sum();
        let unfiltered = total;
        let step = cap.map_or(FALLBACK_STEP, |c| (c / 2).max(1));
        let mut skip = 0usize;
        while total > records_budget && skip < costs.len() {
            // on the grid while a whole step remains, then record by record
            let by = if costs.len() - skip > step { step } else { 1 };
            total -= costs[skip..skip + by].iter().sum::<u64>();
            skip += by;
        }
        start += skip;
        plan.tokenizer_total += raw[skip..].iter().sum::<u64>();
        plan.from = start;
        plan.to = len;
        plan.history_tokens = total as u32;
        plan.wants_compaction = skip > 0
            || unfiltered > u64::from(threshold)
            || policy.history_limit.is_some_and(|l| len - lo > l);
    }

    /// Where the records a request of `history` replays start, by the checkpoint and the
    /// caps alone (the token budget may cut further: [`Context::plan`] says).
    pub fn replay_start(&self, history: &HistoryView, source: Source<'_>) -> usize {
        let len = history.len();
        let ckpt = source.checkpoint.and_then(|p| self.checkpoint(p, history));
        let lo = ckpt.as_ref().map_or(0, |c| c.through.min(len));
        chunked_start(lo, len, source.policy.history_limit)
    }

    /// Replayed-history tokens above which a history is compacted: the mode's
    /// `summary_threshold_tokens`, else `compact_at_percent` of the history budget —
    /// never above the budget itself.
    pub fn threshold(&self, history_budget: u32, policy: ModePolicy) -> u32 {
        let default = (u64::from(history_budget) * u64::from(self.compact_at_percent) / 100) as u32;
        policy
            .summary_threshold_tokens
            .unwrap_or(default)
            .min(history_budget)
            .max(1)
    }
}
