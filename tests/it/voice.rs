//! The voice channel against the real Python `wyoming` package (as Home Assistant uses
//! it) and a native-WebSocket satellite, driving `homebot gateway`: describe and
//! transcripts, a mode session across wakes, many satellites at once, failed turns,
//! dialogue state and announcements, one satellite's turns in order. Who is speaking and
//! which satellite a connection may speak for are in [`crate::voice_identity`].

use crate::common;

use common::gateway::Gateway;
use common::satellite::{connect as satellite, recv as recv_json};
use common::*;
use futures_util::SinkExt;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

pub(crate) const TOKEN: &str = "voice-token-123";

pub(crate) async fn gateway(ws: &Path, fake: &FakeLlm) -> Gateway {
    Gateway::start(
        ws,
        fake,
        &[
            ("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_WS_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_TOKEN", TOKEN),
        ],
        &["wyoming", "voice-ws"],
    )
    .await
}

fn host_port(addr: &str) -> (String, String) {
    let (h, p) = addr.rsplit_once(':').unwrap();
    (h.to_string(), p.to_string())
}

pub(crate) async fn wy(gw: &Gateway, args: &[&str]) -> Value {
    let (h, p) = host_port(gw.addr("wyoming"));
    let mut all = vec![h.as_str(), p.as_str()];
    all.extend_from_slice(args);
    run_peer("wyoming_client.py", &all).await
}

#[tokio::test]
async fn describe_and_transcript_with_the_wyoming_package() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let info = wy(&gw, &["describe"]).await;
    let h = &info["handle"][0];
    assert_eq!(h["name"], "homebot");
    assert_eq!(h["installed"], true);
    assert_eq!(h["languages"], json!(["zh", "en"]));
    assert_eq!(info["asr"], 0);

    let r = wy(&gw, &["transcript", "番茄要放几个", "conv-1", "mom"]).await;
    assert_eq!(r["type"], "handled");
    assert_eq!(r["text"], "好的：番茄要放几个");
    assert_eq!(r["context"]["conversation_id"], "conv-1");
    assert_eq!(r["context"]["dialogue_state"], "end");
    // the speech rule is said once, in the system prompt; the turn's block marks it
    // spoken
    let req = fake.requests().last().unwrap().clone();
    let msgs = req["messages"].as_array().unwrap();
    let last = msgs.last().unwrap()["content"].as_str().unwrap();
    assert!(last.contains(" · 语音\n[/上下文]"), "{last}");
    assert!(!last.contains("回答会被念出来"), "{last}");
    assert!(msgs[0]["content"]
        .as_str()
        .unwrap()
        .contains(homebot::prompt::SPEECH_RULE));
    let rec = jsonl(
        &std::fs::read_dir(dir.path().join("chats/voice"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    );
    assert_eq!(rec[0]["chat_id"], "conv-1");
    // an unauthenticated Wyoming speaker id is no member without a trusted mapping
    assert_eq!(rec[0]["speaker_id"], "guest");
    assert_eq!(rec[0]["channel"], "voice");
}

#[tokio::test]
async fn a_cooking_session_continues_across_wakes_and_normal_wakes_start_fresh() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;

    let r = wy(&gw, &["transcript", "打开做饭模式", "wake-1"]).await;
    assert!(
        r["text"].as_str().unwrap().contains("已进入做饭模式"),
        "{r}"
    );
    // a later wake, a new conversation id: the mode's history comes along
    let r = wy(&gw, &["transcript", "番茄要放几个", "wake-2"]).await;
    assert_eq!(r["text"], "好的：番茄要放几个");
    let req = fake.requests().last().unwrap().clone();
    let msgs = req["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4, "system + the entering turn + this one");
    assert_eq!(user_words(&msgs[1]), "打开做饭模式");
    let lines = jsonl(&session_dir(ws).join("conversation.jsonl"));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["chat_id"], "wake-1");
    assert_eq!(lines[1]["chat_id"], "wake-2");
    assert_eq!(lines[1]["speaker_id"], "guest", "unknown speaker");

    wy(&gw, &["transcript", "结束做饭模式", "wake-3"]).await;
    assert_eq!(action(ws)["active"], false);
    // outside a mode a new wake carries no previous dialogue
    wy(&gw, &["transcript", "你好", "wake-4"]).await;
    let req = fake.requests().last().unwrap().clone();
    assert_eq!(
        req["messages"].as_array().unwrap().len(),
        2,
        "system + this utterance only"
    );
}

