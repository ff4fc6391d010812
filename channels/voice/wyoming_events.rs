//! The Wyoming events the handle service speaks, typed, over the framing of `wyoming`
//! (an event is a `type` and a `data` object).
//!
//! In: `describe`, `ping` (`text`), `transcript` (`text`, `context` with
//! `conversation_id`, `speaker_id` or `speaker`, `satellite_id`, `device_id`); any other
//! event is [`WyomingIn::Other`], which the service ignores (audio, wake words, events of
//! a newer protocol). A Wyoming peer has no authentication, so its data is read
//! leniently, as it always was: a `text` that is not a string is not sent; a context
//! value that is missing, empty or not a string is not sent, and so is a context that is
//! not an object.
//!
//! Out: `info` (one handle program), `pong`, `handled` / `not-handled` (`text`, and the
//! `context` with `conversation_id` and `dialogue_state` once a turn ran), `error`
//! (`text`, `code`) — field for field what the Python `wyoming` package reads.

use super::frames::given;
use super::wyoming::Event;
use crate::channels::spoken::DialogueState;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// An event a Wyoming peer sends the handle service.
#[derive(Debug, Clone, PartialEq)]
pub enum WyomingIn {
    Describe,
    Ping(Ping),
    Transcript(Transcript),
    /// Any other type (its name): ignored.
    Other(String),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ping {
    #[serde(default, deserialize_with = "string")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    #[serde(
        default,
        deserialize_with = "string",
        skip_serializing_if = "Option::is_none"
    )]
    pub text: Option<String>,
    #[serde(
        default,
        deserialize_with = "context",
        skip_serializing_if = "Option::is_none"
    )]
    pub context: Option<TranscriptContext>,
}

/// What Home Assistant says about a transcript: its conversation, who spoke, which
/// satellite (or device) heard it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptContext {
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub conversation_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub speaker_id: Option<String>,
    /// An older name of `speaker_id`, read when that is not sent.
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub speaker: Option<String>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub satellite_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub device_id: Option<String>,
}

impl WyomingIn {
    /// Read an event as the handle service understands it.
    pub fn from_event(ev: Event) -> Self {
        let data = Value::Object(ev.data);
        // every field is lenient: any data object reads (the defaults are never used)
        match ev.kind.as_str() {
            "describe" => WyomingIn::Describe,
            "ping" => WyomingIn::Ping(Ping::deserialize(&data).unwrap_or_default()),
            "transcript" => {
                WyomingIn::Transcript(Transcript::deserialize(&data).unwrap_or_default())
            }
            _ => WyomingIn::Other(ev.kind),
        }
    }
}

/// An event the handle service sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "kebab-case")]
pub enum WyomingOut {
    /// The answer to `describe`.
    Info(Info),
    Pong(Pong),
    Handled(Answer),
    NotHandled(Answer),
    /// A frame refused, or a connection over the cap; the connection closes after it.
    Error(Refusal),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Info {
    pub handle: Vec<HandleProgram>,
}

/// A handle program (homebot itself) and its models.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandleProgram {
    pub name: String,
    pub attribution: Attribution,
    pub installed: bool,
    pub description: String,
    pub version: String,
    pub models: Vec<HandleModel>,
    pub supports_handled_streaming: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandleModel {
    pub name: String,
    pub attribution: Attribution,
    pub installed: bool,
    pub description: String,
    pub version: String,
    pub languages: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub name: String,
    pub url: String,
}

/// The echo of a `ping`: its text, `null` when it had none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pong {
    pub text: Option<String>,
}

/// `handled` / `not-handled`: the words to say and, once a turn ran, its context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<AnswerContext>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerContext {
    pub conversation_id: String,
    pub dialogue_state: DialogueState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub text: String,
    pub code: RefusalCode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalCode {
    /// Over the connection cap.
    Busy,
    /// A payload (audio): this service takes none.
    PayloadRefused,
    /// Anything else not a Wyoming frame within the limits.
    BadFrame,
}

