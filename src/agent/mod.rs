//! The per-turn agent: builds the prompt from a [`TurnTicket`], calls the provider, runs
//! tool calls (capped at `max_tool_rounds` round trips), and returns the final reply.
//! It runs outside every actor; it holds no lock and no mailbox while the LLM thinks.
//!
//! What a runaway model can make it do is bounded: at most `tools.max_calls_per_response`
//! calls of one response and `tools.max_calls_per_turn` of the turn are run — every other
//! call still gets a result (an error), as the protocol requires one per `tool_call_id` —
//! and the reply recorded and delivered is at most `agent.max_reply_chars` characters,
//! cut with a visible mark.

use crate::config::{Replay, ToolsConfig};
use crate::context::budget::Source;
use crate::context::{compaction, Context, Plan, PlanError};
use crate::modes::TurnTicket;
use crate::prompt::{self, TailInfo};
use crate::provider::{BlockTokens, CallMeta, Message, PromptShape, Provider};
use crate::tools::{self, ToolEnv};
use crate::turn::{Failure, TurnError};

mod tool_loop;
mod turn_ctx;
use std::sync::Arc;
use tracing::warn;
pub use turn_ctx::TurnCtx;

pub struct Agent {
    pub provider: Provider,
    pub base_prompt: Arc<str>,
    /// The tools offered to the model (built once at start, in a fixed order).
    pub tools: tools::ToolRegistry,
    pub max_tool_rounds: u32,
    pub normal_history_turns: usize,
    pub files: Arc<crate::tools::FileAccess>,
    /// `agent.max_reply_chars`.
    pub max_reply_chars: usize,
    /// The caps of `[tools]`.
    pub tool_limits: ToolsConfig,
    /// The household's reminders (the `set_reminder` tools).
    pub reminders: crate::cron::CronHandle,
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

    /// Everything a turn's requests are made of: the first request's messages, the tool
    /// environment and who the calls are for. `strategy.standing` (the strategy's block) ends the
    /// system message; `extra` sections (a strategy's per-turn ones) go at the end of the
    /// dynamic tail, after the user's words: counted in the budget, sent in this turn only.
    pub fn prepare(
        &self,
        t: &TurnCtx<'_>,
        strategy: prompt::StrategyBlocks<'_>,
        extra: &[prompt::TailSection],
    ) -> Prepared {
        let (ticket, tail, turn, user_text) = (t.ticket, &t.tail, t.turn, t.text);
        let (profile, modes) = (t.profile.as_deref(), t.modes);
        let replay = self.context.replay;
        let system = prompt::system_message(&self.base_prompt, ticket, strategy.standing);
        let mode_checkpoint = ticket
            .mode
            .as_ref()
            .map(|m| crate::context::checkpoint::path_in(&m.session_dir));
        let carried = self.carried(ticket);
        let source = match (&ticket.mode, &mode_checkpoint) {
            (Some(m), Some(file)) => Source::mode(file, self.context.policy(&m.mode_id)),
            _ => Source {
                carried: carried.as_ref().map(|(id, b)| (id.as_str(), b)),
                ..Source::normal(
                    self.normal_history_turns,
                    ticket.chat.as_ref().map(|c| c.checkpoint.as_path()),
                )
            },
        };
        // what holds for this turn only: recalled memories (they may be private to the
        // chat they were recalled for, and a mode session is shared), a strategy's blocks
        let mut aside: Vec<prompt::TailSection> = Vec::new();
        aside.extend(self.memory.recall_section(turn, tail.now));
        aside.extend(prompt::peer_note_section(turn.peer_note.as_deref()));
        aside.extend(extra.iter().cloned());
        // under exact replay, what the replayed window already holds is not sent again;
        // the window's start is known once the plan is made, so a plan that had to cut
        // further than the caps say is made once more with the blocks that left it
        let mut from = match replay {
            Replay::Exact => self.context.replay_start(&ticket.history, source),
            Replay::Lean => usize::MAX,
        };
        let (current, planned, snippets) = loop {
            let seen = |text: &str| window_holds(&ticket.history, from, text);
            let mut kept: Vec<prompt::TailSection> = Vec::new();
            let mut turn_aside: Vec<prompt::TailSection> = Vec::new();
            if let Some(m) = &ticket.mode {
                for s in self
                    .knowledge
                    .sections_for(&m.mode_id, user_text, &m.system_prompt, &seen)
                {
                    // a constant objective is in the frozen prompt; one with the words
                    // filled in holds for this turn only
                    if s.label == crate::knowledge::LABEL {
                        kept.push(s);
                    } else {
                        turn_aside.push(s);
                    }
                }
            }
            kept.extend(profile_section(tail, profile).filter(|s| !seen(&s.body)));
            match replay {
                // the window says which strategy it last heard of; a message says so
                // only when that is not the one in force
                Replay::Exact => kept.extend(strategy_change(
                    strategy.switched,
                    last_strategy_in(&ticket.history, from),
                )),
                Replay::Lean => turn_aside.extend(strategy.switched.cloned()),
            }
            turn_aside.extend(aside.iter().cloned());
            let snippets: Vec<String> = kept
                .iter()
                .filter(|s| s.label == crate::knowledge::LABEL)
                .flat_map(|s| crate::knowledge::sources_in(&s.body))
                .collect();
            let current = prompt::current(ticket, tail, &kept, &turn_aside, user_text);
            let parts: Vec<&str> = std::iter::once(current.message.as_str())
                .chain(current.aside.as_deref())
                .collect();
            let planned = self.context.plan(&system, &parts, &ticket.history, source);
            match &planned {
                Ok(plan) if replay == Replay::Exact && plan.from > from => from = plan.from,
                _ => break (current, planned, snippets),
            }
        };
        let sent = planned.is_ok().then(|| current.message.clone());
        let (messages, refused, shape, counted, tokens) = match planned {
            Ok(plan) => {
                if plan.wants_compaction {
                    // the safety net: this prompt had to be cut; compact in the background
                    self.compact_later(ticket, tail.channel, tail.chat_id);
                }
                let guest = turn.facts().trust == crate::turn::Trust::Guest;
                let aside = current.aside.is_some();
                let messages =
                    prompt::build_messages(system, ticket, &plan, replay, guest, current);
                let mut shape = self.shape(&plan, &messages);
                shape.snippets = snippets;
                shape.aside = aside;
                let tokens = plan.total();
                (
                    messages,
                    None,
                    Some(Arc::new(shape)),
                    plan.tokenizer_total,
                    tokens,
                )
            }
            Err(e @ PlanError::TooBig { .. }) => {
                warn!(error = %e, "turn refused: it does not fit the context window");
                let reply = "抱歉，这条消息加上系统设定已经超出了模型的上下文窗口，没法发送。请说得短一些，或者分几次说。".to_string();
                (
                    Vec::new(),
                    Some(AgentOutcome {
                        reply,
                        error: Some(TurnError::new(Failure::Context, e.to_string())),
                    }),
                    None,
                    0,
                    0,
                )
            }
        };
        let env = ToolEnv {
            files: self.files.clone(),
            modes: modes.clone(),
            turn_id: ticket.turn_id,
            user_text: user_text.to_string(),
            may_switch_modes: turn.may_switch_modes,
            trust: turn.facts().trust,
            reminders: self.reminders.clone(),
            origin: crate::reminders::Origin {
                channel: turn.channel.clone(),
                chat_id: turn.chat_id.clone(),
                speaker_id: turn.speaker_id.clone(),
                target: turn.reply_target().to_string(),
            },
            mode: std::sync::Mutex::new(ticket.mode.as_ref().map(|m| m.mode_id.clone())),
            limits: self.tool_limits.clone(),
            written: Default::default(),
            memory: tools::memory::MemoryEnv::new(&self.memory, turn, tail.now),
            choice: Default::default(),
            strategy: None,
            home: self.home.env_for(turn),
        };
        let meta = CallMeta {
            channel: tail.channel.to_string(),
            chat_id: tail.chat_id.to_string(),
            session_id: ticket.mode.as_ref().map(|m| m.session_id.clone()),
            session_dir: ticket.mode.as_ref().map(|m| m.session_dir.clone()),
            purpose: "turn",
            shape,
        };
        Prepared {
            messages,
            env,
            meta,
            refused,
            counted,
            tokens,
            partials: turn.partials.clone(),
            sent,
        }
    }

