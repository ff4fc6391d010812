//! Acting on the home through a simulated Home Assistant (tests/it/ha_fake): `home_control`
//! reaches HA with the right domain, service and target; an unexposed entity, a
//! disallowed domain, an invented service, a call aimed elsewhere and a guest never reach
//! it; a lock waits for the asker's "确认"; `home_state` lists exposed entities only, with
//! hostile names made harmless; HA's own agent answers "打开厨房的灯" with no LLM request
//! and a sentence it does not know falls through to the LLM; a watch delivers to a QQ
//! group.

use crate::common;
use crate::ha_fake;

use common::gateway::Gateway;
use common::wyoming::{Got, WyPeer};
use common::*;
use ha_fake::SimHa;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "sim-token-for-tests";

/// A model that turns fixed phrases into home tool calls and relays tool results.
async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            let result = last["content"].as_str().unwrap_or_default().to_string();
            if result.starts_with("User selected: 确认") {
                return tool_call(
                    "home_control",
                    json!({"entity_id": "lock.front_door", "service": "unlock"}),
                );
            }
            return text(&format!("结果：{result}"));
        }
        let words = user_words(&last);
        let control = |e: &str, s: &str, data: Value| {
            tool_call(
                "home_control",
                json!({"entity_id": e, "service": s, "data": data}),
            )
        };
        match words.trim() {
            "开灯" => control(
                "light.kitchen_light",
                "turn_on",
                json!({"brightness_pct": 40}),
            ),
            "开保险箱" => control("switch.secret_safe", "turn_on", json!({})),
            "关传感器" => control("sensor.washer_power", "turn_off", json!({})),
            "炸灯" => control("light.kitchen_light", "explode", json!({})),
            "借灯开锁" => control(
                "light.kitchen_light",
                "turn_on",
                json!({"entity_id": "lock.front_door"}),
            ),
            "开锁" => control("lock.front_door", "unlock", json!({})),
            "看看家里" => tool_call("home_state", json!({})),
            w => text(&format!("好的：{w}")),
        }
    })
    .await
}

fn config(ws: &Path, url: &str, extra: &str) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[voice]\nwyoming_listen = \"127.0.0.1:0\"\n\n[home_assistant]\nurl = \"{url}\"\n{extra}\n"
        ),
    )
    .unwrap();
}

/// One terminal turn through the gateway's control socket (the owner: no guest).
async fn chat(ws: &Path, text: &str) -> String {
    let o = homebot(ws, None)
        .args(["chat", "-m", text])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// One Wyoming utterance (Wyoming speakers are guests unless mapped).
async fn say(gw: &Gateway, text: &str) -> Value {
    let mut p = WyPeer::connect(gw.addr("wyoming")).await;
    p.send("transcript", json!({ "text": text })).await;
    match p.read(Duration::from_secs(30)).await {
        Got::Event(v) => v,
        other => panic!("no answer to {text:?}: {other:?}\n{}", gw.log()),
    }
}

fn no_calls_to(ha: &SimHa, domain: &str) {
    let calls: Vec<Value> = ha
        .calls()
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| c["domain"] == domain)
        .collect();
    assert!(calls.is_empty(), "Home Assistant was called: {calls:?}");
}

