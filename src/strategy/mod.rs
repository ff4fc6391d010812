//! Agent strategies: *how* the agent works, orthogonal to run modes.
//!
//! - Build (default) — the plain tool loop ([`crate::agent::Agent::tool_loop`]);
//! - Plan / Spec — the model writes a JSON plan or spec (validated, re-asked once), the
//!   household confirms it from any chat or channel, then it runs step by step and is
//!   summarized ([`flows`], [`doc`]);
//! - Reflect — draft → critical review → revision, only the revision is the reply;
//! - Assist — the model must ask with `ask_user_choice` before a material choice;
//! - Custom — a persisted extra instruction.
//!
//! The strategy is **household-wide** ([`Strategies`], persisted in
//! `<workspace>/strategy/state.json`): a plan made in the QQ group must be confirmable
//! from the kitchen speaker, whose every wake is a new chat. Inside a run mode whose
//! `mode.json` names a `strategy`, that one applies, unless someone used `/strategy`
//! during the session. Switching is a hot patch of this state: it never touches the
//! conversation, the frozen `system_prompt.md` or the tool list. The standing strategy's
//! instruction (the configured or the mode's default) ends the system message, a cached
//! prefix; a switched one comes in each turn's dynamic tail as a [`TailSection`], so the
//! cached prefix of a running session stays byte-identical across switches (see
//! docs/strategies.md and [`Effective::blocks`]).
//!
//! Layout: this file — the state handle, `/strategy`, the effective strategy;
//! [`flows`] — one turn through the strategy; `work` — Plan / Spec; `reflect` (an `ask_user_choice`
//! question rendered per channel and its answer parsed: `tools::choice::answer`); [`doc`] — plan / spec JSON; [`state`] — the file;
//! [`journal`] — the visible record of every step; `offer` — the answer to the
//! backend's offer of a mode, judged here, not by the model; `spoken` — a spoken change of
//! strategy (`set_strategy`, checked against the user's words by the tool) applied.

mod ctx;
pub mod doc;
mod flows;
pub mod journal;
mod offer;
mod reflect;
mod spoken;
pub mod state;
mod work;

pub use ctx::StrategyOutcome;
pub use flows::run;
pub use state::{PendingChoice, PendingWork, Preset, State, Thinking, WorkKind};

use crate::config::{StrategyConfig, StrategyKind};
use crate::prompt::TailSection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Longest custom instruction, in characters.
pub const MAX_CUSTOM_CHARS: usize = 1000;

/// Why `/strategy …` (or the `set_strategy` tool) changed nothing; the text is the
/// household's answer.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("你在这里没有切换策略的权限。(not allowed to switch the strategy here)")]
    NotAllowed,
    #[error("没有叫 {0:?} 的策略。可选: build, plan, spec, reflect, assist, custom；预设: quick, standard, careful")]
    Unknown(String),
    #[error("自定义指令太长了（上限 {max} 字）。", max = MAX_CUSTOM_CHARS)]
    CustomTooLong,
    /// Words after a strategy other than `custom` (the strategy's word).
    #[error("用法: /strategy {0}（只有 custom 后面跟指令）")]
    Trailing(String),
    #[error("用法: /strategy custom <指令>，例如 /strategy custom 回答前先说一句“收到”")]
    NoCustom,
    #[error("策略没能保存：{0}")]
    NotSaved(std::io::Error),
}
/// The label of the strategy's block (the system message's, a switched one's in the tail).
pub const SECTION_LABEL: &str = crate::prompt::STRATEGY_LABEL;

/// The household's strategy state (cloneable handle). Every change is written to the
/// workspace before it counts; concurrent turns see one order of changes.
#[derive(Clone)]
pub struct Strategies {
    inner: Arc<Inner>,
}

struct Inner {
    workspace: PathBuf,
    cfg: StrategyConfig,
    /// mode id → the strategy its `mode.json` names.
    mode_defaults: BTreeMap<String, StrategyKind>,
    state: tokio::sync::Mutex<State>,
}

/// Where the strategy in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Config,
    /// `/strategy NAME`, or a spoken `set_strategy` the guard accepted.
    Command,
    Mode,
}

