//! `home_control {entity_id, service, data?}`: one service call on one exposed entity.
//!
//! Checked before anything leaves homebot, in this order: a guest may not control (unless
//! `guests_may_control`); the entity id must be well formed and its domain allowed
//! (`allowed_domains`); the data must not name other targets; the entity must be exposed
//! to Assist; Home Assistant must know the service. Locks, alarm panels, garage doors and
//! `confirm_entities` then wait for the asker's "确认", asked through `ask_user_choice`:
//! the call is kept (per chat, bounded, for a few minutes) and runs when the model calls
//! it again in the turn that answers, if that answer chose "确认" and came from the asker.

use super::access::{HomeEnv, Pending, CONTROL, MAX_PENDING};
use crate::provider::ToolCall;
use crate::tools::env::ToolEnv;
use crate::tools::result::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long a confirmation question stays answerable.
pub const CONFIRM_FOR: Duration = Duration::from_secs(300);
/// The option that confirms (the first); the other drops the call.
pub const CONFIRM: &str = "确认";
const DECLINE: &str = "算了";
/// Keys of service data that would aim the call at other entities.
const TARGET_KEYS: [&str; 5] = ["entity_id", "device_id", "area_id", "floor_id", "label_id"];

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    entity_id: String,
    service: String,
    #[serde(default)]
    data: Option<Value>,
}

fn refuse(why: impl std::fmt::Display) -> ToolResult {
    ToolResult::err(format!("refused, Home Assistant was not called: {why}"))
}

fn word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub async fn run(env: &ToolEnv, home: &HomeEnv, call: &ToolCall, a: Args) -> ToolResult {
    let cfg = &home.access.cfg;
    if home.guest && !cfg.guests_may_control {
        return refuse("guests (people the household has not mapped to a member) may read the home's state but not control devices; ask a household member");
    }
    let entity = a.entity_id.trim();
    if !crate::config::is_entity_id(entity) {
        return refuse(format!(
            "{:?} is not an entity id (domain.object_id, e.g. light.kitchen); get ids from home_state",
            entity.chars().take(80).collect::<String>()
        ));
    }
    let (domain, _) = entity.split_once('.').expect("an entity id has a dot");
    if !cfg.allowed_domains.iter().any(|d| d == domain) {
        return refuse(format!(
            "the household does not allow controlling {domain} devices (allowed: {})",
            cfg.allowed_domains.join(", ")
        ));
    }
    let service = a.service.trim();
    let service = service
        .strip_prefix(&format!("{domain}."))
        .unwrap_or(service);
    if !word(service) {
        return refuse(format!(
            "{:?} is not a service name (like turn_on)",
            service.chars().take(80).collect::<String>()
        ));
    }
    let data = match a.data {
        None | Some(Value::Null) => json!({}),
        Some(Value::Object(m)) => {
            if let Some(k) = TARGET_KEYS.iter().find(|k| m.contains_key(**k)) {
                return refuse(format!(
                    "the data names a target ({k}); one call acts on its entity_id only"
                ));
            }
            Value::Object(m)
        }
        Some(_) => return refuse("data must be an object of service fields"),
    };
    let Some(door) = home.access.door() else {
        return ToolResult::err("error: Home Assistant is not connected yet; try again shortly.");
    };
    let exposed = match door.exposed().await {
        Ok(v) => v,
        Err(e) => return ToolResult::err(format!("error: could not read Home Assistant: {e}")),
    };
    let Some(target) = exposed.iter().find(|e| e.entity_id == entity) else {
        return refuse(format!(
            "{entity} is not exposed to the voice assistant (Assist) in Home Assistant, so homebot may not touch it"
        ));
    };
    match door.services(domain).await {
        Ok(Some(known)) if known.iter().any(|s| s == service) => {}
        Ok(Some(known)) => {
            let some: Vec<&str> = known.iter().take(20).map(String::as_str).collect();
            return refuse(format!(
                "Home Assistant has no service {domain}.{service} (it has: {})",
                some.join(", ")
            ));
        }
        Ok(None) => return refuse(format!("Home Assistant has no {domain} services")),
        Err(e) => return ToolResult::err(format!("error: could not read Home Assistant: {e}")),
    }
    let sensitive = matches!(domain, "lock" | "alarm_control_panel")
        || (domain == "cover" && matches!(target.device_class.as_deref(), Some("garage" | "gate")))
        || cfg.confirm_entities.iter().any(|e| e == entity);
    if sensitive {
        match confirmed(env, home, entity, service, &data) {
            Confirmation::Yes => {}
            Confirmation::No => {
                return refuse(format!(
                    "the user did not confirm {domain}.{service} on {entity}"
                ))
            }
            Confirmation::Ask => return ask(env, home, call, target, service, data),
        }
    }
    match door.call(domain, service, entity, data).await {
        Ok(()) => ToolResult::ok(format!(
            "done: {domain}.{service} on {entity} ({} · {}); Home Assistant accepted it. Check home_state if the new state matters.",
            target.area.as_deref().unwrap_or("无房间"),
            target.name
        )),
        Err(e) => ToolResult::err(format!("error: Home Assistant refused {domain}.{service} on {entity}: {e}")),
    }
}

