//! homebot against a simulated Home Assistant (tests/it/ha_fake: the real WebSocket protocol
//! on 127.0.0.1:0): a voice reminder rings on the satellite that asked for it, in its
//! room; and Home Assistant's faults — a wrong token, down at start, a connection dropped
//! mid-call, no answer at all, 10,000 entities, an answer over the size cap — each leave
//! the gateway answering other turns.

use crate::common;
use crate::ha_fake;

use common::gateway::Gateway;
use common::wyoming::{Got, WyPeer};
use common::*;
use ha_fake::{Mode, SimHa};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "sim-token-for-tests";

/// A model that sets a one-second reminder when asked ("提醒"), asks a question when told
/// "问我", relays tool results, and otherwise echoes.
async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            return text("好的，到时候提醒你。");
        }
        let words = user_words(&last);
        if words.contains("提醒") {
            return tool_call("set_reminder", json!({"in_seconds": 1, "text": "关火"}));
        }
        if words.contains("问我") {
            return text("蛋液打好了吗？[[继续]]");
        }
        text(&format!("好的：{words}"))
    })
    .await
}

async fn gateway(ws: &Path, fake: &FakeLlm, url: &str, token: &str, extra: &str) -> Gateway {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[voice]\nwyoming_listen = \"127.0.0.1:0\"\n\n[home_assistant]\nurl = \"{url}\"\n{extra}\n"
        ),
    )
    .unwrap();
    Gateway::start(ws, fake, &[("HOMEBOT_HA_TOKEN", token)], &["wyoming"]).await
}

/// One Wyoming utterance, as Home Assistant 2025.4 sends it (text only); the answer.
async fn say(gw: &Gateway, text: &str) -> Value {
    let mut p = WyPeer::connect(gw.addr("wyoming")).await;
    p.send("transcript", json!({ "text": text })).await;
    match p.read(Duration::from_secs(30)).await {
        Got::Event(v) => v,
        other => panic!("no answer to {text:?}: {other:?}\n{}", gw.log()),
    }
}

