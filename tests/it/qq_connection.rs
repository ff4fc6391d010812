//! The QQ channel's connection against a OneBot v11 implementation simulator over a real
//! WebSocket, driving `homebot gateway`: handshake and auth (refused three ways, the
//! token in the query), silent connections dropped, the forward WebSocket connecting out
//! and reconnecting, a handshake that dies halfway, and the QQ state rebuilt after a
//! panic. Messages, access and modes are in `qq.rs`.

use crate::common;

use common::onebot::{self, text_of, BOT};
use common::qq::{at_bot, gateway, gateway_with, sim, text, DAD, GROUP, TOKEN};
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
