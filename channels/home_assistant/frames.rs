//! The frames homebot sends to Home Assistant, typed: [`Auth`] (the one frame without an
//! id) and [`Command`], a serde enum tagged by `type` as HA's WebSocket API names its
//! commands, each sent in one id envelope (`{"id": 5, "type": "get_states"}`). What comes
//! back is read in `protocol` (the frames) and `answers` (each command's result).
//!
//! Only a service call's `service_data` stays free-form JSON: the model (or the announce
//! and listen doors) choose it, and Home Assistant's service schemas check it.

use serde::Serialize;
use serde_json::Value;

/// The `auth` message: `{"type": "auth", "access_token": …}`. No `Debug`: it holds the
/// token, which is sent only here and never logged.
#[derive(Serialize)]
#[serde(tag = "type", rename = "auth")]
pub struct Auth<'a> {
    pub access_token: &'a str,
}

/// A command of HA's WebSocket API (sent with an id, see [`command`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum Command {
    /// Answered by `pong`: the connection's keep-alive.
    #[serde(rename = "ping")]
    Ping,
    /// Every `event_type` event, each as an `event` frame with this command's id.
    #[serde(rename = "subscribe_events")]
    SubscribeEvents { event_type: String },
    /// An `event` frame each time the trigger fires (a watch).
    #[serde(rename = "subscribe_trigger")]
    SubscribeTrigger { trigger: Trigger },
    /// Every entity's state (answered by `answers::States`).
    #[serde(rename = "get_states")]
    GetStates,
    /// Every domain's services (answered by `answers::Services`).
    #[serde(rename = "get_services")]
    GetServices,
    /// One service on one entity; its answer is ignored (success is the `result`).
    #[serde(rename = "call_service")]
    CallService {
        domain: String,
        service: String,
        target: Target,
        /// Free-form: the service's own fields.
        service_data: Value,
    },
    /// The area registry (answered by a list of `answers::AreaEntry`).
    #[serde(rename = "config/area_registry/list")]
    AreaRegistry,
    /// The device registry (answered by a list of `answers::DeviceEntry`).
    #[serde(rename = "config/device_registry/list")]
    DeviceRegistry,
    /// The entity registry (answered by a list of `answers::EntityEntry`).
    #[serde(rename = "config/entity_registry/list")]
    EntityRegistry,
    /// What is exposed to which assistant (answered by `answers::Exposed`).
    #[serde(rename = "homeassistant/expose_entity/list")]
    ExposedEntities,
    /// A sentence for one of HA's conversation agents (answered by
    /// `answers::Conversation`).
    #[serde(rename = "conversation/process")]
    ConversationProcess {
        text: String,
        language: String,
        agent_id: String,
    },
}

/// A trigger of `subscribe_trigger`, tagged by its `platform`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "platform")]
pub enum Trigger {
    /// `entity_id` turns `to`.
    #[serde(rename = "state")]
    State { entity_id: String, to: String },
}

/// Which entity a service call acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub entity_id: String,
}

impl Command {
    /// The command's `type`, for logs and errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Command::Ping => "ping",
            Command::SubscribeEvents { .. } => "subscribe_events",
            Command::SubscribeTrigger { .. } => "subscribe_trigger",
            Command::GetStates => "get_states",
            Command::GetServices => "get_services",
            Command::CallService { .. } => "call_service",
            Command::AreaRegistry => "config/area_registry/list",
            Command::DeviceRegistry => "config/device_registry/list",
            Command::EntityRegistry => "config/entity_registry/list",
            Command::ExposedEntities => "homeassistant/expose_entity/list",
            Command::ConversationProcess { .. } => "conversation/process",
        }
    }
}

/// A command and its id, as one frame: `{"id": 5, "type": …, …}`.
#[derive(Serialize)]
struct Envelope<'a> {
    id: u64,
    #[serde(flatten)]
    command: &'a Command,
}

/// The text of the `auth` frame.
pub fn auth(token: &str) -> String {
    serde_json::to_string(&Auth {
        access_token: token,
    })
    .expect("the auth frame is a map of strings")
}

/// The text of a command with its id. Written through a [`Value`], whose keys are
/// sorted: the frames are byte for byte the ones homebot sent when it built them by hand
/// (Home Assistant reads keys in any order).
pub fn command(id: u64, command: Command) -> String {
    serde_json::to_value(Envelope {
        id,
        command: &command,
    })
    .expect("a command is a map with string keys")
    .to_string()
}

/// `call_service` on one entity.
pub fn call_service(domain: &str, service: &str, entity_id: &str, data: Value) -> Command {
    Command::CallService {
        domain: domain.to_string(),
        service: service.to_string(),
        target: Target {
            entity_id: entity_id.to_string(),
        },
        service_data: data,
    }
}

/// `assist_satellite.announce` on a satellite: `text`, without the chime before it.
pub fn announce(satellite: &str, text: &str) -> Command {
    #[derive(Serialize)]
    struct Announce<'a> {
        message: &'a str,
        preannounce: bool,
    }
    let data = Announce {
        message: text,
        preannounce: false,
    };
    call_service("assist_satellite", "announce", satellite, data_of(data))
}

