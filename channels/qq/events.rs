//! What a OneBot implementation sends us, typed: events (`post_type` message / meta /
//! notice / request) and action responses (`status`, `retcode`, `data`, `echo`).
//!
//! Read by the connection loop (`conn`) for both transports. Unknown post types,
//! notices and requests parse into variants that are ignored quietly; a frame that is not
//! what OneBot describes is a parse error, which the loop logs (shortened: a peer's
//! frame may be megabytes) and skips.

use super::id::Id;
use super::message;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

/// One text frame from the implementation.
#[derive(Debug)]
pub enum Frame {
    Event(Event),
    Response(ActionResponse),
    /// Neither an event nor a response: ignored.
    Unknown,
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FrameError(String);

impl From<serde_json::Error> for FrameError {
    fn from(e: serde_json::Error) -> Self {
        // serde quotes offending strings whole; a log line needs only the start
        let mut s = e.to_string();
        if s.len() > 200 {
            let cut = (0..=200)
                .rev()
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(0);
            s.truncate(cut);
            s.push('…');
        }
        FrameError(s)
    }
}

/// Which kind of frame this is, read before the frame itself.
#[derive(Deserialize)]
struct Kind {
    post_type: Option<IgnoredAny>,
    echo: Option<IgnoredAny>,
}

/// Read a frame: an event when it has a `post_type`, a response when it has an `echo`.
pub fn parse_frame(text: &str) -> Result<Frame, FrameError> {
    let kind: Kind = serde_json::from_str(text)?;
    if kind.post_type.is_some() {
        Ok(Frame::Event(serde_json::from_str(text)?))
    } else if kind.echo.is_some() {
        Ok(Frame::Response(serde_json::from_str(text)?))
    } else {
        Ok(Frame::Unknown)
    }
}

/// The `self_id` a frame names, if it is readable (the forward connection learns its
/// account from the first event).
pub fn self_id_of(text: &str) -> Option<Id> {
    #[derive(Deserialize)]
    struct SelfId {
        self_id: Option<Id>,
    }
    serde_json::from_str::<SelfId>(text).ok()?.self_id
}

#[derive(Debug, Deserialize)]
#[serde(tag = "post_type", rename_all = "snake_case")]
pub enum Event {
    Message(MessageEvent),
    /// The bot's own messages, reported back by some implementations: never turns.
    MessageSent,
    MetaEvent(MetaEvent),
    Notice,
    Request,
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "message_type", rename_all = "snake_case")]
pub enum MessageEvent {
    Group(GroupMessage),
    Private(PrivateMessage),
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub struct GroupMessage {
    pub group_id: Id,
    pub user_id: Id,
    pub message_id: Option<Id>,
    #[serde(flatten)]
    pub body: Body,
}

#[derive(Debug, Deserialize)]
pub struct PrivateMessage {
    pub user_id: Id,
    #[serde(flatten)]
    pub body: Body,
}

/// A message's content: `message` (segments or a CQ string), else `raw_message`.
#[derive(Debug, Deserialize)]
pub struct Body {
    message: Option<Value>,
    raw_message: Option<String>,
}

impl Body {
    pub fn segments(self) -> Result<Vec<message::Segment>, message::MessageError> {
        match (self.message, self.raw_message) {
            (Some(m), _) => message::parse_message(&m),
            (None, Some(raw)) => Ok(message::parse_cq(&raw)),
            (None, None) => Err(message::MessageError::NoContent),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "meta_event_type", rename_all = "snake_case")]
pub enum MetaEvent {
    Lifecycle {
        sub_type: Option<Lifecycle>,
    },
    Heartbeat {
        /// Milliseconds until the next heartbeat.
        interval: Option<u64>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    Connect,
    Enable,
    Disable,
    #[serde(other)]
    Other,
}

/// The answer to an action we sent, matched to it by `echo`.
#[derive(Debug, Deserialize)]
pub struct ActionResponse {
    pub echo: Id,
    pub status: Option<Status>,
    #[serde(default = "no_retcode")]
    pub retcode: i64,
    #[serde(default)]
    pub data: Value,
    pub msg: Option<String>,
    pub wording: Option<String>,
}

fn no_retcode() -> i64 {
    -1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Async,
    Failed,
    #[serde(other)]
    Other,
}

impl ActionResponse {
    pub fn succeeded(&self) -> bool {
        match self.status {
            Some(Status::Ok | Status::Async) => true,
            None => self.retcode == 0,
            Some(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::action::Sent;
    use super::*;
    use serde_json::json;

    fn frame(v: Value) -> Frame {
        parse_frame(&v.to_string()).unwrap()
    }

    #[test]
    fn message_events_with_ids_as_numbers_or_strings() {
        let f = frame(
            json!({"time": 1, "self_id": 3000000001u64, "post_type": "message",
            "message_type": "group", "sub_type": "normal", "message_id": -12, "group_id": "5550001",
            "user_id": 10001, "message": [{"type": "text", "data": {"text": "hi"}}],
            "raw_message": "hi", "font": 0, "sender": {"nickname": "妈妈"}}),
        );
        let Frame::Event(Event::Message(MessageEvent::Group(g))) = f else {
            panic!("{f:?}")
        };
        assert_eq!(g.group_id, *"5550001");
        assert_eq!(g.user_id, *"10001");
        assert_eq!(g.message_id, Some(Id::new("-12").unwrap()));
        assert_eq!(g.body.segments().unwrap()[0].get("text").unwrap(), "hi");

        let f = frame(json!({"post_type": "message", "message_type": "private",
            "user_id": "10002", "raw_message": "[CQ:face,id=1]早"}));
        let Frame::Event(Event::Message(MessageEvent::Private(p))) = f else {
            panic!("{f:?}")
        };
        assert_eq!(p.user_id, *"10002");
        assert_eq!(p.body.segments().unwrap().len(), 2);
    }

    #[test]
    fn meta_events() {
        let f = frame(
            json!({"post_type": "meta_event", "meta_event_type": "heartbeat",
            "status": {"online": true}, "interval": 5000, "self_id": 1}),
        );
        assert!(matches!(
            f,
            Frame::Event(Event::MetaEvent(MetaEvent::Heartbeat {
                interval: Some(5000)
            }))
        ));
        let f = frame(
            json!({"post_type": "meta_event", "meta_event_type": "lifecycle",
            "sub_type": "connect", "self_id": 1}),
        );
        assert!(matches!(
            f,
            Frame::Event(Event::MetaEvent(MetaEvent::Lifecycle {
                sub_type: Some(Lifecycle::Connect)
            }))
        ));
        let f = frame(json!({"post_type": "meta_event", "meta_event_type": "new_kind"}));
        assert!(matches!(
            f,
            Frame::Event(Event::MetaEvent(MetaEvent::Other))
        ));
    }

    #[test]
    fn notices_requests_and_unknown_kinds_are_quietly_other() {
        for (v, want) in [
            (
                json!({"post_type": "notice", "notice_type": "group_increase", "user_id": 1}),
                "Notice",
            ),
            (
                json!({"post_type": "request", "request_type": "friend", "comment": "hi"}),
                "Request",
            ),
            (
                json!({"post_type": "message_sent", "message": "x"}),
                "MessageSent",
            ),
            (json!({"post_type": "something_new", "x": [1]}), "Other"),
            (
                json!({"post_type": "message", "message_type": "guild", "x": 1}),
                "Message(Other)",
            ),
        ] {
            let f = frame(v.clone());
            assert!(format!("{f:?}").contains(want), "{v} → {f:?}");
        }
        assert!(matches!(frame(json!({"hello": 1})), Frame::Unknown));
    }

    #[test]
    fn responses() {
        let Frame::Response(r) = frame(json!({"status": "ok", "retcode": 0,
            "data": {"message_id": 77}, "echo": "homebot-3"}))
        else {
            panic!()
        };
        assert!(r.succeeded());
        assert_eq!(r.echo, *"homebot-3");
        let sent: Sent = serde_json::from_value(r.data).unwrap();
        assert_eq!(sent.message_id, Some(Id::new("77").unwrap()));
        let Frame::Response(r) = frame(json!({"status": "failed", "retcode": 1200,
            "data": null, "wording": "风控", "echo": 5}))
        else {
            panic!()
        };
        assert!(!r.succeeded());
        assert_eq!((r.retcode, r.wording.as_deref()), (1200, Some("风控")));
        let Frame::Response(r) = frame(json!({"retcode": 0, "echo": "e"})) else {
            panic!()
        };
        assert!(r.succeeded(), "no status, retcode 0");
    }

    #[test]
    fn malformed_frames_are_errors_with_short_messages() {
        assert!(parse_frame("{this is not json").is_err());
        assert!(parse_frame("[1,2,3]").is_err());
        // a message without its ids
        assert!(
            parse_frame(r#"{"post_type":"message","message_type":"group","self_id":1}"#).is_err()
        );
        let huge = format!(
            r#"{{"post_type":"message","message_type":"private","user_id":{{"x":"{}"}}}}"#,
            "a".repeat(10_000)
        );
        let e = parse_frame(&huge).unwrap_err().to_string();
        assert!(e.len() < 300, "{e}");
        let huge_str = format!(r#"{{"status":"ok","echo":["{}"]}}"#, "b".repeat(10_000));
        assert!(parse_frame(&huge_str).unwrap_err().to_string().len() < 300);
    }

    #[test]
    fn the_self_id_of_a_frame() {
        assert_eq!(
            self_id_of(r#"{"self_id":3000000001,"post_type":"meta_event"}"#),
            Some(Id::new("3000000001").unwrap())
        );
        assert_eq!(self_id_of(r#"{"post_type":"meta_event"}"#), None);
        assert_eq!(self_id_of("nope"), None);
    }
}
