//! The CLI channel beside a running gateway: the gateway's terminal actor owns the control
//! connections, and a `homebot chat` listening through the control socket hears the
//! proactive messages for its own chat — an announcement, a reminder it set — and no other.

use crate::common;

use common::gateway::Gateway;
use common::*;
use homebot::channels::cli::control::{Listener, MAX_LISTENERS};
use serde_json::json;
use std::time::Duration;

async fn next(l: &mut Listener) -> String {
    tokio::time::timeout(Duration::from_secs(20), l.next())
        .await
        .expect("a message arrives")
        .expect("the stream reads")
        .expect("the stream is open")
}

#[tokio::test]
async fn a_chat_beside_the_gateway_hears_its_own_proactive_messages() {
    let ws = workspace();
    let fake = FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            return text("好的，一秒后提醒你。");
        }
        if user_words(&last).contains("提醒") {
            return tool_call("set_reminder", json!({"in_seconds": 1, "text": "关火"}));
        }
        scripted(body)
    })
    .await;
    let gw = Gateway::start(ws.path(), &fake, &[], &[]).await;
    let announce = |to: &str, text: &str| {
        let mut c = homebot(ws.path(), None);
        c.args(["announce", "--channel", "cli", "--to", to, text]);
        c
    };

    // nobody listens yet: refused, and the sender is told why
    let out = announce("local", "水开了").output().await.unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no `homebot chat` of that chat"), "{err}");

    let mut local = Listener::open(ws.path(), "local").await.unwrap();
    let mut study = Listener::open(ws.path(), "study").await.unwrap();
    // the owner's /status shows the channel's state (its own connection is the third)
    let out = homebot(ws.path(), None)
        .args(["chat", "-m", "/status"])
        .output()
        .await
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(
        status.contains("终端: 3 个控制连接，2 个终端在听主动消息"),
        "{status}"
    );
    let out = announce("local", "水开了").output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(next(&mut local).await, "水开了");

    // a reminder set from the terminal rings in the terminal
    let out = homebot(ws.path(), None)
        .args(["chat", "-m", "一秒后提醒我关火"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rang = next(&mut local).await;
    assert!(rang.contains("关火"), "{rang}");

    // the other chat's terminal heard neither: the first thing it hears is its own
    let out = announce("study", "作业写完了吗").output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(next(&mut study).await, "作业写完了吗");

    // a terminal that leaves stops being a target
    drop(local);
    eventually_async(
        "the closed listener was forgotten",
        Duration::from_secs(10),
        || async {
            let out = announce("local", "还在吗").output().await.unwrap();
            if out.status.success() {
                Err("the announcement still went out")
            } else {
                Ok(())
            }
        },
    )
    .await;
    drop(gw);
}

#[tokio::test]
async fn listeners_are_bounded_and_a_bad_chat_id_is_refused() {
    let ws = workspace();
    let fake = FakeLlm::start(|body, _| scripted(body)).await;
    let _gw = Gateway::start(ws.path(), &fake, &[], &[]).await;
    let bad = Listener::open(ws.path(), &"x".repeat(500)).await;
    let err = bad.err().expect("refused").to_string();
    assert!(err.contains("chat id"), "{err}");
    let mut kept = Vec::new();
    for _ in 0..MAX_LISTENERS {
        kept.push(Listener::open(ws.path(), "local").await.unwrap());
    }
    let err = Listener::open(ws.path(), "local")
        .await
        .err()
        .expect("one listener too many")
        .to_string();
    assert!(err.contains("terminals listen"), "{err}");
    // requests still get through beside the listeners
    let out = homebot(ws.path(), None)
        .args(["chat", "-m", "/status"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
