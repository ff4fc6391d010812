//! Home Assistant's WebSocket API, as its developer documentation describes it: the
//! server says `auth_required`, the client sends `{"type":"auth","access_token":…}`, the
//! server answers `auth_ok` or `auth_invalid`; then every command carries an `id` and is
//! answered by a `result` (`success`, `result` or `error {code, message}`) with that id;
//! a subscription's `event` messages carry the id of the command that subscribed;
//! `{"id","type":"ping"}` is answered by `pong`. The server may coalesce several messages
//! into one JSON array.
//!
//! Everything here is read from a peer: sizes are bounded where a message enters (the
//! WebSocket's message cap), and fields are read leniently (`lenient`): a frame
//! HA might send in another version is `Other`, never an error. What homebot sends is in
//! `frames`; what a command's `result` holds is decoded in `answers`.

use super::lenient::Lenient;
use serde::Deserialize;
use serde_json::Value;

/// One message from Home Assistant.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    AuthRequired,
    AuthOk {
        version: Option<String>,
    },
    AuthInvalid {
        message: String,
    },
    /// The `result` stays JSON here: what it holds depends on the command, and is
    /// decoded where its call is resolved (`answers::decode`).
    Result {
        id: u64,
        outcome: Result<Value, HaFailure>,
    },
    Event {
        id: u64,
        event: Event,
    },
    Pong {
        id: u64,
    },
    Other,
}

/// A command Home Assistant refused (`success: false`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaFailure {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for HaFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Text from Home Assistant shown in a log line or the status: one line, at most `max`
/// characters, no control characters.
pub fn short(s: &str, max: usize) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect();
    s.trim().to_string()
}

/// The body of an `event` frame of a subscription (a trigger's is not read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Event {
    #[serde(default)]
    pub event_type: Lenient<String>,
    /// A `state_changed` event's data (another event's reads as mostly absent).
    #[serde(default)]
    pub data: Lenient<StateChange>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct StateChange {
    #[serde(default)]
    pub entity_id: Lenient<String>,
    /// `null` when the entity was removed.
    #[serde(default)]
    pub new_state: Lenient<NewState>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct NewState {
    #[serde(default)]
    pub state: Lenient<String>,
}

impl Event {
    pub fn event_type(&self) -> &str {
        self.event_type.as_str().unwrap_or_default()
    }

    /// A state change's entity id and new state (`None`: no new state).
    pub fn state_change(&self) -> (&str, Option<&str>) {
        let Some(d) = self.data.as_ref() else {
            return ("", None);
        };
        let state = d.new_state.as_ref().and_then(|s| s.state.as_str());
        (d.entity_id.as_str().unwrap_or_default(), state)
    }
}

/// A frame as it arrives, tagged by `type`; unknown types are `Other`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Frame {
    AuthRequired,
    AuthOk {
        #[serde(default)]
        ha_version: Lenient<String>,
    },
    AuthInvalid {
        #[serde(default)]
        message: Lenient<String>,
    },
    Result {
        id: u64,
        #[serde(default)]
        success: Lenient<bool>,
        // `result` is taken out before (see `one`)
        #[serde(default)]
        error: Lenient<Failure>,
    },
    Event {
        id: u64,
        #[serde(default)]
        event: Lenient<Event>,
    },
    Pong {
        id: u64,
    },
    #[serde(other)]
    Other,
}

/// The `error` of a refused command.
#[derive(Deserialize)]
struct Failure {
    #[serde(default)]
    code: Lenient<String>,
    #[serde(default)]
    message: Lenient<String>,
}

/// Parse one WebSocket text message: one message or a coalesced array of them.
pub fn parse(text: &str) -> Vec<Incoming> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items.into_iter().map(one).collect(),
        Ok(v) => vec![one(v)],
        Err(_) => vec![Incoming::Other],
    }
}

/// One frame; one that is not what its `type` says (a `result` without an id) is `Other`.
fn one(mut v: Value) -> Incoming {
    // a result can be a big house's registry: moved out whole, not copied through the
    // buffer serde reads an internally tagged enum with
    let result = match &mut v {
        Value::Object(m) => m.remove("result"),
        _ => None,
    };
    let text = |t: Lenient<String>| t.0.map(|s| short(&s, 200));
    match Frame::deserialize(v) {
        Ok(Frame::AuthRequired) => Incoming::AuthRequired,
        Ok(Frame::AuthOk { ha_version }) => Incoming::AuthOk {
            version: text(ha_version).map(|s| short(&s, 40)),
        },
        Ok(Frame::AuthInvalid { message }) => Incoming::AuthInvalid {
            message: text(message).unwrap_or_else(|| "invalid access token".into()),
        },
        Ok(Frame::Result { id, success, error }) => {
            let outcome = if success.0 == Some(true) {
                Ok(result.unwrap_or(Value::Null))
            } else {
                let e = error.0.unwrap_or(Failure {
                    code: Lenient(None),
                    message: Lenient(None),
                });
                Err(HaFailure {
                    code: text(e.code).unwrap_or_else(|| "unknown_error".into()),
                    message: text(e.message).unwrap_or_default(),
                })
            };
            Incoming::Result { id, outcome }
        }
        Ok(Frame::Event { id, event }) => Incoming::Event {
            id,
            event: event.0.unwrap_or_default(),
        },
        Ok(Frame::Pong { id }) => Incoming::Pong { id },
        Ok(Frame::Other) | Err(_) => Incoming::Other,
    }
}

