//! Home Assistant as the kernel's [`Home`] door: the exposed entities with their live
//! states (`get_states`, kept to the exposed ones), the services a domain has
//! (`get_services`, read again after a minute), one service call, and Home Assistant's
//! own agent for the fast path (`conversation/process` with
//! `agent_id: conversation.home_assistant`, explicitly: with homebot as the pipeline's
//! conversation agent, the default agent would be homebot again).
//!
//! Everything read here is a peer's text: ids are checked, names and states cleaned
//! (one line, no brackets) and bounded, lists capped.

use super::answers::{self, Conversation, State, States};
use super::frames::{self, Command};
use super::lenient::Lenient;
use super::protocol::short;
use super::rooms::{clean_name, Rooms};
use super::{HaError, HomeAssistant};
use crate::config::HomeAssistantConfig;
use crate::home::{Converse, Home, HomeEntity, HomeError};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Entities `exposed()` returns at most.
pub const MAX_ENTITIES: usize = 2000;
/// Services of a domain kept at most.
pub const MAX_SERVICES: usize = 200;
/// How long the services list is trusted before it is read again.
pub const SERVICES_FOR: Duration = Duration::from_secs(60);
/// Longest speech of Home Assistant's agent used as a reply.
pub const MAX_SPEECH: usize = 500;
/// Words that name what needs confirmation (locks, alarms, garage doors): a sentence with
/// one never takes the fast path, so the confirmation rules of `home_control` apply.
const SENSITIVE_WORDS: [&str; 10] = [
    "锁", "lock", "alarm", "警报", "警戒", "布防", "撤防", "车库", "garage", "gate",
];

/// Services by domain, and when they were read.
pub type Services = (Instant, HashMap<String, Vec<String>>);

/// What the home tools see of the house (shared, cheap to hand out).
#[derive(actix::Message)]
#[rtype(result = "std::sync::Arc<HomeView>")]
pub struct GetView;

/// The services of a domain, if the list read last is recent (see
/// `HaState::known_services`); `None`: read it again.
#[derive(actix::Message)]
#[rtype(result = "Option<Option<Vec<String>>>")]
pub struct KnownServices(pub String);

/// The services list was read (`get_services`), with when.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct ServicesRead(pub Services);

/// A sentence goes to Home Assistant's agent as call `call`: `false` when the same
/// sentence is there already (see `HaState::start_conversing`).
#[derive(actix::Message)]
#[rtype(result = "Result<bool, crate::actor::Unavailable>")]
pub struct StartConversing {
    pub sentence: String,
    pub call: u64,
}

/// Call `call` of a sentence to Home Assistant's agent ended.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct Conversed {
    pub sentence: String,
    pub call: u64,
}

/// What the home tools see of the house (rebuilt by the actor when it changes).
#[derive(Debug, Default)]
pub struct HomeView {
    pub exposed: HashSet<String>,
    /// entity id → room name
    pub room_of: HashMap<String, String>,
    /// Area names and ids, lowercase.
    pub rooms: Vec<String>,
    /// Lowercase names and ids of what needs confirmation (see [`SENSITIVE_WORDS`]).
    pub sensitive: Vec<String>,
}

impl HomeView {
    pub fn new(rooms: &Rooms, exposed: &HashSet<String>, cfg: &HomeAssistantConfig) -> Self {
        let room_of = rooms
            .entity_areas
            .iter()
            .filter(|(e, _)| exposed.contains(*e))
            .map(|(e, a)| (e.clone(), rooms.room_name(a)))
            .collect();
        let mut sensitive = rooms.sensitive.clone();
        sensitive.extend(cfg.confirm_entities.iter().map(|e| e.to_lowercase()));
        sensitive.extend(SENSITIVE_WORDS.iter().map(|w| w.to_string()));
        sensitive.retain(|s| !s.trim().is_empty());
        Self {
            exposed: exposed.clone(),
            room_of,
            rooms: rooms
                .areas
                .iter()
                .flat_map(|a| [a.name.to_lowercase(), a.id.to_lowercase()])
                .filter(|s| !s.is_empty())
                .collect(),
            sensitive,
        }
    }

    /// Why a sentence must not take the fast path, if it must not.
    pub fn not_for_fast_path(&self, text: &str, room: Option<&str>) -> Option<&'static str> {
        let t = text.to_lowercase();
        if self.sensitive.iter().any(|s| t.contains(s.as_str())) {
            return Some("it names a device that needs confirmation");
        }
        // "关灯" from the kitchen: Home Assistant does not know the speaker's room, the
        // LLM (with the room in its context) does
        if room.is_some() && !self.rooms.iter().any(|r| t.contains(r.as_str())) {
            return Some("it names no room and the speaker's room is known");
        }
        None
    }
}