/// The strategy in force for one turn.
#[derive(Debug, Clone)]
pub struct Effective {
    pub kind: StrategyKind,
    pub source: Source,
    pub preset: Option<Preset>,
    pub custom: Option<String>,
}

/// The BUILD wording the strategy design gives (its engine prompts: "Act directly. Use tools when
/// needed." + "Be efficient: prefer fewer steps, verify results between calls.").
pub const BUILD_WORDING: &str =
    "Act directly. Use tools when needed.\nBe efficient: prefer fewer steps, verify results between calls.";

impl Effective {
    pub fn thinking(&self) -> Thinking {
        self.preset
            .map(Preset::thinking)
            .unwrap_or(Thinking::Standard)
    }

    /// Tool round trips per turn (per step in Plan / Spec): the preset's cap, never more
    /// than `configured` (`agent.max_tool_rounds`), which applies when the preset has none.
    pub fn max_tool_rounds(&self, configured: u32) -> u32 {
        self.preset
            .and_then(Preset::max_tool_rounds)
            .map_or(configured, |r| r.min(configured))
    }

    /// Where this strategy's block goes, given the `standing` one (see
    /// [`Strategies::standing`]): the standing block ends the system message, a cached
    /// prefix; when the household switched to something else, that one's block also
    /// comes in each turn's dynamic tail, marked as replacing it. So a session that
    /// never switches pays nothing per turn for its strategy, and a switch breaks no
    /// prefix (the system message stays as it was).
    pub fn blocks(&self, standing: &Effective) -> (Option<TailSection>, Option<TailSection>) {
        let base = standing.section();
        let mine = self.section();
        if mine == base {
            return (base, None);
        }
        let switched = match (&base, mine) {
            (_, None) => TailSection {
                label: SECTION_LABEL.into(),
                body: "家里人切换了策略：系统消息里的 [策略] 不再适用。".into(),
            },
            (Some(_), Some(m)) => TailSection {
                body: format!(
                    "家里人切换了策略：以下取代系统消息里的 [策略]。\n{}",
                    m.body
                ),
                ..m
            },
            (None, Some(m)) => m,
        };
        (base, Some(switched))
    }

    /// The strategy's block, if it has anything to say.
    pub fn section(&self) -> Option<TailSection> {
        let mut lines: Vec<String> = Vec::new();
        match self.kind {
            StrategyKind::Build => lines.push(BUILD_WORDING.into()),
            // their instruction is the planning request's own (`doc::instruction`)
            StrategyKind::Plan | StrategyKind::Spec => {}
            StrategyKind::Reflect => lines.push(
                "Quality matters more than speed: after drafting an answer, you will be asked to review it critically, then revise it into the final output.".into(),
            ),
            StrategyKind::Assist => lines.push(
                "When the request leaves a choice open that materially changes the result (which dish, how many people, what time, which room), you MUST call ask_user_choice BEFORE proceeding. NEVER guess when the choice materially changes the result. Keep questions short and provide 2-6 clear options.".into(),
            ),
            StrategyKind::Custom => {
                if let Some(c) = &self.custom {
                    lines.push(format!(
                        "Custom instructions take priority over generic behavior guidance:\n{c}"
                    ));
                }
            }
        }
        match self.thinking() {
            Thinking::None => lines.push("思考深度：快速——直接给出答案，少解释。".into()),
            Thinking::Deep => {
                lines.push("思考深度：深入——先想清楚条件、风险和边界情况，再动手。".into())
            }
            Thinking::Standard => {}
        }
        (!lines.is_empty()).then(|| TailSection {
            label: SECTION_LABEL.into(),
            body: lines.join("\n"),
        })
    }
}

/// The mode session a turn or command runs in: (mode id, session id).
pub type ActiveMode<'a> = Option<(&'a str, &'a str)>;

impl Strategies {
    /// Load the state from `workspace` (see [`state::load`]).
    pub fn open(
        workspace: &Path,
        cfg: StrategyConfig,
        mode_defaults: BTreeMap<String, StrategyKind>,
    ) -> Self {
        let st = state::load(workspace);
        Self {
            inner: Arc::new(Inner {
                workspace: workspace.to_path_buf(),
                cfg,
                mode_defaults,
                state: tokio::sync::Mutex::new(st),
            }),
        }
    }

