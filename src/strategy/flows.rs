//! One turn through the strategy in force: the kernel calls [`run`] for every turn; every
//! flow builds its requests with `Agent::prepare` and runs tools with `Agent::round`,
//! folding each round into the turn's [`TurnResult`], so Build is the plain tool loop.
//!
//! Order of checks: an open `ask_user_choice` question in this chat (its answer is
//! replayed as the call's result, `User selected: …`; the answer to the backend's offer
//! of a mode is judged by [`offer`]); then a plan or spec waiting for
//! confirmation (household-wide: any chat may confirm it); then the strategy's own flow.

use super::ctx::{finish, older_than, Ctx};
use super::offer::{self, OfferAnswer};
use super::spoken::SpokenSetter;
use super::state::{PendingChoice, WorkKind};
use super::{reflect, work, Strategies, TurnResult};
use crate::agent::{cap_reply, Agent, TurnCtx};
use crate::config::StrategyKind;
use crate::prompt::TailSection;
use crate::provider::{Message, ToolCall};
use crate::tools::choice::{self, Parsed};
use crate::tools::set_strategy::Setter;
use std::sync::Arc;
use tracing::warn;

/// One turn, to its reply (at most `agent.max_reply_chars` characters).
pub async fn run(agent: &Agent, strategies: &Strategies, t: &TurnCtx<'_>) -> TurnResult {
    let (ticket, turn, user_text) = (t.ticket, t.turn, t.text);
    let mode = ticket
        .mode
        .as_ref()
        .map(|m| (m.mode_id.as_str(), m.session_id.as_str()));
    let eff = strategies.effective(mode).await;
    let rounds = eff.max_tool_rounds(agent.max_tool_rounds);
    let (standing, block) = eff.blocks(&strategies.standing(mode));
    let stamp = ticket
        .began_at
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, false);
    let setter: Arc<dyn Setter> =
        Arc::new(SpokenSetter::new(strategies, mode, turn, user_text, stamp));
    let c = Ctx {
        agent,
        st: strategies,
        t,
        eff,
        standing,
        block,
        rounds,
        setter,
    };
    let mut out = dispatch(&c).await;
    if out.outcome.error.is_none() {
        agent.observe_turn(t, out.called.clone());
    }
    if out.outcome.reply.chars().count() > agent.max_reply_chars {
        warn!(
            limit = agent.max_reply_chars,
            "reply cut at agent.max_reply_chars"
        );
        out.outcome.reply = cap_reply(out.outcome.reply, agent.max_reply_chars);
    }
    offer::after_answer(&c, out, agent.max_reply_chars).await
}

/// What an open question makes of this message.
enum Answer {
    None,
    Answered(PendingChoice, Parsed),
    Retry(String),
    NotTheAsker(PendingChoice),
    Dropped(PendingChoice),
    /// The asker's clear yes to the backend's offer of a mode.
    OfferAccepted(PendingChoice),
    /// Any other answer to an offer, or anyone else's: the offer is gone.
    OfferDropped(PendingChoice),
}

async fn check_answer(c: &Ctx<'_>) -> Answer {
    let key = c.t.turn.chat_key();
    let ttl = chrono::Duration::minutes(c.st.config().choice_minutes as i64);
    let now = c.now();
    let speaker = c.t.turn.speaker_id.clone();
    let text = c.t.text.to_string();
    let group = c.t.turn.facts().audience == crate::turn::Audience::Group;
    let r =
        c.st.update(|st| {
            let Some(p) = st.choices.get(&key).cloned() else {
                return Answer::None;
            };
            if p.asked.offer.is_some() {
                st.choices.remove(&key);
                return match offer::judge(&p, &speaker, &text, now) {
                    OfferAnswer::Expired => Answer::None,
                    OfferAnswer::Accepted => Answer::OfferAccepted(p),
                    OfferAnswer::Dropped => Answer::OfferDropped(p),
                };
            }
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

async fn dispatch(c: &Ctx<'_>) -> TurnResult {
    let mut extra = Vec::new();
    match check_answer(c).await {
        Answer::None => {}
        Answer::Answered(p, parsed) => return answered(c, p, parsed).await,
        Answer::OfferAccepted(p) if offer::switched_since(c, &p).await => {
            c.log("offer", "voided", &p.asked.question, None).await;
            extra.push(offer::voided_section(&p));
        }
        Answer::OfferAccepted(p) => return offer::accepted(c, p).await,
        Answer::OfferDropped(p) => {
            c.log("offer", "dropped", &p.asked.question, None).await;
            extra.push(offer::dropped_section(&p, &c.t.turn.speaker_id));
        }
        Answer::Retry(msg) => return TurnResult::say(msg, true),
        Answer::NotTheAsker(p) => extra.push(TailSection {
            label: "待回答的问题".into(),
            body: format!(
                "你刚问过 {}：“{}”，在等 {} 本人回答；{} 的这条消息不算回答，照常回应即可。",
                p.asker, p.asked.question, p.asker, c.t.turn.speaker_id
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
            let mut p = c.prepare(&extra);
            let out = c.round(&mut p).await.into();
            finish(c, &mut p, out).await
        }
    }
}

/// The answer to an open question: the call is replayed with `User selected: …` as its
/// result, and the turn goes on as a tool loop.
async fn answered(c: &Ctx<'_>, p: PendingChoice, parsed: Parsed) -> TurnResult {
    let result = choice::tool_result(&p.asked, &parsed);
    c.log("choice", "answered", &result, None).await;
    let mut prep = c.prepare(&[]);
    prep.messages.push(Message::Assistant {
        content: None,
        tool_calls: vec![ToolCall {
            id: p.asked.call_id.clone(),
            name: crate::tools::choice::NAME.into(),
            arguments: p.asked.arguments.clone(),
        }],
        reasoning_content: None,
        thinking: vec![],
    });
    prep.messages.push(Message::Tool {
        tool_call_id: p.asked.call_id.clone(),
        content: result,
    });
    let out = c.round(&mut prep).await.into();
    finish(c, &mut prep, out).await
}