/// One entity of `get_states`, if it is exposed and well formed.
fn entity(s: &State, view: &HomeView) -> Option<HomeEntity> {
    let id = s.entity_id.as_str();
    if !view.exposed.contains(id) || !crate::config::is_entity_id(id) {
        return None;
    }
    let attr = s.attributes.as_ref();
    let text = |v: Option<&Lenient<String>>, max: usize| {
        v.and_then(Lenient::as_str)
            .map(|x| clean_name(&short(x, max)))
            .filter(|x| !x.is_empty())
    };
    Some(HomeEntity {
        entity_id: id.to_string(),
        name: text(attr.map(|a| &a.friendly_name), 40).unwrap_or_else(|| id.to_string()),
        area: view.room_of.get(id).cloned(),
        state: text(Some(&s.state), 40).unwrap_or_else(|| "unknown".into()),
        unit: text(attr.map(|a| &a.unit_of_measurement), 10),
        device_class: text(attr.map(|a| &a.device_class), 32),
    })
}

/// What Home Assistant's agent answered: `conversation/process`'s result, decoded here
/// (into [`Conversation`]); a malformed one is not handled, and says why.
pub fn conversed(result: &Value) -> Converse {
    let c = match Conversation::deserialize(result) {
        Ok(c) => c,
        Err(e) => {
            let why = HaError::Malformed {
                command: "conversation/process",
                why: short(&e.to_string(), 200),
            };
            return Converse::NotHandled(why.to_string());
        }
    };
    let r = c.response.0.unwrap_or_default();
    let kind = r
        .response_type
        .as_str()
        .map(|k| short(k, 40))
        .unwrap_or_default();
    let speech = r.speech().map(|s| short(s, MAX_SPEECH)).unwrap_or_default();
    match kind.as_str() {
        "action_done" | "query_answer" if !speech.is_empty() => Converse::Handled {
            speech,
            response_type: kind,
        },
        _ => {
            let code = r.code().map(|c| short(c, 40)).unwrap_or_default();
            Converse::NotHandled(format!("{kind} {code}").trim().to_string())
        }
    }
}

/// Numbers the calls to Home Assistant's agent, so the end of one call never takes
/// another call's sentence out of the in-flight set.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Tells the actor a sentence's call ended when it ends, however it ends (its start
/// refused, or answered, or given up by its caller); the actor's entry goes only if it is
/// this call's.
struct InFlight<'a> {
    ha: &'a HomeAssistant,
    sentence: String,
    call: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.ha.addr.do_send(Conversed {
            sentence: std::mem::take(&mut self.sentence),
            call: self.call,
        });
    }
}

impl From<&HaError> for HomeError {
    fn from(e: &HaError) -> Self {
        match e {
            // Home Assistant answered, with a failure or with what cannot be read
            HaError::Refused(_) | HaError::Malformed { .. } | HaError::UnknownTarget(_) => {
                HomeError::Refused(e.to_string())
            }
            _ => HomeError::Unreachable(e.to_string()),
        }
    }
}

#[async_trait::async_trait]
impl Home for HomeAssistant {
    async fn exposed(&self) -> Result<Vec<HomeEntity>, HomeError> {
        let view = self.view().await?;
        let states: States = self
            .command(Command::GetStates)
            .await
            .map_err(|e| HomeError::from(&e))?;
        Ok(states
            .iter()
            .filter_map(|s| entity(s, &view))
            .take(MAX_ENTITIES)
            .collect())
    }

    async fn services(&self, domain: &str) -> Result<Option<Vec<String>>, HomeError> {
        let known = self.ask(KnownServices(domain.to_string())).await;
        if let Some(hit) = known.map_err(|e| HomeError::from(&e))? {
            return Ok(hit);
        }
        let all: answers::Services = self
            .command(Command::GetServices)
            .await
            .map_err(|e| HomeError::from(&e))?;
        let map: HashMap<String, Vec<String>> = all
            .into_iter()
            .take(1000)
            .map(|(d, svcs)| {
                let names = svcs
                    .0
                    .into_iter()
                    .flat_map(|m| m.into_keys())
                    .filter(|s| s.len() <= 64)
                    .take(MAX_SERVICES)
                    .collect();
                (d, names)
            })
            .collect();
        let hit = map.get(domain).cloned();
        self.addr.do_send(ServicesRead((Instant::now(), map)));
        Ok(hit)
    }

