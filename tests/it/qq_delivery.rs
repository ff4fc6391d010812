//! QQ delivery against the OneBot simulator: replies and announcements go out through one
//! ordered, bounded, throttled queue per target, whole, waiting a bounded time for a
//! reconnect; floods get one refusal per burst; failures are logged with their retcode.

use crate::common;

use common::gateway::Gateway;
use common::onebot::text_of;
use common::qq::{
    at_bot, config, gateway, gateway_with, sim, start_gateway, text, DAD, GROUP, MOM,
};
use common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

#[tokio::test]
async fn a_pending_reply_waits_for_the_reconnect() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_millis(800), Box::new(scripted(body)))
    })
    .await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;
    s.group_msg(GROUP, DAD, 601, json!([at_bot(), text("慢慢回答")]))
        .await;
    // the turn is under way before NapCat restarts
    eventually(
        "the model got the question",
        Duration::from_secs(10),
        || fake.calls() == 1,
    )
    .await;
    s.close().await;
    gw.wait_log("qq connection closed", 10).await;
    // the reply is ready and waits for a connection
    gw.wait_log(
        "no connection; waiting for the implementation to reconnect",
        10,
    )
    .await;
    let mut s2 = sim(&gw).await;
    let a = s2.expect_send().await;
    assert_eq!(text_of(&a).trim(), "好的：慢慢回答");
    assert_eq!(a["params"]["message"][0]["data"]["id"], "601");
}

#[tokio::test]
async fn long_markdown_replies_are_flattened_and_split() {
    let dir = workspace();
    let long = format!(
        "## 步骤\n\n**第一步**：打蛋。{}",
        "然后慢慢搅拌均匀，直到起泡。".repeat(60)
    );
    let reply = long.clone();
    let fake = FakeLlm::start(move |_, _| common::text(&reply)).await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;
    s.group_msg(GROUP, DAD, 701, json!([at_bot(), text("怎么做")]))
        .await;
    let first = s.expect_send().await;
    let mut parts = vec![text_of(&first)];
    // every part until the whole text is there (what flattening keeps of it: the words)
    let words = |t: &str| -> usize {
        t.chars()
            .filter(|c| !c.is_whitespace() && !"#*".contains(*c))
            .count()
    };
    while parts.iter().map(|p| words(p)).sum::<usize>() < words(&long) {
        let a = s.expect_send().await;
        assert_eq!(
            a["params"]["message"][0]["type"], "text",
            "only the first part quotes"
        );
        parts.push(text_of(&a));
    }
    assert!(parts.len() >= 2, "{parts:?}");
    assert!(parts.iter().all(|p| p.trim().chars().count() <= 500));
    let joined = parts.concat();
    assert!(!joined.contains("##") && !joined.contains("**"), "{joined}");
    assert!(parts[0].trim_start().starts_with("步骤"));
}

#[tokio::test]
async fn failed_actions_are_logged_with_retcode() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;
    s.group_msg(GROUP, DAD, 801, json!([at_bot(), text("你好")]))
        .await;
    let a = s.next_action(Duration::from_secs(10)).await.unwrap();
    s.send(json!({"status": "failed", "retcode": 1200, "data": null, "wording": "风控", "echo": a["echo"]})).await;
    gw.wait_log("retcode 1200", 10).await;
    // and the connection keeps working
    s.group_msg(GROUP, DAD, 802, json!([at_bot(), text("再来")]))
        .await;
    assert_eq!(text_of(&s.expect_send().await).trim(), "好的：再来");
}

#[tokio::test]
async fn a_long_reply_goes_out_whole_before_the_next_one() {
    let dir = workspace();
    let long = "先把番茄切块，再把鸡蛋打散。".repeat(80);
    let reply = long.clone();
    let fake = FakeLlm::start(move |_, _| {
        FakeReply::Delay(Duration::from_millis(200), Box::new(common::text(&reply)))
    })
    .await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = sim(&gw).await;
    s.group_msg(GROUP, DAD, 1101, json!([at_bot(), text("怎么做")]))
        .await;
    s.group_msg(GROUP, DAD, 1102, json!([at_bot(), text("/status")]))
        .await;
    let mut texts = Vec::new();
    // every send until the status reply (waiting as long as a loaded machine needs; no
    // quiet gap decides anything)
    loop {
        let a = s
            .next_action(Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("the parts and the status reply; so far {texts:?}"));
        s.send(json!({"status": "ok", "retcode": 0, "data": {"message_id": 1}, "echo": a["echo"]}))
            .await;
        let t = text_of(&a);
        let status = t.contains("homebot ·");
        texts.push(t);
        if status {
            break;
        }
    }
    assert!(texts.len() >= 3, "{texts:?}");
    let status_at = texts
        .iter()
        .position(|t| t.contains("homebot ·"))
        .expect("the status reply");
    assert_eq!(
        status_at,
        texts.len() - 1,
        "the status came after every part of the long reply: {texts:?}"
    );
    assert_eq!(texts[..status_at].concat().replace(' ', ""), long);
}