    pub fn config(&self) -> &StrategyConfig {
        &self.inner.cfg
    }

    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// A copy of the state.
    pub async fn snapshot(&self) -> State {
        self.inner.state.lock().await.clone()
    }

    /// Change the state and write it; the change counts only if the write succeeded.
    pub async fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> std::io::Result<R> {
        let mut guard = self.inner.state.lock().await;
        let mut next = guard.clone();
        let r = f(&mut next);
        if next != *guard {
            let ws = self.inner.workspace.clone();
            let copy = next.clone();
            tokio::task::spawn_blocking(move || state::save(&ws, &copy))
                .await
                .map_err(std::io::Error::other)??;
            *guard = next;
        }
        Ok(r)
    }

    /// The strategy in force in `mode` (or outside a mode).
    pub async fn effective(&self, mode: ActiveMode<'_>) -> Effective {
        let st = self.inner.state.lock().await;
        self.effective_in(&st, mode)
    }

    /// The strategy a turn gets before anyone has used `/strategy`: the mode's default
    /// (its `mode.json`), else the configured one, no preset. Its block is part of the
    /// system message (the same bytes until the configuration changes or a mode is
    /// entered, which changes the system message anyway); see [`Effective::blocks`].
    pub fn standing(&self, mode: ActiveMode<'_>) -> Effective {
        self.effective_in(&State::default(), mode)
    }

    fn effective_in(&self, st: &State, mode: ActiveMode<'_>) -> Effective {
        let from_mode = mode.and_then(|(id, sid)| {
            let d = self.inner.mode_defaults.get(id)?;
            (st.set_in_session.as_deref() != Some(sid)).then_some(*d)
        });
        let (kind, source) = match (from_mode, st.strategy) {
            (Some(k), _) => (k, Source::Mode),
            (None, Some(k)) => (k, Source::Command),
            (None, None) => (self.inner.cfg.default, Source::Config),
        };
        Effective {
            kind,
            source,
            preset: st.preset,
            custom: st.custom_instruction.clone(),
        }
    }