/// `assist_satellite.start_conversation` with no message and no chime: the satellite
/// listens for an answer.
pub fn start_conversation(satellite: &str) -> Command {
    #[derive(Serialize)]
    struct Start<'a> {
        start_message: &'a str,
        preannounce: bool,
    }
    let data = Start {
        start_message: "",
        preannounce: false,
    };
    call_service(
        "assist_satellite",
        "start_conversation",
        satellite,
        data_of(data),
    )
}

/// `tts.speak` with the text-to-speech entity `tts` on a media player.
pub fn tts_speak(tts: &str, media_player: &str, text: &str) -> Command {
    #[derive(Serialize)]
    struct Speak<'a> {
        media_player_entity_id: &'a str,
        message: &'a str,
    }
    let data = Speak {
        media_player_entity_id: media_player,
        message: text,
    };
    call_service("tts", "speak", tts, data_of(data))
}

fn data_of(data: impl Serialize) -> Value {
    serde_json::to_value(data).expect("service data is a map of strings and booleans")
}

/// A watch: `subscribe_trigger` with a state trigger (`entity_id` turns `to`).
pub fn watch_trigger(entity_id: &str, to: &str) -> Command {
    Command::SubscribeTrigger {
        trigger: Trigger::State {
            entity_id: entity_id.to_string(),
            to: to.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The frame as JSON, to compare with the documentation's example (key order aside).
    fn sent(id: u64, c: Command) -> Value {
        serde_json::from_str(&command(id, c)).expect("a frame is JSON")
    }

    #[test]
    fn auth_is_the_documented_frame() {
        assert_eq!(
            auth("ABCDEFGHIJKLMNOPQ"),
            r#"{"type":"auth","access_token":"ABCDEFGHIJKLMNOPQ"}"#
        );
    }

    #[test]
    fn every_command_is_the_documented_frame() {
        assert_eq!(command(19, Command::Ping), r#"{"id":19,"type":"ping"}"#);
        assert_eq!(
            command(19, Command::GetStates),
            r#"{"id":19,"type":"get_states"}"#
        );
        assert_eq!(
            command(20, Command::GetServices),
            r#"{"id":20,"type":"get_services"}"#
        );
        assert_eq!(
            sent(
                18,
                Command::SubscribeEvents {
                    event_type: "state_changed".into()
                }
            ),
            json!({"id": 18, "type": "subscribe_events", "event_type": "state_changed"})
        );
        assert_eq!(
            sent(2, watch_trigger("binary_sensor.motion_occupancy", "on")),
            json!({"id": 2, "type": "subscribe_trigger", "trigger": {"platform": "state",
                "entity_id": "binary_sensor.motion_occupancy", "to": "on"}})
        );
        assert_eq!(
            sent(
                24,
                call_service(
                    "light",
                    "turn_on",
                    "light.kitchen",
                    json!({"color_name": "beige", "brightness": "101"})
                )
            ),
            json!({"id": 24, "type": "call_service", "domain": "light", "service": "turn_on",
                "service_data": {"color_name": "beige", "brightness": "101"},
                "target": {"entity_id": "light.kitchen"}})
        );
        for (c, kind) in [
            (Command::AreaRegistry, "config/area_registry/list"),
            (Command::DeviceRegistry, "config/device_registry/list"),
            (Command::EntityRegistry, "config/entity_registry/list"),
            (Command::ExposedEntities, "homeassistant/expose_entity/list"),
        ] {
            assert_eq!(c.kind(), kind);
            assert_eq!(sent(3, c), json!({"id": 3, "type": kind}));
        }
        assert_eq!(
            sent(
                4,
                Command::ConversationProcess {
                    text: "打开厨房的灯".into(),
                    language: "zh-cn".into(),
                    agent_id: "conversation.home_assistant".into(),
                }
            ),
            json!({"id": 4, "type": "conversation/process", "text": "打开厨房的灯",
                "language": "zh-cn", "agent_id": "conversation.home_assistant"})
        );
    }

    #[test]
    fn the_speaking_services_send_their_documented_data() {
        assert_eq!(
            command(5, announce("assist_satellite.k", "饭好了")),
            r#"{"domain":"assist_satellite","id":5,"service":"announce","service_data":{"message":"饭好了","preannounce":false},"target":{"entity_id":"assist_satellite.k"},"type":"call_service"}"#
        );
        assert_eq!(
            sent(6, start_conversation("assist_satellite.k")),
            json!({"id": 6, "type": "call_service", "domain": "assist_satellite",
                "service": "start_conversation", "target": {"entity_id": "assist_satellite.k"},
                "service_data": {"start_message": "", "preannounce": false}})
        );
        assert_eq!(
            sent(7, tts_speak("tts.google", "media_player.kitchen", "hi")),
            json!({"id": 7, "type": "call_service", "domain": "tts", "service": "speak",
                "target": {"entity_id": "tts.google"},
                "service_data": {"media_player_entity_id": "media_player.kitchen", "message": "hi"}})
        );
    }

    #[test]
    fn the_id_is_the_envelopes_and_the_type_the_commands() {
        // flatten with an internally tagged enum: one flat object, the id beside the tag
        let c = call_service("tts", "speak", "tts.x", json!({"message": "hi", "id": 1}));
        let v = sent(9, c.clone());
        assert_eq!(v["id"], 9);
        assert_eq!(v["type"], "call_service");
        assert_eq!(v["service_data"]["id"], 1, "service data stays inside");
        assert_eq!(v.as_object().map(|m| m.len()), Some(6));
        assert_eq!(c.kind(), v["type"]);
    }
}
