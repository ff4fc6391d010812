//! The per-turn agent: builds the prompt from a [`TurnTicket`], calls the provider, runs
//! tool calls (capped at `max_tool_rounds` round trips), and returns the final reply.
//! It runs outside every actor; it holds no lock and no mailbox while the LLM thinks.
//!
//! What a runaway model can make it do is bounded: at most `tools.max_calls_per_response`
//! calls of one response and `tools.max_calls_per_turn` of the turn are run — every other
//! call still gets a result (an error), as the protocol requires one per `tool_call_id` —
//! and the reply recorded and delivered is at most `agent.max_reply_chars` characters,
//! cut with a visible mark.

use crate::config::ToolsConfig;
use crate::context::budget::Source;
use crate::context::{compaction, Context, Plan};
use crate::modes::TurnTicket;
use crate::prompt;
use crate::provider::{BlockTokens, CallMeta, Message, PromptShape, Provider};
use crate::tools::{self, ToolEnv};
use crate::turn::TurnError;

mod prepare;
mod tool_loop;
mod turn_ctx;
use std::sync::Arc;
pub use turn_ctx::TurnCtx;

pub struct Agent {
    pub provider: Provider,
    pub base_prompt: Arc<str>,
    /// The tools offered to the model (built once at start, in a fixed order).
    pub tools: tools::ToolRegistry,
    pub max_tool_rounds: u32,
    pub normal_history_turns: usize,
    /// `agent.max_reply_chars`.
    pub max_reply_chars: usize,
    /// The caps of `[tools]` on the calls of one response and of one turn.
    pub tool_limits: ToolsConfig,
    /// The modes' knowledge folders, searched for the active mode's snippets.
    pub knowledge: Arc<crate::knowledge::Knowledge>,
    /// Scene memory: recall into the tail, the memory tools, the post-turn observation.
    pub memory: crate::memory::Memory,
    /// The context window, the history budget and compaction.
    pub context: Arc<Context>,
    /// Home Assistant's tools and fast path.
    pub home: Arc<tools::home::HomeAccess>,
}

/// What ends a reply cut at `agent.max_reply_chars`.
pub const TRUNCATION_MARK: &str = "…（回答过长，已截断）";

/// `text` cut to at most `max_chars` characters, the mark included, when it is longer.
pub fn cap_reply(text: String, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text;
    }
    let keep = max_chars.saturating_sub(TRUNCATION_MARK.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(TRUNCATION_MARK);
    out
}

/// A turn made ready for the provider by [`Agent::prepare`].
pub struct Prepared {
    /// The messages sent: system, history, the current user message, then this turn's
    /// assistant messages and tool results as they come.
    pub messages: Vec<Message>,
    pub env: ToolEnv,
    pub meta: CallMeta,
    /// Set when the turn cannot be sent at all (the system prompt, the tools and the
    /// message alone pass the window): the tool loop answers this instead.
    pub refused: Option<AgentOutcome>,
    /// The first request by the bare tokenizer, to calibrate against reported usage.
    pub counted: u64,
    /// The first request's budgeted size; the tool loop adds what each round adds and
    /// stops before a request would pass the input budget.
    pub tokens: u32,
    /// The turn's partial-text sink (see [`crate::turn::Partials`]).
    pub partials: Option<crate::turn::Partials>,
    /// The current user message as sent, without its aside: the record's `sent`.
    pub sent: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    pub reply: String,
    /// Why the turn failed, if it did (the reply then explains it to the user).
    pub error: Option<TurnError>,
}

/// The names of the tools this turn's assistant messages called, in order.
pub fn tools_called(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.name.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

impl Agent {
    /// Tell scene memory that this turn's situation occurred, with the tools it called
    /// (once per turn, whatever the strategy). Handed to the memory thread: the reply
    /// never waits for it, nor fails with it.
    pub fn observe_turn(
        &self,
        turn: &crate::turn::Turn,
        now: chrono::DateTime<chrono::FixedOffset>,
        tools: Vec<String>,
    ) {
        self.memory
            .observe(self.memory.scene_of(turn, now), tools, now.timestamp());
    }

    /// A normal chat's carried block (the ended session's id and the block), if any.
    fn carried(&self, ticket: &TurnTicket) -> Option<(String, Arc<str>)> {
        let s = ticket.chat.as_ref()?.carried.as_ref()?;
        Some((s.session_id.clone(), self.context.carried_block(s)?))
    }

    /// After a turn was recorded (the kernel calls this, off every actor): compact its
    /// history — the mode session's, or the normal chat's — in the background if it
    /// passed the threshold.
    pub fn after_turn(&self, ticket: &TurnTicket, channel: &str, chat_id: &str) {
        self.compact_later(ticket, channel, chat_id);
    }

    fn compact_later(&self, ticket: &TurnTicket, channel: &str, chat_id: &str) {
        let system = prompt::system_message(&self.base_prompt, ticket, None);
        let (checkpoint, session_dir, session_id, policy, focus) =
            match (&ticket.mode, &ticket.chat) {
                (Some(m), _) => (
                    crate::context::checkpoint::path_in(&m.session_dir),
                    Some(m.session_dir.clone()),
                    Some(m.session_id.clone()),
                    self.context.policy(&m.mode_id),
                    self.context.compaction_focus(&m.mode_id),
                ),
                (None, Some(c)) => (
                    c.checkpoint.clone(),
                    None,
                    None,
                    Source::normal(self.normal_history_turns, None).policy,
                    None,
                ),
                (None, None) => return,
            };
        self.context.after_turn(
            &self.provider,
            compaction::Job {
                checkpoint,
                session_dir,
                session_id,
                carried: self.carried(ticket),
                history: ticket.history.clone(),
                system: system.into(),
                policy,
                focus,
                channel: channel.to_string(),
                chat_id: chat_id.to_string(),
                now: ticket
                    .began_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
            },
        );
    }
}

/// The audit shape of a first request: its blocks with their token counts, the history
/// range replayed, and a digest of the stable prefix (tools, then every message before
/// the current user message).
pub fn prompt_shape(ctx: &Context, plan: &Plan, messages: &[Message]) -> PromptShape {
    let mut blocks = vec![("system", plan.system_tokens), ("tools", plan.tools_tokens)];
    if plan.carried.is_some() {
        blocks.push(("carried", plan.carried_tokens));
    }
    if plan.checkpoint.is_some() {
        blocks.push(("checkpoint", plan.checkpoint_tokens));
    }
    blocks.push(("history", plan.history_tokens));
    blocks.push(("tail", plan.tail_tokens));
    let mut h = ctx.tools_hash();
    for m in &messages[..messages.len().saturating_sub(1)] {
        let (role, text) = match m {
            Message::System { content } => ("system", content.as_str()),
            Message::User { content } => ("user", content.as_str()),
            Message::Assistant { content, .. } => {
                ("assistant", content.as_deref().unwrap_or_default())
            }
            Message::Tool { content, .. } => ("tool", content.as_str()),
        };
        h = crate::context::fnv1a(h, role.as_bytes());
        h = crate::context::fnv1a(h, text.as_bytes());
    }
    PromptShape {
        blocks: blocks
            .into_iter()
            .map(|(name, tokens)| BlockTokens {
                name: name.into(),
                tokens: u64::from(tokens),
            })
            .collect(),
        history_from: plan.from,
        history_to: plan.to,
        compacted_through: plan.checkpoint.as_ref().map(|c| c.through),
        snippets: Vec::new(),
        aside: false,
        prefix_hash: format!("{h:016x}"),
    }
}

#[cfg(test)]
mod tests;
