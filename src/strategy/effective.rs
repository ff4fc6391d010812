//! The strategy in force for a turn (`Effective`) and where it comes from (`Source`): its
//! thinking, its tool-round cap, and where its instruction goes — the system message's end
//! for the standing one, the turn's tail for a switched one.

use super::state::{Preset, Thinking};
use crate::config::StrategyKind;
use crate::prompt::TailSection;
use crate::provider::Depth;

/// The label of the strategy's block (the system message's, a switched one's in the tail).
pub const SECTION_LABEL: &str = crate::prompt::STRATEGY_LABEL;

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

    /// The reasoning depth the turn's calls ask the provider for: only a preset asks —
    /// `quick` the least, `careful` the most; `standard` (and no preset) is the model as
    /// configured, so nothing is sent. Whether and how an endpoint takes it is its own
    /// (`provider.reasoning`).
    pub fn depth(&self) -> Option<Depth> {
        match self.preset?.thinking() {
            Thinking::None => Some(Depth::Low),
            Thinking::Standard => None,
            Thinking::Deep => Some(Depth::High),
        }
    }

    /// How the audit trail and `/why` name it: the kind, and the preset when one is set
    /// (`plan · careful`).
    pub fn label(&self) -> String {
        match self.preset {
            Some(p) => format!("{} · {}", self.kind, p.name()),
            None => self.kind.to_string(),
        }
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
            // their instruction is the planning request's own (`super::doc::instruction`)
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
    fn only_a_quick_or_careful_preset_asks_the_provider_for_a_depth() {
        let depth = |p| eff(StrategyKind::Build, p).depth();
        assert_eq!(depth(None), None);
        assert_eq!(depth(Some(Preset::Standard)), None);
        assert_eq!(depth(Some(Preset::Quick)), Some(Depth::Low));
        assert_eq!(depth(Some(Preset::Careful)), Some(Depth::High));
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