async fn status(ws: &Path) -> String {
    let o = homebot(ws, None).arg("status").output().await.unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

async fn announce(ws: &Path, to: &str, text: &str) -> (bool, String) {
    let o = homebot(ws, None)
        .args(["announce", "--channel", "voice", "--to", to, text])
        .output()
        .await
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

async fn wait_status(ws: &Path, needle: &str) -> String {
    let what = format!("status to say {needle:?}");
    eventually_async(&what, Duration::from_secs(30), || async {
        let s = status(ws).await;
        if s.contains(needle) {
            Ok(s)
        } else {
            Err(s)
        }
    })
    .await
}

#[tokio::test]
async fn a_voice_reminder_rings_on_the_satellite_that_asked_in_its_room() {
    let ha = SimHa::start(TOKEN, 0).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(&ws, &fake, &ha.url(), TOKEN, "").await;
    gw.wait_log("Home Assistant registries read", 30).await;
    let st = status(&ws).await;
    assert!(
        st.contains("Home Assistant: connected · 版本 2025.4.4"),
        "{st}"
    );
    assert!(st.contains("assist_satellite.kitchen（厨房）"), "{st}");
    assert!(st.contains("assist_satellite.bedroom（卧室）"), "{st}");
    assert!(
        !st.contains(TOKEN) && !gw.log().contains(TOKEN),
        "the token never shows"
    );

    // the kitchen satellite heard the wake word and is thinking: the transcript is its
    ha.satellite_state("assist_satellite.bedroom", "idle");
    ha.satellite_state("assist_satellite.kitchen", "processing");
    // the state event reaches the actor at its own pace: ask until the room appears in
    // the model's tail (the first ask normally)
    let mut asked = 0;
    loop {
        let v = say(&gw, "一秒后提醒我关火").await;
        assert_eq!(v["type"], "handled", "{v}");
        asked += 1;
        if fake.last_user().contains("房间 厨房") {
            break;
        }
        assert!(
            asked < 20,
            "the room never reached the tail: {}",
            fake.last_user()
        );
    }
    // it rings on the kitchen satellite, through assist_satellite.announce
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let call = loop {
        if let Some(c) = ha
            .service_calls("assist_satellite", "announce")
            .into_iter()
            .find(|c| {
                c["service_data"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("关火")
            })
        {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never announced:\n{}",
            gw.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        call["target"]["entity_id"], "assist_satellite.kitchen",
        "{call}"
    );
    assert_eq!(call["service_data"]["preannounce"], false);
    // delivered only because HA said success: the reminder is fired (once HA's answer
    // has reached the reminders), never held as undelivered
    common::eventually_async(
        "the reminder fired, not undelivered",
        Duration::from_secs(20),
        || async {
            let listed = homebot(&ws, None)
                .args(["reminders", "--all"])
                .output()
                .await
                .unwrap();
            let listed = String::from_utf8_lossy(&listed.stdout).to_string();
            let rung = listed.lines().any(|l| {
                l.contains("关火") && l.contains("assist_satellite.kitchen") && l.contains("已响")
            });
            if rung && !listed.contains("未送达") {
                Ok(())
            } else {
                Err(listed)
            }
        },
    )
    .await;

    // due → announce call, printed (a measurement, not an assertion): due_at in
    // reminders.json (serde's full precision) against the wall clock when the call arrived
    let book = std::fs::read_to_string(ws.join("reminders.json")).unwrap();
    let due = book
        .split("\"due_at\":")
        .nth(1)
        .and_then(|s| s.trim_start().strip_prefix('"'))
        .and_then(|s| s.split('"').next())
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .expect("due_at in reminders.json");
    let (at, _) = ha
        .calls()
        .into_iter()
        .find(|(_, c)| c["service"] == "announce")
        .unwrap();
    let called = chrono::Utc::now() - chrono::Duration::from_std(at.elapsed()).unwrap();
    println!(
        "due → announce call: {} ms",
        (called - due.with_timezone(&chrono::Utc)).num_milliseconds()
    );

    // `homebot announce` by area name, area id and entity id
    for to in ["卧室", "wo_shi", "assist_satellite.bedroom"] {
        let (ok, out) = announce(&ws, to, "晚饭好了").await;
        assert!(ok, "{to}: {out}");
    }
    assert_eq!(
        ha.service_calls("assist_satellite", "announce")
            .iter()
            .filter(|c| c["target"]["entity_id"] == "assist_satellite.bedroom")
            .count(),
        3
    );
    let (ok, out) = announce(&ws, "garage", "x").await;
    assert!(!ok && out.contains("not a target"), "{out}");

    // the satellite cannot announce: the kitchen's media player speaks (tts.speak), and
    // only a success counts
    ha.state
        .refuse_announce
        .lock()
        .unwrap()
        .insert("assist_satellite.kitchen".into());
    let (ok, out) = announce(&ws, "厨房", "水开了").await;
    assert!(
        !ok,
        "no tts_entity configured: nothing else can speak: {out}"
    );
    assert!(out.contains("Satellite is not connected"), "{out}");
}

#[tokio::test]
async fn a_satellite_that_cannot_announce_falls_back_to_its_rooms_media_player() {
    let ha = SimHa::start(TOKEN, 0).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(&ws, &fake, &ha.url(), TOKEN, "tts_entity = \"tts.piper\"").await;
    gw.wait_log("Home Assistant registries read", 30).await;
    ha.state
        .refuse_announce
        .lock()
        .unwrap()
        .insert("assist_satellite.kitchen".into());
    let (ok, out) = announce(&ws, "厨房", "水开了").await;
    assert!(ok, "{out}");
    let speak = ha.service_calls("tts", "speak");
    assert_eq!(speak.len(), 1, "{speak:?}");
    assert_eq!(speak[0]["target"]["entity_id"], "tts.piper");
    assert_eq!(
        speak[0]["service_data"]["media_player_entity_id"],
        "media_player.kitchen"
    );
    assert_eq!(speak[0]["service_data"]["message"], "水开了");

    // a question: homebot asks HA to make the satellite listen again once it said the
    // reply (back to idle). The kitchen's (like a Wyoming satellite in HA 2025.4) cannot:
    // HA's refusal is remembered and it is not asked again
    ha.satellite_state("assist_satellite.kitchen", "processing");
    until_in_room(&gw, &fake, "房间 厨房").await;
    let v = say(&gw, "问我一个问题").await;
    assert_eq!(v["data"]["context"]["dialogue_state"], "continue", "{v}");
    ha.satellite_state("assist_satellite.kitchen", "idle");
    gw.wait_log("cannot make this satellite listen again", 10)
        .await;
    ha.satellite_state("assist_satellite.kitchen", "processing");
    let v = say(&gw, "问我第二个问题").await;
    assert_eq!(v["data"]["context"]["dialogue_state"], "continue", "{v}");
    ha.satellite_state("assist_satellite.kitchen", "idle");
    // the bedroom's can (like a Voice PE): it listens again, after it said the reply
    ha.satellite_state("assist_satellite.bedroom", "processing");
    until_in_room(&gw, &fake, "房间 卧室").await;
    let v = say(&gw, "问我一个问题").await;
    assert_eq!(v["data"]["context"]["dialogue_state"], "continue", "{v}");
    assert!(
        ha.service_calls("assist_satellite", "start_conversation")
            .iter()
            .all(|c| c["target"]["entity_id"] != "assist_satellite.bedroom"),
        "not while it is still saying the reply"
    );
    ha.satellite_state("assist_satellite.bedroom", "responding");
    ha.satellite_state("assist_satellite.bedroom", "idle");
    gw.wait_log("satellite listens again", 10).await;
    let calls = ha.service_calls("assist_satellite", "start_conversation");
    let to = |e: &str| {
        calls
            .iter()
            .filter(|c| c["target"]["entity_id"] == e)
            .count()
    };
    assert_eq!(
        to("assist_satellite.kitchen"),
        1,
        "asked once, then remembered: {calls:?}"
    );
    assert_eq!(to("assist_satellite.bedroom"), 1, "{calls:?}");
    let bedroom = calls
        .iter()
        .find(|c| c["target"]["entity_id"] == "assist_satellite.bedroom")
        .unwrap();
    assert_eq!(
        bedroom["service_data"],
        json!({"start_message": "", "preannounce": false})
    );
}

/// Say something until the model's tail names `room` (the satellite's state event has
/// reached homebot); the first time, normally.
async fn until_in_room(gw: &Gateway, fake: &FakeLlm, room: &str) {
    for _ in 0..50 {
        let v = say(gw, "你好").await;
        assert_eq!(v["type"], "handled", "{v}");
        if fake.last_user().contains(room) {
            return;
        }
    }
    panic!("the tail never said {room:?}: {}", fake.last_user());
}

#[tokio::test]
async fn a_wrong_token_is_reported_once_and_not_retried_in_a_storm() {
    let ha = SimHa::start(TOKEN, 0).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(&ws, &fake, &ha.url(), "not-the-token", "").await;
    gw.wait_log("Home Assistant refused the access token", 30)
        .await;
    let st = wait_status(&ws, "access token refused").await;
    assert!(
        !st.contains("not-the-token") && !gw.log().contains("not-the-token"),
        "{st}"
    );
    // the gateway answers; Home Assistant was asked once
    for i in 0..3 {
        let v = say(&gw, &format!("你好 {i}")).await;
        assert_eq!(v["type"], "handled", "{v}");
    }
    let (ok, out) = announce(&ws, "厨房", "x").await;
    assert!(!ok, "{out}");
    assert_eq!(ha.auth_attempts(), 1, "one login, no storm");
    assert_eq!(
        gw.log().matches("refused the access token").count(),
        1,
        "{}",
        gw.log()
    );
}

#[tokio::test]
async fn home_assistant_down_at_start_is_connected_when_it_comes_up() {
    // a free port where HA will be
    let held = Refusing::new(); // HA's port, refusing until it comes up
    let addr = held.addr;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(&ws, &fake, &format!("http://{addr}"), TOKEN, "").await;
    gw.wait_log("cannot reach Home Assistant", 30).await;
    let v = say(&gw, "你好").await;
    assert_eq!(v["type"], "handled", "the gateway answers without HA: {v}");
    let st = status(&ws).await;
    assert!(st.contains("Home Assistant: not connected"), "{st}");
    let (ok, out) = announce(&ws, "厨房", "x").await;
    assert!(!ok && out.contains("not connected"), "{out}");
    let ha = SimHa::start_on(held, TOKEN).await;
    wait_status(&ws, "Home Assistant: connected").await;
    gw.wait_log("Home Assistant registries read", 70).await;
    let (ok, out) = announce(&ws, "厨房", "水开了").await;
    assert!(ok, "{out}");
    assert_eq!(ha.service_calls("assist_satellite", "announce").len(), 1);
}

#[tokio::test]
async fn a_connection_dropped_mid_call_fails_that_call_and_reconnects() {
    let ha = SimHa::start(TOKEN, 0).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(&ws, &fake, &ha.url(), TOKEN, "").await;
    gw.wait_log("Home Assistant registries read", 30).await;
    ha.set_mode(Mode::DropOnCall);
    let (ok, out) = announce(&ws, "厨房", "水开了").await;
    assert!(!ok && out.contains("lost"), "{out}");
    let v = say(&gw, "你好").await;
    assert_eq!(v["type"], "handled", "{v}");
    ha.set_mode(Mode::Normal);
    gw.wait_log("Home Assistant connection lost; reconnecting", 10)
        .await;
    wait_status(&ws, "Home Assistant: connected").await;
    assert!(ha.connections() >= 2);
    let (ok, out) = announce(&ws, "厨房", "水开了").await;
    assert!(ok, "{out}");
}

#[tokio::test]
async fn a_home_assistant_that_never_answers_costs_at_most_the_timeout() {
    let ha = SimHa::start(TOKEN, 0).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(
        &ws,
        &fake,
        &ha.url(),
        TOKEN,
        "timeout_secs = 1\nannounce_timeout_secs = 2",
    )
    .await;
    gw.wait_log("Home Assistant registries read", 30).await;
    ha.set_mode(Mode::Slow);
    ha.satellite_state("assist_satellite.kitchen", "processing");
    // an announcement waits for its answer (HA answers once it was played): bounded, then
    // undelivered; meanwhile turns are answered (the question's listen-again call hangs too)
    let slow = tokio::spawn({
        let ws = ws.clone();
        async move { announce(&ws, "厨房", "水开了").await }
    });
    for i in 0..3 {
        let v = say(&gw, &format!("问我 {i}")).await;
        assert_eq!(v["type"], "handled", "{v}");
    }
    let (ok, out) = slow.await.unwrap();
    assert!(!ok && out.contains("did not answer within"), "{out}");
}

#[tokio::test]
async fn ten_thousand_entities_are_read_and_an_oversized_answer_is_refused() {
    let ha = SimHa::start(TOKEN, 10_000).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    let gw = gateway(&ws, &fake, &ha.url(), TOKEN, "").await;
    gw.wait_log("Home Assistant registries read", 60).await;
    let st = status(&ws).await;
    assert!(
        st.contains("Home Assistant 实体: 10003（1 个开放给 Assist）"),
        "{st}"
    );
    let v = say(&gw, "你好").await;
    assert_eq!(v["type"], "handled", "{v}");
    let (ok, out) = announce(&ws, "卧室", "晚饭好了").await;
    assert!(ok, "{out}");
    drop(gw);

    // the same house with a 64 KiB cap: the registry answer is refused where it enters
    let ws2 = dir.path().join("ws2");
    let gw = gateway(&ws2, &fake, &ha.url(), TOKEN, "max_message_bytes = 65536").await;
    gw.wait_log("Home Assistant connection lost", 30).await;
    let st = status(&ws2).await;
    assert!(
        st.contains("Home Assistant: not connected") && st.contains("too"),
        "{st}"
    );
    let v = say(&gw, "你好").await;
    assert_eq!(v["type"], "handled", "{v}");
}
