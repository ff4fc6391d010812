//! `switch_mode {action: "offer", mode_id}`: the model asks the backend to offer a mode
//! when someone clearly starts its activity outside any mode. The backend decides
//! ([`crate::modes::mode_core::offer`]: the mode's `offer.words` said plainly by this speaker now, no
//! mode active, once per chat per day) and words it: a fixed question that says what the
//! mode is for, "要打开做饭模式吗？（在厨房里一步一步带着家人做饭——…）" (its SKILL.md
//! description, shortened), with the options 打开 / 不用, put in the turn's `ask_user_choice` slot, which ends the
//! turn. Never to a guest, nor to a sender who may not switch modes here. The answer is
//! the strategy layer's to judge (`strategy::offer`), never the model's.
//!
//! The same way, [`confirm`]: when the guard could not place the words of a `switch_mode`
//! enter or exit (`switch::unsure`), the backend asks "要退出做饭模式吗？" (or, for the
//! paused parent of a running sub-mode, "要回到做饭模式吗？") itself, and only the asker's
//! short yes switches.

use crate::modes::mode_core::offer::{question, Confirming, Offered, NO, YES};
use crate::modes::switch::{SwitchAction, WordsRefusal};
use crate::modes::ModesHandle;
use crate::provider::ToolCall;
use crate::tools::choice::rules::{validate, Args as ChoiceArgs, Asked, Asking, OfferTag};
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;

/// `switch_mode {action: "offer", mode_id}`: make the offer if the backend agrees.
pub async fn offer(
    env: &ToolEnv,
    manager: &ModesHandle,
    mode_id: String,
    call: &ToolCall,
) -> ToolResult {
    if env.trust == crate::turn::Trust::Guest {
        return ToolResult::err(
            "not offered: modes are offered only to a known household member; answer as usual",
        );
    }
    if env.mode().is_some() {
        return ToolResult::err("not offered: a mode is active already; answer as usual");
    }
    let chat_key = chat_key(
        env.place.as_deref(),
        &env.origin.channel,
        &env.origin.chat_id,
    );
    let offered = match manager
        .offer(mode_id, chat_key, env.user_text.clone())
        .await
    {
        Ok(Ok(o)) => o,
        Ok(Err(no)) => return ToolResult::err(no),
        Err(e) => return ToolResult::err(format!("not offered: {e}; answer as usual")),
    };
    let asked = offer_question(&offered, &call.id);
    let q = asked.question.clone();
    env.choice.put(asked);
    ToolResult::ok(format!(
        "offered: the backend asked “{q}” and the turn ends here; the answer is the backend's to judge"
    ))
}

/// Whom an offer is remembered for (once a day each): the satellite where one is known —
/// a voice chat is one wake or one conversation, so the kitchen speaker would be offered
/// the mode at every wake — else the chat.
pub fn chat_key(place: Option<&str>, channel: &str, chat_id: &str) -> String {
    match place {
        Some(place) => format!("place:{place}"),
        None => format!("{channel}:{chat_id}"),
    }
}

/// The backend's fixed question for an offer it agreed to make ("要打开做饭模式吗？（…）",
/// with what the mode is for; 打开 / 不用), as the choice slot keeps it; `call_id` is the
/// call it stands in for.
pub fn offer_question(offered: &Offered, call_id: &str) -> Asked {
    let q = question(&offered.display_name, &offered.description);
    let arguments = serde_json::json!({"question": q, "options": [YES, NO]}).to_string();
    let parsed: ChoiceArgs =
        serde_json::from_str(&arguments).expect("the offer's question is valid choice arguments");
    let mut asked = validate(parsed, call_id, &arguments)
        .expect("the offer's fixed question passes the choice rules");
    asked.offer = Some(OfferTag {
        mode_id: offered.mode_id.clone(),
        display_name: offered.display_name.clone(),
        action: SwitchAction::Enter,
        why: Asking::Offer,
        returns: false,
        after_answer: None,
        asked_in: None,
    });
    asked
}

/// `switch_mode {action: "enter" | "exit"}` whose words the guard could not place: the
/// backend asks the person to confirm (its fixed yes/no question, which ends the turn:
/// "要打开做饭模式吗？", "要退出做饭模式吗？", or — the paused parent named while a sub-mode
/// runs — "要回到做饭模式吗？"); only their short yes switches (`strategy::offer`).
pub fn confirm(env: &ToolEnv, unsure: &WordsRefusal, call: &ToolCall) -> ToolResult {
    let confirming = Confirming::new(unsure.action, unsure.returns);
    let q = confirming.question(&unsure.display_name);
    let arguments =
        serde_json::json!({"question": q, "options": [confirming.yes(), NO]}).to_string();
    let parsed: ChoiceArgs =
        serde_json::from_str(&arguments).expect("the question is valid choice arguments");
    let mut asked =
        validate(parsed, &call.id, &arguments).expect("the fixed question passes the choice rules");
    asked.offer = Some(OfferTag {
        mode_id: unsure.mode_id.clone(),
        display_name: unsure.display_name.clone(),
        action: unsure.action,
        why: Asking::Unsure,
        returns: unsure.returns,
        after_answer: None,
        asked_in: None,
    });
    env.choice.put(asked);
    ToolResult::ok(format!(
        "asked: the user's words were unclear, so the backend asked “{q}” and the turn ends here; their answer is the backend's to judge"
    ))
}
