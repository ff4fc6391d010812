//! A spec said as it is written (Spec, seed 004): on a channel that streams — a native
//! satellite, Home Assistant's agent endpoint (HA's chat log) — the card's words go out
//! as partials while the model still writes the JSON, never the markup; the parsed card
//! ends the reply (`rest`: what the partials did not say); a spec that does not parse
//! says so at the end and what was said stays said; the terminal (its own kernel, and
//! beside a gateway through the control socket) prints the spec as it is written, then
//! the card's end; QQ, which does not stream, gets the card in one message. The fake
//! model streams real server-sent events and holds the rest of the spec behind a gate
//! the test opens only once it has seen the first part, so "before the model finished"
//! is an order, not a timing.

use crate::common;
use crate::ha_agent;

use common::onebot::text_of;
use common::qq::{self as qqh, MOM};
use common::satellite::{recv, transcript, Sock};
use common::sse::*;
use common::strategy::{journal, state};
use common::*;
use homebot::config::EnvOverrides;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "spec-stream-token";

fn is_spec_request(body: &Value) -> bool {
    last_user(body).contains("You are in spec mode")
}

fn is_retry(body: &Value) -> bool {
    last_user(body).contains("That spec was not valid")
}

/// The spec in the card's order, in three deltas; the last one only once gate 1 opens.
fn gated_spec() -> FakeReply {
    answer(vec![
        say("```json\n{\"goal\": \"一桌年夜饭\", "),
        say("\"requirements\": [\"荤素搭配\", \"两小"),
        Step::Gate(1),
        say("时内做完\"], \"constraints\": [\"没有烤箱\"], \"deliverables\": [\"买菜\", \"做四道菜\"]}\n```"),
    ])
}

const CARD_START: &str =
    "需求规格：一桌年夜饭\n需求：\n- 荤素搭配\n- 两小时内做完\n约束：\n- 没有烤箱";

/// A kernel on `ws` with the satellite WebSocket on loopback, streaming from `url`, in
/// Spec; its address.
async fn house(ws: &Path, url: &str) -> (Kernel, String) {
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[provider]\nstream = true\nmax_retries = 0\n\n[voice]\nws_listen = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n"
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
    let addr = started
        .bound
        .iter()
        .find(|(l, _)| *l == "voice-ws")
        .unwrap()
        .1
        .to_string();
    let r = kernel.command("/strategy spec").await;
    assert!(r.text.contains("当前策略: spec"), "{}", r.text);
    (kernel, addr)
}

async fn until_reply(s: &mut Sock) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let f = recv(s).await;
        let done = f["type"] == "reply";
        seen.push(f);
        if done {
            return seen;
        }
    }
}

fn texts(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "partial")
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect()
}

/// No markup is said: no brace, quote, fence or JSON key.
fn assert_no_markup(said: &[String]) {
    for t in said {
        for bad in ["{", "}", "\"", "`", "goal", "requirements", "deliverables"] {
            assert!(!t.contains(bad), "{bad:?} said in {t:?}");
        }
    }
}

#[tokio::test]
async fn a_spec_s_first_part_reaches_a_satellite_before_the_model_finishes() {
    let dir = workspace();
    let ws = dir.path();
    let (url, fake) = start_sse(|body, _| {
        if is_spec_request(body) {
            return gated_spec();
        }
        answer(vec![say("好的。")])
    })
    .await;
    let (kernel, addr) = house(ws, &url).await;
    let mut s = common::satellite::satellite(&addr, "kitchen", TOKEN).await;
    transcript(&mut s, "s-1", "年夜饭怎么安排").await;
    // the model is held at gate 1, in the middle of the requirements: what it wrote so
    // far arrives, line by line, in the card's words
    let mut before = Vec::new();
    for _ in 0..3 {
        let f = recv(&mut s).await;
        assert_eq!(f["type"], "partial", "{f}");
        before.push(f["text"].as_str().unwrap().to_string());
    }
    assert_eq!(before, ["需求规格：一桌年夜饭", "需求：", "· 荤素搭配"]);
    fake.open(1);
    let frames = until_reply(&mut s).await;
    let after = texts(&frames);
    assert_eq!(
        after,
        [
            "· 两小时内做完",
            "约束：",
            "· 没有烤箱",
            "交付物：",
            "· 买菜",
            "· 做四道菜"
        ]
    );
    assert_no_markup(&before);
    assert_no_markup(&after);
    // the parsed card is the reply; the satellite says only what the partials did not
    let reply = frames.last().unwrap();
    assert_eq!(reply["error"], false, "{reply}");
    assert_eq!(reply["dialogue_state"], "continue", "a spec waits for 确认");
    let text = reply["text"].as_str().unwrap();
    assert!(
        text.starts_with("需求规格：一桌年夜饭 需求： · 荤素搭配"),
        "{text}"
    );
    assert_eq!(
        reply["rest"],
        "将依次完成： 1. 买菜 2. 做四道菜 （回复“确认”开始执行，“取消”放弃，或者直接说要改哪里。）",
        "{reply}"
    );
    // the record and the pending spec are the parsed card's, as without streaming
    let rec = jsonl(&ws.join("chats/voice/s-1.jsonl"));
    let recorded = rec[0]["assistant"].as_str().unwrap();
    assert!(recorded.starts_with(CARD_START), "{recorded}");
    assert!(
        recorded.contains("将依次完成：\n1. 买菜\n2. 做四道菜"),
        "{recorded}"
    );
    assert_eq!(state(ws)["pending_work"]["goal"], "一桌年夜饭");
    let spec_req = fake.requests().into_iter().find(is_spec_request).unwrap();
    assert_eq!(spec_req["stream"], true);
    kernel.shutdown();
}

