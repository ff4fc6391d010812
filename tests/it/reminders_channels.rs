//! Reminders ring where they were asked for, through the real channels of a running
//! `homebot gateway`: the QQ group (with the asker @-ed), the native voice satellite, and
//! a Wyoming speaker on its next turn (Home Assistant cannot be spoken to unasked).

use crate::common;

use common::gateway::Gateway;
use common::onebot::{self, text_of, BOT};
use common::satellite::{recv, satellite, Sock};
use common::*;
use futures_util::SinkExt;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const QQ_TOKEN: &str = "qq-token-1";
const VOICE_TOKEN: &str = "voice-token-1";
const GROUP: u64 = 5_550_001;
const DAD: u64 = 10_002;

/// A model that sets a one-second timer when asked ("提醒"), relays tool results, and
/// otherwise echoes.
async fn timer_model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            return text("好的，到时候提醒你。");
        }
        if user_words(&last).contains("提醒") {
            return tool_call("set_reminder", json!({"in_seconds": 1, "text": "关火"}));
        }
        scripted(body)
    })
    .await
}

async fn gateway(ws: &Path, fake: &FakeLlm) -> Gateway {
    gateway_with(ws, fake, None).await
}

async fn gateway_with(ws: &Path, fake: &FakeLlm, failpoint: Option<&str>) -> Gateway {
    gateway_config(ws, fake, failpoint, "").await
}

async fn gateway_config(
    ws: &Path,
    fake: &FakeLlm,
    failpoint: Option<&str>,
    voice: &str,
) -> Gateway {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!("[qq]\nsend_interval_ms = 20\n\n[voice]\n{voice}\n"),
    )
    .unwrap();
    Gateway::start(
        ws,
        fake,
        &[
            ("HOMEBOT_FAILPOINT", failpoint.unwrap_or("")),
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", QQ_TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &GROUP.to_string()),
            ("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_WS_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_TOKEN", VOICE_TOKEN),
        ],
        &["qq", "wyoming", "voice-ws"],
    )
    .await
}

#[tokio::test]
async fn a_qq_reminder_rings_in_the_group_with_the_asker_mentioned() {
    let dir = workspace();
    let fake = timer_model().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = onebot::connect(gw.addr("qq"), Some(BOT), Some(QQ_TOKEN), "Universal")
        .await
        .unwrap();
    s.lifecycle().await;
    ask_for_a_timer(&mut s, 101).await;
    let reply = s.expect_send().await;
    assert_eq!(text_of(&reply).trim(), "好的，到时候提醒你。");
    let ring = s.expect_send().await;
    assert_eq!(ring["action"], "send_group_msg");
    assert_eq!(ring["params"]["group_id"], GROUP);
    let segs = ring["params"]["message"].as_array().unwrap();
    assert_eq!(
        segs[0],
        json!({"type": "at", "data": {"qq": DAD.to_string()}})
    );
    assert_eq!(text_of(&ring).trim(), "提醒：关火");
}

/// Dad asks the bot in the family group for a one-second timer.
async fn ask_for_a_timer(s: &mut onebot::OneBotSim, message_id: i64) {
    s.group_msg(
        GROUP,
        DAD,
        message_id,
        json!([{"type": "at", "data": {"qq": BOT.to_string()}},
               {"type": "text", "data": {"text": " 一秒后提醒我关火"}}]),
    )
    .await;
}

#[tokio::test]
async fn a_voice_reminder_rings_on_the_satellite_that_asked() {
    let dir = workspace();
    let fake = timer_model().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = kitchen(&gw).await;
    s.send(say("一秒后提醒我关火")).await.unwrap();
    assert_eq!(recv(&mut s).await["type"], "reply");
    assert_eq!(
        recv(&mut s).await,
        json!({"type": "announce", "text": "提醒：关火"})
    );
}

#[tokio::test]
async fn a_wyoming_speaker_hears_the_reminder_on_its_next_turn() {
    let dir = workspace();
    let fake = timer_model().await;
    let gw = gateway(dir.path(), &fake).await;
    let (h, p) = gw.addr("wyoming").rsplit_once(':').unwrap();
    let (h, p) = (h.to_string(), p.to_string());
    let r = run_peer(
        "wyoming_client.py",
        &[&h, &p, "transcript", "一秒后提醒我关火", "c-1"],
    )
    .await;
    assert_eq!(r["type"], "handled", "{r}");
    // it rang while nobody could be spoken to: held for the next Wyoming turn
    gw.wait_log("the message waits for its next turn", 30).await;
    let r = run_peer("wyoming_client.py", &[&h, &p, "transcript", "在吗", "c-2"]).await;
    assert_eq!(r["type"], "handled", "{r}");
    assert_eq!(r["text"], "提醒：关火 好的：在吗", "{r}");
    let r = run_peer(
        "wyoming_client.py",
        &[&h, &p, "transcript", "还在吗", "c-3"],
    )
    .await;
    assert_eq!(r["text"], "好的：还在吗", "said once: {r}");
}

#[tokio::test]
async fn a_satellite_gone_when_it_rings_hears_it_on_its_next_turn() {
    let dir = workspace();
    let fake = timer_model().await;
    let gw = gateway(dir.path(), &fake).await;
    let mut s = kitchen(&gw).await;
    s.send(say("一秒后提醒我关火")).await.unwrap();
    assert_eq!(recv(&mut s).await["type"], "reply");
    drop(s); // the satellite goes away before it rings
    gw.wait_log("the message waits for its next turn", 30).await;
    let mut s = kitchen(&gw).await;
    s.send(say("在吗")).await.unwrap();
    let r = recv(&mut s).await;
    assert_eq!(r["text"], "提醒：关火 好的：在吗", "{r}");
}

