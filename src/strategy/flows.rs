//! One turn through the strategy in force: the kernel calls [`run`] for every turn; every
//! flow builds its requests with `Agent::prepare` and runs tools with `Agent::tool_loop`,
//! so Build is the plain tool loop.
//!
//! Order of checks: an open `ask_user_choice` question in this chat (its answer is
//! replayed as the call's result, `User selected: …`); then a plan or spec waiting for
//! confirmation (household-wide: any chat may confirm it); then the strategy's own flow.

use super::choice::{self, Parsed};
use super::journal::{self, clip, Entry};
use super::spoken::Voice;
use super::state::{PendingChoice, WorkKind, MAX_PENDING_CHOICES};
use super::{reflect, work, Effective, Strategies};
use crate::agent::{cap_reply, Agent, AgentOutcome, Prepared};
use crate::config::StrategyKind;
use crate::modes::{ModesHandle, TurnTicket};
use crate::prompt::{TailInfo, TailSection};
use crate::provider::{ChatRequest, ChatResponse, Message, ProviderError, ToolCall};
use crate::tools::set_strategy::Setter;
use crate::turn::Turn;
use chrono::{DateTime, FixedOffset};
use std::sync::Arc;
use tracing::warn;

/// A turn's outcome, and whether the reply waits for an answer (voice keeps listening).
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyOutcome {
    pub outcome: AgentOutcome,
    pub awaits_answer: bool,
}

impl StrategyOutcome {
    pub(super) fn done(outcome: AgentOutcome) -> Self {
        Self {
            outcome,
            awaits_answer: false,
        }
    }
    pub(super) fn say(reply: impl Into<String>, awaits_answer: bool) -> Self {
        Self {
            outcome: AgentOutcome {
                reply: reply.into(),
                error: None,
            },
            awaits_answer,
        }
    }
}

pub(super) struct Ctx<'a> {
    pub(super) agent: &'a Agent,
    pub(super) st: &'a Strategies,
    pub(super) ticket: &'a TurnTicket,
    pub(super) tail: &'a TailInfo<'a>,
    pub(super) profile: Option<&'a str>,
    pub(super) text: &'a str,
    pub(super) turn: &'a Turn,
    pub(super) modes: &'a ModesHandle,
    pub(super) eff: Effective,
    /// The strategy's `[策略]` block: in the tail of every turn of the strategy (the tail
    /// is never replayed, so it is paid for once per turn, not once per turn of history).
    pub(super) block: Option<TailSection>,
    pub(super) rounds: u32,
    /// Where an accepted `set_strategy` of this turn goes.
    pub(super) setter: Arc<dyn Setter>,
    /// The tools every tool loop of this turn called (for scene memory).
    pub(super) called: std::sync::Mutex<Vec<String>>,
}

impl Ctx<'_> {
    pub(super) fn session(&self) -> Option<&str> {
        self.ticket.mode.as_ref().map(|m| m.session_id.as_str())
    }
    pub(super) fn now(&self) -> DateTime<FixedOffset> {
        self.ticket.began_at
    }
    pub(super) fn stamp(&self) -> String {
        self.now()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
    }
    pub(super) async fn log(
        &self,
        flow: &str,
        stage: &str,
        text: &str,
        detail: Option<serde_json::Value>,
    ) {
        let e = Entry {
            timestamp: self.stamp(),
            flow,
            stage,
            channel: &self.turn.channel,
            chat_id: &self.turn.chat_id,
            speaker_id: &self.turn.speaker_id,
            session_id: self.session(),
            text: clip(text),
            detail,
        };
        journal::append(self.st.workspace(), &e).await;
    }
    /// The turn's first request, with `sections` put in the dynamic tail; its tools may
    /// change the strategy (`set_strategy`).
    pub(super) fn prepare(&self, sections: &[TailSection]) -> Prepared {
        let mut p = self.agent.prepare(
            self.ticket,
            self.tail,
            self.profile,
            self.text,
            self.turn,
            self.modes,
            sections,
        );
        p.env.strategy = Some(self.setter.clone());
        p
    }
    /// The agent's tool loop at this turn's round cap, remembering the tools it called.
    pub(super) async fn tool_loop(&self, p: &mut Prepared) -> AgentOutcome {
        let o = self.agent.tool_loop(p, self.rounds).await;
        self.called
            .lock()
            .expect("never poisoned")
            .extend(crate::agent::tools_called(&p.messages));
        o
    }
    /// The strategy's own block (when it must be sent) plus `extra`.
    pub(super) fn sections(&self, extra: Vec<TailSection>) -> Vec<TailSection> {
        let mut v = extra;
        v.extend(self.block.clone());
        v
    }
    pub(super) fn group_asker_only(&self, anyone: bool) -> bool {
        self.turn.channel == "qq" && self.turn.chat_id.starts_with("group:") && !anyone
    }
}

