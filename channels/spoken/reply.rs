//! A reply shaped for speech: the model's continue marker and markdown stripped, the
//! text on one line, and whether to keep listening (`dialogue_state`); what was held for
//! the front end (a reminder that rang while it could not be spoken to) said first.
//!
//! `dialogue_state`: the model is told (in the dynamic tail, never the system prompt) to
//! end with a question and the marker `[[继续]]` when it needs an answer. The marker is
//! stripped; a reply ending in a question also counts as `continue`, and so does a reply
//! that waits for an answer (a question with options, a plan to confirm).

use super::held;
use crate::speech::CONTINUE_MARKERS;
use serde::{Deserialize, Serialize};

/// Whether the front end should listen again after saying the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DialogueState {
    Continue,
    End,
}

impl DialogueState {
    pub fn as_str(self) -> &'static str {
        match self {
            DialogueState::Continue => "continue",
            DialogueState::End => "end",
        }
    }
}

/// Strip the model's continue marker and markdown; decide whether to keep listening.
pub fn shape_reply(reply: &str) -> (String, DialogueState) {
    let mut text = reply.to_string();
    let mut marked = false;
    for m in CONTINUE_MARKERS {
        if text.contains(m) {
            marked = true;
            text = text.replace(m, "");
        }
    }
    let text = crate::channels::text::spoken(&text);
    let asks = text.ends_with('？') || text.ends_with('?');
    let state = if marked || asks {
        DialogueState::Continue
    } else {
        DialogueState::End
    };
    (text, state)
}

/// A voice turn's outcome, ready for either front door.
pub struct VoiceReply {
    pub text: String,
    pub state: DialogueState,
    pub failed: bool,
    /// The held messages `text` begins with: said once the door sent it.
    pub held: held::Taken,
}

/// A reply shaped for speech, with what was held for its front end said first.
pub fn compose(reply: &crate::turn::Reply, held: held::Taken) -> VoiceReply {
    let (text, mut state) = shape_reply(&reply.text);
    if reply.awaits_answer {
        // a question with options or a plan to confirm: keep listening for the answer
        state = DialogueState::Continue;
    }
    VoiceReply {
        text: if held.is_empty() {
            text
        } else {
            format!("{} {text}", held.joined())
        },
        state,
        failed: !reply.is_answered(),
        held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialogue_state_from_the_reply() {
        assert_eq!(
            shape_reply("蛋液打好了吗？[[继续]]"),
            ("蛋液打好了吗？".into(), DialogueState::Continue)
        );
        assert_eq!(shape_reply("要放几个番茄？").1, DialogueState::Continue);
        assert_eq!(
            shape_reply("好的，中火三分钟。[[continue]]").1,
            DialogueState::Continue
        );
        assert_eq!(
            shape_reply("好的，**中火**三分钟。"),
            ("好的，中火三分钟。".into(), DialogueState::End)
        );
        assert_eq!(
            shape_reply("第一步：\n- 打蛋\n- 切番茄").0,
            "第一步： · 打蛋 · 切番茄"
        );
    }

    #[test]
    fn dialogue_state_on_the_wire() {
        for (state, wire) in [
            (DialogueState::Continue, "\"continue\""),
            (DialogueState::End, "\"end\""),
        ] {
            assert_eq!(serde_json::to_string(&state).unwrap(), wire);
            assert_eq!(format!("\"{}\"", state.as_str()), wire);
            assert_eq!(serde_json::from_str::<DialogueState>(wire).unwrap(), state);
        }
    }
}