#[tokio::test]
async fn a_reply_with_no_reconnect_is_logged_as_undeliverable() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_millis(300), Box::new(scripted(body)))
    })
    .await;
    let gw = gateway_with(ws, &fake, "reconnect_wait_secs = 1").await;
    let mut s = sim(&gw).await;
    s.group_msg(GROUP, DAD, 1201, json!([at_bot(), text("没人收")]))
        .await;
    s.close().await;
    gw.wait_log("reply undeliverable", 15).await;
    assert!(
        gw.log().contains("no connection to QQ account"),
        "{}",
        gw.log()
    );
    // the turn itself was recorded
    let file = std::fs::read_dir(ws.join("chats/qq"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(jsonl(&file)[0]["user"], "没人收");
}

#[tokio::test]
async fn announcements_go_out_through_the_qq_door() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    let words = "水开了，可以下面条了";
    let to = format!("group:{GROUP}");
    let mut cmd = homebot(ws, None);
    cmd.args(["announce", "--channel", "qq", "--to", &to, words]);
    let (o, a) = tokio::join!(cmd.output(), s.expect_send());
    let o = o.unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("delivered to qq:group:{GROUP}")
    );
    assert_eq!(a["action"], "send_group_msg");
    assert_eq!(a["params"]["group_id"], GROUP);
    assert_eq!(
        a["params"]["message"],
        json!([{"type": "text", "data": {"text": words}}]),
        "an announcement quotes nobody and @s nobody"
    );

    // a person
    let mut cmd = homebot(ws, None);
    cmd.args([
        "announce",
        "--channel",
        "qq",
        "--to",
        &format!("private:{MOM}"),
        "早点回家",
    ]);
    let (o, a) = tokio::join!(cmd.output(), s.expect_send());
    assert!(o.unwrap().status.success());
    assert_eq!(a["action"], "send_private_msg");
    assert_eq!(a["params"]["user_id"], MOM);
    assert_eq!(text_of(&a), "早点回家");

    // targets that are not QQ's
    for bad in ["5550001", "group:abc", "kitchen:1"] {
        let o = homebot(ws, None)
            .args(["announce", "--channel", "qq", "--to", bad, "x"])
            .output()
            .await
            .unwrap();
        assert!(!o.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("is not a target of the qq channel"), "{err}");
    }
    assert_eq!(fake.calls(), 0, "announcements never reach the model");
}

#[tokio::test]
async fn an_announcement_with_no_account_connected_is_unreachable() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let _gw = gateway_with(ws, &fake, "reconnect_wait_secs = 1").await;
    let o = homebot(ws, None)
        .args([
            "announce",
            "--channel",
            "qq",
            "--to",
            "group:5550001",
            "有人吗",
        ])
        .output()
        .await
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not connected"), "{err}");
}

/// Config with `[agent] max_queued_per_chat = 1`: one turn answered, one waiting.
fn tight_queue_config(ws: &Path) {
    config(ws, "");
    let path = ws.join("config.toml");
    let mut toml = std::fs::read_to_string(&path).unwrap();
    toml.push_str("\n[agent]\nmax_queued_per_chat = 1\n");
    std::fs::write(path, toml).unwrap();
}

/// Fifteen messages at once into the group, then one more once both admitted ones are
/// answered; what the group got until that last one's reply: (answers, refusals, others).
async fn burst(s: &mut common::onebot::OneBotSim, first_id: i64) -> (usize, usize, Vec<String>) {
    // the first is answered, the second waits, the other 13 are refused at once
    for i in 0..15 {
        s.group_msg(
            GROUP,
            DAD,
            first_id + i,
            json!([at_bot(), text(&format!("第{i}条"))]),
        )
        .await;
    }
    // Everything for the group leaves through one FIFO: once both answers are out, a
    // last message's reply comes after every refusal that was going to be sent.
    let last = first_id + 99;
    let (mut answers, mut refusals, mut others) = (0, 0, Vec::new());
    loop {
        let a = s.expect_send().await;
        assert_eq!(a["action"], "send_group_msg");
        if a["params"]["message"][0]["data"]["id"] == json!(last.to_string()) {
            assert_eq!(text_of(&a).trim(), "好");
            return (answers, refusals, others);
        }
        let t = text_of(&a);
        if t.trim() == "好" {
            answers += 1;
            if answers == 2 {
                s.group_msg(GROUP, DAD, last, json!([at_bot(), text("最后一条")]))
                    .await;
            }
        } else if t.contains("消息太多了") {
            // in its place in the group's FIFO: after the replies to the messages
            // accepted before the first refused one
            assert_eq!(answers, 2, "the refusal overtook an answer");
            refusals += 1;
        } else {
            others.push(t);
        }
    }
}

