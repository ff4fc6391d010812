//! Answers as Home Assistant gives them (its documentation and 2025.4's `websocket_api`
//! and `config/*_registry.py`), with the fields it adds, and malformed ones.

use super::super::protocol::Event;
use super::*;
use serde_json::json;

#[test]
fn states_are_read_with_their_attributes_and_bad_items_left_out() {
    let states: States = decode(
        "get_states",
        json!([
            {"entity_id": "light.k", "state": "on", "attributes": {"friendly_name": "Kitchen",
                "supported_color_modes": ["onoff"], "brightness": null},
             "last_changed": "2025-04-01T10:00:00+00:00", "context": {"id": "01J"}},
            {"entity_id": "sensor.t", "state": 21.5, "attributes": "odd"},
            {"state": "on"},
            7
        ]),
    )
    .expect("a list of states");
    assert_eq!(states.len(), 4);
    let ok: Vec<_> = states.iter().collect();
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[0].entity_id, "light.k");
    assert_eq!(ok[0].state.as_str(), Some("on"));
    let attr = ok[0].attributes.as_ref().expect("attributes");
    assert_eq!(attr.friendly_name.as_str(), Some("Kitchen"));
    assert_eq!(attr.unit_of_measurement.as_str(), None);
    assert_eq!(ok[1].state.as_str(), None, "a number is no state text");
    assert_eq!(ok[1].attributes.as_ref(), None);
}

#[test]
fn a_malformed_answer_is_a_typed_error() {
    let e = decode::<States>("get_states", json!({"entity_id": "light.k"})).unwrap_err();
    match &e {
        HaError::Malformed { command, why } => {
            assert_eq!(*command, "get_states");
            assert!(why.contains("expected a sequence"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("get_states"), "{e}");
    assert!(decode::<Exposed>("homeassistant/expose_entity/list", json!(null)).is_err());
    assert!(decode::<Services>("get_services", json!([1, 2])).is_err());
    assert!(decode::<Items<AreaEntry>>("config/area_registry/list", json!("x")).is_err());
    // whatever `call_service` answers is fine: its success is the `result`
    assert!(decode::<IgnoredAny>("call_service", json!({"context": {"id": "1"}})).is_ok());
}

#[test]
fn services_keep_domains_and_names_in_order() {
    let s: Services = decode(
        "get_services",
        json!({"light": {"turn_on": {"name": "Turn on", "fields": {}}, "toggle": {}},
               "odd": 5}),
    )
    .expect("services");
    let light: Vec<_> = s["light"].as_ref().expect("light").keys().collect();
    assert_eq!(light, ["toggle", "turn_on"]);
    assert_eq!(s["odd"], Lenient(None));
}

#[test]
fn exposed_to_assist_is_conversation_true() {
    let e: Exposed = decode(
        "homeassistant/expose_entity/list",
        json!({"exposed_entities": {
            "light.b": {"conversation": true, "cloud.alexa": false},
            "light.a": {"conversation": true},
            "lock.front": {"conversation": false},
            "switch.x": {"conversation": "yes"},
            "fan.y": null
        }}),
    )
    .expect("the exposed list");
    assert_eq!(e.to_assist().collect::<Vec<_>>(), ["light.a", "light.b"]);
}

#[test]
fn registry_entries_read_what_rooms_need() {
    let areas: Items<AreaEntry> = decode(
        "config/area_registry/list",
        json!([{"area_id": "chu_fang", "name": "厨房", "aliases": [], "floor_id": null,
                "icon": null, "picture": null, "labels": [], "created_at": 0.0},
               {"name": "no id"}]),
    )
    .expect("areas");
    assert_eq!(areas.len(), 2);
    assert_eq!(
        areas.iter().collect::<Vec<_>>(),
        [&AreaEntry {
            area_id: "chu_fang".into(),
            name: Lenient(Some("厨房".into()))
        }]
    );
    let devices: Items<DeviceEntry> = decode(
        "config/device_registry/list",
        json!([{"id": "d1", "area_id": null, "name": "Sat", "config_entries": ["x"]}]),
    )
    .expect("devices");
    assert_eq!(
        devices.iter().next().map(|d| d.area_id.as_str()),
        Some(None)
    );
    let entities: Items<EntityEntry> = decode(
        "config/entity_registry/list",
        json!([{"entity_id": "cover.g", "original_device_class": "garage",
                "aliases": ["卷帘", null, 3], "device_id": 5, "platform": "demo"}]),
    )
    .expect("entities");
    let e = entities.iter().next().expect("one entity");
    assert_eq!(e.original_device_class.as_str(), Some("garage"));
    assert_eq!(e.device_id.as_str(), None);
    let aliases: Vec<_> = e
        .aliases
        .as_ref()
        .into_iter()
        .flatten()
        .filter_map(Lenient::as_str)
        .collect();
    assert_eq!(aliases, ["卷帘"]);
}

#[test]
fn conversations_and_events_read_their_parts() {
    let c: Conversation = decode(
        "conversation/process",
        json!({"response": {"response_type": "error", "language": "zh-cn",
            "speech": {"plain": {"speech": "抱歉", "extra_data": null}},
            "data": {"code": "no_intent_match"}}, "conversation_id": "01J",
            "continue_conversation": false}),
    )
    .expect("a conversation");
    let r = c.response.as_ref().expect("a response");
    assert_eq!(r.response_type.as_str(), Some("error"));
    assert_eq!(r.speech(), Some("抱歉"));
    assert_eq!(r.code(), Some("no_intent_match"));

    let ev: Event = decode(
        "subscribe_events",
        json!({"event_type": "state_changed", "data": {"entity_id": "assist_satellite.k",
            "old_state": null, "new_state": {"state": "listening", "attributes": {}}},
            "origin": "LOCAL", "time_fired": "2025-04-01T10:00:00+00:00"}),
    )
    .expect("an event");
    assert_eq!(ev.event_type(), "state_changed");
    assert_eq!(ev.state_change(), ("assist_satellite.k", Some("listening")));
    let removed: Event = decode(
        "subscribe_events",
        json!({"event_type": "state_changed", "data": {"entity_id": "x.y", "new_state": null}}),
    )
    .expect("an event");
    assert_eq!(removed.state_change(), ("x.y", None));
    let registry: Event = decode(
        "subscribe_events",
        json!({"event_type": "area_registry_updated", "data": {"action": "create", "area_id": "a"}}),
    )
    .expect("an event");
    assert_eq!(registry.event_type(), "area_registry_updated");
}