#[tokio::test]
async fn home_control_reaches_ha_only_within_the_households_rules() {
    let ha = SimHa::start(TOKEN, 0).await;
    ha.add_home();
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let allowed = "allowed_domains = [\"light\", \"switch\", \"lock\"]\nfast_path = false";
    config(&ws, &ha.url(), allowed);
    let gw = Gateway::start(&ws, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &["wyoming"]).await;
    gw.wait_log("Home Assistant registries read", 30).await;

    // a light: the right domain, service, target and data
    let r = chat(&ws, "开灯").await;
    assert!(
        r.contains("done: light.turn_on on light.kitchen_light"),
        "{r}"
    );
    let on = ha.service_calls("light", "turn_on");
    assert_eq!(on.len(), 1, "{on:?}");
    assert_eq!(on[0]["target"], json!({"entity_id": "light.kitchen_light"}));
    assert_eq!(on[0]["service_data"], json!({"brightness_pct": 40}));
    assert_eq!(ha.state_of("light.kitchen_light").as_deref(), Some("on"));
    let defs = &fake.requests()[0]["tools"];
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.ends_with(&["home_state", "home_control"]),
        "{names:?}"
    );

    // refused before anything leaves homebot
    let before = ha.calls().len();
    for (said, why) in [
        ("开保险箱", "not exposed to the voice assistant"),
        ("关传感器", "does not allow controlling sensor devices"),
        ("炸灯", "has no service light.explode"),
        ("借灯开锁", "the data names a target (entity_id)"),
    ] {
        let r = chat(&ws, said).await;
        assert!(
            r.contains("refused, Home Assistant was not called") && r.contains(why),
            "{said}: {r}"
        );
    }
    assert_eq!(ha.calls().len(), before, "{:?}", ha.calls());

    // a guest (an unmapped Wyoming voice) may read but not switch
    let v = say(&gw, "开灯").await;
    let said = v["data"]["text"].as_str().unwrap_or_default();
    assert!(said.contains("guests"), "{v}");
    assert_eq!(ha.service_calls("light", "turn_on").len(), 1);
    let v = say(&gw, "看看家里").await;
    assert!(
        v["data"]["text"]
            .as_str()
            .unwrap()
            .contains("light.kitchen_light"),
        "{v}"
    );

    // home_state: exposed entities only; a hostile name stays a name
    let r = chat(&ws, "看看家里").await;
    assert!(
        r.contains("light.kitchen_light · 厨房 · Kitchen Light: on"),
        "{r}"
    );
    assert!(
        r.contains("lock.front_door") && r.contains("sensor.washer_power"),
        "{r}"
    );
    assert!(
        !r.contains("secret_safe"),
        "an unexposed entity was listed: {r}"
    );
    assert!(
        !r.contains("assist_satellite."),
        "satellites are not exposed: {r}"
    );
    let evil = r.lines().find(|l| l.contains("switch.evil")).unwrap();
    assert!(!evil.contains('[') && !evil.contains("[/上下文]"), "{evil}");

    // a lock waits for the asker's confirmation
    let r = chat(&ws, "开锁").await;
    assert!(r.contains("前门") && r.contains("1. 确认"), "{r}");
    no_calls_to(&ha, "lock");
    assert_eq!(ha.state_of("lock.front_door").as_deref(), Some("locked"));
    let r = chat(&ws, "1").await;
    assert!(r.contains("done: lock.unlock on lock.front_door"), "{r}");
    let unlock = ha.service_calls("lock", "unlock");
    assert_eq!(unlock.len(), 1);
    assert_eq!(unlock[0]["target"], json!({"entity_id": "lock.front_door"}));
    // declined: asked again, answered 2, nothing happens
    let r = chat(&ws, "开锁").await;
    assert!(r.contains("1. 确认"), "{r}");
    chat(&ws, "2").await;
    assert_eq!(ha.service_calls("lock", "unlock").len(), 1);
}

#[tokio::test]
async fn home_assistants_own_agent_answers_first_and_a_watch_reaches_a_qq_group() {
    let ha = SimHa::start(TOKEN, 0).await;
    ha.add_home();
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let group = common::qq::GROUP;
    config(
        &ws,
        &ha.url(),
        &format!(
            "[[home_assistant.watch]]\nentity_id = \"sensor.washer_power\"\nto = \"off\"\nmessage = \"洗衣机洗好了\"\nchannel = \"qq\"\ntarget = \"group:{group}\"\n\n[qq]\nsend_interval_ms = 20\n"
        ),
    );
    let gw = Gateway::start(
        &ws,
        &fake,
        &[
            ("HOMEBOT_HA_TOKEN", TOKEN),
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", common::qq::TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &group.to_string()),
        ],
        &["wyoming", "qq"],
    )
    .await;
    gw.wait_log("Home Assistant registries read", 30).await;

    // HA's own agent handles it: its speech is the reply, the LLM is never asked
    let r = chat(&ws, "打开厨房的灯").await;
    assert_eq!(r, "厨房灯已打开");
    assert_eq!(fake.calls(), 0, "the LLM was asked: {:?}", fake.requests());
    assert_eq!(ha.state_of("light.kitchen_light").as_deref(), Some("on"));
    let conv = ha.conversations();
    assert_eq!(conv.len(), 1);
    assert_eq!(conv[0]["agent_id"], "conversation.home_assistant");
    assert_eq!(conv[0]["language"], "zh-cn");
    assert_eq!(conv[0]["text"], "打开厨房的灯");
    // recorded like any turn, and counted apart
    let chats = std::fs::read_dir(ws.join("chats/cli")).unwrap().count();
    assert!(chats > 0);
    let o = homebot(&ws, None).arg("stats").output().await.unwrap();
    let stats = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        stats.contains("fast path") && stats.contains("1 turns"),
        "{stats}"
    );

    // HA does not know it: the LLM answers as before
    let r = chat(&ws, "讲个笑话").await;
    assert_eq!(r, "好的：讲个笑话");
    assert_eq!(fake.calls(), 1);
    assert_eq!(ha.conversations().len(), 2);

    // HA's agent hangs: the LLM answers after the 2 s bound
    *ha.state.slow_agent.lock().unwrap() = true;
    let started = std::time::Instant::now();
    let r = chat(&ws, "讲个故事").await;
    assert_eq!(r, "好的：讲个故事");
    println!(
        "a hanging HA agent cost the turn {:.1} s",
        started.elapsed().as_secs_f64()
    );
    *ha.state.slow_agent.lock().unwrap() = false;

    // a watch: the washer's power goes off → the family group hears it
    let mut sim = common::qq::sim(&gw).await;
    ha.set_state("sensor.washer_power", "off");
    let sent = sim.expect_send().await;
    assert_eq!(sent["params"]["group_id"], json!(group), "{sent}");
    assert!(
        common::onebot::text_of(&sent).contains("洗衣机洗好了"),
        "{sent}"
    );
}
