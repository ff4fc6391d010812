//! Replies that start speaking early (`provider.stream = true`): a native satellite gets
//! `partial` frames sentence by sentence as the model streams, then the whole `reply`;
//! a new transcript or a `stop` cancels the turn; Wyoming keeps whole replies. Against
//! a fake model sending real server-sent events over HTTP on 127.0.0.1, each step only
//! when the test opens its gate, so "said before the model wrote more" is an order, not
//! a timing.

use crate::common;

use common::satellite::{recv, send, transcript, Sock};
use common::sse::*;
use common::wyoming::{Got, WyPeer};
use common::*;
use homebot::config::EnvOverrides;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "stream-token-1";

/// The user's words in the request's last message.
fn words(body: &Value) -> String {
    user_words(body["messages"].as_array().unwrap().last().unwrap())
}

fn last_is_tool(body: &Value) -> bool {
    body["messages"].as_array().unwrap().last().unwrap()["role"] == "tool"
}

struct House {
    kernel: Kernel,
    ws_addr: String,
    wyoming_addr: String,
}

/// A kernel on `ws` with the voice channel (satellite WebSocket and Wyoming) on
/// loopback, streaming from `url` with `retries`; `extra` is more of `config.toml`.
async fn house(ws: &Path, url: &str, retries: u32, extra: &str) -> House {
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[provider]\nstream = true\nmax_retries = {retries}\n\n[voice]\nws_listen = \"127.0.0.1:0\"\nwyoming_listen = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n{extra}"
        ),
    )
    .unwrap();
    let kernel = Kernel::start(
        ws,
        KernelOptions {
            env: Some(EnvOverrides {
                base_url: Some(url.to_string()),
                model: Some("fake-model".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap();
    let started = homebot::channels::start_enabled(&kernel).await.unwrap();
    let addr = |label: &str| {
        started
            .bound
            .iter()
            .find(|(l, _)| *l == label)
            .unwrap()
            .1
            .to_string()
    };
    House {
        ws_addr: addr("voice-ws"),
        wyoming_addr: addr("wyoming"),
        kernel,
    }
}

async fn satellite(addr: &str, id: &str) -> Sock {
    common::satellite::satellite(addr, id, TOKEN).await
}

/// Frames until the reply of `session`; every frame seen, in order.
async fn until_reply(s: &mut Sock, session: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let f = recv(s).await;
        let done = f["type"] == "reply" && f["session_id"] == session;
        seen.push(f);
        if done {
            return seen;
        }
    }
}

fn partials_of(frames: &[Value], session: &str) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "partial" && f["session_id"] == session)
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect()
}

/// The records of one voice session.
fn records(ws: &Path, session: &str) -> Vec<Value> {
    jsonl(&ws.join("chats/voice").join(format!("{session}.jsonl")))
}

#[tokio::test]
async fn a_satellite_hears_each_sentence_as_the_model_writes_it_then_the_whole_reply() {
    let dir = workspace();
    let ws = dir.path();
    let (url, fake) = start_sse(|body, _| {
        if words(body) != "怎么做番茄炒蛋" {
            return answer(vec![say("好的，"), say("两个人放两个番茄。")]);
        }
        answer(vec![
            say("先打三个鸡蛋。"),
            Step::Gate(1),
            say("再切两个番茄，"),
            say("切成小块。"),
            Step::Gate(2),
            say("蛋液打好了吗？[["),
            say("继续]]"),
        ])
    })
    .await;
    let h = house(ws, &url, 0, "").await;
    let mut s = satellite(&h.ws_addr, "kitchen").await;
    transcript(&mut s, "s-1", "怎么做番茄炒蛋").await;
    // the first sentence arrives while the model has not written the second
    assert_eq!(
        recv(&mut s).await,
        json!({"type": "partial", "session_id": "s-1", "text": "先打三个鸡蛋。"})
    );
    fake.open(1);
    assert_eq!(recv(&mut s).await["text"], "再切两个番茄，切成小块。");
    fake.open(2);
    let frames = until_reply(&mut s, "s-1").await;
    assert_eq!(partials_of(&frames, "s-1"), ["蛋液打好了吗？"]);
    let reply = frames.last().unwrap();
    assert_eq!(
        *reply,
        json!({"type": "reply", "session_id": "s-1",
            "text": "先打三个鸡蛋。再切两个番茄，切成小块。蛋液打好了吗？",
            "dialogue_state": "continue", "error": false, "rest": ""})
    );
    // the record is the model's answer, as without streaming
    let rec = records(ws, "s-1");
    assert_eq!(
        rec[0]["assistant"],
        "先打三个鸡蛋。再切两个番茄，切成小块。蛋液打好了吗？[[继续]]"
    );
    assert!(rec[0]["error"].is_null());

    // Wyoming keeps whole replies from the same streaming model
    let mut wy = WyPeer::connect(&h.wyoming_addr).await;
    wy.send(
        "transcript",
        json!({"text": "番茄放几个", "context": {"conversation_id": "conv-1"}}),
    )
    .await;
    let Got::Event(e) = wy.read(Duration::from_secs(30)).await else {
        panic!("no Wyoming answer");
    };
    assert_eq!(e["type"], "handled");
    assert_eq!(e["data"]["text"], "好的，两个人放两个番茄。");
    assert_eq!(fake.requests().len(), 2);
    h.kernel.shutdown();
}

#[tokio::test]
async fn a_tool_round_says_only_whole_sentences_before_its_call_and_the_answer_follows() {
    let dir = workspace();
    let ws = dir.path();
    let (url, fake) = start_sse(|body, _| {
        if last_is_tool(body) {
            return answer(vec![say("笔记里"), say("有两份菜谱。")]);
        }
        let mut v = vec![
            say("我查一下笔记。"),
            say("然后"),
            call("list_files", json!({"path": "notes"})),
            say("调用之后的话。"),
        ];
        v.extend(end("tool_calls"));
        FakeReply::Stream(v)
    })
    .await;
    let h = house(ws, &url, 0, "").await;
    let mut s = satellite(&h.ws_addr, "kitchen").await;
    transcript(&mut s, "s-1", "笔记里有什么菜谱").await;
    let frames = until_reply(&mut s, "s-1").await;
    // the whole sentence before the call was said (it fills the wait for the tool);
    // the unfinished one and the words after the call began were not
    assert_eq!(
        partials_of(&frames, "s-1"),
        ["我查一下笔记。", "笔记里有两份菜谱。"]
    );
    let reply = frames.last().unwrap();
    assert_eq!(reply["text"], "笔记里有两份菜谱。");
    assert_eq!(reply["rest"], "");
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(records(ws, "s-1")[0]["assistant"], "笔记里有两份菜谱。");
    h.kernel.shutdown();
}

#[tokio::test]
async fn a_reminder_held_for_the_satellite_is_said_first_as_a_partial_of_its_own() {
    let dir = workspace();
    let ws = dir.path();
    let (url, _fake) =
        start_sse(|_, _| answer(vec![say("先打三个鸡蛋。"), say("再切番茄。")])).await;
    let h = house(ws, &url, 0, "").await;
    // rung while the kitchen was not connected: it waits for the kitchen's next turn
    let k = h.kernel.clone();
    let said =
        tokio::spawn(async move { k.deliver("voice", "next-turn:kitchen", "提醒：关火").await });
    let mut s = satellite(&h.ws_addr, "kitchen").await;
    transcript(&mut s, "s-1", "怎么做").await;
    let frames = until_reply(&mut s, "s-1").await;
    assert_eq!(
        partials_of(&frames, "s-1"),
        ["提醒：关火", "先打三个鸡蛋。", "再切番茄。"]
    );
    let reply = frames.last().unwrap();
    assert_eq!(reply["text"], "提醒：关火 先打三个鸡蛋。再切番茄。");
    assert_eq!(reply["rest"], "");
    said.await
        .unwrap()
        .expect("the reminder counts as delivered once said");
    h.kernel.shutdown();
}

#[tokio::test]
async fn speaking_again_or_stop_cancels_the_streaming_turn_and_records_what_was_said() {
    let dir = workspace();
    let ws = dir.path();
    let (url, fake) = start_sse(|body, _| {
        if words(body) == "慢慢说" {
            // the rest of this answer never comes
            return answer(vec![say("第一句说完了。"), Step::Gate(usize::MAX)]);
        }
        answer(vec![say("好的，换个问题。")])
    })
    .await;
    let h = house(ws, &url, 0, "").await;
    let mut s = satellite(&h.ws_addr, "kitchen").await;

    // a new transcript while the reply streams
    transcript(&mut s, "s-1", "慢慢说").await;
    assert_eq!(recv(&mut s).await["text"], "第一句说完了。");
    transcript(&mut s, "s-2", "换个问题").await;
    let mut frames = until_reply(&mut s, "s-1").await;
    let old = frames.last().unwrap().clone();
    assert_eq!(old["cancelled"], true, "{old}");
    assert_eq!(old["error"], true);
    assert_eq!(old["rest"], "", "nothing more is said of a cancelled turn");
    if !frames
        .iter()
        .any(|f| f["type"] == "reply" && f["session_id"] == "s-2")
    {
        frames.extend(until_reply(&mut s, "s-2").await);
    }
    assert_eq!(partials_of(&frames, "s-2"), ["好的，换个问题。"]);
    let rec = records(ws, "s-1");
    assert_eq!(rec[0]["assistant"], "第一句说完了。（已取消这一轮。）");
    assert_eq!(rec[0]["error"], "cancelled by the user");
    assert!(records(ws, "s-2")[0]["error"].is_null());
    // the model's answer was dropped, not read to its end
    until(|| fake.hung_up() == 1).await;

    // a stop
    transcript(&mut s, "s-3", "慢慢说").await;
    assert_eq!(recv(&mut s).await["text"], "第一句说完了。");
    send(&mut s, json!({"type": "stop"})).await;
    let frames = until_reply(&mut s, "s-3").await;
    assert_eq!(frames.len(), 1, "no partial after the stop: {frames:?}");
    assert_eq!(frames[0]["cancelled"], true);
    let rec = records(ws, "s-3");
    assert_eq!(rec[0]["assistant"], "第一句说完了。（已取消这一轮。）");
    assert_eq!(rec[0]["error"], "cancelled by the user");
    until(|| fake.hung_up() == 2).await;

    // a stop for a satellite this connection does not speak for is refused
    send(&mut s, json!({"type": "stop", "satellite_id": "hall"})).await;
    let e = recv(&mut s).await;
    assert_eq!(e["type"], "error");
    assert!(e["text"].as_str().unwrap().contains("hall"), "{e}");
    h.kernel.shutdown();
}

#[tokio::test]
async fn partial_frames_stay_within_the_reply_cap() {
    let dir = workspace();
    let ws = dir.path();
    let (url, _fake) = start_sse(|_, _| {
        // ~280 characters in 40 short sentences
        answer(
            (0..40)
                .map(|i| say(&format!("第{i:02}句话说完。")))
                .collect(),
        )
    })
    .await;
    let h = house(ws, &url, 0, "\n[agent]\nmax_reply_chars = 100\n").await;
    let mut s = satellite(&h.ws_addr, "kitchen").await;
    transcript(&mut s, "s-1", "说很多").await;
    let frames = until_reply(&mut s, "s-1").await;
    let partials = partials_of(&frames, "s-1");
    let said: usize = partials.iter().map(|p| p.chars().count()).sum();
    assert!(
        !partials.is_empty() && partials.len() <= homebot::turn::Partials::max_count(100),
        "{partials:?}"
    );
    assert!(said <= 100, "{said} characters in partials");
    let reply = frames.last().unwrap();
    let text = reply["text"].as_str().unwrap();
    assert_eq!(text.chars().count(), 100);
    assert!(text.ends_with(homebot::agent::TRUNCATION_MARK), "{text}");
    // what the partials did not carry comes as `rest`: together they are the reply
    let rest = reply["rest"].as_str().unwrap();
    assert!(!rest.is_empty());
    assert_eq!(format!("{}{rest}", partials.concat()), text);
    h.kernel.shutdown();
}

#[tokio::test]
async fn a_retried_stream_says_nothing_twice_and_a_failed_one_is_said_whole() {
    let dir = workspace();
    let ws = dir.path();
    let (url, fake) = start_sse(|body, n| {
        // a stream cut before its finish reason: retried once, then an error
        let cut = FakeReply::Stream(vec![say("第一句。"), say("第二")]);
        match (words(body).as_str(), n) {
            ("重试", 0) => cut,
            ("重试", _) => answer(vec![say("第一句。"), say("第二句。")]),
            _ => cut,
        }
    })
    .await;
    let h = house(ws, &url, 1, "").await;
    let mut s = satellite(&h.ws_addr, "kitchen").await;
    transcript(&mut s, "s-1", "重试").await;
    let frames = until_reply(&mut s, "s-1").await;
    assert_eq!(fake.requests().len(), 2, "retried once");
    // the retry said the first sentence again: it is not sent twice
    assert_eq!(partials_of(&frames, "s-1"), ["第一句。", "第二句。"]);
    let reply = frames.last().unwrap();
    assert_eq!(reply["text"], "第一句。第二句。");
    assert_eq!(reply["rest"], "");

    // the retry is cut too: the reply is the error, said whole
    transcript(&mut s, "s-2", "断了").await;
    let frames = until_reply(&mut s, "s-2").await;
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(partials_of(&frames, "s-2"), ["第一句。"]);
    let reply = frames.last().unwrap();
    assert_eq!(reply["error"], true);
    assert!(reply["text"].as_str().unwrap().contains("断了"), "{reply}");
    assert_eq!(reply["rest"], reply["text"]);
    h.kernel.shutdown();
}
