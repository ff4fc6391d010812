//! The answer to the backend's own questions: its offer of a mode
//! ([`crate::modes::mode_core::offer`]), and its question after the words of a switch were
//! unsure ("要退出做饭模式吗？", `switch::unsure`). The question waits in its chat like
//! any `ask_user_choice` question, but its answer is judged here, never by the model.
//! Only a clear yes ([`chose_yes`] to an offer; [`Confirming::said_yes`] to a question: an
//! assent or its own verbs — to enter, to exit, or to go back to a paused parent) from
//! the person who was asked, in that chat, within [`OFFER_FOR_MINUTES`], switches — as
//! that person's command, with the checks of one (who may switch, the mode, what is
//! active now): entering makes the answering turn the
//! session's first record, exiting its last before the archive, recorded with the
//! question it answered. Any other answer, or anyone else's, drops the question, and the
//! message is answered as usual.
//!
//! [`after_answer`]: the offer made from the answer rather than the words — when a normal
//! chat's answer turns out to be a mode's work (its `offer.answer` signs), the question
//! follows the answer and waits like any offer.

use super::ctx::{finish, keep_question, older_than, Ctx};
use super::state::PendingChoice;
use super::TurnResult;
use crate::modes::mode_core::offer::{chose_yes, Confirming, OFFER_FOR_MINUTES};
use crate::modes::Switched;
use crate::prompt::TailSection;
use crate::provider::{Message, ToolCall};
use crate::tools::choice::rules::{Asking, OfferTag, MAX_AFTER_ANSWER_CHARS};
use chrono::{DateTime, FixedOffset};

/// What a message makes of a pending offer (the offer is gone either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OfferAnswer {
    /// Past its time: the message is not an answer.
    Expired,
    Accepted,
    Dropped,
}

pub(super) fn judge(
    p: &PendingChoice,
    speaker: &str,
    text: &str,
    now: DateTime<FixedOffset>,
) -> OfferAnswer {
    if older_than(
        &p.asked_at,
        now,
        chrono::Duration::minutes(OFFER_FOR_MINUTES),
    ) {
        OfferAnswer::Expired
    } else if p.asker == speaker && said_yes(p, text) {
        OfferAnswer::Accepted
    } else {
        OfferAnswer::Dropped
    }
}

/// A yes to this question: to an offer, its yes; to a switch question, the action's.
fn said_yes(p: &PendingChoice, text: &str) -> bool {
    match &p.asked.offer {
        Some(OfferTag {
            why: Asking::Unsure,
            action,
            returns,
            ..
        }) => Confirming::new(*action, *returns).said_yes(text),
        _ => chose_yes(text),
    }
}

/// What the model is told when an offer was dropped by this message.
pub(super) fn dropped_section(p: &PendingChoice, speaker: &str) -> TailSection {
    let whose = if p.asker == speaker {
        "这条消息不是明确的“是”".to_string()
    } else {
        format!("问题只问了 {}，{speaker} 的回答不算", p.asker)
    };
    let (label, what) = match p.asked.is_confirmation() {
        true => (
            "已作废的确认",
            "所以没有切换模式，问题已作废。照常回应这条消息",
        ),
        false => (
            "已作废的提议",
            "所以没有打开模式，提议已作废。照常回应这条消息，不要再提议",
        ),
    };
    TailSection {
        label: label.into(),
        body: format!("后端刚才问“{}”，{whose}，{what}。", p.asked.question),
    }
}

/// Has a mode been switched (entered or left, from any chat) since `p` was asked? Then
/// its yes answers a question about a state that is gone.
pub(super) async fn switched_since(c: &Ctx<'_>, p: &PendingChoice) -> bool {
    let Some(asked_in) = p.asked.offer.as_ref().and_then(|t| t.asked_in.as_deref()) else {
        return false;
    };
    match c.t.modes.status().await {
        Ok(now) => now.stamp() != asked_in,
        // the modes cannot say: the yes is not taken on a guess
        Err(_) => true,
    }
}

/// What the model is told when a yes came after a switch that voided the question.
pub(super) fn voided_section(p: &PendingChoice) -> TailSection {
    let label = match p.asked.is_confirmation() {
        true => "已作废的确认",
        false => "已作废的提议",
    };
    TailSection {
        label: label.into(),
        body: format!(
            "后端刚才问“{}”，但之后模式已经切换过了，这个“是”不再算数，没有切换模式。照常回应这条消息；要切换的话请对方明确地再说一次。",
            p.asked.question
        ),
    }
}

