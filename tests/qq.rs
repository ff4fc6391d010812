//! The QQ channel against a OneBot v11 implementation simulator over a real WebSocket,
//! driving `homebot gateway` (reverse WebSocket, HOMEBOT_QQ_* environment).

mod common;

use common::gateway::Gateway;
use common::onebot::{self, text_of, BOT};
use common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "s3cret-token";
const GROUP: u64 = 5_550_001;
const GROUP2: u64 = 5_550_002;
const MOM: u64 = 10_001;
const DAD: u64 = 10_002;

/// Config with fast sends, mom as a member, and `extra` lines in `[qq]`.
fn config(ws: &Path, extra: &str) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[qq]\nsend_interval_ms = 20\n{extra}\n\n[[members]]\nid = \"mom\"\nname = \"妈妈\"\nqq_ids = [\"10001\"]\n"
        ),
    )
    .unwrap();
}

async fn gateway(ws: &Path, fake: &FakeLlm) -> Gateway {
    gateway_with(ws, fake, "").await
}

/// The gateway with the reverse WebSocket on, the token set and both groups allowed.
async fn gateway_with(ws: &Path, fake: &FakeLlm, extra_qq: &str) -> Gateway {
    config(ws, extra_qq);
    start_gateway(ws, fake).await
}

/// Like [`gateway_with`], on a config.toml already written.
async fn start_gateway(ws: &Path, fake: &FakeLlm) -> Gateway {
    Gateway::start(
        ws,
        fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &format!("{GROUP},{GROUP2}")),
        ],
        &["qq"],
    )
    .await
}

async fn sim(gw: &Gateway) -> onebot::OneBotSim {
    let mut s = onebot::connect(gw.addr("qq"), Some(BOT), Some(TOKEN), "Universal")
        .await
        .unwrap();
    s.lifecycle().await;
    s
}

fn at_bot() -> serde_json::Value {
    json!({"type": "at", "data": {"qq": BOT.to_string()}})
}

fn text(t: &str) -> serde_json::Value {
    json!({"type": "text", "data": {"text": t}})
}

