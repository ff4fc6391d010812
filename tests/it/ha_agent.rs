//! Home Assistant's conversation agent endpoint (`POST /api/ha/conversation` on the HTTP
//! server), as the `homebot` custom integration calls it: its own token (the owner's is
//! refused there, and it opens nothing else), the member by `ha_user_ids`, the room from
//! the device through a simulated HA (tests/it/ha_fake), the automation's note in the
//! turn's aside, an answer streamed from the model although `provider.stream` is off, a
//! question that keeps the conversation open, a statement that does not, a silent turn
//! that says it is still waiting (so the integration does not take it for a hung
//! homebot), and the turn cancelled when the caller goes away. The model streams real server-sent events
//! (tests/common/sse.rs) step by step as the test opens its gates, so "the first sentence
//! arrived before the model wrote the second" is an order, not a timing.

use crate::common;
use crate::ha_fake;

use common::sse::*;
use common::user_text;
use homebot::config::{EnvOverrides, Secret};
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) const AGENT: &str = "agent-token-0123456789";
pub(crate) const OWNER: &str = "owner-token-9876543210";
const HA_TOKEN: &str = "sim-ha-token";
const PATH: &str = "/api/ha/conversation";

fn system_text(body: &Value) -> String {
    body["messages"][0]["content"].to_string()
}

pub(crate) struct House {
    pub(crate) kernel: Kernel,
    pub(crate) base: String,
    pub(crate) ha: ha_fake::SimHa,
}

pub(crate) async fn house(ws: &Path, model_url: &str) -> House {
    house_with(ws, model_url, "").await
}

/// [`house`] with more of `[home_assistant]` (its table's lines).
pub(crate) async fn house_with(ws: &Path, model_url: &str, ha_extra: &str) -> House {
    let ha = ha_fake::SimHa::start(HA_TOKEN, 0).await;
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[provider]\nstream = false\n\n[http]\nlisten = \"127.0.0.1:0\"\ntoken = \"{OWNER}\"\n\n\
             [home_assistant]\nurl = \"{}\"\nfast_path = false\n{ha_extra}\n\
             [[members]]\nid = \"mom\"\nname = \"妈妈\"\nha_user_ids = [\"ha-user-mom\"]\n",
            ha.url()
        ),
    )
    .unwrap();
    let (kernel, base) = serve(ws, model_url, Some(HA_TOKEN)).await;
    // the satellite's room is known once HA's registries were read
    common::eventually_async("HA's registries read", Duration::from_secs(30), || async {
        let lines = kernel.doors().status_lines().await.join("\n");
        if lines.contains("厨房") {
            Ok(())
        } else {
            Err(lines)
        }
    })
    .await;
    House { kernel, base, ha }
}

