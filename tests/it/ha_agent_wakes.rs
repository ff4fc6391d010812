//! What outlives one turn of Home Assistant's own agent: a reminder set at a satellite
//! rings there through the Home Assistant channel's door, and an ended mode's carry
//! reaches the next wake (a new HA conversation) at the same satellite; one set from a
//! device with no satellite rings on its room's satellite.

use crate::common;
use crate::ha_agent::{frames, house};
use common::sse::*;
use common::user_text;
use serde_json::{json, Value};
use std::time::Duration;

/// The model of a cooking evening through Home Assistant: it asks to enter and to end the
/// mode when told, relays what the backend said, and otherwise answers briefly.
fn cooking(body: &Value, _: usize) -> common::FakeReply {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    if last["role"] == "tool" {
        return answer(vec![say("好的。")]);
    }
    let words = last["content"].as_str().unwrap_or_default();
    if words.contains("打开做饭模式") {
        return answer(vec![call(
            "switch_mode",
            json!({"action": "enter", "mode_id": "cooking"}),
        )]);
    }
    if words.contains("结束做饭模式") {
        return answer(vec![call(
            "switch_mode",
            json!({"action": "exit", "mode_id": "cooking", "summary": "红烧肉放了两勺盐。"}),
        )]);
    }
    answer(vec![say("嗯。")])
}

#[tokio::test]
async fn a_mode_ended_at_a_satellite_reaches_its_next_wake() {
    let (url, fake) = start_sse(cooking).await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let wake = |conversation: &str, text: &str, device: Option<&str>| {
        let mut ask =
            json!({"text": text, "conversation_id": conversation, "user_id": "ha-user-mom"});
        if let Some(d) = device {
            ask["device_id"] = json!(d);
        }
        ask
    };
    let at_kitchen = Some("dev-kitchen-sat");
    for (words, state) in [("打开做饭模式", "好的。"), ("好了，结束做饭模式", "好的。")]
    {
        let reply = frames(&h.base, wake("01jqwake0001", words, at_kitchen))
            .await
            .until_reply()
            .await
            .pop()
            .unwrap();
        assert_eq!(reply["text"], state, "{reply}");
    }
    assert!(
        h.kernel.status_text().await.contains("无活动模式"),
        "the mode ended"
    );
    // a new wake (HA's new conversation) at the same satellite carries it …
    frames(&h.base, wake("01jqwake0002", "刚才放了多少盐", at_kitchen))
        .await
        .until_reply()
        .await;
    let seen = fake.requests();
    let carried = |b: &Value| b.to_string().contains("刚结束");
    assert!(carried(seen.last().unwrap()), "{}", seen.last().unwrap());
    // … and typed Assist (no satellite) is a chat of its own, which took no part
    frames(&h.base, wake("01jqtyped0001", "刚才放了多少盐", None))
        .await
        .until_reply()
        .await;
    assert!(!carried(fake.requests().last().unwrap()));
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_reminder_set_at_a_satellite_rings_there_through_home_assistants_door() {
    let (url, fake) = start_sse(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap();
        if last["role"] == "tool" {
            return answer(vec![say("好的，到时提醒你。")]);
        }
        answer(vec![call(
            "set_reminder",
            json!({"in_seconds": 1, "text": "关火"}),
        )])
    })
    .await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let reply = frames(
        &h.base,
        json!({"text": "一秒后提醒我关火", "device_id": "dev-kitchen-sat", "user_id": "ha-user-mom"}),
    )
    .await
    .until_reply()
    .await
    .pop()
    .unwrap();
    assert_eq!(reply["text"], "好的，到时提醒你。", "{reply}");
    assert!(user_text(fake.requests().first().unwrap()).contains("房间 厨房"));
    common::eventually(
        "the reminder announced on the kitchen satellite",
        Duration::from_secs(20),
        || {
            h.ha.service_calls("assist_satellite", "announce")
                .iter()
                .any(|c| {
                    c["target"]["entity_id"] == "assist_satellite.kitchen"
                        && c.to_string().contains("关火")
                })
        },
    )
    .await;
    // rung once HA has answered the announcement (the call is seen before its answer
    // reaches the reminders)
    common::eventually_async(
        "the Home Assistant channel's own target, rung",
        Duration::from_secs(10),
        || async {
            let listed = h.kernel.command("/reminders all").await.text;
            if listed.contains("home_assistant:assist_satellite.kitchen") && listed.contains("已响")
            {
                Ok(())
            } else {
                Err(listed)
            }
        },
    )
    .await;
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

/// A reminder set from a device with no satellite (a wall tablet in the bedroom) is
/// announced on its room's satellite — never on the kitchen's, which is the default.
#[tokio::test]
async fn a_reminder_set_at_a_tablet_rings_on_its_rooms_satellite() {
    let (url, _fake) = start_sse(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap();
        if last["role"] == "tool" {
            return answer(vec![say("好的，到时提醒你。")]);
        }
        answer(vec![call(
            "set_reminder",
            json!({"in_seconds": 1, "text": "收衣服"}),
        )])
    })
    .await;
    let ws = common::workspace();
    let h = crate::ha_agent::house_with(
        ws.path(),
        &url,
        "default_satellite = \"assist_satellite.kitchen\"",
    )
    .await;
    let reply = frames(
        &h.base,
        json!({"text": "一秒后提醒我收衣服", "device_id": "dev-bedroom-tablet"}),
    )
    .await
    .until_reply()
    .await
    .pop()
    .unwrap();
    assert_eq!(reply["text"], "好的，到时提醒你。", "{reply}");
    common::eventually(
        "the reminder announced on the bedroom's satellite",
        Duration::from_secs(20),
        || {
            h.ha.service_calls("assist_satellite", "announce")
                .iter()
                .any(|c| {
                    c["target"]["entity_id"] == "assist_satellite.bedroom"
                        && c.to_string().contains("收衣服")
                })
        },
    )
    .await;
    let kitchen = h.ha.service_calls("assist_satellite", "announce");
    assert!(
        !kitchen
            .iter()
            .any(|c| c["target"]["entity_id"] == "assist_satellite.kitchen"),
        "{kitchen:?}"
    );
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}
