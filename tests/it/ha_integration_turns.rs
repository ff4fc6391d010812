//! The integration's turns in the real Home Assistant 2025.4.4, with homebot's own
//! `[home_assistant]` unset (the integration alone, as a household that installs it from
//! HACS has it), driven through HA's own APIs:
//!
//! - a plain device in 厨房 (a device with no `assist_satellite` entity) reaches the model
//!   as 厨房, with the HA user's name;
//! - a command HA's own agent answered in the same conversation is in homebot's next
//!   request, and the automation's note HA keeps for the conversation is sent once;
//! - an English reply streamed in sentences reads with its spaces, in the chat log and
//!   the speech;
//! - a turn that failed (the model refused the request) is an error response, its spoken
//!   explanation kept;
//! - the reconfigure flow moves the entry to homebot's new address.

use crate::common;
use crate::real_ha;

use common::gateway::Gateway;
use common::*;
use real_ha::{HaEvents, HaWs, RealHa};
use serde_json::{json, Value};
use std::time::Duration;

const AGENT: &str = "agent-token-for-the-turns-44";

async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        let words = user_words(&last);
        if words.contains("eggs") {
            return text("Sure, three eggs. Are they beaten?");
        }
        if words.contains("坏掉") {
            return FakeReply::Status(400, vec![], "{\"error\":\"bad request\"}".into());
        }
        text(&format!("好的：{words}"))
    })
    .await
}

/// The first model request whose current words are `words`.
fn request_for(fake: &FakeLlm, words: &str) -> Value {
    fake.requests()
        .into_iter()
        .find(|r| {
            let last = r["messages"].as_array().unwrap().last().unwrap();
            user_words(last).contains(words)
        })
        .unwrap_or_else(|| panic!("homebot never asked the model about {words:?}"))
}

