//! Anthropic thinking for a turn's depth: what a `careful` call sends (`thinking`, a
//! raised `max_tokens`) and which assistant messages carry their thinking blocks back.
//! Rules: platform.claude.com/docs/en/build-with-claude/extended-thinking (a budget of
//! at least 1,024, below `max_tokens`; adaptive thinking from Claude 4.6).

use super::Anthropic;
use crate::config::Reasoning;
use crate::provider::types::{Depth, Message};
use serde::Serialize;

/// The thinking budget a `careful` call asks for (`budget_tokens`; the API's least is
/// 1024, and it must stay under the call's `max_tokens`).
pub const THINKING_BUDGET: u32 = 8192;
const _: () = assert!(THINKING_BUDGET >= 1024 && THINKING_BUDGET < MAX_THINKING_CALL_TOKENS);
/// The most `max_tokens` a thinking call is raised to: the smallest output limit of the
/// models that think (Claude Opus 4 and 4.1: 32,000).
pub const MAX_THINKING_CALL_TOKENS: u32 = 32_000;

/// The `thinking` parameter.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingParam {
    Enabled { budget_tokens: u32 },
    Adaptive,
}

/// Which units carry their thinking blocks back: those from this message index on — the
/// ones after the last user message, i.e. the current turn's tool loop (the API requires
/// them there with thinking and tools; earlier turns are replayed as text only).
pub fn thinking_replay_from(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .map_or(0, |i| i + 1)
}

impl Anthropic {
    /// The `thinking` a call with `depth` sends: only `careful` ([`Depth::High`]) on a
    /// model that thinks — `adaptive` where the model prefers it (Claude 4.6 and later;
    /// a budget is refused from 4.7), else `enabled` with [`THINKING_BUDGET`] (kept under
    /// the call's `max_tokens`). `quick` sends nothing: thinking is off unless asked for.
    pub fn thinking(&self, depth: Option<Depth>) -> Option<ThinkingParam> {
        match (self.reasoning, depth) {
            (Reasoning::Anthropic { adaptive: true }, Some(Depth::High)) => {
                Some(ThinkingParam::Adaptive)
            }
            (Reasoning::Anthropic { adaptive: false }, Some(Depth::High)) => {
                Some(ThinkingParam::Enabled {
                    budget_tokens: THINKING_BUDGET.min(self.max_tokens_for(depth) - 1),
                })
            }
            _ => None,
        }
    }

    /// A call's `max_tokens`: the configured cap, raised by the thinking budget when the
    /// call thinks (thinking counts against it), up to [`MAX_THINKING_CALL_TOKENS`] —
    /// never below the configured cap.
    pub fn max_tokens_for(&self, depth: Option<Depth>) -> u32 {
        let thinks = matches!(
            (self.reasoning, depth),
            (Reasoning::Anthropic { .. }, Some(Depth::High))
        );
        if !thinks {
            return self.max_tokens;
        }
        self.max_tokens
            .saturating_add(THINKING_BUDGET)
            .min(MAX_THINKING_CALL_TOKENS)
            .max(self.max_tokens)
    }
}
