//! Who is speaking on voice and which satellite a connection may speak for, against the
//! real Python `wyoming` package and a native-WebSocket satellite, driving `homebot
//! gateway`: a Wyoming speaker naming a member is a guest unless the mapping is trusted,
//! satellite speakers map only through their own satellite, a live satellite id cannot be
//! taken with the shared token, a satellite token binds its id, and one connection speaks
//! for a handful of ids at most. The kit and the channel's turns are in [`crate::voice`].

use crate::common;
use crate::voice::*;

use common::satellite::{connect as satellite, recv as recv_json, Sock};
use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// A household with mom's profile; `voice` is extra `[voice]` config.
fn household(ws: &Path, voice: &str) {
    std::fs::write(
        ws.join("config.toml"),
        format!("[[members]]\nid = \"mom\"\nname = \"妈妈\"\nspeaker_ids = [\"kitchen-mom\"]\n\n[voice]\n{voice}"),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("members/mom")).unwrap();
    std::fs::write(
        ws.join("members/mom/USER.md"),
        "妈妈的私人档案：对花生过敏。\n",
    )
    .unwrap();
}

/// Who the last request to the model was for: (the speaker line of the context block,
/// whether mom's profile was in the prompt).
fn spoken_as(fake: &FakeLlm) -> (String, bool) {
    let req = fake.requests().last().unwrap().clone();
    let msgs = req["messages"].as_array().unwrap();
    let all: String = msgs
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    let last = msgs.last().unwrap()["content"].as_str().unwrap();
    // the `[上下文]` line's speaker: "说话人 mom（妈妈）"
    let line = last
        .split(" · ")
        .find(|l| l.starts_with("说话人 "))
        .unwrap_or_default()
        .to_string();
    (line, all.contains("妈妈的私人档案"))
}

#[tokio::test]
async fn a_wyoming_speaker_naming_a_member_is_a_guest() {
    let dir = workspace();
    let ws = dir.path();
    household(ws, "");
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    // a member's id, or one of her speaker_ids, said by an unauthenticated client
    for claimed in ["mom", "kitchen-mom"] {
        let r = wy(&gw, &["transcript", "我对什么过敏", "conv-id", claimed]).await;
        assert_eq!(r["type"], "handled");
        assert_eq!(
            spoken_as(&fake),
            ("说话人 guest".to_string(), false),
            "{claimed}"
        );
    }
}

#[tokio::test]
async fn a_trusted_wyoming_mapping_makes_the_member() {
    let dir = workspace();
    let ws = dir.path();
    household(ws, "wyoming_speakers = { \"ha-user-x\" = \"mom\" }\n");
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    wy(&gw, &["transcript", "我对什么过敏", "conv-a", "ha-user-x"]).await;
    assert_eq!(spoken_as(&fake), ("说话人 mom（妈妈）".to_string(), true));
    wy(&gw, &["transcript", "我对什么过敏", "conv-b", "mom"]).await;
    assert_eq!(spoken_as(&fake), ("说话人 guest".to_string(), false));
}

async fn transcript(s: &mut Sock, v: Value) -> Value {
    s.send(Message::Text(v.to_string())).await.unwrap();
    recv_json(s).await
}

#[tokio::test]
async fn satellite_speakers_map_only_through_their_own_satellite() {
    let dir = workspace();
    let ws = dir.path();
    household(
        ws,
        "[[voice.satellites]]\nid = \"kitchen\"\ntoken = \"kitchen-token-456\"\nspeakers = { \"voice-profile-1\" = \"mom\" }\n",
    );
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    let addr = gw.addr("voice-ws").to_string();
    let mut k = satellite(&addr, "?satellite_id=kitchen", Some("kitchen-token-456"))
        .await
        .unwrap();
    let r = transcript(
        &mut k,
        json!({"type": "transcript", "speaker_id": "voice-profile-1", "text": "我对什么过敏"}),
    )
    .await;
    assert_eq!(r["type"], "reply", "{r}");
    assert_eq!(spoken_as(&fake), ("说话人 mom（妈妈）".to_string(), true));
    transcript(
        &mut k,
        json!({"type": "transcript", "speaker_id": "mom", "text": "我对什么过敏"}),
    )
    .await;
    assert_eq!(spoken_as(&fake), ("说话人 guest".to_string(), false));
    // the shared token, another satellite: the kitchen's mapping does not apply
    let mut h = satellite(&addr, "?satellite_id=hall", Some(TOKEN))
        .await
        .unwrap();
    transcript(
        &mut h,
        json!({"type": "transcript", "speaker_id": "voice-profile-1", "text": "我对什么过敏"}),
    )
    .await;
    assert_eq!(spoken_as(&fake), ("说话人 guest".to_string(), false));
    assert!(!gw.log().contains("kitchen-token-456"));
}