#[tokio::test]
async fn six_satellites_at_once_and_a_garbage_frame_hurts_only_its_connection() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_millis(200), Box::new(scripted(body)))
    })
    .await;
    let gw = gateway(dir.path(), &fake).await;
    let all = wy(&gw, &["many", "6"]).await;
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 6);
    for (i, r) in all.iter().enumerate() {
        assert_eq!(r["type"], "handled");
        assert_eq!(r["text"], format!("好的：卫星{i}在问"));
        assert_eq!(r["context"]["conversation_id"], format!("conv-sat-{i}"));
    }
    let g = wy(&gw, &["garbage"]).await;
    assert!(
        g["bad_connection_answer"]
            .as_str()
            .unwrap()
            .contains("\"type\":\"error\""),
        "{g}"
    );
    assert_eq!(g["bad_connection_closed"], true);
    assert_eq!(g["good"]["type"], "handled");
    assert_eq!(g["good"]["text"], "好的：正常的问题");
}

#[tokio::test]
async fn a_failed_turn_is_not_handled() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("config.toml"),
        "[provider]\nmax_retries = 0\n",
    )
    .unwrap();
    let fake = FakeLlm::start(|_, _| FakeReply::Status(500, vec![], "down".into())).await;
    let gw = gateway(dir.path(), &fake).await;
    let r = wy(&gw, &["transcript", "在吗", "conv-x"]).await;
    assert_eq!(r["type"], "not-handled");
    assert!(r["text"].as_str().unwrap().contains("模型服务出错"), "{r}");
}

#[tokio::test]
async fn native_websocket_replies_with_dialogue_state_and_delivers_announcements() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if user_words(&last) == "开始吧" {
            common::text("好，先打三个鸡蛋。蛋液打好了吗？[[继续]]")
        } else {
            scripted(body)
        }
    })
    .await;
    let gw = gateway(ws, &fake).await;
    let addr = gw.addr("voice-ws").to_string();
    assert_eq!(satellite(&addr, "", None).await.err(), Some(401));
    assert_eq!(satellite(&addr, "", Some("wrong")).await.err(), Some(403));
    let mut s = satellite(&addr, "?satellite_id=kitchen", Some(TOKEN))
        .await
        .unwrap();

    let send = |t: Value| Message::Text(t.to_string());
    s.send(send(json!({"type": "transcript", "session_id": "s-1", "speaker_id": "dad", "satellite_id": "kitchen", "text": "开始吧"})))
        .await
        .unwrap();
    let r = recv_json(&mut s).await;
    assert_eq!(r["type"], "reply");
    assert_eq!(r["text"], "好，先打三个鸡蛋。蛋液打好了吗？");
    assert_eq!(r["dialogue_state"], "continue");
    s.send(send(json!({"type": "transcript", "session_id": "s-1", "speaker_id": "dad", "satellite_id": "kitchen", "text": "好了"})))
        .await
        .unwrap();
    let r = recv_json(&mut s).await;
    assert_eq!(r["text"], "好的：好了");
    assert_eq!(r["dialogue_state"], "end");
    // malformed input gets an error and the socket stays usable
    s.send(Message::Text("{nope".into())).await.unwrap();
    assert_eq!(recv_json(&mut s).await["type"], "error");

    // a proactive message to the satellite that asked, through the running gateway
    let o = homebot(ws, None)
        .args([
            "announce",
            "--channel",
            "voice",
            "--to",
            "kitchen",
            "水开了，可以下面条了",
        ])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let a = recv_json(&mut s).await;
    assert_eq!(
        a,
        json!({"type": "announce", "text": "水开了，可以下面条了"})
    );
    let o = homebot(ws, None)
        .args(["announce", "--to", "bedroom", "晚安"])
        .output()
        .await
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"bedroom\" is not connected"));
    assert!(!gw.log().contains(TOKEN));
}

#[tokio::test]
async fn one_satellite_session_is_answered_in_order_and_its_ids_are_released() {
    let dir = workspace();
    let ws = dir.path();
    // the first utterance is slow to answer; the second must still come second
    let fake = FakeLlm::start(|body, n| {
        let d = if n == 0 { 600 } else { 10 };
        FakeReply::Delay(Duration::from_millis(d), Box::new(scripted(body)))
    })
    .await;
    let gw = gateway(ws, &fake).await;
    let addr = gw.addr("voice-ws").to_string();
    let mut s = satellite(&addr, "", Some(TOKEN)).await.unwrap();
    for words in ["第一句", "第二句", "第三句"] {
        s.send(Message::Text(json!({"type": "transcript", "session_id": "same", "satellite_id": "hall", "text": words}).to_string()))
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(
            recv_json(&mut s).await["text"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(got, ["好的：第一句", "好的：第二句", "好的：第三句"]);
    let file = std::fs::read_dir(ws.join("chats/voice"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let users: Vec<String> = jsonl(&file)
        .iter()
        .map(|l| l["user"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["第一句", "第二句", "第三句"]);

    // "hall" was named only in transcripts; once the socket closes, it is gone
    drop(s);
    let mut released = false;
    for _ in 0..50 {
        let o = homebot(ws, None)
            .args(["announce", "--to", "hall", "开饭了"])
            .output()
            .await
            .unwrap();
        if !o.status.success() {
            assert!(String::from_utf8_lossy(&o.stderr).contains("\"hall\" is not connected"));
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(released, "the satellite id outlived its connection");
}