    /// `/strategy [NAME | PRESET | custom TEXT]`: show, or switch (when `may_switch`).
    pub async fn command(
        &self,
        arg: &str,
        may_switch: bool,
        mode: ActiveMode<'_>,
    ) -> Result<String, CommandError> {
        let arg = arg.trim();
        if arg.is_empty() {
            return Ok(self.describe(mode).await);
        }
        if !may_switch {
            return Err(CommandError::NotAllowed);
        }
        let (word, rest) = match arg.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (arg, ""),
        };
        let session = mode.map(|(_, s)| s.to_string());
        let preset = Preset::parse(word);
        let kind = preset
            .map(Preset::strategy)
            .or_else(|| StrategyKind::parse(word));
        let Some(kind) = kind else {
            return Err(CommandError::Unknown(word.to_string()));
        };
        if kind == StrategyKind::Custom {
            if rest.chars().count() > MAX_CUSTOM_CHARS {
                return Err(CommandError::CustomTooLong);
            }
        } else if !rest.is_empty() {
            return Err(CommandError::Trailing(word.to_string()));
        }
        let before = self.snapshot().await;
        let has_custom = before.custom_instruction.is_some();
        let work_kind = match kind {
            StrategyKind::Plan => Some(WorkKind::Plan),
            StrategyKind::Spec => Some(WorkKind::Spec),
            _ => None,
        };
        let dropped = before
            .pending_work
            .as_ref()
            .is_some_and(|w| Some(w.kind) != work_kind);
        if kind == StrategyKind::Custom && rest.is_empty() && !has_custom {
            return Err(CommandError::NoCustom);
        }
        self.update(|st| {
            st.strategy = Some(kind);
            st.set_in_session = session;
            if preset.is_some() {
                // a strategy's name changes the strategy only: the preset's thinking
                // depth and tool-round cap stay: a patch of the strategy, not a new configuration
                st.preset = preset;
            }
            if kind == StrategyKind::Custom && !rest.is_empty() {
                st.custom_instruction = Some(rest.to_string());
            }
            if dropped {
                // a plan waiting under another strategy would run on a stray "确认"
                st.pending_work = None;
            }
        })
        .await
        .map_err(CommandError::NotSaved)?;
        let note = if dropped {
            "（待确认的计划已作废。）"
        } else {
            ""
        };
        Ok(format!("已切换策略。{note}{}", self.describe(mode).await))
    }

    /// `/strategy log`: the last entries of the journal, of one chat or of all.
    pub async fn log(&self, chat: Option<(String, String)>) -> std::io::Result<String> {
        let ws = self.inner.workspace.clone();
        let entries = tokio::task::spawn_blocking(move || {
            let chat = chat.as_ref().map(|(c, i)| (c.as_str(), i.as_str()));
            journal::recent(&ws, 10, chat)
        })
        .await
        .map_err(std::io::Error::other)??;
        if entries.is_empty() {
            return Ok("还没有计划、评审或选择的记录。".into());
        }
        let lines: Vec<String> = entries.iter().map(journal::render).collect();
        Ok(format!(
            "最近的策略记录（{}）：\n{}",
            journal::FILE,
            lines.join("\n")
        ))
    }

    /// The `/strategy` text.
    pub async fn describe(&self, mode: ActiveMode<'_>) -> String {
        let st = self.snapshot().await;
        let e = self.effective_in(&st, mode);
        let from = match e.source {
            Source::Config => "配置默认".to_string(),
            Source::Command => "由家里人设置".to_string(),
            Source::Mode => format!("当前模式 {} 的默认", mode.map(|m| m.0).unwrap_or("?")),
        };
        let mut s = format!("当前策略: {}（{from}）", e.kind);
        if let Some(p) = e.preset {
            let thinking = match p.thinking() {
                Thinking::None => "快速",
                Thinking::Standard => "标准",
                Thinking::Deep => "深入",
            };
            s.push_str(&format!(" · 预设: {}（思考深度：{thinking}", p.name()));
            if let Some(r) = p.max_tool_rounds() {
                s.push_str(&format!("，工具往返至多 {r} 轮"));
            }
            s.push('）');
        }
        if let Some(c) = &st.custom_instruction {
            s.push_str(&format!("\n自定义指令: {c}"));
        }
        if let Some(w) = &st.pending_work {
            s.push_str(&format!(
                "\n待确认的{}: {}（{} 步，{} 在 {}:{} 提出）",
                if w.kind == WorkKind::Plan {
                    "计划"
                } else {
                    "规格"
                },
                w.goal,
                w.steps.len(),
                w.speaker_id,
                w.channel,
                w.chat_id
            ));
        }
        s.push_str("\n可选: build, plan, spec, reflect, assist, custom <指令>；预设: quick, standard, careful");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eff(kind: StrategyKind, preset: Option<Preset>) -> Effective {
        Effective {
            kind,
            source: Source::Command,
            preset,
            custom: None,
        }
    }

    #[test]
    fn the_standing_block_is_the_system_messages_and_a_switch_adds_one_to_the_tail() {
        let build = eff(StrategyKind::Build, None);
        let (system, tail) = build.blocks(&build);
        assert!(system.unwrap().body.starts_with("Act directly."));
        assert!(tail.is_none(), "nothing per turn while nobody switched");

        let (system, tail) = eff(StrategyKind::Assist, None).blocks(&build);
        assert_eq!(
            system,
            build.section(),
            "the system message stays as it was"
        );
        let tail = tail.unwrap();
        assert!(
            tail.body
                .starts_with("家里人切换了策略：以下取代系统消息里的 [策略]。\n")
                && tail.body.contains("ask_user_choice"),
            "{tail:?}"
        );
        // a preset changes the block even with the same strategy
        let (_, tail) = eff(StrategyKind::Build, Some(Preset::Quick)).blocks(&build);
        assert!(tail.unwrap().body.contains("思考深度：快速"));
        // a strategy with nothing to say still says the standing block is gone
        let (_, tail) = eff(StrategyKind::Plan, None).blocks(&build);
        assert_eq!(
            tail.unwrap().body,
            "家里人切换了策略：系统消息里的 [策略] 不再适用。"
        );
        // under a standing strategy without a block, a switched one is sent as it is
        let plan = eff(StrategyKind::Plan, None);
        let (system, tail) = build.blocks(&plan);
        assert!(system.is_none());
        assert_eq!(tail, build.section());
    }
}
