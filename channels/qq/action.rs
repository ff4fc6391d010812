//! The OneBot actions homebot sends, typed, and the answer data it reads back. An action
//! goes out as `{"action": …, "params": {…}, "echo": …}` (the echo is `rpc`'s); ids in
//! the parameters are numbers when they are numbers (see [`Id`]).

use super::id::Id;
use super::message::OutSegment;
use serde::{Deserialize, Serialize};

/// An action homebot asks of the implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "params", rename_all = "snake_case")]
pub enum Action {
    SendGroupMsg {
        group_id: Id,
        message: Vec<OutSegment>,
    },
    SendPrivateMsg {
        user_id: Id,
        message: Vec<OutSegment>,
    },
}

impl Action {
    /// The action's name on the wire (for logs and errors).
    pub fn name(&self) -> &'static str {
        match self {
            Action::SendGroupMsg { .. } => "send_group_msg",
            Action::SendPrivateMsg { .. } => "send_private_msg",
        }
    }

    /// A message send: its answer's message id is remembered as the bot's.
    pub fn sends_message(&self) -> bool {
        matches!(
            self,
            Action::SendGroupMsg { .. } | Action::SendPrivateMsg { .. }
        )
    }
}

/// The request frame of an action: the action, and the echo its response carries.
#[derive(Serialize)]
pub struct Request<'a> {
    #[serde(flatten)]
    pub action: &'a Action,
    pub echo: &'a str,
}

/// What `send_group_msg` / `send_private_msg` answer with.
#[derive(Debug, Deserialize)]
pub struct Sent {
    pub message_id: Option<Id>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn id(s: &str) -> Id {
        Id::new(s).unwrap()
    }

    /// `action` goes out as exactly `wire`, and reads back from it.
    fn round_trip(wire: &str, action: Action) {
        let frame = serde_json::to_string(&Request {
            action: &action,
            echo: "homebot-1",
        })
        .unwrap();
        let sent: Value = serde_json::from_str(&frame).unwrap();
        assert_eq!(
            sent,
            serde_json::from_str::<Value>(wire).unwrap(),
            "{frame}"
        );
        assert_eq!(serde_json::from_str::<Action>(wire).unwrap(), action);
        assert_eq!(sent["action"], action.name());
    }

    #[test]
    fn actions_on_the_wire() {
        round_trip(
            r#"{"action":"send_group_msg","params":{"group_id":5550001,"message":[
                {"type":"reply","data":{"id":"-12"}},
                {"type":"at","data":{"qq":"10001"}},
                {"type":"text","data":{"text":" 两百克。"}}]},"echo":"homebot-1"}"#,
            Action::SendGroupMsg {
                group_id: id("5550001"),
                message: vec![
                    OutSegment::Reply { id: id("-12") },
                    OutSegment::At { qq: id("10001") },
                    OutSegment::text(" 两百克。"),
                ],
            },
        );
        round_trip(
            r#"{"action":"send_private_msg","params":{"user_id":10002,"message":[
                {"type":"text","data":{"text":"早"}}]},"echo":"homebot-1"}"#,
            Action::SendPrivateMsg {
                user_id: id("10002"),
                message: vec![OutSegment::text("早")],
            },
        );
        // an id that is no plain number goes as the string it came as
        round_trip(
            r#"{"action":"send_private_msg","params":{"user_id":"u_007","message":[]},"echo":"homebot-1"}"#,
            Action::SendPrivateMsg {
                user_id: id("u_007"),
                message: vec![],
            },
        );
    }

    #[test]
    fn the_answer_to_a_send() {
        let s: Sent = serde_json::from_str(r#"{"message_id":-2147483000}"#).unwrap();
        assert_eq!(s.message_id, Some(id("-2147483000")));
        let s: Sent = serde_json::from_str(r#"{"message_id":"m1","extra":1}"#).unwrap();
        assert_eq!(s.message_id, Some(id("m1")));
        let s: Sent = serde_json::from_str("{}").unwrap();
        assert_eq!(s.message_id, None);
    }
}