    async fn call(
        &self,
        domain: &str,
        service: &str,
        entity_id: &str,
        data: Value,
    ) -> Result<(), HomeError> {
        let body = frames::call_service(domain, service, entity_id, data);
        self.command::<IgnoredAny>(body)
            .await
            .map(|_| ())
            .map_err(|e| HomeError::from(&e))
    }

    async fn converse(&self, text: &str, room: Option<&str>, within: Duration) -> Converse {
        let view = match self.view().await {
            Ok(v) => v,
            Err(e) => return Converse::NotHandled(e.to_string()),
        };
        if let Some(why) = view.not_for_fast_path(text, room) {
            return Converse::NotHandled(why.into());
        }
        let call = CALLS.fetch_add(1, Ordering::Relaxed);
        // before the ask: a start the actor made after its answer timed out is undone too
        let _out = InFlight {
            ha: self,
            sentence: text.to_string(),
            call,
        };
        let start = StartConversing {
            sentence: text.to_string(),
            call,
        };
        match self.ask(start).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => {
                return Converse::NotHandled(
                    "the same sentence is with Home Assistant's agent already (it came back)"
                        .into(),
                )
            }
            Ok(Err(e)) => return Converse::NotHandled(e.to_string()),
            Err(e) => return Converse::NotHandled(e.to_string()),
        }
        let body = Command::ConversationProcess {
            text: text.to_string(),
            language: self.language.clone(),
            agent_id: crate::home::BUILTIN_AGENT.to_string(),
        };
        match self.command_within::<Value>(within, body).await {
            Ok(v) => conversed(&v),
            Err(e) => Converse::NotHandled(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn handled_only_when_ha_acted_or_answered() {
        let done = json!({"response": {"response_type": "action_done", "language": "zh-cn",
            "speech": {"plain": {"speech": "厨房灯已打开\n", "extra_data": null}}, "data": {"targets": []}}});
        assert_eq!(
            conversed(&done),
            Converse::Handled {
                speech: "厨房灯已打开".into(),
                response_type: "action_done".into()
            }
        );
        let miss = json!({"response": {"response_type": "error",
            "speech": {"plain": {"speech": "抱歉，我不明白"}}, "data": {"code": "no_intent_match"}}});
        assert_eq!(
            conversed(&miss),
            Converse::NotHandled("error no_intent_match".into())
        );
        let huge = json!({"response": {"response_type": "query_answer",
            "speech": {"plain": {"speech": "是".repeat(10_000)}}}});
        match conversed(&huge) {
            Converse::Handled { speech, .. } => assert_eq!(speech.chars().count(), MAX_SPEECH),
            other => panic!("{other:?}"),
        }
        assert!(matches!(conversed(&json!(null)), Converse::NotHandled(_)));
    }

    #[test]
    fn locks_and_roomless_sentences_skip_the_fast_path() {
        let areas = json!([{"area_id": "chu_fang", "name": "厨房"}]);
        let entities = json!([
            {"entity_id": "lock.front", "name": "大门", "area_id": "chu_fang"},
            {"entity_id": "cover.g", "original_name": "卷帘", "device_class": "garage"},
            {"entity_id": "light.k", "area_id": "chu_fang"}
        ]);
        let cfg = HomeAssistantConfig::default();
        let (areas, entities) = (answers::list(areas), answers::list(entities));
        let rooms = Rooms::from_registries(&areas, &answers::list(json!([])), &entities, &cfg);
        let exposed: HashSet<String> = ["light.k".to_string()].into();
        let v = HomeView::new(&rooms, &exposed, &cfg);
        assert_eq!(v.room_of.get("light.k").map(String::as_str), Some("厨房"));
        assert!(!v.room_of.contains_key("lock.front"), "not exposed");
        assert!(v.not_for_fast_path("打开大门", None).is_some());
        assert!(v.not_for_fast_path("打开卷帘", None).is_some());
        assert!(v.not_for_fast_path("把门锁上", None).is_some());
        assert_eq!(v.not_for_fast_path("打开厨房的灯", None), None);
        assert_eq!(v.not_for_fast_path("打开厨房的灯", Some("厨房")), None);
        assert!(v.not_for_fast_path("关灯", Some("厨房")).is_some());
        assert_eq!(v.not_for_fast_path("关灯", None), None);
    }
}
