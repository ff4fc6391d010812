//! The QQ channel against a OneBot v11 implementation simulator over a real WebSocket,
//! driving `homebot gateway` (reverse WebSocket, HOMEBOT_QQ_* environment): addressing
//! and message formats, access policy, a mode session from a group, two groups at once,
//! mode switching from groups. The connection itself (handshake and auth, forward
//! WebSocket, reconnects) is in `qq_connection.rs`; delivery (queues, splitting,
//! reconnects, announcements, floods) in `qq_delivery.rs`.

use crate::common;

use common::onebot::{text_of, BOT};
use common::qq::{at_bot, gateway, gateway_with, sim, text, DAD, GROUP, GROUP2, MOM};
use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn addressing_formats_and_escapes() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;

    // @ first, array format
    s.group_msg(GROUP, DAD, 101, json!([at_bot(), text("  番茄几个？")]))
        .await;
    let a = s.expect_send().await;
    assert_eq!(a["action"], "send_group_msg");
    assert_eq!(a["params"]["group_id"], GROUP);
    assert_eq!(text_of(&a).trim(), "好的：番茄几个？");
    let bot_msg_id = a["_message_id"].as_i64().unwrap();

    // @ last, CQ string with escapes, numbers as values
    s.group_msg(
        GROUP,
        DAD,
        102,
        json!(format!("蛋&#91;两个&#93; &amp; 葱 [CQ:at,qq={BOT}]")),
    )
    .await;
    assert_eq!(
        text_of(&s.expect_send().await).trim(),
        "好的：蛋[两个] & 葱"
    );

    // a reply to the bot's own message, without any @
    s.group_msg(
        GROUP,
        DAD,
        103,
        json!([{"type": "reply", "data": {"id": bot_msg_id}}, text("然后呢")]),
    )
    .await;
    assert_eq!(text_of(&s.expect_send().await).trim(), "好的：然后呢");

    // not addressed: no reply, no LLM call
    let calls = fake.calls();
    s.group_msg(
        GROUP,
        DAD,
        104,
        json!([text("今天天气不错"), at_bot(), text("是吧")]),
    )
    .await;
    s.group_msg(GROUP, DAD, 105, json!("[CQ:at,qq=20002] 你看"))
        .await;
    assert!(s.next_action(Duration::from_millis(600)).await.is_none());
    assert_eq!(fake.calls(), calls);

    // what was recorded: mention stripped, escapes decoded
    let users: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| user_words(r["messages"].as_array().unwrap().last().unwrap()))
        .collect();
    assert_eq!(users, ["番茄几个？", "蛋[两个] & 葱", "然后呢"]);
    let chat_dir = dir.path().join("chats/qq");
    let file = std::fs::read_dir(&chat_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recs = jsonl(&file);
    assert_eq!(recs[1]["user"], "蛋[两个] & 葱");
    assert_eq!(recs[0]["chat_id"], format!("group:{GROUP}"));
    assert_eq!(recs[0]["speaker_id"], format!("qq:{DAD}"));
    assert_eq!(recs[0]["channel"], "qq");
}

