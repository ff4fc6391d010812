//! The answer to the backend's offer of a mode ([`crate::modes::mode_core::offer`]):
//! the question waits in its chat like any `ask_user_choice` question, but its answer is
//! judged here, never by the model. Only a clear yes ([`chose_yes`]) from the person who
//! was asked, in that chat, within [`OFFER_FOR_MINUTES`], enters the mode — as that
//! person's command: the answering turn is recorded as the session's first record, with
//! the question it answered. Any other answer, or anyone else's, drops the offer, and the
//! message is answered as usual.

use super::ctx::{finish, older_than, Ctx};
use super::state::PendingChoice;
use super::TurnResult;
use crate::modes::mode_core::offer::{chose_yes, OFFER_FOR_MINUTES, YES};
use crate::modes::Switched;
use crate::prompt::TailSection;
use crate::provider::{Message, ToolCall};
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
    } else if p.asker == speaker && chose_yes(text) {
        OfferAnswer::Accepted
    } else {
        OfferAnswer::Dropped
    }
}

/// What the model is told when an offer was dropped by this message.
pub(super) fn dropped_section(p: &PendingChoice, speaker: &str) -> TailSection {
    let whose = if p.asker == speaker {
        "这条消息不是明确的“打开”".to_string()
    } else {
        format!("提议只问了 {}，{speaker} 的回答不算", p.asker)
    };
    TailSection {
        label: "已作废的提议".into(),
        body: format!(
            "后端刚才提议“{}”，{whose}，所以没有打开模式，提议已作废。照常回应这条消息，不要再提议。",
            p.asked.question
        ),
    }
}

/// The asker said yes: enter the mode, then let the model answer in it (the call is
/// replayed with the outcome as its result, as for any answered question).
pub(super) async fn accepted(c: &Ctx<'_>, p: PendingChoice) -> TurnResult {
    let tag = p
        .asked
        .offer
        .clone()
        .expect("only an offer's question is accepted here");
    let switched =
        c.t.modes
            .accept_offer(tag.mode_id, c.t.ticket.turn_id)
            .await;
    let (stage, result) = match &switched {
        Ok(s) => (
            "accepted",
            format!("User selected: {YES}. The backend entered the mode as their command: {s}"),
        ),
        Err(e) => (
            "failed",
            format!("User selected: {YES}, but the mode was not entered: {e}"),
        ),
    };
    c.log("offer", stage, &result, None).await;
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
    });
    prep.messages.push(Message::Tool {
        tool_call_id: p.asked.call_id.clone(),
        content: result,
    });
    let out = c.round(&mut prep).await.into();
    let mut out = finish(c, &mut prep, out).await;
    if matches!(switched, Ok(Switched::Entered { .. })) {
        out.recorded_user = Some(format!("{}（回答“{}”）", c.t.text, p.asked.question));
    }
    out
}