fn speech(r: &Value) -> String {
    r["response"]["speech"]["plain"]["speech"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The integration's entry for homebot at `base`, through HA's config flow.
async fn add_entry(ha: &RealHa, base: &str) -> String {
    let flow = ha
        .post(
            "/api/config/config_entries/flow",
            json!({"handler": "homebot"}),
        )
        .await;
    let id = flow["flow_id"].as_str().unwrap();
    let done = ha
        .post(
            &format!("/api/config/config_entries/flow/{id}"),
            json!({"url": base, "token": AGENT}),
        )
        .await;
    assert_eq!(done["type"], "create_entry", "{done}\n{}", ha.log());
    done["result"]["entry_id"].as_str().unwrap().to_string()
}

/// One `assist_pipeline/run` from the intent stage from `device`: its `intent_output`.
async fn run_from(ha: &RealHa, pipeline: &str, text: &str, device: &str) -> Value {
    let mut runs = HaEvents::new(HaWs::connect(ha.port).await);
    let id = runs
        .subscribe(
            json!({"type": "assist_pipeline/run", "start_stage": "intent",
            "end_stage": "intent", "input": {"text": text}, "pipeline": pipeline,
            "device_id": device}),
        )
        .await
        .unwrap_or_else(|e| panic!("assist_pipeline/run refused: {e}"));
    let mut output = Value::Null;
    loop {
        let ev = runs.event(id, 30).await;
        match ev["type"].as_str().unwrap_or_default() {
            "intent-end" => output = ev["data"]["intent_output"].clone(),
            "error" => panic!("the pipeline failed on {text:?}: {ev}"),
            "run-end" => return output,
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_home_assistant_knows_reaches_homebot_through_the_integration_alone() {
    let python = real_ha::ha_python();
    let ha = RealHa::start(&python).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let env = [
        ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
        ("HOMEBOT_HA_AGENT_TOKEN", AGENT),
    ];
    let gw = Gateway::start(&ws, &fake, &env, &[]).await;
    let base = format!("http://{}", gw.dashboard_addr().await);
    let entry = add_entry(&ha, &base).await;
    let mut hws = HaWs::connect(ha.port).await;
    let agent = hws.entity_of(&entry, "conversation.").await["entity_id"]
        .as_str()
        .unwrap()
        .to_string();

    // a plain device (a demo light's: no satellite entity) put in 厨房
    let areas = hws
        .call(json!({"type": "config/area_registry/list"}))
        .await
        .unwrap();
    let kitchen = areas
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "厨房")
        .unwrap()["area_id"]
        .clone();
    let entities = hws
        .call(json!({"type": "config/entity_registry/list"}))
        .await
        .unwrap();
    let with_satellite: Vec<&Value> = entities
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["entity_id"]
                .as_str()
                .unwrap()
                .starts_with("assist_satellite.")
        })
        .map(|e| &e["device_id"])
        .collect();
    let plain = entities
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["entity_id"].as_str().unwrap().starts_with("light.")
                && e["device_id"].is_string()
                && !with_satellite.contains(&&e["device_id"])
        })
        .unwrap_or_else(|| panic!("no light on a device: {entities}"))["device_id"]
        .as_str()
        .unwrap()
        .to_string();
    hws.call(
        json!({"type": "config/device_registry/update", "device_id": plain,
                    "area_id": kitchen}),
    )
    .await
    .unwrap();
    let pipeline = hws
        .call(
            json!({"type": "assist_pipeline/pipeline/create", "name": "homebot typed",
            "conversation_engine": agent, "conversation_language": "zh-cn", "language": "zh-cn",
            "stt_engine": null, "stt_language": null, "tts_engine": null, "tts_language": null,
            "tts_voice": null, "wake_word_entity": null, "wake_word_id": null}),
        )
        .await
        .unwrap();
    let out = run_from(&ha, pipeline["id"].as_str().unwrap(), "今天吃什么", &plain).await;
    assert_eq!(speech(&out), "好的：今天吃什么", "{out}");
    let asked = user_text(&request_for(&fake, "今天吃什么"));
    assert!(
        asked.contains("房间 厨房"),
        "the device's own room: {asked}"
    );
    assert!(
        asked.contains("（Homebot Test）"),
        "the HA user's name: {asked}"
    );

    // HA's own agent answers a command in a conversation; homebot's next turn in it sees it
    let local = ha
        .post(
            "/api/conversation/process",
            json!({"text": "turn on the kitchen light", "language": "en",
                   "agent_id": "conversation.home_assistant"}),
        )
        .await;
    assert_eq!(local["response"]["response_type"], "action_done", "{local}");
    let conversation = local["conversation_id"].as_str().unwrap().to_string();
    let next = ha
        .post(
            "/api/conversation/process",
            json!({"text": "再调暗一点", "language": "zh-cn", "agent_id": agent,
                   "conversation_id": conversation}),
        )
        .await;
    assert_eq!(speech(&next), "好的：再调暗一点", "{next}");
    let asked = user_text(&request_for(&fake, "再调暗一点"));
    assert!(asked.contains("[HA对话记录]"), "{asked}");
    assert!(
        asked.contains("用户：turn on the kitchen light"),
        "HA's locally handled command: {asked}"
    );

    // English, streamed in sentences: read with its space
    let en = ha
        .post(
            "/api/conversation/process",
            json!({"text": "how many eggs for three", "language": "en", "agent_id": agent}),
        )
        .await;
    assert_eq!(speech(&en), "Sure, three eggs. Are they beaten?", "{en}");
    assert_eq!(en["continue_conversation"], true, "{en}");

    // a failed turn is an error, its spoken explanation kept
    let failed = ha
        .post(
            "/api/conversation/process",
            json!({"text": "这个坏掉了", "language": "zh-cn", "agent_id": agent}),
        )
        .await;
    assert_eq!(failed["response"]["response_type"], "error", "{failed}");
    assert!(!speech(&failed).is_empty(), "{failed}");

    // homebot moves to a new address: the reconfigure flow follows it
    gw.stop().await;
    let gw = Gateway::start(&ws, &fake, &env, &[]).await;
    let moved = format!("http://{}", gw.dashboard_addr().await);
    assert_ne!(moved, base);
    let flow = ha
        .post(
            "/api/config/config_entries/flow",
            json!({"handler": "homebot", "entry_id": entry}),
        )
        .await;
    assert_eq!(flow["step_id"], "reconfigure", "{flow}");
    let done = ha
        .post(
            &format!(
                "/api/config/config_entries/flow/{}",
                flow["flow_id"].as_str().unwrap()
            ),
            json!({"url": moved, "token": AGENT}),
        )
        .await;
    assert_eq!(done["reason"], "reconfigure_successful", "{done}");
    eventually_async(
        "the entity answers at the new address",
        Duration::from_secs(30),
        || async {
            let r = ha
                .try_post(
                    "/api/conversation/process",
                    json!({"text": "搬家了", "language": "zh-cn", "agent_id": agent}),
                )
                .await?;
            if speech(&r) == "好的：搬家了" {
                Ok(())
            } else {
                Err(r.to_string())
            }
        },
    )
    .await;
    assert!(!ha.log().contains(AGENT), "the token never shows");
}
