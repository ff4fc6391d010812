//! The QQ channel against a OneBot v11 implementation simulator over a real WebSocket,
//! driving `homebot gateway` (reverse WebSocket, HOMEBOT_QQ_* environment): handshake and
//! auth, addressing and message formats, access policy, mode switching from groups.
//! Delivery (queues, splitting, reconnects, announcements, floods) is in `qq_delivery.rs`.

use crate::common;

use common::onebot::{self, text_of, BOT};
use common::qq::{at_bot, gateway, gateway_with, sim, text, DAD, GROUP, GROUP2, MOM, TOKEN};
use common::*;
use serde_json::json;
use std::time::Duration;

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

/// A panic in the QQ actor while a connection is half registered (up in its state, its
/// link not yet reported): the state is rebuilt, not kept half-changed — homebot closes
/// that connection, the implementation reconnects into the fresh state, shows as
/// connected, and its messages are answered.
#[tokio::test]
async fn after_a_panic_the_qq_state_is_rebuilt_and_the_implementation_reconnects() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    common::qq::config(dir.path(), "");
    let gw = common::gateway::Gateway::start(
        dir.path(),
        &fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", common::qq::TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &GROUP.to_string()),
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_FAILPOINT", "qq.activate.panic"),
        ],
        &["qq"],
    )
    .await;
    let status = format!("http://{}/api/status", gw.dashboard_addr().await);
    let mut first = sim(&gw).await;
    assert!(
        first.closed_within(Duration::from_secs(10)).await,
        "the half-registered connection is closed"
    );
    let mut s = sim(&gw).await;
    let bot = common::onebot::BOT.to_string();
    eventually_async(
        "the reconnected account shows as connected",
        Duration::from_secs(10),
        || async {
            let st: serde_json::Value = reqwest::get(&status).await.unwrap().json().await.unwrap();
            let up =
                st["channels"].as_array().into_iter().flatten().any(|c| {
                    c["channel"] == "qq" && c["id"] == bot.as_str() && c["connected"] == true
                });
            if up {
                Ok(())
            } else {
                Err(st)
            }
        },
    )
    .await;
    s.group_msg(GROUP, DAD, 901, json!([at_bot(), text("还在吗")]))
        .await;
    let a = s.expect_send().await;
    assert_eq!(text_of(&a).trim(), "好的：还在吗");
}