impl RefusalCode {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::Busy => "busy",
            RefusalCode::PayloadRefused => "payload-refused",
            RefusalCode::BadFrame => "bad-frame",
        }
    }
}

impl WyomingOut {
    pub fn refusal(code: RefusalCode, text: impl Into<String>) -> Self {
        WyomingOut::Error(Refusal {
            text: text.into(),
            code,
        })
    }

    /// The event, for the framing.
    pub fn to_event(&self) -> Event {
        #[derive(Deserialize)]
        struct Adjacent {
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            data: Map<String, Value>,
        }
        let Adjacent { kind, data } = serde_json::to_value(self)
            .and_then(Adjacent::deserialize)
            .expect("an adjacently tagged event is a type and a data object");
        Event::new(&kind, Value::Object(data))
    }
}

/// A string as a peer sends it; anything else is not sent.
fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A transcript's context when it is an object; anything else counts as none.
fn context<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TranscriptContext>, D::Error> {
    Ok(match Value::deserialize(d)? {
        v @ Value::Object(_) => Some(TranscriptContext::deserialize(&v).unwrap_or_default()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::wyoming::{encode_event, read_event, Limits};
    use super::*;

    /// An event on the wire the way the Python package writes it: the header line, then
    /// the data section.
    fn wire(kind: &str, data: &str) -> Vec<u8> {
        format!(
            "{{\"data_length\":{},\"type\":\"{kind}\",\"version\":\"1.10.2\"}}\n{data}",
            data.len()
        )
        .into_bytes()
    }

    async fn read(bytes: &[u8]) -> WyomingIn {
        let limits = Limits {
            max_json: 4096,
            max_payload: 0,
        };
        let ev = read_event(&mut &bytes[..], limits).await.unwrap().unwrap();
        WyomingIn::from_event(ev)
    }

    /// `out` is written as exactly `data` (keys sorted, as the framing writes them), and
    /// reads back from it.
    fn round_trip_out(kind: &str, data: &str, out: WyomingOut) {
        assert_eq!(
            String::from_utf8(encode_event(&out.to_event())).unwrap(),
            String::from_utf8(wire(kind, data)).unwrap()
        );
        let adjacent = format!("{{\"type\":\"{kind}\",\"data\":{data}}}");
        assert_eq!(serde_json::from_str::<WyomingOut>(&adjacent).unwrap(), out);
    }

    #[tokio::test]
    async fn events_in() {
        assert_eq!(read(&wire("describe", "{}")).await, WyomingIn::Describe);
        assert_eq!(
            read(b"{\"type\":\"describe\"}\n").await,
            WyomingIn::Describe,
            "no data at all"
        );
        assert_eq!(
            read(&wire("ping", r#"{"text":"t1"}"#)).await,
            WyomingIn::Ping(Ping {
                text: Some("t1".into())
            })
        );
        let data = r#"{"context":{"conversation_id":"c1","device_id":"d1","satellite_id":"assist_satellite.kitchen","speaker":"old","speaker_id":"p1"},"language":"zh","text":"番茄炒蛋"}"#;
        let t = Transcript {
            text: Some("番茄炒蛋".into()),
            context: Some(TranscriptContext {
                conversation_id: Some("c1".into()),
                speaker_id: Some("p1".into()),
                speaker: Some("old".into()),
                satellite_id: Some("assist_satellite.kitchen".into()),
                device_id: Some("d1".into()),
            }),
        };
        assert_eq!(
            read(&wire("transcript", data)).await,
            WyomingIn::Transcript(t.clone())
        );
        // and back: the same fields (all but the `language` homebot does not read)
        let mut sent: Value = serde_json::from_str(data).unwrap();
        sent.as_object_mut().unwrap().remove("language");
        assert_eq!(serde_json::to_value(&t).unwrap(), sent);
        assert_eq!(
            read(&wire(
                "audio-start",
                r#"{"channels":1,"rate":16000,"width":2}"#
            ))
            .await,
            WyomingIn::Other("audio-start".into()),
            "other events are tolerated"
        );
    }

    #[tokio::test]
    async fn a_peers_odd_data_counts_as_not_sent() {
        assert_eq!(
            read(&wire("transcript", r#"{"text":7,"context":"x"}"#)).await,
            WyomingIn::Transcript(Transcript::default())
        );
        assert_eq!(
            read(&wire(
                "transcript",
                r#"{"text":"","context":{"conversation_id":"","speaker_id":3,"device_id":null}}"#
            ))
            .await,
            WyomingIn::Transcript(Transcript {
                text: Some(String::new()),
                context: Some(TranscriptContext::default()),
            }),
            "an empty text is a text; empty context values are not sent"
        );
        assert_eq!(
            read(&wire("ping", r#"{"text":{"a":1}}"#)).await,
            WyomingIn::Ping(Ping::default())
        );
    }

    #[test]
    fn events_out() {
        round_trip_out(
            "pong",
            r#"{"text":"t1"}"#,
            WyomingOut::Pong(Pong {
                text: Some("t1".into()),
            }),
        );
        round_trip_out(
            "pong",
            r#"{"text":null}"#,
            WyomingOut::Pong(Pong { text: None }),
        );
        round_trip_out(
            "handled",
            r#"{"context":{"conversation_id":"c1","dialogue_state":"continue"},"text":"要放几个番茄？"}"#,
            WyomingOut::Handled(Answer {
                text: "要放几个番茄？".into(),
                context: Some(AnswerContext {
                    conversation_id: "c1".into(),
                    dialogue_state: DialogueState::Continue,
                }),
            }),
        );
        round_trip_out(
            "not-handled",
            r#"{"text":"没有听清楚，请再说一次。"}"#,
            WyomingOut::NotHandled(Answer {
                text: "没有听清楚，请再说一次。".into(),
                context: None,
            }),
        );
        round_trip_out(
            "error",
            r#"{"code":"busy","text":"try again"}"#,
            WyomingOut::refusal(RefusalCode::Busy, "try again"),
        );
        round_trip_out(
            "error",
            r#"{"code":"payload-refused","text":"no audio"}"#,
            WyomingOut::refusal(RefusalCode::PayloadRefused, "no audio"),
        );
        round_trip_out(
            "error",
            r#"{"code":"bad-frame","text":"bad frame: header is not JSON"}"#,
            WyomingOut::refusal(RefusalCode::BadFrame, "bad frame: header is not JSON"),
        );
        for code in [
            RefusalCode::Busy,
            RefusalCode::PayloadRefused,
            RefusalCode::BadFrame,
        ] {
            let wire = format!("\"{}\"", code.as_str());
            assert_eq!(serde_json::to_string(&code).unwrap(), wire);
        }
    }

    #[test]
    fn info_out() {
        let attribution = Attribution {
            name: "homebot".into(),
            url: "https://github.com/homebot".into(),
        };
        let info = WyomingOut::Info(Info {
            handle: vec![HandleProgram {
                name: "homebot".into(),
                attribution: attribution.clone(),
                installed: true,
                description: "homebot household assistant (run modes, LLM)".into(),
                version: "0.1.0".into(),
                models: vec![HandleModel {
                    name: "homebot".into(),
                    attribution,
                    installed: true,
                    description: "household assistant".into(),
                    version: "0.1.0".into(),
                    languages: vec!["zh".into(), "en".into()],
                }],
                supports_handled_streaming: false,
            }],
        });
        round_trip_out(
            "info",
            concat!(
                r#"{"handle":[{"attribution":{"name":"homebot","url":"https://github.com/homebot"},"#,
                r#""description":"homebot household assistant (run modes, LLM)","installed":true,"#,
                r#""models":[{"attribution":{"name":"homebot","url":"https://github.com/homebot"},"#,
                r#""description":"household assistant","installed":true,"languages":["zh","en"],"#,
                r#""name":"homebot","version":"0.1.0"}],"name":"homebot","#,
                r#""supports_handled_streaming":false,"version":"0.1.0"}]}"#
            ),
            info,
        );
    }
}
