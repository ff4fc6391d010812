//! homebot's own satellite protocol, typed: the JSON text frames of the satellite
//! WebSocket (`ws`), in both directions. A turn's answer goes out as the spoken kit's
//! `partial` and `reply` frames (`channels::spoken::frames`), which Home Assistant's
//! agent stream carries too.
//!
//! In (satellite → homebot): `transcript` (`text`, and optionally `satellite_id`,
//! `speaker_id`, `session_id`), `stop` (optionally `satellite_id`), `ping`. A satellite
//! is a peer that owes us nothing, so its fields are read leniently, as they always
//! were: a field that is missing, empty or not a string counts as not sent. A frame that
//! is not JSON, or whose `type` is none of these, is [`Refused`] with the reason the
//! satellite is told in an `error` frame.
//!
//! Out (homebot → satellite): the answer's `partial` and `reply` (the spoken kit's),
//! and these: `announce`, `error`, `pong`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// How much of an unknown `type` the refusal repeats back.
const MAX_TYPE_CHARS: usize = 64;

/// A frame a satellite sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SatelliteIn {
    /// Words the satellite heard; answered with `partial` frames and a `reply`.
    Transcript(Transcript),
    /// Cancel the turns in flight of a satellite (the named one, else the current one).
    Stop(Stop),
    Ping,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub text: Option<String>,
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
    pub speaker_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stop {
    #[serde(
        default,
        deserialize_with = "given",
        skip_serializing_if = "Option::is_none"
    )]
    pub satellite_id: Option<String>,
}

/// Why a satellite's frame is not read; the text goes back in an `error` frame.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("bad JSON: {0}")]
    BadJson(serde_json::Error),
    /// The frame's `type` (its first characters), when it has one that is a string.
    #[error("unknown message type {0:?}")]
    UnknownType(Option<String>),
}

impl SatelliteIn {
    /// Read one text frame.
    pub fn parse(text: &str) -> Result<Self, Refused> {
        let v: Value = serde_json::from_str(text).map_err(Refused::BadJson)?;
        // every field of a known type is lenient: only the type can be wrong
        SatelliteIn::deserialize(&v).map_err(|_| {
            Refused::UnknownType(
                v.get("type")
                    .and_then(Value::as_str)
                    .map(|t| t.chars().take(MAX_TYPE_CHARS).collect()),
            )
        })
    }
}

/// A frame homebot sends to a satellite besides a turn's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SatelliteOut {
    /// A proactive message (a reminder, `homebot announce`).
    Announce {
        text: String,
    },
    /// A frame refused, or a satellite id this connection may not speak for.
    Error {
        text: String,
    },
    Pong,
}

impl SatelliteOut {
    pub fn error(text: impl Into<String>) -> Self {
        SatelliteOut::Error { text: text.into() }
    }

    /// The frame's text on the wire.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a satellite frame is plain JSON")
    }
}

/// A string field as a peer sends it: missing, empty or not a string is not sent (the
/// Wyoming events read their fields the same way).
pub(super) fn given<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `frame` reads from `wire`, and writes back as exactly the JSON of `wire`.
    fn round_trip_in(wire: &str, frame: SatelliteIn) {
        assert_eq!(SatelliteIn::parse(wire).unwrap(), frame, "{wire}");
        let back: Value = serde_json::to_value(&frame).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(wire).unwrap(), "{wire}");
    }

    fn round_trip_out(wire: &str, frame: SatelliteOut) {
        let sent: Value = serde_json::from_str(&frame.encode()).unwrap();
        assert_eq!(sent, serde_json::from_str::<Value>(wire).unwrap(), "{wire}");
        assert_eq!(serde_json::from_str::<SatelliteOut>(wire).unwrap(), frame);
    }

    #[test]
    fn satellite_frames_in() {
        round_trip_in(
            r#"{"type":"transcript","text":"番茄炒蛋怎么做","satellite_id":"kitchen","speaker_id":"p1","session_id":"s1"}"#,
            SatelliteIn::Transcript(Transcript {
                text: Some("番茄炒蛋怎么做".into()),
                satellite_id: Some("kitchen".into()),
                speaker_id: Some("p1".into()),
                session_id: Some("s1".into()),
            }),
        );
        round_trip_in(
            r#"{"type":"transcript","text":"几点了"}"#,
            SatelliteIn::Transcript(Transcript {
                text: Some("几点了".into()),
                ..Default::default()
            }),
        );
        round_trip_in(
            r#"{"type":"stop","satellite_id":"kitchen"}"#,
            SatelliteIn::Stop(Stop {
                satellite_id: Some("kitchen".into()),
            }),
        );
        round_trip_in(r#"{"type":"stop"}"#, SatelliteIn::Stop(Stop::default()));
        round_trip_in(r#"{"type":"ping"}"#, SatelliteIn::Ping);
    }

    #[test]
    fn a_peers_odd_fields_count_as_not_sent() {
        let t = SatelliteIn::parse(
            r#"{"type":"transcript","text":5,"satellite_id":"","speaker_id":null,"session_id":["x"],"extra":{}}"#,
        )
        .unwrap();
        assert_eq!(t, SatelliteIn::Transcript(Transcript::default()));
        assert_eq!(
            SatelliteIn::parse(r#"{"type":"stop","satellite_id":{"id":1}}"#).unwrap(),
            SatelliteIn::Stop(Stop::default())
        );
        assert_eq!(
            SatelliteIn::parse(r#"{"type":"ping","text":"hi"}"#).unwrap(),
            SatelliteIn::Ping
        );
    }

    #[test]
    fn refusals_say_why() {
        let e = SatelliteIn::parse("{not json").unwrap_err().to_string();
        assert!(e.starts_with("bad JSON: "), "{e}");
        let e = SatelliteIn::parse(r#"{"type":"dance"}"#).unwrap_err();
        assert_eq!(e.to_string(), r#"unknown message type Some("dance")"#);
        for untyped in [r#"{"text":"hi"}"#, r#"{"type":7}"#, "[1,2]", "\"ping\""] {
            let e = SatelliteIn::parse(untyped).unwrap_err();
            assert_eq!(e.to_string(), "unknown message type None", "{untyped}");
        }
        let long = format!(r#"{{"type":"{}"}}"#, "x".repeat(500));
        let Refused::UnknownType(Some(t)) = SatelliteIn::parse(&long).unwrap_err() else {
            panic!()
        };
        assert_eq!(t.chars().count(), MAX_TYPE_CHARS, "a peer's type is cut");
    }

    #[test]
    fn satellite_frames_out() {
        round_trip_out(
            r#"{"type":"announce","text":"该关火了"}"#,
            SatelliteOut::Announce {
                text: "该关火了".into(),
            },
        );
        round_trip_out(
            r#"{"type":"error","text":"transcript without text"}"#,
            SatelliteOut::error("transcript without text"),
        );
        round_trip_out(r#"{"type":"pong"}"#, SatelliteOut::Pong);
    }
}