#[tokio::test]
async fn strangers_never_reach_the_llm_and_bad_frames_do_not_break_the_connection() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;
    s.group_msg(7_777_777, DAD, 201, json!([at_bot(), text("我是别的群")]))
        .await;
    s.private_msg(99_999, 202, json!([text("你好，我是陌生人")]))
        .await;
    s.send_raw("{this is not json").await;
    s.send_raw("[1,2,3]").await;
    s.send(json!({"status": "ok", "retcode": 0, "data": null, "echo": "no-such-action"}))
        .await;
    s.send(json!({"post_type": "message", "message_type": "group", "self_id": BOT}))
        .await; // no ids
    assert!(s.next_action(Duration::from_millis(600)).await.is_none());
    assert_eq!(fake.calls(), 0, "nothing reached the LLM");
    // the same connection still works; a household member may talk privately
    s.private_msg(MOM, 203, json!("晚上吃什么")).await;
    let a = s.expect_send().await;
    assert_eq!(a["action"], "send_private_msg");
    assert_eq!(a["params"]["user_id"], MOM);
    assert_eq!(text_of(&a), "好的：晚上吃什么");
    assert!(
        a["params"]["message"]
            .as_array()
            .unwrap()
            .iter()
            .all(|seg| seg["type"] == "text"),
        "private replies are plain"
    );
    let rec = jsonl(
        &std::fs::read_dir(dir.path().join("chats/qq"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    );
    assert_eq!(
        rec[0]["speaker_id"], "mom",
        "QQ id mapped to the household member"
    );
    assert_eq!(rec[0]["chat_id"], format!("private:{MOM}"));
}

#[tokio::test]
async fn a_cooking_session_from_the_group_quotes_and_mentions_each_sender() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    let turns = [
        (
            MOM,
            301,
            json!([at_bot(), text(" 打开做饭模式")]),
            "已进入做饭模式",
        ),
        (
            DAD,
            302,
            json!([at_bot(), text(" 番茄要放几个？")]),
            "好的：番茄要放几个？",
        ),
        (
            MOM,
            303,
            json!(format!("[CQ:at,qq={BOT}] 蛋呢")),
            "好的：蛋呢",
        ),
        (
            DAD,
            304,
            json!([at_bot(), text(" 结束做饭模式")]),
            "已请求退出做饭模式",
        ),
    ];
    for (user, mid, msg, expect) in turns {
        s.group_msg(GROUP, user, mid, msg).await;
        let a = s.expect_send().await;
        let segs = a["params"]["message"].as_array().unwrap().clone();
        assert_eq!(segs[0]["type"], "reply");
        assert_eq!(segs[0]["data"]["id"], mid.to_string());
        assert_eq!(segs[1]["type"], "at");
        assert_eq!(segs[1]["data"]["qq"], user.to_string());
        assert!(text_of(&a).contains(expect), "{}", text_of(&a));
    }
    assert_eq!(action(ws)["active"], false);
    assert_eq!(action(ws)["exit_reason"], "user");
    let sessions: Vec<_> = std::fs::read_dir(ws.join("modes/sessions/cooking"))
        .unwrap()
        .collect();
    assert_eq!(sessions.len(), 1);
    let sdir = sessions.into_iter().next().unwrap().unwrap().path();
    let lines = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(lines.len(), 4);
    assert!(lines
        .iter()
        .all(|l| l["channel"] == "qq" && l["chat_id"] == format!("group:{GROUP}")));
    let speakers: Vec<&str> = lines
        .iter()
        .map(|l| l["speaker_id"].as_str().unwrap())
        .collect();
    assert_eq!(speakers, ["mom", "qq:10002", "mom", "qq:10002"]);
    assert!(sdir.join("summary.md").exists());
}

#[tokio::test]
async fn two_groups_at_once_each_answered_in_its_own_group_in_order() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| {
        FakeReply::Delay(
            Duration::from_millis(if n % 2 == 0 { 300 } else { 30 }),
            Box::new(scripted(body)),
        )
    })
    .await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;
    for i in 0..3 {
        s.group_msg(
            GROUP,
            DAD,
            400 + i,
            json!([at_bot(), text(&format!("一群第{i}句"))]),
        )
        .await;
        s.group_msg(
            GROUP2,
            MOM,
            500 + i,
            json!([at_bot(), text(&format!("二群第{i}句"))]),
        )
        .await;
    }
    let mut by_group: std::collections::HashMap<u64, Vec<String>> = Default::default();
    for _ in 0..6 {
        let a = s.expect_send().await;
        let g = a["params"]["group_id"].as_u64().unwrap();
        by_group
            .entry(g)
            .or_default()
            .push(text_of(&a).trim().to_string());
    }
    assert_eq!(
        by_group[&GROUP],
        ["好的：一群第0句", "好的：一群第1句", "好的：一群第2句"]
    );
    assert_eq!(
        by_group[&GROUP2],
        ["好的：二群第0句", "好的：二群第1句", "好的：二群第2句"]
    );
}

#[tokio::test]
async fn only_members_may_switch_modes_from_a_group_when_configured() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let gw = gateway_with(ws, &fake, "mode_switch = \"members\"").await;
    let mut s = sim(&gw).await;
    // a guest in the group: neither the tool nor the command may switch
    s.group_msg(GROUP, DAD, 901, json!([at_bot(), text("打开做饭模式")]))
        .await;
    assert!(text_of(&s.expect_send().await).contains("没有切换模式的权限"));
    s.group_msg(
        GROUP,
        DAD,
        902,
        json!([at_bot(), text("/mode enter cooking")]),
    )
    .await;
    assert!(text_of(&s.expect_send().await).contains("没有切换模式的权限"));
    assert_eq!(action(ws)["active"], false);
    // a household member may
    s.group_msg(GROUP, MOM, 903, json!([at_bot(), text("打开做饭模式")]))
        .await;
    assert!(text_of(&s.expect_send().await).contains("已进入做饭模式"));
    assert_eq!(action(ws)["active"], true);
}