#[tokio::test]
async fn a_spec_that_does_not_parse_says_so_at_the_end_and_what_was_said_stays() {
    let dir = workspace();
    let ws = dir.path();
    // both attempts break off inside the requirements: never a whole JSON object
    let (url, fake) = start_sse(|body, _| {
        let broken = |gate: Option<usize>| {
            let mut v = vec![say(
                "{\"goal\": \"一桌年夜饭\", \"requirements\": [\"荤素搭配\", ",
            )];
            v.extend(gate.map(Step::Gate));
            v.push(say("\"两小时内做完"));
            answer(v)
        };
        if is_retry(body) {
            return broken(None);
        }
        if is_spec_request(body) {
            return broken(Some(1));
        }
        answer(vec![say("好的。")])
    })
    .await;
    let (kernel, addr) = house(ws, &url).await;
    let mut s = common::satellite::satellite(&addr, "kitchen", TOKEN).await;
    transcript(&mut s, "s-1", "年夜饭怎么安排").await;
    let first = recv(&mut s).await;
    assert_eq!(first["text"], "需求规格：一桌年夜饭", "{first}");
    fake.open(1);
    let frames = until_reply(&mut s).await;
    // the retry wrote the same lines: they are not said twice
    assert_eq!(texts(&frames), ["需求：", "· 荤素搭配"]);
    let reply = frames.last().unwrap();
    assert_eq!(reply["error"], true, "{reply}");
    let text = reply["text"].as_str().unwrap();
    assert!(
        text.starts_with("抱歉，刚才说的这份规格没能解析（the answer contains no JSON object）"),
        "{text}"
    );
    assert!(text.contains("没有保存，不能确认"), "{text}");
    // what was said is not taken back; the end is the whole plain statement
    assert_eq!(reply["rest"], text);
    assert!(state(ws)["pending_work"].is_null());
    // the model's text is kept in the journal, both attempts
    let invalid: Vec<Value> = journal(ws)
        .into_iter()
        .filter(|e| e["flow"] == "spec" && e["stage"] == "invalid")
        .collect();
    assert_eq!(invalid.len(), 2);
    assert!(invalid[0]["text"].as_str().unwrap().contains("荤素搭配"));
    kernel.shutdown();
}

