//! `Agent`: what every turn's agent works with — the provider, the base prompt, the tools
//! and their caps, the modes' knowledge, scene memory, the context window, Home Assistant —
//! and every method of it but the tool loop's (`tool_loop`): a turn's first request
//! ([`Agent::prepare`]) and what follows a recorded turn ([`Agent::after_turn`]).
//!
//! The first request: the system message, the replayed history, the current user message
//! with its kept blocks, and the aside — with the tool environment and who the calls are
//! for.
//!
//! Under exact replay, a kept block (knowledge snippets, the speaker's profile, a
//! switched strategy, the memories recalled for a normal chat or for a group or room in a
//! mode session) is sent once and replayed after that: it is left out while the replayed
//! window already holds it. What holds for this turn only (memories recalled for a
//! private chat in a mode session, which several chats share; a strategy's per-turn
//! sections; a channel's hint) is the aside, never replayed.
//!
//! After a turn is recorded: the observation handed to scene memory, and the compaction
//! started off every actor when a history has grown.

use super::recall::{Recall, RecallAudit};
use super::{prompt_shape, AgentOutcome, Prepared, TurnCtx};
use crate::config::Replay;
use crate::config::ToolsConfig;
use crate::context::budget::Source;
use crate::context::compaction;
use crate::context::Context;
use crate::context::{Plan, PlanError};
use crate::modes::TurnTicket;
use crate::prompt::{self, TailInfo, TailSection};
use crate::provider::Provider;
use crate::provider::{CallMeta, Message, PromptShape};
use crate::tools::{self, ToolEnv};
use crate::turn::{Failure, TurnError};
use std::sync::Arc;
use tracing::warn;

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

impl Agent {
    /// Tell scene memory that this turn's situation occurred, with the tools it called
    /// (once per turn, whatever the strategy). Handed to the memory thread: the reply
    /// never waits for it, nor fails with it.
    pub fn observe_turn(&self, t: &super::TurnCtx<'_>, tools: Vec<String>) {
        let scene = t.scene_in(&self.memory).clone();
        self.memory.observe(scene, tools, t.tail.now.timestamp());
    }

    /// A normal chat's carried block (the ended session's id and the block), if any.
    pub(super) fn carried(&self, ticket: &TurnTicket) -> Option<(String, Arc<str>)> {
        let s = ticket.chat.as_ref()?.carried.as_ref()?;
        Some((s.session_id.clone(), self.context.carried_block(s)?))
    }

    /// After a turn was recorded (the kernel calls this, off every actor): compact its
    /// history — the mode session's, or the normal chat's — in the background if it
    /// passed the threshold.
    pub fn after_turn(&self, ticket: &TurnTicket, channel: &str, chat_id: &str) {
        self.compact_later(ticket, channel, chat_id);
    }

