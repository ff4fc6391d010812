//! What Home Assistant's integration sends with a turn reaches the model as HA knows it,
//! whether or not homebot has its own connection to HA: the device's area (and floor),
//! the HA user's name, what HA's chat log holds that homebot did not write (a command HA
//! answered itself), and the automation's note kept for the conversation — both as kept
//! blocks of the message they first arrive in, sent again only when they change. A device
//! without a satellite gets its own room, never that of a satellite that happens to be
//! the default. English streams sentence by sentence, each partial with its own space.

use crate::common;
use crate::ha_agent::{frames, house_with, serve, OWNER};

use common::sse::*;
use common::user_text;
use serde_json::{json, Value};
use std::time::Duration;

/// How often `needle` occurs in every user message of a request.
fn count(req: &Value, needle: &str) -> usize {
    user_text(req).matches(needle).count()
}

#[tokio::test]
async fn the_integrations_room_person_chat_log_and_note_reach_the_model_without_a_house() {
    let (url, fake) = start_sse(|_, _| answer(vec![say("好的。")])).await;
    let ws = common::workspace();
    std::fs::write(
        ws.path().join("config.toml"),
        format!(
            "[provider]\nstream = false\n\n[http]\nlisten = \"127.0.0.1:0\"\ntoken = \"{OWNER}\"\n"
        ),
    )
    .unwrap();
    let (kernel, base) = serve(ws.path(), &url, None).await;
    assert!(kernel.doors().home().is_none(), "no [home_assistant]");
    let ask = |text: &str, note: &str, log: Value| {
        json!({"text": text, "conversation_id": "01jqhalog0001", "device_id": "tablet-1",
               "language": "zh-cn", "user_id": "ha-user-unmapped", "user_name": "小明",
               "area": {"id": "chu_fang", "name": "厨房", "floor": "一楼"},
               "extra_system_prompt": note, "chat_log": log})
    };
    // HA answered "打开厨房的灯" itself; the follow-up comes to homebot
    let log = json!([
        {"role": "user", "text": "打开厨房的灯"},
        {"role": "assistant", "text": "已打开厨房的灯", "agent_id": "conversation.home_assistant"},
        {"role": "system", "text": "not an entry homebot takes"},
    ]);
    let mut f = frames(&base, ask("再调暗一点", "晚饭提醒", log)).await;
    let reply = f.until_reply().await.pop().unwrap();
    assert_eq!(reply["error"], false, "{reply}");
    let first = fake.requests().last().unwrap().clone();
    let words = user_text(&first);
    assert!(words.contains("房间 厨房（一楼）"), "{words}");
    assert!(words.contains("说话人 guest（小明）"), "{words}");
    assert!(words.contains("[HA对话记录]"), "{words}");
    assert!(
        words.contains("用户：打开厨房的灯\nHome Assistant：已打开厨房的灯"),
        "{words}"
    );
    assert!(!words.contains("not an entry"), "{words}");
    assert!(words.contains("晚饭提醒"), "{words}");
    assert!(!first["messages"][0]["content"]
        .to_string()
        .contains("晚饭提醒"));

    // the same note again (HA keeps it for the conversation), nothing new in the log:
    // the replayed message holds both blocks, the new one repeats neither
    let mut f = frames(&base, ask("好了", "晚饭提醒", json!([]))).await;
    f.until_reply().await;
    let second = fake.requests().last().unwrap().clone();
    assert_eq!(count(&second, "[HA对话记录]"), 1, "{}", user_text(&second));
    assert_eq!(count(&second, "晚饭提醒"), 1, "{}", user_text(&second));
    let replayed = &second["messages"].as_array().unwrap();
    let first_current = first["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        replayed
            .iter()
            .any(|m| m["content"].as_str() == Some(first_current.as_str())),
        "the first message is replayed byte for byte"
    );
    // a changed note is sent again
    let mut f = frames(&base, ask("还有呢", "明早提醒", json!([]))).await;
    f.until_reply().await;
    let third = fake.requests().last().unwrap().clone();
    assert_eq!(count(&third, "明早提醒"), 1, "{}", user_text(&third));
    assert_eq!(count(&third, "[附加说明]"), 2, "{}", user_text(&third));
    kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_device_without_a_satellite_is_in_its_own_room_never_the_default_satellites() {
    let (url, fake) = start_sse(|_, _| answer(vec![say("好的。")])).await;
    let ws = common::workspace();
    let h = house_with(
        ws.path(),
        &url,
        "default_satellite = \"assist_satellite.kitchen\"",
    )
    .await;
    let words_for = |device: &str| {
        let (base, fake, device) = (h.base.clone(), &fake, device.to_string());
        async move {
            let mut f = frames(&base, json!({"text": "几点了", "device_id": device})).await;
            f.until_reply().await;
            user_text(fake.requests().last().unwrap())
        }
    };
    // a wall tablet in the bedroom (a device in an area, no satellite entity)
    let tablet = words_for("dev-bedroom-tablet").await;
    assert!(tablet.contains("房间 卧室"), "{tablet}");
    assert!(!tablet.contains("语音"), "no satellite heard it: {tablet}");
    // a device HA's registries do not place: no room, not the default satellite's
    let unknown = words_for("dev-nowhere").await;
    assert!(!unknown.contains("房间"), "{unknown}");
    // the kitchen satellite's device: its room, spoken
    let kitchen = words_for("dev-kitchen-sat").await;
    assert!(kitchen.contains("房间 厨房"), "{kitchen}");
    assert!(kitchen.contains("语音"), "{kitchen}");
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn english_streams_sentence_by_sentence_each_with_its_space() {
    let (url, fake) = start_sse(|_, _| {
        answer(vec![
            say("Sure, three eggs."),
            Step::Gate(1),
            say(" Are they beaten?"),
        ])
    })
    .await;
    let ws = common::workspace();
    std::fs::write(
        ws.path().join("config.toml"),
        format!(
            "[provider]\nstream = false\n\n[http]\nlisten = \"127.0.0.1:0\"\ntoken = \"{OWNER}\"\n"
        ),
    )
    .unwrap();
    let (kernel, base) = serve(ws.path(), &url, None).await;
    let mut f = frames(
        &base,
        json!({"text": "how many eggs for three", "language": "en", "device_id": "d"}),
    )
    .await;
    let first = f.next().await;
    // the model has not written the second sentence yet
    assert_eq!(first["type"], "partial", "{first}");
    assert_eq!(first["text"], "Sure, three eggs.");
    fake.open(1);
    let rest = f.until_reply().await;
    assert_eq!(rest[0]["text"], " Are they beaten?", "its own separator");
    let reply = rest.last().unwrap();
    assert_eq!(reply["text"], "Sure, three eggs. Are they beaten?");
    assert_eq!(reply["rest"], "");
    let joined: String = std::iter::once(&first)
        .chain(rest.iter())
        .filter(|f| f["type"] == "partial")
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        joined, "Sure, three eggs. Are they beaten?",
        "joined unchanged"
    );
    kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}