async fn kitchen(gw: &Gateway) -> Sock {
    satellite(gw.addr("voice-ws"), "kitchen", VOICE_TOKEN).await
}

fn say(text: &str) -> Message {
    Message::Text(
        json!({"type": "transcript", "session_id": "w-3", "satellite_id": "kitchen", "text": text})
            .to_string(),
    )
}

#[tokio::test]
async fn killed_between_ringing_and_marking_it_rings_again_never_zero_times() {
    let dir = workspace();
    let ws = dir.path();
    let fake = timer_model().await;
    let mut gw = gateway_with(ws, &fake, Some("reminder.before_marked")).await;
    let mut s = kitchen(&gw).await;
    s.send(say("一秒后提醒我关火")).await.unwrap();
    assert_eq!(recv(&mut s).await["type"], "reply");
    assert_eq!(recv(&mut s).await["text"], "提醒：关火", "it rang");
    gw.wait_log("failpoint reminder.before_marked reached", 30)
        .await;
    gw.child.start_kill().unwrap(); // SIGKILL: delivered, never marked fired
    gw.child.wait().await.unwrap();
    drop(s);
    let saved = std::fs::read_to_string(ws.join("reminders.json")).unwrap();
    assert!(saved.contains("\"state\": \"pending\""), "{saved}");

    // at-least-once: the next start rings it again (here: on the satellite's next turn,
    // since it rang at start-up before the satellite was back), and only once more
    let gw = gateway(ws, &fake).await;
    // rung at start-up, before the satellite is back: held for its next turn
    gw.wait_log("the message waits for its next turn", 30).await;
    let mut s = kitchen(&gw).await;
    s.send(say("在吗")).await.unwrap();
    let r = recv(&mut s).await;
    let text = r["text"].as_str().unwrap();
    assert!(text.starts_with("提醒：关火"), "{r}");
    assert!(text.ends_with("好的：在吗"), "{r}");
    s.send(say("还在吗")).await.unwrap();
    assert_eq!(recv(&mut s).await["text"], "好的：还在吗", "twice at most");
    // said, so now marked fired
    let mut listed = String::new();
    for _ in 0..100 {
        let out = homebot(ws, None)
            .args(["reminders", "--all"])
            .output()
            .await
            .unwrap();
        listed = String::from_utf8_lossy(&out.stdout).into_owned();
        if listed.contains("已响") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(listed.contains("已响"), "{listed}");
}

#[tokio::test]
async fn a_qq_implementation_that_reconnects_within_the_window_gets_the_reminder() {
    let dir = workspace();
    let fake = timer_model().await;
    let gw = gateway(dir.path(), &fake).await;
    let connect = || onebot::connect(gw.addr("qq"), Some(BOT), Some(QQ_TOKEN), "Universal");
    let mut s = connect().await.unwrap();
    s.lifecycle().await;
    ask_for_a_timer(&mut s, 201).await;
    assert_eq!(
        text_of(&s.expect_send().await).trim(),
        "好的，到时候提醒你。"
    );
    drop(s); // NapCat restarts
    gw.wait_log("reminder due", 30).await;
    // the account is free again once the server noticed the old connection is gone
    let mut s = eventually_async("reconnected", Duration::from_secs(10), || async {
        connect().await.map_err(|e| e.to_string())
    })
    .await;
    s.lifecycle().await;
    let ring = s.expect_send().await;
    assert_eq!(text_of(&ring).trim(), "提醒：关火");
    assert_eq!(ring["params"]["group_id"], GROUP);
}

#[tokio::test]
async fn a_voice_reminder_nobody_hears_goes_to_the_fallback_chat() {
    let dir = workspace();
    let fake = timer_model().await;
    let gw = gateway_config(
        dir.path(),
        &fake,
        None,
        &format!(
            "fallback = {{ channel = \"qq\", target = \"group:{GROUP}\" }}\nfallback_after_secs = 1"
        ),
    )
    .await;
    let mut qq = onebot::connect(gw.addr("qq"), Some(BOT), Some(QQ_TOKEN), "Universal")
        .await
        .unwrap();
    qq.lifecycle().await;
    let (h, p) = gw.addr("wyoming").rsplit_once(':').unwrap();
    let (h, p) = (h.to_string(), p.to_string());
    let r = run_peer(
        "wyoming_client.py",
        &[&h, &p, "transcript", "一秒后提醒我关火", "c-9"],
    )
    .await;
    assert_eq!(r["type"], "handled", "{r}");
    // held for the next Wyoming turn, which does not come: the family group hears it
    let ring = qq.expect_send().await;
    assert_eq!(ring["params"]["group_id"], GROUP);
    assert_eq!(text_of(&ring).trim(), "提醒：关火");
    gw.wait_log("went to the fallback chat", 30).await;
    // and it is not said again on a later Wyoming turn
    let r = run_peer("wyoming_client.py", &[&h, &p, "transcript", "在吗", "c-10"]).await;
    assert_eq!(r["text"], "好的：在吗", "{r}");
}

#[tokio::test]
async fn a_reminder_set_in_the_terminal_is_printed_there() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = workspace();
    let fake = timer_model().await;
    let mut child = homebot(dir.path(), Some(&fake))
        .args(["chat", "--speaker", "mom"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin
        .write_all("一秒后提醒我关火\n".as_bytes())
        .await
        .unwrap();
    let rang = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(l) = out.next_line().await.unwrap() {
            if l.contains("主动消息") && l.contains("提醒：关火") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the reminder was printed in the terminal");
    assert!(rang);
    stdin.write_all("/quit\n".as_bytes()).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}