/// The asker said yes: switch as their command, then let the model answer (the call is
/// replayed with the outcome as its result, as for any answered question).
pub(super) async fn accepted(c: &Ctx<'_>, p: PendingChoice) -> TurnResult {
    let tag = p
        .asked
        .offer
        .clone()
        .expect("only the backend's question is accepted here");
    let turn_id = c.t.ticket.turn_id;
    let switched = match tag.why {
        Asking::Offer => c.t.modes.accept_offer(tag.mode_id, turn_id).await,
        // the checks of a command: who may switch here, then the mode's own
        Asking::Unsure if !c.t.turn.may_switch_modes => Err(crate::modes::SwitchError::Refused(
            crate::modes::Refusal::NotPermitted,
        )),
        Asking::Unsure => {
            (c.t.modes)
                .confirm_switch(tag.action, tag.mode_id, turn_id)
                .await
        }
    };
    let yes = p.asked.options.first().cloned().unwrap_or_default();
    let (did, not) = match tag.why {
        Asking::Offer => ("entered the mode", "entered"),
        Asking::Unsure => ("switched the mode", "switched"),
    };
    let (stage, result) = match &switched {
        Ok(s) => (
            "accepted",
            match &tag.after_answer {
                None => format!("User selected: {yes}. The backend {did} as their command: {s}"),
                Some(answer) => format!(
                    "User selected: {yes}. The backend {did} as their command: {s}. The offer followed this answer of yours outside the mode; go on from it: {answer}"
                ),
            },
        ),
        Err(e) => (
            "failed",
            format!("User selected: {yes}, but the mode was not {not}: {e}"),
        ),
    };
    let flow = match tag.why {
        Asking::Offer => "offer",
        Asking::Unsure => "confirm",
    };
    c.log(flow, stage, &result, None).await;
    let mut prep = c.prepare(&[]);
    if let Ok(Switched::Entered { mode_id, .. }) = &switched {
        prep.env.entered(mode_id);
    }
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
    let mut out = finish(c, &mut prep, out).await;
    // the answer is kept with the question it answered (an exit's last record, an
    // entry's first)
    if switched.is_ok() {
        out.recorded_user = Some(format!("{}（回答“{}”）", c.t.text, p.asked.question));
    }
    out
}

/// After a normal chat's answer: when the answer was a mode's work
/// ([`crate::modes::answer_signs`]), offer that mode once — the fixed question follows
/// the answer and waits in the chat's one question slot, judged as any offer. On the
/// limits of the model's offer (no mode active, not a guest, only a sender who may switch
/// modes here, once a day per chat or satellite), without the user's words; never after
/// an error or a question. The reply stays within `max_chars`: the answer is cut, never
/// the question.
pub(super) async fn after_answer(c: &Ctx<'_>, out: TurnResult, max_chars: usize) -> TurnResult {
    let turn = c.t.turn;
    let reply = &out.outcome.reply;
    if out.outcome.error.is_some()
        || out.awaits_answer
        || reply.trim().is_empty()
        || c.t.ticket.mode.is_some()
        || turn.facts().trust == crate::turn::Trust::Guest
        || !turn.may_switch_modes
    {
        return out;
    }
    let key = crate::tools::offer_mode::chat_key(
        turn.facts().place.as_deref(),
        &turn.channel,
        &turn.chat_id,
    );
    let offered = match c.t.modes.offer_after_answer(key, reply.clone()).await {
        Ok(Ok(offered)) => offered,
        Ok(Err(_)) | Err(_) => return out,
    };
    let call_id = format!("offer-after-answer-{}", c.t.ticket.turn_id);
    let mut asked = crate::tools::offer_mode::offer_question(&offered, &call_id);
    if let Some(tag) = asked.offer.as_mut() {
        tag.after_answer = Some(reply.chars().take(MAX_AFTER_ANSWER_CHARS).collect());
    }
    c.log("offer", "after-answer", &asked.question, None).await;
    let Ok(question) = keep_question(c, asked).await else {
        // not kept: the answer stands alone rather than ask what cannot be answered
        return out;
    };
    // the question is never the part cut off
    let room = max_chars.saturating_sub(question.chars().count() + 2);
    let answer = crate::agent::cap_reply(out.outcome.reply.clone(), room);
    let reply = format!("{answer}\n\n{question}");
    out.saying(reply, true)
}