#[tokio::test]
async fn a_flood_into_a_full_chat_gets_one_refusal_per_burst() {
    let dir = workspace();
    let ws = dir.path();
    tight_queue_config(ws);
    let fake = FakeLlm::start(|_, _| {
        FakeReply::Delay(Duration::from_millis(800), Box::new(common::text("好")))
    })
    .await;
    let gw = start_gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    let (answers, refusals, others) = burst(&mut s, 1300).await;
    assert_eq!(answers, 2);
    assert_eq!(
        refusals, 1,
        "one refusal for the 13 refused messages of a burst"
    );
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(fake.calls(), 3, "refused messages never reach the model");
    let refused = || gw.log().matches("chat queue full; turn refused").count();
    eventually("13 turns refused", Duration::from_secs(10), || {
        refused() == 13
    })
    .await;
    // the last reply went out with nothing else queued: the queue drained, so a second
    // burst, seconds later, is a new one and gets its own refusal
    let (answers, refusals, others) = burst(&mut s, 1500).await;
    assert_eq!((answers, refusals), (2, 1), "{others:?}");
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(fake.calls(), 6);
    eventually("13 more turns refused", Duration::from_secs(10), || {
        refused() == 26
    })
    .await;
}

#[tokio::test]
async fn a_target_queue_is_bounded() {
    let dir = workspace();
    let ws = dir.path();
    tight_queue_config(ws);
    let fake = FakeLlm::scripted().await;
    let gw = start_gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    // bare @s are answered without the model ("在的，请说。"), so the chat queue does not
    // limit them; the implementation answers no action, so the first send hangs and
    // the rest pile up behind it
    for i in 0..20 {
        s.group_msg(GROUP, DAD, 1400 + i, json!([at_bot()])).await;
    }
    // frames are handled in order: once a stranger's message after them is denied,
    // all twenty were queued or dropped
    s.private_msg(99_999, 1499, json!("你好")).await;
    gw.wait_log("private sender not allowed", 10).await;
    let dropped = gw
        .log()
        .matches("delivery queue full; reply dropped")
        .count();
    // nine wait (max_queued_per_chat = 1), one more if the worker already took the
    // first into flight; the rest are dropped
    assert!(
        (10..=11).contains(&dropped),
        "{dropped} dropped:\n{}",
        gw.log()
    );
}

/// The QQ actor's runs on its state so far (`homebot_actor_state_runs_total`), read from
/// `/metrics`.
async fn qq_actor_runs(dashboard: &str) -> f64 {
    use homebot::metrics::parse::{parse_strict, value};
    let page = reqwest::get(format!("http://{dashboard}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let parsed = parse_strict(&page).unwrap();
    value(
        &parsed,
        "homebot_actor_state_runs_total",
        &[("actor", "QQ channel")],
    )
    .unwrap_or(0.0)
}

/// Each part of a reply costs the QQ actor two messages, each handled in one run on its
/// state — opening the send (which also says the queue is drained) and its response —
/// and the message that brought the turn two runs (read it, queue its reply): no trip to
/// forget an answered send, none of its own to mark the queue drained.
#[tokio::test]
async fn a_reply_part_costs_two_trips_to_the_qq_actor() {
    let dir = workspace();
    let long = "鸡蛋先打散，加一点盐。".repeat(30);
    let reply = long.clone();
    let fake =
        FakeLlm::start(move |_, n| common::text(if n == 0 { reply.as_str() } else { "好的" }))
            .await;
    config(dir.path(), "max_reply_chars = 100");
    let gw = Gateway::start(
        dir.path(),
        &fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", common::qq::TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &GROUP.to_string()),
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
        ],
        &["qq"],
    )
    .await;
    let dashboard = gw.dashboard_addr().await;
    let mut s = sim(&gw).await;
    // the connection's own messages (reserve, activate) are handled once it shows as
    // connected
    let bot = common::onebot::BOT.to_string();
    eventually_async(
        "the QQ link shows as up",
        Duration::from_secs(10),
        || async {
            let page = reqwest::get(format!("http://{dashboard}/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let parsed = homebot::metrics::parse::parse_strict(&page).unwrap();
            let up = homebot::metrics::parse::value(
                &parsed,
                "homebot_channel_connected",
                &[("channel", "qq"), ("link", &bot)],
            );
            if up == Some(1.0) {
                Ok(())
            } else {
                Err(format!("{up:?}"))
            }
        },
    )
    .await;
    let before = qq_actor_runs(&dashboard).await;

    s.group_msg(GROUP, DAD, 801, json!([at_bot(), text("怎么炒蛋")]))
        .await;
    let mut said = String::new();
    let mut parts = 0;
    while said.chars().filter(|c| !c.is_whitespace()).count() < long.chars().count() {
        said.push_str(text_of(&s.expect_send().await).trim());
        parts += 1;
    }
    assert!(parts >= 3, "{parts} parts");
    // a second turn: whatever the first one still sent the actor has arrived by its end
    s.group_msg(GROUP, DAD, 802, json!([at_bot(), text("好了吗")]))
        .await;
    assert_eq!(text_of(&s.expect_send().await).trim(), "好的");
    let expected = (2 + 2 * parts) + (2 + 2);
    eventually_async(
        "the QQ actor handled both turns' messages",
        Duration::from_secs(10),
        || async {
            let n = qq_actor_runs(&dashboard).await - before;
            if n >= expected as f64 {
                Ok(n)
            } else {
                Err(n)
            }
        },
    )
    .await;
    let n = qq_actor_runs(&dashboard).await - before;
    assert_eq!(
        n, expected as f64,
        "{parts} + 1 parts in two turns: two runs a part and two a turn"
    );
}