/// Add a user message, or extend the last one if it is already the user's.
pub(super) fn push_user(messages: &mut Vec<Message>, text: String) {
    if let Some(Message::User { content }) = messages.last_mut() {
        content.push_str("\n\n");
        content.push_str(&text);
        return;
    }
    messages.push(Message::User { content: text });
}

pub(super) fn push_assistant(messages: &mut Vec<Message>, text: &str) {
    messages.push(Message::Assistant {
        content: Some(text.to_string()),
        tool_calls: vec![],
        reasoning_content: None,
    });
}

/// One provider call without running tools (planning, review, revision).
pub(super) async fn ask(
    agent: &Agent,
    p: &Prepared,
    purpose: &'static str,
) -> Result<ChatResponse, ProviderError> {
    let mut meta = p.meta.clone();
    meta.purpose = purpose;
    let req = ChatRequest {
        messages: &p.messages,
        tools: agent.tools.definitions(),
    };
    agent.provider.complete(&req, &meta).await
}

pub(super) fn failed(e: ProviderError) -> StrategyOutcome {
    StrategyOutcome::done(AgentOutcome {
        reply: e.user_message(),
        error: Some(e.to_string()),
    })
}

pub(super) fn older_than(stamp: &str, now: DateTime<FixedOffset>, limit: chrono::Duration) -> bool {
    DateTime::parse_from_rfc3339(stamp)
        .map(|t| now - t > limit)
        .unwrap_or(true)
}

/// One turn, to its reply (at most `agent.max_reply_chars` characters).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    agent: &Agent,
    strategies: &Strategies,
    ticket: &TurnTicket,
    tail: &TailInfo<'_>,
    profile: Option<&str>,
    user_text: &str,
    turn: &Turn,
    modes: &ModesHandle,
) -> StrategyOutcome {
    let mode = ticket
        .mode
        .as_ref()
        .map(|m| (m.mode_id.as_str(), m.session_id.as_str()));
    let eff = strategies.effective(mode).await;
    let rounds = eff.max_tool_rounds(agent.max_tool_rounds);
    let block = eff.section();
    let stamp = ticket
        .began_at
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, false);
    let setter: Arc<dyn Setter> = Arc::new(Voice::new(strategies, mode, turn, user_text, stamp));
    let c = Ctx {
        agent,
        st: strategies,
        ticket,
        tail,
        profile,
        text: user_text,
        turn,
        modes,
        eff,
        block,
        rounds,
        setter,
        called: Default::default(),
    };
    let mut out = dispatch(&c).await;
    if out.outcome.error.is_none() {
        let called = std::mem::take(&mut *c.called.lock().expect("never poisoned"));
        agent.observe_turn(turn, tail.now, called);
    }
    if out.outcome.reply.chars().count() > agent.max_reply_chars {
        warn!(
            limit = agent.max_reply_chars,
            "reply cut at agent.max_reply_chars"
        );
        out.outcome.reply = cap_reply(out.outcome.reply, agent.max_reply_chars);
    }
    out
}

/// What an open question makes of this message.
enum Answer {
    None,
    Answered(PendingChoice, Parsed),
    Retry(String),
    NotTheAsker(PendingChoice),
    Dropped(PendingChoice),
}

async fn check_answer(c: &Ctx<'_>) -> Answer {
    let key = c.turn.chat_key();
    let ttl = chrono::Duration::minutes(c.st.config().choice_minutes as i64);
    let now = c.now();
    let speaker = c.turn.speaker_id.clone();
    let text = c.text.to_string();
    let group = c.turn.channel == "qq" && c.turn.chat_id.starts_with("group:");
    let r =
        c.st.update(|st| {
            let Some(p) = st.choices.get(&key).cloned() else {
                return Answer::None;
            };
            if older_than(&p.asked_at, now, ttl) {
                st.choices.remove(&key);
                return Answer::None;
            }
            if group && !p.asked.anyone && p.asker != speaker {
                return Answer::NotTheAsker(p);
            }
            match choice::parse(&text, &p.asked) {
                parsed @ (Parsed::Selected(_) | Parsed::Custom(_)) => {
                    st.choices.remove(&key);
                    Answer::Answered(p, parsed)
                }
                Parsed::OutOfRange(n) => Answer::Retry(format!(
                    "没有第 {n} 个选项，请回复 1 到 {} 之间的序号。",
                    p.asked.options.len()
                )),
                Parsed::TooMany => {
                    Answer::Retry("这个问题只能选一个，请回复一个序号或选项名。".into())
                }
                Parsed::Unrelated => {
                    st.choices.remove(&key);
                    Answer::Dropped(p)
                }
            }
        })
        .await;
    r.unwrap_or_else(|e| {
        warn!(error = %e, "strategy state not saved; the open question is left as it was");
        Answer::None
    })
}