/// Poll `cond` until it holds (or panic after `secs`).
async fn eventually(what: &str, secs: u64, cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn auth_is_refused_three_ways_and_meta_events_are_quiet() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let addr = gw.addr("qq");
    assert_eq!(
        onebot::connect(addr, None, Some(TOKEN), "Universal")
            .await
            .err(),
        Some(401),
        "no X-Self-ID"
    );
    assert_eq!(
        onebot::connect(addr, Some(BOT), None, "Universal")
            .await
            .err(),
        Some(401),
        "no token"
    );
    assert_eq!(
        onebot::connect(addr, Some(BOT), Some("wrong"), "Universal")
            .await
            .err(),
        Some(403),
        "wrong token"
    );
    let mut req_ok = onebot::connect(addr, Some(BOT), Some(TOKEN), "Universal")
        .await
        .unwrap();
    assert_eq!(
        onebot::connect(addr, Some(BOT), Some(TOKEN), "Universal")
            .await
            .err(),
        Some(403),
        "duplicate self id"
    );
    req_ok.lifecycle().await;
    req_ok.heartbeat().await;
    assert!(req_ok
        .next_action(Duration::from_millis(500))
        .await
        .is_none());
    assert_eq!(fake.calls(), 0);
    // split API / Event roles of another account are accepted side by side
    let api = onebot::connect(addr, Some(BOT + 1), Some(TOKEN), "API").await;
    let ev = onebot::connect(addr, Some(BOT + 1), Some(TOKEN), "Event").await;
    assert!(api.is_ok() && ev.is_ok());
    assert!(!gw.log().contains(TOKEN), "the token never reaches the log");
}

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
    eventually("the model got the question", 10, || fake.calls() == 1).await;
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
    while let Some(a) = s.next_action(Duration::from_millis(800)).await {
        let echo = a["echo"].clone();
        s.send(json!({"status": "ok", "retcode": 0, "data": {"message_id": 1}, "echo": echo}))
            .await;
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
async fn token_in_the_query_and_silent_connections_are_dropped() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let gw = gateway_with(ws, &fake, "heartbeat_timeout_secs = 1").await;
    // `?access_token=` instead of the header
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = format!("ws://{}/onebot/v11/ws?access_token={TOKEN}", gw.addr("qq"))
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("X-Self-ID", BOT.to_string().parse().unwrap());
    req.headers_mut()
        .insert("X-Client-Role", "Universal".parse().unwrap());
    let (mut sock, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("query token accepted");
    // say nothing: the heartbeat timeout notices the dead connection and closes it
    gw.wait_log("silent past the heartbeat timeout", 10).await;
    use futures_util::StreamExt;
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match sock.next().await {
                None | Some(Err(_)) => return true,
                Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_))) => return true,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert_eq!(end, Ok(true), "the server closed the silent connection");
    // and the account may connect again
    assert!(
        onebot::connect(gw.addr("qq"), Some(BOT), Some(TOKEN), "Universal")
            .await
            .is_ok()
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

#[tokio::test]
#[allow(clippy::result_large_err)] // the handshake callback's signature is tungstenite's
async fn forward_websocket_connects_out_with_the_token_and_reconnects() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::Message;

    // the implementation's forward WebSocket server (NapCat "WebSocket 服务端")
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let dir = workspace();
    let ws = dir.path();
    std::fs::write(
        ws.join("config.toml"),
        format!("[qq]\nforward_url = \"{url}\"\nsend_interval_ms = 10\ngroups = {{ policy = \"open\" }}\n"),
    )
    .unwrap();
    let fake = FakeLlm::scripted().await;
    let mut gw_cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_homebot"));
    gw_cmd
        .arg("--workspace")
        .arg(ws)
        .arg("gateway")
        .env("HOMEBOT_BASE_URL", &fake.url)
        .env("HOMEBOT_QQ_ACCESS_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    let _gw = gw_cmd.spawn().unwrap();

    for round in 0..2 {
        let (tcp, _) = tokio::time::timeout(Duration::from_secs(60), listener.accept())
            .await
            .unwrap()
            .unwrap();
        let mut auth = None;
        let mut sock = tokio_tungstenite::accept_hdr_async(tcp, |req: &Request, resp: Response| {
            auth = req
                .headers()
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_string());
            Ok(resp)
        })
        .await
        .unwrap();
        assert_eq!(auth.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
        let ev = |v: serde_json::Value| Message::Text(v.to_string());
        sock.send(ev(json!({"time": 1, "self_id": BOT, "post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"})))
            .await
            .unwrap();
        sock.send(ev(json!({"time": 1, "self_id": BOT, "post_type": "message", "message_type": "group", "sub_type": "normal",
            "message_id": 1000 + round, "group_id": 42, "user_id": DAD,
            "message": format!("[CQ:at,qq={BOT}] 第{round}次连接"), "raw_message": "", "font": 0, "sender": {}})))
            .await
            .unwrap();
        let action = loop {
            let m = tokio::time::timeout(Duration::from_secs(30), sock.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            if let Message::Text(t) = m {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                if v.get("action").is_some() {
                    break v;
                }
            }
        };
        assert_eq!(action["action"], "send_group_msg");
        assert_eq!(text_of(&action).trim(), format!("好的：第{round}次连接"));
        sock.send(ev(json!({"status": "ok", "retcode": 0, "data": {"message_id": 1}, "echo": action["echo"]})))
            .await
            .unwrap();
        // the implementation restarts: homebot must come back by itself
        drop(sock);
    }
}

#[tokio::test]
async fn a_handshake_that_dies_halfway_does_not_hold_the_account() {
    use tokio::io::AsyncWriteExt;
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let addr = gw.addr("qq").to_string();
    for _ in 0..20 {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let req = format!(
            "GET /onebot/v11/ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             X-Self-ID: {BOT}\r\nX-Client-Role: Universal\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        );
        tcp.write_all(req.as_bytes()).await.unwrap();
        #[allow(deprecated)] // zero linger never blocks; it makes the close a reset
        let _ = tcp.set_linger(Some(Duration::ZERO));
        drop(tcp);
    }
    // the dead handshakes release the account: a real connection gets in (while one of
    // them still holds it, the server says 403; while they still fill the connection
    // cap, 503)
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match onebot::connect(&addr, Some(BOT), Some(TOKEN), "Universal").await {
            Ok(s) => break s,
            Err(403 | 503) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(status) => panic!("the account is never free again ({status})"),
        }
    };
    s.group_msg(GROUP, DAD, 1001, json!([at_bot(), text("还在吗")]))
        .await;
    assert_eq!(text_of(&s.expect_send().await).trim(), "好的：还在吗");
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
    while let Some(a) = s.next_action(Duration::from_millis(1500)).await {
        s.send(json!({"status": "ok", "retcode": 0, "data": {"message_id": 1}, "echo": a["echo"]}))
            .await;
        texts.push(text_of(&a));
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

#[tokio::test]
async fn a_flood_into_a_full_chat_gets_one_refusal_not_one_per_message() {
    let dir = workspace();
    let ws = dir.path();
    tight_queue_config(ws);
    let fake = FakeLlm::start(|_, _| {
        FakeReply::Delay(Duration::from_millis(800), Box::new(common::text("好")))
    })
    .await;
    let gw = start_gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    // the first is answered, the second waits, the other 13 are refused at once
    for i in 0..15 {
        s.group_msg(
            GROUP,
            DAD,
            1300 + i,
            json!([at_bot(), text(&format!("第{i}条"))]),
        )
        .await;
    }
    // Everything for the group leaves through one FIFO: once both answers are out, a
    // last message's reply comes after every refusal that was going to be sent.
    const LAST: i64 = 1399;
    let (mut answers, mut refusals, mut others) = (0, 0, Vec::new());
    loop {
        let a = s.expect_send().await;
        assert_eq!(a["action"], "send_group_msg");
        if a["params"]["message"][0]["data"]["id"] == json!(LAST.to_string()) {
            assert_eq!(text_of(&a).trim(), "好");
            break;
        }
        let t = text_of(&a);
        if t.trim() == "好" {
            answers += 1;
            if answers == 2 {
                s.group_msg(GROUP, DAD, LAST, json!([at_bot(), text("最后一条")]))
                    .await;
            }
        } else if t.contains("消息太多了") {
            refusals += 1;
        } else {
            others.push(t);
        }
    }
    assert_eq!(answers, 2);
    assert_eq!(refusals, 1, "one refusal per chat per minute");
    assert!(others.is_empty(), "{others:?}");
    assert_eq!(fake.calls(), 3, "refused messages never reach the model");
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