#[tokio::test]
async fn a_live_satellite_id_cannot_be_taken_with_the_shared_token() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    let addr = gw.addr("voice-ws").to_string();
    let mut real = satellite(&addr, "?satellite_id=hall", Some(TOKEN))
        .await
        .unwrap();
    assert_eq!(
        satellite(&addr, "?satellite_id=hall", Some(TOKEN))
            .await
            .err(),
        Some(409),
        "a second connection claimed a live satellite id"
    );
    // nor by naming it in a transcript
    let mut other = satellite(&addr, "", Some(TOKEN)).await.unwrap();
    let r = transcript(
        &mut other,
        json!({"type": "transcript", "satellite_id": "hall", "text": "你好"}),
    )
    .await;
    assert_eq!(r["type"], "error", "{r}");
    assert!(
        r["text"].as_str().unwrap().contains("already connected"),
        "{r}"
    );
    drop(other);
    // announcements still reach the real one
    let o = homebot(ws, None)
        .args(["announce", "--to", "hall", "开饭了"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        recv_json(&mut real).await,
        json!({"type": "announce", "text": "开饭了"})
    );
    assert_eq!(fake.calls(), 0, "a refused transcript reached the model");
}

#[tokio::test]
async fn a_satellite_token_binds_its_id_and_lets_it_reconnect() {
    let dir = workspace();
    let ws = dir.path();
    household(
        ws,
        "[[voice.satellites]]\nid = \"kitchen\"\ntoken = \"kitchen-token-456\"\n",
    );
    let fake = FakeLlm::scripted().await;
    let gw = gateway(ws, &fake).await;
    let addr = gw.addr("voice-ws").to_string();
    // the shared token may not be the kitchen; the kitchen's token may be nothing else
    assert_eq!(
        satellite(&addr, "?satellite_id=kitchen", Some(TOKEN))
            .await
            .err(),
        Some(403)
    );
    assert_eq!(
        satellite(&addr, "?satellite_id=bedroom", Some("kitchen-token-456"))
            .await
            .err(),
        Some(403)
    );
    let mut shared = satellite(&addr, "", Some(TOKEN)).await.unwrap();
    let r = transcript(
        &mut shared,
        json!({"type": "transcript", "satellite_id": "kitchen", "text": "你好"}),
    )
    .await;
    assert_eq!(r["type"], "error", "{r}");
    assert!(
        r["text"].as_str().unwrap().contains("needs its own token"),
        "{r}"
    );

    let mut old = satellite(&addr, "?satellite_id=kitchen", Some("kitchen-token-456"))
        .await
        .unwrap();
    // the same credential again: the kitchen reconnected; the old connection is closed
    let mut new = satellite(&addr, "?satellite_id=kitchen", Some("kitchen-token-456"))
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match old.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => continue,
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the replaced connection stayed open");
    // the server side of the new connection is up (it answers), so it holds the id
    new.send(Message::Text(json!({"type": "ping"}).to_string()))
        .await
        .unwrap();
    assert_eq!(recv_json(&mut new).await["type"], "pong");
    let o = homebot(ws, None)
        .args(["announce", "--to", "kitchen", "水开了"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        recv_json(&mut new).await,
        json!({"type": "announce", "text": "水开了"})
    );
    assert_eq!(fake.calls(), 0);
}

#[tokio::test]
async fn one_connection_speaks_for_a_handful_of_satellite_ids_at_most() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = satellite(gw.addr("voice-ws"), "", Some(TOKEN))
        .await
        .unwrap();
    for i in 0..4 {
        s.send(Message::Text(
            json!({"type": "transcript", "session_id": format!("s-{i}"), "satellite_id": format!("box-{i}"), "text": "在吗"})
                .to_string(),
        ))
        .await
        .unwrap();
        assert_eq!(recv_json(&mut s).await["type"], "reply");
    }
    s.send(Message::Text(
        json!({"type": "transcript", "session_id": "s-9", "satellite_id": "box-9", "text": "在吗"})
            .to_string(),
    ))
    .await
    .unwrap();
    let r = recv_json(&mut s).await;
    assert_eq!(r["type"], "error", "{r}");
    assert!(
        r["text"].as_str().unwrap().contains("4 satellite ids"),
        "{r}"
    );
}