async fn dispatch(c: &Ctx<'_>) -> StrategyOutcome {
    let mut extra = Vec::new();
    match check_answer(c).await {
        Answer::None => {}
        Answer::Answered(p, parsed) => return answered(c, p, parsed).await,
        Answer::Retry(msg) => return StrategyOutcome::say(msg, true),
        Answer::NotTheAsker(p) => extra.push(TailSection {
            label: "待回答的问题".into(),
            body: format!(
                "你刚问过 {}：“{}”，在等 {} 本人回答；{} 的这条消息不算回答，照常回应即可。",
                p.asker, p.asked.question, p.asker, c.turn.speaker_id
            ),
        }),
        Answer::Dropped(p) => {
            c.log("choice", "cancelled", &p.asked.question, None).await;
            extra.push(TailSection {
                label: "已取消的问题".into(),
                body: format!(
                    "你之前问的“{}”没有得到回答：用户的这条消息说的是别的，那个问题已作废。",
                    p.asked.question
                ),
            })
        }
    }
    if let Some(out) = work::pending_work(c).await {
        return out;
    }
    match c.eff.kind {
        StrategyKind::Plan => work::propose(c, WorkKind::Plan, extra).await,
        StrategyKind::Spec => work::propose(c, WorkKind::Spec, extra).await,
        StrategyKind::Reflect => reflect::reflect(c, extra).await,
        StrategyKind::Build | StrategyKind::Assist | StrategyKind::Custom => {
            let mut p = c.prepare(&c.sections(extra));
            let o = c.tool_loop(&mut p).await;
            finish(c, &mut p, o).await
        }
    }
}

/// After a tool loop: a question asked with `ask_user_choice` becomes the reply and
/// waits in this chat.
pub(super) async fn finish(c: &Ctx<'_>, p: &mut Prepared, o: AgentOutcome) -> StrategyOutcome {
    let Some(asked) = p.env.choice.take() else {
        return StrategyOutcome::done(o);
    };
    let reply = choice::render(&asked, &c.turn.channel, c.group_asker_only(asked.anyone));
    let pending = PendingChoice {
        asked: asked.clone(),
        asker: c.turn.speaker_id.clone(),
        asked_at: c.stamp(),
    };
    let key = c.turn.chat_key();
    let saved =
        c.st.update(|st| {
            st.choices.insert(key, pending);
            while st.choices.len() > MAX_PENDING_CHOICES {
                let oldest = st
                    .choices
                    .iter()
                    .min_by(|a, b| a.1.asked_at.cmp(&b.1.asked_at))
                    .map(|(k, _)| k.clone())
                    .expect("the map is not empty");
                st.choices.remove(&oldest);
            }
        })
        .await;
    c.log(
        "choice",
        "asked",
        &asked.question,
        serde_json::to_value(&asked.options).ok(),
    )
    .await;
    match saved {
        Ok(()) => StrategyOutcome::say(reply, true),
        Err(e) => StrategyOutcome {
            outcome: AgentOutcome {
                reply: format!("{reply}\n（注意：这个问题没能保存，回答时请把选项说完整。）"),
                error: Some(format!("pending choice not saved: {e}")),
            },
            awaits_answer: true,
        },
    }
}

/// The answer to an open question: the call is replayed with `User selected: …` as its
/// result, and the turn goes on as a tool loop.
async fn answered(c: &Ctx<'_>, p: PendingChoice, parsed: Parsed) -> StrategyOutcome {
    let result = choice::tool_result(&p.asked, &parsed);
    c.log("choice", "answered", &result, None).await;
    let mut prep = c.prepare(&c.sections(vec![]));
    prep.messages.push(Message::Assistant {
        content: None,
        tool_calls: vec![ToolCall {
            id: p.asked.call_id.clone(),
            name: crate::tools::choice::NAME.into(),
            arguments: p.asked.arguments.clone(),
        }],
        reasoning_content: None,
    });
    prep.messages.push(Message::Tool {
        tool_call_id: p.asked.call_id.clone(),
        content: result,
    });
    let o = c.tool_loop(&mut prep).await;
    finish(c, &mut prep, o).await
}