    /// The audit shape of a first request: its blocks with their token counts, the
    /// history range replayed, and a digest of the stable prefix (tools, system,
    /// checkpoint, history: everything before the current user message).
    fn shape(&self, plan: &Plan, messages: &[Message]) -> PromptShape {
        prompt_shape(&self.context, plan, messages)
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

/// Whether a message that records `[from, len)` of `history` sent (the replayed window
/// under exact replay) holds `text`.
fn window_holds(history: &crate::history::HistoryView, from: usize, text: &str) -> bool {
    !text.is_empty()
        && history.with_range(from, |records, _| {
            records
                .iter()
                .filter(|r| r.error.is_none())
                .any(|r| r.sent.as_deref().is_some_and(|s| s.contains(text)))
        })
}

/// The body of the last `[策略]` block the messages of `[from, len)` of `history` sent.
fn last_strategy_in(history: &crate::history::HistoryView, from: usize) -> Option<String> {
    history.with_range(from, |records, _| {
        records
            .iter()
            .rev()
            .filter(|r| r.error.is_none())
            .find_map(|r| prompt::last_strategy_block(r.sent.as_deref()?).map(str::to_string))
    })
}

/// The strategy block a message must carry under exact replay: the switched one when the
/// window has not heard of it last (a switch, or its block compacted away), a note that
/// the standing one holds again when the window's last word was a switched one.
fn strategy_change(
    switched: Option<&prompt::TailSection>,
    last: Option<String>,
) -> Option<prompt::TailSection> {
    match (switched, last) {
        (Some(s), last) if last.as_deref() != Some(s.body.trim()) => Some(s.clone()),
        (None, Some(last)) if last != prompt::STRATEGY_BACK => Some(prompt::TailSection {
            label: prompt::STRATEGY_LABEL.into(),
            body: prompt::STRATEGY_BACK.into(),
        }),
        _ => None,
    }
}

/// The current speaker's `USER.md` as a kept block of their message (never in the
/// system message: a group where two people alternate would change it every turn).
fn profile_section(tail: &TailInfo<'_>, profile: Option<&str>) -> Option<prompt::TailSection> {
    let p = profile.map(str::trim).filter(|p| !p.is_empty())?;
    let who = match tail.speaker_name {
        Some(name) => format!("{name}（{}）", tail.speaker_id),
        None => tail.speaker_id.to_string(),
    };
    Some(prompt::TailSection {
        label: prompt::PROFILE_LABEL.into(),
        body: format!("{who}的 USER.md：\n{}", prompt::defang(p)),
    })
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
