//! Home Assistant's WebSocket API, as its developer documentation describes it: the
//! server says `auth_required`, the client sends `{"type":"auth","access_token":…}`, the
//! server answers `auth_ok` or `auth_invalid`; then every command carries an `id` and is
//! answered by a `result` (`success`, `result` or `error {code, message}`) with that id;
//! a subscription's `event` messages carry the id of the command that subscribed;
//! `{"id","type":"ping"}` is answered by `pong`. The server may coalesce several messages
//! into one JSON array.
//!
//! Everything here is read from a peer: sizes are bounded where a message enters (the
//! WebSocket's message cap), and fields are read as optional.

use serde_json::{json, Value};

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
    Result {
        id: u64,
        outcome: Result<Value, HaFailure>,
    },
    Event {
        id: u64,
        event: Value,
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

/// Parse one WebSocket text message: one message or a coalesced array of them.
pub fn parse(text: &str) -> Vec<Incoming> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items.into_iter().map(one).collect(),
        Ok(v) => vec![one(v)],
        Err(_) => vec![Incoming::Other],
    }
}

fn one(mut v: Value) -> Incoming {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
    let id = v.get("id").and_then(Value::as_u64);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(|s| short(s, 200));
    match (kind, id) {
        ("auth_required", _) => Incoming::AuthRequired,
        ("auth_ok", _) => Incoming::AuthOk {
            version: text(&v, "ha_version").map(|s| short(&s, 40)),
        },
        ("auth_invalid", _) => Incoming::AuthInvalid {
            message: text(&v, "message").unwrap_or_else(|| "invalid access token".into()),
        },
        ("result", Some(id)) => {
            let success = v.get("success").and_then(Value::as_bool) == Some(true);
            let outcome = if success {
                Ok(v.get_mut("result").map(Value::take).unwrap_or(Value::Null))
            } else {
                let e = v.get("error").cloned().unwrap_or(Value::Null);
                Err(HaFailure {
                    code: text(&e, "code").unwrap_or_else(|| "unknown_error".into()),
                    message: text(&e, "message").unwrap_or_default(),
                })
            };
            Incoming::Result { id, outcome }
        }
        ("event", Some(id)) => Incoming::Event {
            id,
            event: v.get_mut("event").map(Value::take).unwrap_or(Value::Null),
        },
        ("pong", Some(id)) => Incoming::Pong { id },
        _ => Incoming::Other,
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

pub fn auth(token: &str) -> String {
    json!({"type": "auth", "access_token": token}).to_string()
}

/// A command with its id.
pub fn command(id: u64, mut body: Value) -> String {
    if let Value::Object(m) = &mut body {
        m.insert("id".into(), json!(id));
    }
    body.to_string()
}

/// `call_service` on one entity.
pub fn call_service(domain: &str, service: &str, entity_id: &str, data: Value) -> Value {
    json!({
        "type": "call_service",
        "domain": domain,
        "service": service,
        "target": {"entity_id": entity_id},
        "service_data": data,
    })
}

/// Entities kept from `homeassistant/expose_entity/list` (a house has hundreds).
pub const MAX_EXPOSED: usize = 5000;

/// The entity ids of `homeassistant/expose_entity/list` exposed to Assist
/// (`conversation: true`), well formed, at most [`MAX_EXPOSED`].
pub fn exposed(result: &Value) -> Vec<String> {
    let Some(m) = result.get("exposed_entities").and_then(Value::as_object) else {
        return Vec::new();
    };
    m.iter()
        .filter(|(id, e)| {
            e.get("conversation").and_then(Value::as_bool) == Some(true)
                && crate::config::is_entity_id(id)
        })
        .map(|(id, _)| id.clone())
        .take(MAX_EXPOSED)
        .collect()
}

/// A watch: `subscribe_trigger` with a state trigger (`entity_id` turns `to`).
pub fn watch_trigger(entity_id: &str, to: &str) -> Value {
    json!({
        "type": "subscribe_trigger",
        "trigger": {"platform": "state", "entity_id": entity_id, "to": to},
    })
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
    use super::*;

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
}