    pub(super) fn compact_later(&self, ticket: &TurnTicket, channel: &str, chat_id: &str) {
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

/// The current user message as planned: the message and its aside, the plan (or why
/// it cannot be sent), and the knowledge snippets its kept blocks carry.
struct First {
    current: prompt::Current,
    planned: Result<Plan, PlanError>,
    snippets: Vec<String>,
    /// What each knowledge reference got.
    shares: crate::knowledge::Shares,
    /// The tokens of the `[工具结果]` block this message sent.
    tool_tokens: u32,
    /// The memories recalled, and what their blocks cost in this request.
    recalled: RecallAudit,
}

/// The first request built from a plan.
struct Built {
    messages: Vec<Message>,
    refused: Option<AgentOutcome>,
    shape: Option<Arc<PromptShape>>,
    counted: u64,
    tokens: u32,
}

impl Agent {
    /// Everything a turn's requests are made of: the first request's messages, the tool
    /// environment and who the calls are for. `strategy.standing` (the strategy's block)
    /// ends the system message; `extra` sections (a strategy's per-turn ones) go at the
    /// end of the dynamic tail, after the user's words: counted in the budget, sent in
    /// this turn only.
    pub fn prepare(
        &self,
        t: &TurnCtx<'_>,
        strategy: prompt::StrategyBlocks<'_>,
        extra: &[TailSection],
    ) -> Prepared {
        let ticket = t.ticket;
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
        let first = self.first_message(t, &system, source, strategy, extra);
        let sent = first.planned.is_ok().then(|| first.current.message.clone());
        let built = match first.planned {
            Ok(plan) => self.build(
                t,
                system,
                plan,
                first.current,
                (first.snippets, first.shares, first.tool_tokens),
                first.recalled,
            ),
            Err(e) => too_big(e),
        };
        Prepared {
            turn_from: built.messages.len(),
            messages: built.messages,
            env: self.tool_env(t),
            meta: CallMeta {
                channel: t.tail.channel.to_string(),
                chat_id: t.tail.chat_id.to_string(),
                session_id: ticket.mode.as_ref().map(|m| m.session_id.clone()),
                session_dir: ticket.mode.as_ref().map(|m| m.session_dir.clone()),
                purpose: "turn",
                shape: built.shape,
                turn: Some(crate::provider::TurnTag::new(
                    ticket.began_at.timestamp_millis(),
                    ticket.turn_id,
                )),
            },
            refused: built.refused,
            counted: built.counted,
            tokens: built.tokens,
            partials: t.turn.partials.clone(),
            sent,
            depth: None,
            kept: Vec::new(),
        }
    }

    /// The current message planned against the window. Under exact replay, what the
    /// replayed window already holds is not sent again; the window's start is known once
    /// the plan is made, so a plan that had to cut further than the caps say is made
    /// once more with the blocks that left it.
    fn first_message(
        &self,
        t: &TurnCtx<'_>,
        system: &str,
        source: Source<'_>,
        strategy: prompt::StrategyBlocks<'_>,
        extra: &[TailSection],
    ) -> First {
        let (ticket, replay) = (t.ticket, self.context.replay);
        // recalled memories (by scene, and by wording when the scene brings too few):
        // kept like snippets, sent once while the replayed window holds them, so turns
        // that recall one after the other still hold each other whole (`recall`)
        let recall = Recall::of(&self.memory, t, replay);
        // what holds for this turn only: those memories when not kept, a strategy's blocks
        let mut aside: Vec<TailSection> = recall.aside();
        aside.extend(extra.iter().cloned());
        let mut from = match replay {
            Replay::Exact => self.context.replay_start(&ticket.history, source),
            Replay::Lean => usize::MAX,
        };
        loop {
            let (kept, mut turn_aside, shares) = self.kept_blocks(t, from, strategy, &recall);
            turn_aside.extend(aside.iter().cloned());
            let snippets: Vec<String> = kept
                .iter()
                .filter(|s| s.label == crate::knowledge::LABEL)
                .flat_map(|s| crate::knowledge::sources_in(&s.body))
                .collect();
            let sent: Vec<&TailSection> = kept.iter().chain(&turn_aside).collect();
            let recalled = recall.audit(&self.context.calibration, &sent);
            let tool_tokens = super::tool_results::tokens(&self.context.calibration, &sent);
            let current = prompt::current(ticket, &t.tail, &kept, &turn_aside, t.text);
            let parts: Vec<&str> = std::iter::once(current.message.as_str())
                .chain(current.aside.as_deref())
                .collect();
            let planned = self.context.plan(system, &parts, &ticket.history, source);
            match &planned {
                Ok(plan) if replay == Replay::Exact && plan.from > from => from = plan.from,
                _ => {
                    return First {
                        current,
                        planned,
                        snippets,
                        shares,
                        tool_tokens,
                        recalled,
                    }
                }
            }
        }
    }

    /// The blocks the current message keeps (sent with the words, replayed after) and
    /// those of the turn's aside, for a replayed window that starts at record `from`;
    /// `recall`: the memories recalled (those kept that the window does not hold yet are
    /// sent).
    fn kept_blocks(
        &self,
        t: &TurnCtx<'_>,
        from: usize,
        strategy: prompt::StrategyBlocks<'_>,
        recall: &Recall,
    ) -> (Vec<TailSection>, Vec<TailSection>, crate::knowledge::Shares) {
        let history = &t.ticket.history;
        let seen = |text: &str| window_holds(history, from, text);
        let mut kept: Vec<TailSection> = Vec::new();
        let mut turn_aside: Vec<TailSection> = Vec::new();
        let mut shares = Vec::new();
        if let Some(m) = &t.ticket.mode {
            let (sections, got) =
                self.knowledge
                    .sections_for(&m.mode_id, t.text, &m.system_prompt, &seen);
            shares = got;
            for s in sections {
                // a constant objective is in the frozen prompt; one with the words filled
                // in holds for this turn only
                if s.label == crate::knowledge::LABEL {
                    kept.push(s);
                } else {
                    turn_aside.push(s);
                }
            }
        }
        // what earlier turns' tools returned that matters later: each line sent once
        let replay = self.context.replay;
        kept.extend(super::tool_results::section(history, from, replay, &seen));
        kept.extend(profile_section(&t.tail, t.profile.as_deref()).filter(|s| !seen(&s.body)));
        // what the channel's peer added to the conversation: sent once while the window
        // holds it, again when it changed
        let peer = [
            prompt::peer_note_section(t.turn.peer_note.as_deref()),
            prompt::peer_log_section(&t.turn.peer_log),
        ];
        kept.extend(peer.into_iter().flatten().filter(|s| !seen(&s.body)));
        kept.extend(recall.kept(seen));
        match self.context.replay {
            // the window says which strategy it last heard of; a message says so only
            // when that is not the one in force
            Replay::Exact => kept.extend(strategy_change(
                strategy.switched,
                last_strategy_in(history, from),
            )),
            Replay::Lean => turn_aside.extend(strategy.switched.cloned()),
        }
        (kept, turn_aside, shares)
    }

    /// The first request's messages and audit shape from its plan.
    fn build(
        &self,
        t: &TurnCtx<'_>,
        system: String,
        plan: Plan,
        current: prompt::Current,
        (snippets, shares, tool_tokens): (Vec<String>, crate::knowledge::Shares, u32),
        recalled: RecallAudit,
    ) -> Built {
        if plan.wants_compaction {
            // the safety net: this prompt had to be cut; compact in the background
            self.compact_later(t.ticket, t.tail.channel, t.tail.chat_id);
        }
        let guest = t.turn.facts().trust == crate::turn::Trust::Guest;
        let aside = current.aside.is_some();
        let replay = self.context.replay;
        let messages = prompt::build_messages(system, t.ticket, &plan, replay, guest, current);
        let mut shape = prompt_shape(&self.context, &plan, &messages);
        shape.snippets = snippets;
        shape.knowledge = shares;
        shape.aside = aside;
        super::shape::with_recall(&mut shape, recalled);
        super::shape::out_of_tail(&mut shape, "tool_results", tool_tokens);
        Built {
            messages,
            refused: None,
            shape: Some(Arc::new(shape)),
            counted: plan.tokenizer_total,
            tokens: plan.total(),
        }
    }

    /// What the turn's tool calls may touch.
    fn tool_env(&self, t: &TurnCtx<'_>) -> ToolEnv {
        let turn = t.turn;
        ToolEnv {
            turn_id: t.ticket.turn_id,
            user_text: t.text.to_string(),
            may_switch_modes: turn.may_switch_modes,
            trust: turn.facts().trust,
            place: turn.facts().place.clone(),
            origin: crate::reminders::Origin {
                channel: turn.channel.clone(),
                chat_id: turn.chat_id.clone(),
                speaker_id: turn.speaker_id.clone(),
                target: turn.reply_target().to_string(),
            },
            mode: std::sync::Mutex::new(t.ticket.mode.as_ref().map(|m| m.mode_id.clone())),
            written: Default::default(),
            memory: tools::memory::MemoryEnv::new(
                &self.memory,
                t.scene_in(&self.memory).clone(),
                turn,
                t.tail.now,
            ),
            choice: Default::default(),
            strategy: None,
            home: self.home.turn_view(turn),
        }
    }
}

/// A turn whose system prompt, tools and message alone pass the window: refused.
fn too_big(e: PlanError) -> Built {
    warn!(error = %e, "turn refused: it does not fit the context window");
    let reply = "抱歉，这条消息加上系统设定已经超出了模型的上下文窗口，没法发送。请说得短一些，或者分几次说。".to_string();
    Built {
        messages: Vec::new(),
        refused: Some(AgentOutcome {
            reply,
            error: Some(TurnError::new(Failure::Context, e.to_string())),
        }),
        shape: None,
        counted: 0,
        tokens: 0,
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
fn profile_section(tail: &TailInfo<'_>, profile: Option<&str>) -> Option<TailSection> {
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