#[tokio::test]
async fn home_assistant_s_agent_streams_a_spec_into_its_chat_log() {
    let (url, fake) = start_sse(|body, _| {
        if is_spec_request(body) {
            return gated_spec();
        }
        answer(vec![say("好的。")])
    })
    .await;
    let dir = workspace();
    let h = ha_agent::house(dir.path(), &url).await;
    let r = h.kernel.command("/strategy spec").await;
    assert!(r.text.contains("当前策略: spec"), "{}", r.text);
    let mut f = ha_agent::frames(
        &h.base,
        json!({"text": "年夜饭怎么安排", "conversation_id": "01jqhaspec0001",
               "device_id": "dev-kitchen-sat", "language": "zh-cn", "user_id": "ha-user-mom"}),
    )
    .await;
    let mut before = Vec::new();
    for _ in 0..3 {
        let p = f.next().await;
        assert_eq!(p["type"], "partial", "{p}");
        before.push(p["text"].as_str().unwrap().to_string());
    }
    assert_eq!(before, ["需求规格：一桌年夜饭", "需求：", "· 荤素搭配"]);
    fake.open(1);
    let frames = f.until_reply().await;
    assert_no_markup(&texts(&frames));
    let reply = frames.last().unwrap();
    assert_eq!(reply["error"], false, "{reply}");
    assert!(reply["text"]
        .as_str()
        .unwrap()
        .starts_with("需求规格：一桌年夜饭"));
    assert!(
        reply["rest"].as_str().unwrap().starts_with("将依次完成："),
        "the chat log gets the card's end after the streamed part: {reply}"
    );
    let spec_req = fake.requests().into_iter().find(is_spec_request).unwrap();
    assert_eq!(
        spec_req["stream"], true,
        "streamed although provider.stream is off"
    );
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn qq_which_does_not_stream_gets_the_card_in_one_message() {
    let dir = workspace();
    let ws = dir.path();
    let (_, fake) = start_sse(|body, _| {
        if is_spec_request(body) {
            return gated_spec();
        }
        answer(vec![say("好的。")])
    })
    .await;
    qqh::config(ws, "");
    let mut cfg = std::fs::read_to_string(ws.join("config.toml")).unwrap();
    cfg.push_str("\n[provider]\nstream = true\n");
    std::fs::write(ws.join("config.toml"), cfg).unwrap();
    let gw = qqh::start_gateway(ws, &fake).await;
    let mut s = qqh::sim(&gw).await;
    s.private_msg(MOM, 301, json!("/strategy spec")).await;
    let a = s.expect_send().await;
    assert!(text_of(&a).contains("当前策略: spec"), "{a}");

    s.private_msg(MOM, 302, json!("年夜饭怎么安排")).await;
    // the model is held mid-spec until the test has seen its request
    eventually("the spec requested", Duration::from_secs(30), || {
        fake.requests().iter().any(is_spec_request)
    })
    .await;
    fake.open(1);
    // the first message QQ gets is the whole card: nothing was sent while it streamed
    let a = s.expect_send().await;
    assert_eq!(a["action"], "send_private_msg");
    let card = text_of(&a);
    // (QQ shows markdown's bullets as its own, as for any reply)
    assert!(card.starts_with(&CARD_START.replace("- ", "· ")), "{card}");
    assert!(
        card.ends_with("（回复“确认”开始执行，“取消”放弃，或者直接说要改哪里。）"),
        "{card}"
    );
    // and nothing after it: the next message is the answer to the next words
    s.private_msg(MOM, 303, json!("/strategy")).await;
    let a = s.expect_send().await;
    assert!(text_of(&a).contains("当前策略: spec"), "{a}");
}

/// `homebot chat -m WORDS` on `ws` (its own kernel, or through the running gateway's
/// control socket): what it printed up to `until` while the model was held at gate 1,
/// then everything it printed.
async fn chat_streamed(ws: &Path, fake: &FakeLlm, words: &str, until: &str) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut c = homebot(ws, Some(fake));
    c.args(["chat", "-m", words])
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(until) {
        let n = tokio::time::timeout(Duration::from_secs(30), out.read(&mut buf))
            .await
            .expect("the terminal prints within 30 s")
            .unwrap();
        assert!(
            n > 0,
            "ended before {until:?}: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let before = String::from_utf8(seen.clone()).unwrap();
    fake.open(1);
    out.read_to_end(&mut seen).await.unwrap();
    assert!(child.wait().await.unwrap().success());
    (before, String::from_utf8(seen).unwrap())
}

fn streaming_spec_workspace(ws: &Path) {
    std::fs::write(
        ws.join("config.toml"),
        "[provider]\nstream = true\nmax_retries = 0\n",
    )
    .unwrap();
}

const CARD: &str = "需求规格：一桌年夜饭\n需求：\n- 荤素搭配\n- 两小时内做完\n约束：\n- 没有烤箱\n交付物：\n- 买菜\n- 做四道菜\n将依次完成：\n1. 买菜\n2. 做四道菜\n（回复“确认”开始执行，“取消”放弃，或者直接说要改哪里。）";

#[tokio::test]
async fn the_terminal_prints_a_spec_as_it_is_written_then_the_card_s_end() {
    let dir = workspace();
    let ws = dir.path();
    let (_, fake) = start_sse(|body, _| {
        if is_spec_request(body) {
            return gated_spec();
        }
        answer(vec![say("好的。")])
    })
    .await;
    streaming_spec_workspace(ws);
    // the terminal's own kernel (no gateway runs)
    let out = homebot(ws, Some(&fake))
        .args(["chat", "-m", "/strategy spec"])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("当前策略: spec"));
    let (before, all) = chat_streamed(ws, &fake, "年夜饭怎么安排", "- 荤素搭配\n").await;
    assert_eq!(before, "需求规格：一桌年夜饭\n需求：\n- 荤素搭配\n");
    // the card's end follows what was printed; nothing is printed twice
    assert_eq!(all, format!("{CARD}\n"));
}

#[tokio::test]
async fn a_terminal_beside_the_gateway_gets_the_spec_as_it_is_written() {
    let dir = workspace();
    let ws = dir.path();
    let (_, fake) = start_sse(|body, _| {
        if is_spec_request(body) {
            return gated_spec();
        }
        answer(vec![say("好的。")])
    })
    .await;
    streaming_spec_workspace(ws);
    let _gw = common::gateway::Gateway::start(ws, &fake, &[], &[]).await;
    let out = homebot(ws, None)
        .args(["chat", "-m", "/strategy spec"])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("当前策略: spec"));
    // through the control socket: the partial lines come before the reply line
    let (before, all) = chat_streamed(ws, &fake, "年夜饭怎么安排", "- 荤素搭配\n").await;
    assert_eq!(before, "需求规格：一桌年夜饭\n需求：\n- 荤素搭配\n");
    assert_eq!(all, format!("{CARD}\n"));
}