/// A state change of an entity that is no satellite — most of a big house's traffic on
/// the `state_changed` subscription — recognised without parsing it (HA writes compact
/// JSON), so it costs a scan, not a parse. Anything else, or in doubt: `false`.
pub fn other_state_change(text: &str) -> bool {
    text.starts_with("{\"id\":")
        && text.contains("\"type\":\"event\"")
        && text.contains("\"event_type\":\"state_changed\"")
        && !text.contains("assist_satellite.")
}

/// The events this client subscribes to: state changes (which satellite listens) and
/// registry changes (rooms and satellites added, renamed or moved).
pub const SUBSCRIBED: [&str; 4] = [
    "state_changed",
    "area_registry_updated",
    "device_registry_updated",
    "entity_registry_updated",
];

#[cfg(test)]
mod tests {
    use super::super::frames::{call_service, command};
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_read_as_the_documentation_gives_them() {
        assert_eq!(
            parse(r#"{"type":"auth_required","ha_version":"2025.4.4"}"#),
            [Incoming::AuthRequired]
        );
        assert_eq!(
            parse(r#"{"type":"auth_ok","ha_version":"2025.4.4"}"#),
            [Incoming::AuthOk {
                version: Some("2025.4.4".into())
            }]
        );
        assert_eq!(
            parse(r#"{"type":"auth_invalid","message":"Invalid access token or password"}"#),
            [Incoming::AuthInvalid {
                message: "Invalid access token or password".into()
            }]
        );
        assert_eq!(
            parse(
                r#"[{"id":3,"type":"result","success":true,"result":{"a":1}},{"id":4,"type":"pong"}]"#
            ),
            [
                Incoming::Result {
                    id: 3,
                    outcome: Ok(json!({"a":1}))
                },
                Incoming::Pong { id: 4 }
            ]
        );
        let failed = parse(
            r#"{"id":5,"type":"result","success":false,"error":{"code":"not_found","message":"Service\nnot found"}}"#,
        );
        assert_eq!(
            failed,
            [Incoming::Result {
                id: 5,
                outcome: Err(HaFailure {
                    code: "not_found".into(),
                    message: "Service not found".into()
                })
            }]
        );
        assert_eq!(parse("not json"), [Incoming::Other]);
        let light = r#"{"id":2,"type":"event","event":{"event_type":"state_changed","data":{"entity_id":"light.k","new_state":{"state":"on"}}}}"#;
        assert!(other_state_change(light));
        assert!(!other_state_change(
            &light.replace("light.k", "assist_satellite.k")
        ));
        assert!(
            !other_state_change(&format!("[{light}]")),
            "a coalesced batch is parsed"
        );
        assert!(!other_state_change(
            r#"{"id":3,"type":"result","success":true,"result":null}"#
        ));
        assert_eq!(parse(r#"{"type":"result"}"#), [Incoming::Other]);
        assert_eq!(
            command(
                7,
                call_service(
                    "assist_satellite",
                    "announce",
                    "assist_satellite.k",
                    json!({"message":"hi"})
                )
            ),
            r#"{"domain":"assist_satellite","id":7,"service":"announce","service_data":{"message":"hi"},"target":{"entity_id":"assist_satellite.k"},"type":"call_service"}"#
        );
    }

    #[test]
    fn frames_of_another_shape_are_read_leniently_or_are_other() {
        // HA adds fields; a field of another shape reads as absent
        assert_eq!(
            parse(r#"{"type":"auth_ok","ha_version":5,"new":1}"#),
            [Incoming::AuthOk { version: None }]
        );
        assert_eq!(
            parse(r#"{"type":"auth_invalid"}"#),
            [Incoming::AuthInvalid {
                message: "invalid access token".into()
            }]
        );
        assert_eq!(
            parse(r#"{"id":6,"type":"result","success":"yes","error":"bad"}"#),
            [Incoming::Result {
                id: 6,
                outcome: Err(HaFailure {
                    code: "unknown_error".into(),
                    message: String::new()
                })
            }]
        );
        assert_eq!(
            parse(r#"{"id":7,"type":"result","success":true}"#),
            [Incoming::Result {
                id: 7,
                outcome: Ok(Value::Null)
            }]
        );
        // not what its type says: no id, an id that is no number, no type at all
        for odd in [
            r#"{"type":"pong"}"#,
            r#"{"id":"8","type":"result","success":true}"#,
            r#"{"id":-1,"type":"event","event":{}}"#,
            r#"{"id":9}"#,
            r#"{"id":9,"type":7}"#,
            r#"{"id":9,"type":"zeroconf"}"#,
            "[1,null]",
            "3",
        ] {
            assert!(
                parse(odd).iter().all(|i| *i == Incoming::Other),
                "{odd}: {:?}",
                parse(odd)
            );
        }
        let ev = parse(
            r#"{"id":2,"type":"event","event":{"event_type":"state_changed","data":{"entity_id":"assist_satellite.k","new_state":{"state":"listening"}}}}"#,
        );
        match &ev[..] {
            [Incoming::Event { id: 2, event }] => {
                assert_eq!(event.event_type(), "state_changed");
                assert_eq!(
                    event.state_change(),
                    ("assist_satellite.k", Some("listening"))
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse(r#"{"id":3,"type":"event","event":"odd"}"#),
            [Incoming::Event {
                id: 3,
                event: Default::default()
            }]
        );
    }
}
