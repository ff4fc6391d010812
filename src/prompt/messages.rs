//! The messages of one request, in the order the layout above gives (`build_messages`).

use super::tail::Current;
use super::without_profiles;
use crate::config::Replay;
use crate::context::Plan;
use crate::modes::TurnTicket;
use crate::provider::Message;

/// The messages of the first request of a turn: the system message, a normal chat's
/// carried pair (the mode session it just left), the checkpoint pair and the records the
/// [`Plan`] replays (each user message as `replay` says, see
/// [`crate::history::Record::replayed_user`]), then the current user message and its
/// aside. Only the planned range of the history is read. `guest`: the turn's speaker is
/// a guest, who gets no member's profile from the history (that request is a new base).
pub fn build_messages(
    system: String,
    ticket: &TurnTicket,
    plan: &Plan,
    replay: Replay,
    guest: bool,
    current: Current,
) -> Vec<Message> {
    let mut msgs = Vec::with_capacity(2 * (plan.to - plan.from) + 5);
    msgs.push(Message::System { content: system });
    if let Some(block) = &plan.carried {
        let (user, assistant) = crate::context::budget::carried_messages(block);
        msgs.push(Message::User { content: user });
        msgs.push(Message::Assistant {
            content: Some(assistant),
            tool_calls: vec![],
            reasoning_content: None,
            thinking: vec![],
        });
    }
    if let Some(c) = &plan.checkpoint {
        let (user, assistant) = crate::context::budget::checkpoint_messages(c);
        msgs.push(Message::User { content: user });
        msgs.push(Message::Assistant {
            content: Some(assistant),
            tool_calls: vec![],
            reasoning_content: None,
            thinking: vec![],
        });
    }
    ticket.history.with_range(plan.from, |records, _| {
        let records = &records[..plan.to.saturating_sub(plan.from).min(records.len())];
        // Failed turns stay in the record but are not replayed: the model should not
        // learn from apologies for outages.
        for r in records.iter().filter(|r| r.error.is_none()) {
            let mut content = r.replayed_user(replay);
            if guest {
                content = without_profiles(&content).into_owned();
            }
            msgs.push(Message::User { content });
            msgs.push(Message::Assistant {
                content: Some(r.assistant.clone()),
                tool_calls: vec![],
                reasoning_content: None,
                thinking: vec![],
            });
        }
    });
    msgs.push(Message::User {
        content: current.message,
    });
    if let Some(aside) = current.aside {
        msgs.push(Message::User { content: aside });
    }
    msgs
}
