//! A spoken answer's frames, the same JSON for a native satellite (its WebSocket, see
//! `channels::voice`) and for Home Assistant's agent stream (newline-delimited):
//! `partial` (`session_id`, `text`: whole sentences as the model writes them), then one
//! `reply` (`cancelled` only when the turn was cancelled, `rest` only after partial
//! frames: what of `text` they did not carry).

use super::reply::DialogueState;
use serde::{Deserialize, Serialize};

/// A frame of a spoken answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SpokenOut {
    /// Whole sentences of a reply, as the model writes them.
    Partial {
        session_id: String,
        text: String,
    },
    Reply(ReplyFrame),
}

/// A turn's reply: the whole text, and whether to keep listening.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyFrame {
    pub session_id: String,
    pub text: String,
    pub dialogue_state: DialogueState,
    /// The turn was not answered (the text says why).
    pub error: bool,
    /// Sent only when the turn was cancelled (`stop`, or barged in on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// Sent only after partial frames: what of `text` they did not carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest: Option<String>,
}

impl SpokenOut {
    /// The frame's text on the wire.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a spoken frame is plain JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn round_trip(wire: &str, frame: SpokenOut) {
        let sent: Value = serde_json::from_str(&frame.encode()).unwrap();
        assert_eq!(sent, serde_json::from_str::<Value>(wire).unwrap(), "{wire}");
        assert_eq!(serde_json::from_str::<SpokenOut>(wire).unwrap(), frame);
    }

    #[test]
    fn spoken_frames_on_the_wire() {
        round_trip(
            r#"{"type":"partial","session_id":"s1","text":"先打蛋。"}"#,
            SpokenOut::Partial {
                session_id: "s1".into(),
                text: "先打蛋。".into(),
            },
        );
        round_trip(
            r#"{"type":"reply","session_id":"s1","text":"要放几个番茄？","dialogue_state":"continue","error":false}"#,
            SpokenOut::Reply(ReplyFrame {
                session_id: "s1".into(),
                text: "要放几个番茄？".into(),
                dialogue_state: DialogueState::Continue,
                error: false,
                cancelled: false,
                rest: None,
            }),
        );
        round_trip(
            r#"{"type":"reply","session_id":"s1","text":"先打蛋。","dialogue_state":"end","error":true,"cancelled":true,"rest":""}"#,
            SpokenOut::Reply(ReplyFrame {
                session_id: "s1".into(),
                text: "先打蛋。".into(),
                dialogue_state: DialogueState::End,
                error: true,
                cancelled: true,
                rest: Some(String::new()),
            }),
        );
    }
}