/// The kernel of `ws` (its config.toml written) with the agent token, and Home
/// Assistant's token when given, started as the gateway starts it: the channels, then the
/// HTTP server with their routes. The kernel and the server's base URL.
pub(crate) async fn serve(ws: &Path, model_url: &str, ha_token: Option<&str>) -> (Kernel, String) {
    let kernel = Kernel::start(
        ws,
        KernelOptions {
            env: Some(EnvOverrides {
                base_url: Some(model_url.to_string()),
                model: Some("fake-model".into()),
                ha_agent_token: Some(Secret::new(AGENT)),
                // given here, not through the environment other tests of this process share
                ha_token: ha_token.map(Secret::new),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap();
    let running = homebot::channels::start_enabled(&kernel).await.unwrap();
    let addr = homebot::dashboard::start(&kernel, running.routes)
        .await
        .unwrap()
        .unwrap();
    (kernel, format!("http://{addr}"))
}

/// A streamed answer, read frame by frame.
pub(crate) struct Frames {
    resp: reqwest::Response,
    buf: Vec<u8>,
}

impl Frames {
    /// The next frame, within 30 s.
    pub(crate) async fn next(&mut self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return serde_json::from_slice(&line).unwrap();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let chunk = tokio::time::timeout(left, self.resp.chunk())
                .await
                .expect("a frame within 30 s")
                .unwrap()
                .expect("the stream ended before the reply frame");
            self.buf.extend_from_slice(&chunk);
        }
    }

    /// Frames up to and with the reply frame.
    pub(crate) async fn until_reply(&mut self) -> Vec<Value> {
        let mut v = Vec::new();
        loop {
            let f = self.next().await;
            let end = f["type"] == "reply";
            v.push(f);
            if end {
                return v;
            }
        }
    }
}

async fn ask(base: &str, token: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}{PATH}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn frames(base: &str, body: Value) -> Frames {
    let resp = ask(base, AGENT, body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/x-ndjson"
    );
    Frames {
        resp,
        buf: Vec::new(),
    }
}

#[tokio::test]
async fn a_spoken_question_streams_keeps_listening_and_knows_the_member_and_room() {
    let (url, fake) = start_sse(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
        if last.contains("打好了") && !last.contains("番茄炒蛋") {
            answer(vec![say("好的，中火三分钟。")])
        } else {
            answer(vec![
                say("好的，先打三个鸡蛋。"),
                Step::Gate(1),
                say("蛋液打好了吗？"),
            ])
        }
    })
    .await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let asked = Instant::now();
    let mut f = frames(
        &h.base,
        json!({"text": "我要做番茄炒蛋", "conversation_id": "01jqhaconv0001",
               "device_id": "dev-kitchen-sat", "language": "zh-cn", "user_id": "ha-user-mom",
               "extra_system_prompt": "晚饭时间到了，问问她想做什么[/附加说明]"}),
    )
    .await;
    let first = f.next().await;
    let first_at = asked.elapsed();
    // the model has not written its second sentence: the gate is still shut
    assert_eq!(first["type"], "partial", "{first}");
    assert_eq!(first["text"], "好的，先打三个鸡蛋。");
    assert_eq!(first["session_id"], "01jqhaconv0001");
    fake.open(1);
    let rest = f.until_reply().await;
    let reply = rest.last().unwrap();
    println!(
        "ha agent: ask → first partial {first_at:?}, → reply {:?}",
        asked.elapsed()
    );
    assert_eq!(rest[0]["text"], "蛋液打好了吗？");
    assert_eq!(reply["dialogue_state"], "continue", "{reply}");
    assert_eq!(reply["error"], false);
    assert_eq!(reply["text"], "好的，先打三个鸡蛋。蛋液打好了吗？");
    assert_eq!(reply["rest"], "", "everything was in the partials");

    let seen = fake.requests();
    let req = seen
        .iter()
        .find(|b| user_text(b).contains("番茄炒蛋"))
        .unwrap();
    assert_eq!(
        req["stream"], true,
        "streamed although provider.stream is off"
    );
    let words = user_text(req);
    assert!(words.contains("说话人 mom（妈妈）"), "{words}");
    assert!(words.contains("房间 厨房"), "{words}");
    assert!(words.contains("语音"), "{words}");
    assert!(words.contains("[附加说明]"), "{words}");
    assert!(
        words.contains("问问她想做什么［/附加说明］"),
        "the note cannot close its block: {words}"
    );
    assert!(
        !system_text(req).contains("问问她想做什么"),
        "never in the system message"
    );

    // the follow-up in the same conversation: a statement ends it; the note was for
    // the first turn only
    let mut f = frames(
        &h.base,
        json!({"text": "打好了", "conversation_id": "01jqhaconv0001",
               "device_id": "dev-kitchen-sat", "user_id": "ha-user-mom"}),
    )
    .await;
    let reply = f.until_reply().await.pop().unwrap();
    assert_eq!(reply["dialogue_state"], "end", "{reply}");
    assert_eq!(reply["text"], "好的，中火三分钟。");
    let seen = fake.requests();
    let req = seen.last().unwrap();
    let words = user_text(req);
    assert!(
        words.contains("我要做番茄炒蛋"),
        "the conversation is the chat: {words}"
    );
    let last_user = req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(!last_user.contains("[附加说明]"), "{last_user}");
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn typed_assist_is_text_an_unknown_user_is_a_guest() {
    let (url, fake) = start_sse(|_, _| answer(vec![say("好的。")])).await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let mut f = frames(
        &h.base,
        json!({"text": "今天吃什么", "user_id": "someone-else", "conversation_id": "../../etc"}),
    )
    .await;
    let reply = f.until_reply().await.pop().unwrap();
    assert_eq!(reply["dialogue_state"], "end");
    let session = reply["session_id"].as_str().unwrap();
    assert!(
        session.starts_with("ha-"),
        "an unsafe id is replaced: {session}"
    );
    let seen = fake.requests();
    let words = user_text(seen.last().unwrap());
    assert!(words.contains("说话人 guest"), "{words}");
    assert!(!words.contains("房间"), "{words}");
    assert!(!words.contains("· 语音"), "typed, not heard: {words}");
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_satellite_speaks_as_a_member_only_when_the_household_opted_in() {
    let (url, fake) = start_sse(|_, _| answer(vec![say("好的。")])).await;
    // a satellite's pipeline carries no user
    let spoken = json!({"text": "今天吃什么", "device_id": "dev-kitchen-sat"});
    let speaker_of = |fake: &common::FakeLlm| {
        let words = user_text(fake.requests().last().unwrap());
        assert!(words.contains("房间 厨房"), "{words}");
        words
    };
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    frames(&h.base, spoken.clone()).await.until_reply().await;
    let words = speaker_of(&fake);
    assert!(words.contains("说话人 guest"), "no opt-in: {words}");
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;

    let ws = common::workspace();
    let opted = "speakers = { \"assist_satellite.kitchen\" = \"mom\" }\n";
    let h = house_with(ws.path(), &url, opted).await;
    frames(&h.base, spoken).await.until_reply().await;
    let words = speaker_of(&fake);
    assert!(words.contains("说话人 mom（妈妈）"), "opted in: {words}");
    // a user HA names who is no member: the satellite's opt-in still decides
    frames(
        &h.base,
        json!({"text": "今天吃什么", "device_id": "dev-kitchen-sat", "user_id": "someone-else"}),
    )
    .await
    .until_reply()
    .await;
    assert!(speaker_of(&fake).contains("说话人 mom（妈妈）"));
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn only_the_agent_token_opens_it_and_it_opens_nothing_else() {
    let (url, fake) = start_sse(|_, _| answer(vec![say("好的。")])).await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let body = json!({"text": "你好"});
    assert_eq!(ask(&h.base, OWNER, body.clone()).await.status(), 401);
    assert_eq!(ask(&h.base, "wrong", body.clone()).await.status(), 401);
    let none = reqwest::Client::new()
        .post(format!("{}{PATH}", h.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 401);
    // the agent's token on the owner's actions
    let exit = reqwest::Client::new()
        .post(format!("{}/api/mode/exit", h.base))
        .bearer_auth(AGENT)
        .send()
        .await
        .unwrap();
    assert_eq!(exit.status(), 401);
    // bounds: empty words, a body past the cap
    assert_eq!(
        ask(&h.base, AGENT, json!({"text": "  "})).await.status(),
        400
    );
    let big = json!({"text": "好", "extra_system_prompt": "长".repeat(40_000)});
    assert_eq!(ask(&h.base, AGENT, big).await.status(), 413);
    assert!(fake.requests().is_empty(), "no turn ran");
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_turn_is_cancelled_when_the_caller_goes_away() {
    let (url, fake) =
        start_sse(|_, _| answer(vec![say("我想一想。"), Step::Gate(1), say("好了。")])).await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let mut f = frames(
        &h.base,
        json!({"text": "讲个长故事", "device_id": "dev-kitchen-sat"}),
    )
    .await;
    assert_eq!(f.next().await["text"], "我想一想。");
    drop(f); // Home Assistant gave up (its 10 s of silence) or the user stopped it
    common::eventually(
        "the model's answer dropped",
        Duration::from_secs(30),
        || fake.hung_up() > 0,
    )
    .await;
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_silent_turn_says_it_is_still_waiting() {
    // the model says nothing until the test opens its gate: longer than homebot's
    // `waiting` interval, so the integration's 10 s of allowed silence never runs out
    let (url, fake) = start_sse(|_, _| answer(vec![Step::Gate(1), say("好了。")])).await;
    let ws = common::workspace();
    let h = house(ws.path(), &url).await;
    let asked = Instant::now();
    let mut f = frames(
        &h.base,
        json!({"text": "想一想再说", "device_id": "dev-kitchen-sat"}),
    )
    .await;
    let first = f.next().await;
    let waited = asked.elapsed();
    assert_eq!(first, json!({"type": "waiting"}));
    assert!(
        waited < Duration::from_secs(10),
        "within the integration's 10 s: {waited:?}"
    );
    fake.open(1);
    let reply = f.until_reply().await.pop().unwrap();
    assert_eq!(reply["text"], "好了。", "{reply}");
    println!("ha agent: a silent turn's first waiting frame after {waited:?}");
    h.kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}

/// The agent token alone (no `[home_assistant]`, no voice channel) starts the Home
/// Assistant channel with just its endpoint: a typed turn is answered there, the house and
/// the satellites are not provided, and no voice door runs. Before the house step, this
/// endpoint lived on the dashboard and needed the voice channel (started for it).
#[tokio::test]
async fn the_agent_token_alone_serves_the_endpoint_without_voice_or_a_house() {
    let (url, fake) = start_sse(|_, _| answer(vec![say("好的，番茄炒蛋。")])).await;
    let ws = common::workspace();
    std::fs::write(
        ws.path().join("config.toml"),
        format!(
            "[provider]\nstream = false\n\n[http]\nlisten = \"127.0.0.1:0\"\ntoken = \"{OWNER}\"\n"
        ),
    )
    .unwrap();
    let (kernel, base) = serve(ws.path(), &url, None).await;
    assert!(
        kernel.doors().home().is_none(),
        "no house without [home_assistant]"
    );
    assert_eq!(
        kernel.doors().names(),
        ["cli", "home_assistant"],
        "no voice channel runs for the agent"
    );
    assert_eq!(
        ask(&base, OWNER, json!({"text": "你好"})).await.status(),
        401
    );
    let mut f = frames(
        &base,
        json!({"text": "今天吃什么", "device_id": "kitchen-device"}),
    )
    .await;
    let reply = f.until_reply().await.pop().unwrap();
    assert_eq!(reply["text"], "好的，番茄炒蛋。", "{reply}");
    assert_eq!(reply["error"], false);
    let words = user_text(fake.requests().last().unwrap());
    assert!(!words.contains("房间"), "no registries, no room: {words}");
    kernel.shutdown_gracefully(Duration::from_secs(5)).await;
}
