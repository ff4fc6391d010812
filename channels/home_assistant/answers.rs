//! What Home Assistant answers, typed: each command's `result` decoded once, where its
//! call is resolved ([`decode`]).
//!
//! Everything here is a peer's JSON, and Home Assistant adds fields between versions:
//! unknown fields are ignored, a field of another shape is read as absent ([`Lenient`]),
//! and one malformed item of a list is left out without hiding the rest ([`Items`]). An
//! answer that is not what its command returns at all (a list that is no list) is a
//! [`HaError::Malformed`], never a panic.

use super::lenient::{Items, Lenient};
use super::protocol::short;
use super::HaError;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Decode the `result` of a `command` (its `type`, for the error) into its typed answer.
pub fn decode<A: DeserializeOwned>(command: &'static str, result: Value) -> Result<A, HaError> {
    serde_json::from_value(result).map_err(|e| HaError::Malformed {
        command,
        why: short(&e.to_string(), 200),
    })
}

/// One entity of `get_states`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct State {
    pub entity_id: String,
    #[serde(default)]
    pub state: Lenient<String>,
    #[serde(default)]
    pub attributes: Lenient<Attributes>,
}

/// The attributes of a state homebot reads (an entity has many more).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Attributes {
    #[serde(default)]
    pub friendly_name: Lenient<String>,
    #[serde(default)]
    pub unit_of_measurement: Lenient<String>,
    #[serde(default)]
    pub device_class: Lenient<String>,
}

/// `get_states`: every entity's state.
pub type States = Items<State>;

/// `get_services`: domain → service → its description (not read), in name order.
pub type Services = BTreeMap<String, Lenient<BTreeMap<String, IgnoredAny>>>;

/// `homeassistant/expose_entity/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Exposed {
    /// entity id → which assistants it is exposed to, in id order.
    pub exposed_entities: BTreeMap<String, Lenient<Exposure>>,
}

/// The assistants one entity is exposed to; homebot reads Assist's (`conversation`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Exposure {
    #[serde(default)]
    pub conversation: Lenient<bool>,
}

impl Exposed {
    /// The entity ids exposed to Assist (`conversation: true`), in id order.
    pub fn to_assist(&self) -> impl Iterator<Item = &str> {
        self.exposed_entities
            .iter()
            .filter(|(_, e)| e.as_ref().and_then(|e| e.conversation.0) == Some(true))
            .map(|(id, _)| id.as_str())
    }
}

/// An area of `config/area_registry/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AreaEntry {
    pub area_id: String,
    #[serde(default)]
    pub name: Lenient<String>,
}

/// A device of `config/device_registry/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DeviceEntry {
    pub id: String,
    #[serde(default)]
    pub area_id: Lenient<String>,
}

/// An entity of `config/entity_registry/list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EntityEntry {
    pub entity_id: String,
    #[serde(default)]
    pub device_id: Lenient<String>,
    #[serde(default)]
    pub area_id: Lenient<String>,
    #[serde(default)]
    pub name: Lenient<String>,
    #[serde(default)]
    pub original_name: Lenient<String>,
    #[serde(default)]
    pub aliases: Lenient<Vec<Lenient<String>>>,
    #[serde(default)]
    pub device_class: Lenient<String>,
    #[serde(default)]
    pub original_device_class: Lenient<String>,
}

/// `conversation/process`: what HA's agent answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Conversation {
    #[serde(default)]
    pub response: Lenient<Response>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Response {
    /// `action_done`, `query_answer` or `error`.
    #[serde(default)]
    pub response_type: Lenient<String>,
    #[serde(default)]
    pub speech: Lenient<Speech>,
    #[serde(default)]
    pub data: Lenient<ResponseData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Speech {
    #[serde(default)]
    pub plain: Lenient<PlainSpeech>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PlainSpeech {
    #[serde(default)]
    pub speech: Lenient<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ResponseData {
    /// Why it was not handled (`no_intent_match`, …).
    #[serde(default)]
    pub code: Lenient<String>,
}

impl Response {
    /// The plain speech.
    pub fn speech(&self) -> Option<&str> {
        self.speech.as_ref()?.plain.as_ref()?.speech.as_str()
    }

    pub fn code(&self) -> Option<&str> {
        self.data.as_ref()?.code.as_str()
    }
}

/// A registry list in a test, from its JSON.
#[cfg(test)]
pub fn list<T: DeserializeOwned>(v: Value) -> Items<T> {
    decode("a test's list", v).expect("a list")
}

#[cfg(test)]
#[path = "answers_tests.rs"]
mod tests;