enum Confirmation {
    Yes,
    No,
    Ask,
}

/// Whether this turn answers a confirmation of exactly this call, from its asker, with
/// "确认". A confirmation is used once.
fn confirmed(
    env: &ToolEnv,
    home: &HomeEnv,
    entity: &str,
    service: &str,
    data: &Value,
) -> Confirmation {
    let mut pending = home
        .access
        .pending
        .lock()
        .expect("pending lock is never poisoned");
    let Some(p) = pending.get(&home.chat) else {
        return Confirmation::Ask;
    };
    let same = p.entity_id == entity && p.service == service && p.data == *data;
    if !same || p.at.elapsed() > CONFIRM_FOR || p.turn_id == env.turn_id {
        // another call, an old question, or the turn that asked: ask (again)
        return Confirmation::Ask;
    }
    let p = pending.remove(&home.chat).expect("checked above");
    let yes = p.speaker == home.speaker && chose_confirm(&env.user_text);
    match yes {
        true => Confirmation::Yes,
        false => Confirmation::No,
    }
}

/// Whether an answer chose the first option, [`CONFIRM`], and nothing else: "1", "一",
/// "第一个", "确认", "确定" (with filler and punctuation around). Strict on purpose:
/// anything else leaves the device alone.
pub fn chose_confirm(answer: &str) -> bool {
    let t: String = answer
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    let mut t = t.as_str();
    for filler in ["我选", "选择", "选", "就", "我要", "要"] {
        t = t.strip_prefix(filler).unwrap_or(t);
    }
    for filler in ["吧", "的", "了", "执行"] {
        t = t.strip_suffix(filler).unwrap_or(t);
    }
    matches!(
        t,
        "1" | "一" | "第一个" | "第1个" | "第一" | "第一项" | "确认" | "确定" | "ok" | "yes"
    )
}

/// Keep the call and ask the user through `ask_user_choice` (the turn ends there).
fn ask(
    env: &ToolEnv,
    home: &HomeEnv,
    call: &ToolCall,
    target: &super::access::HomeEntity,
    service: &str,
    data: Value,
) -> ToolResult {
    let question = format!(
        "要对「{}」（{}）执行 {service} 吗？",
        target.name, target.entity_id
    );
    let arguments = json!({"question": question, "options": [CONFIRM, DECLINE]}).to_string();
    let probe = ToolCall {
        id: call.id.clone(),
        name: crate::tools::choice::rules::NAME.into(),
        arguments,
    };
    let asked = match serde_json::from_str::<crate::tools::choice::rules::Args>(&probe.arguments)
        .map_err(|e| e.to_string())
        .and_then(|a| {
            crate::tools::choice::rules::validate(a, &probe.id, &probe.arguments)
                .map_err(|e| e.to_string())
        }) {
        Ok(asked) => asked,
        Err(e) => {
            return ToolResult::err(format!("error: the confirmation could not be asked: {e}"))
        }
    };
    {
        let mut pending = home
            .access
            .pending
            .lock()
            .expect("pending lock is never poisoned");
        pending.retain(|_, p| p.at.elapsed() <= CONFIRM_FOR);
        while pending.len() >= MAX_PENDING {
            let oldest = pending
                .iter()
                .min_by_key(|(_, p)| p.at)
                .map(|(k, _)| k.clone())
                .expect("the map is not empty");
            pending.remove(&oldest);
        }
        pending.insert(
            home.chat.clone(),
            Pending {
                speaker: home.speaker.clone(),
                entity_id: target.entity_id.clone(),
                service: service.to_string(),
                data,
                turn_id: env.turn_id,
                at: Instant::now(),
            },
        );
    }
    env.choice.put(asked);
    ToolResult::ok(format!(
        "{CONTROL}: {} needs the user's confirmation; they were asked and the turn ends here. When their answer comes and chose {CONFIRM}, call {CONTROL} again with the same arguments.",
        target.entity_id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clear_first_choice_confirms() {
        for yes in [
            "1",
            "一",
            "第一个",
            "确认",
            "确认。",
            "我选1",
            "确定吧",
            "确认执行",
        ] {
            assert!(chose_confirm(yes), "{yes}");
        }
        for no in [
            "2",
            "算了",
            "不要",
            "确认个屁不要",
            "12",
            "",
            "1和2",
            "取消",
        ] {
            assert!(!chose_confirm(no), "{no}");
        }
    }
}
