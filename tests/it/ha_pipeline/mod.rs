//! homebot's integration (`custom_components/homebot`) as the conversation agent of a real
//! Home Assistant 2025.4.4 pipeline, driven through HA's own APIs (one HA for all of it):
//!
//! 1. `assist_pipeline/run` from the intent stage, by the token's HA user, with the device
//!    of the Wyoming satellite stand-in in 厨房: homebot's model sees the mapped member and
//!    the room; the streamed reply arrives as `intent-progress` deltas, the first one while
//!    the model has not written its second sentence, all before `intent-end`; the question
//!    keeps the conversation open, the statement that follows does not.
//! 2. The ESPHome satellite stand-in (tests/peers/ha/fake_voice_pe.py) in 餐厅 wakes; HA's
//!    `VOICE_ASSISTANT_INTENT_END` carries `continue_conversation` "1" after homebot's
//!    question, and the satellite listens again by itself: no `start_conversation` call,
//!    and the answer reaches homebot in the same conversation; a later wake on it is
//!    still that conversation in HA 2025.4.4 ([`esphome`]).
//! 3. "打开做饭模式" enters the mode, and a later wake (a new conversation) continues it.
//! 4. homebot hung mid-turn (SIGSTOP), then gone (SIGKILL): HA answers with the
//!    integration's spoken error within 15 s either time, and the hung turn is cancelled
//!    once homebot runs again.
//!
//! It prints the pipeline's timings (run → first delta, → intent-end).

mod esphome;

use crate::common;
use crate::real_ha;

use common::gateway::Gateway;
use common::sse::*;
use common::*;
use real_ha::{HaEvents, HaWs, RealHa, TOKEN, USER_ID};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const AGENT: &str = "agent-token-for-the-pipeline-7";
const ERROR_SPEECH: &str = "抱歉，homebot 暂时没有回应。";

/// The words of the last user message of a model request.
fn words_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(user_words)
        .unwrap_or_default()
}

async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap();
        if last["role"] == "tool" {
            return answer(vec![say("好，做饭模式开始了。")]);
        }
        let words = words_of(body);
        if words.contains("做饭模式") {
            let mut steps = vec![call(
                "switch_mode",
                json!({"action": "enter", "mode_id": "cooking"}),
            )];
            steps.extend(end("tool_calls"));
            return FakeReply::Stream(steps);
        }
        let steps = match words.as_str() {
            // the kitchen's question: the model writes its second sentence only once the
            // test has seen the first one arrive in HA (gate 1)
            "三个人要几个鸡蛋" => vec![
                say("好，先打三个鸡蛋。"),
                Step::Gate(1),
                say("蛋液打好了吗？"),
            ],
            "蛋液好了" => vec![say("好，热锅下油，先炒鸡蛋。")],
            "我要做番茄炒鸡蛋" => vec![say("好，番茄切块。"), say("番茄切好了吗？")],
            "切好了" => vec![say("好，先炒鸡蛋。")],
            // the turn homebot hangs in: the rest never comes (gate 2 stays shut)
            "讲个长故事" => vec![say("我想一想。"), Step::Gate(2), say("好了。")],
            w => vec![say(&format!("好的：{w}"))],
        };
        answer(steps)
    })
    .await
}

/// One `assist_pipeline/run` from the intent stage, as HA reported it.
struct Run {
    /// Each content delta, and when it came after the run was sent.
    deltas: Vec<(String, Duration)>,
    /// `intent-end`'s `intent_output`, and when it came.
    output: Value,
    end_at: Duration,
    /// Every event's type, in order.
    kinds: Vec<String>,
}

impl Run {
    fn speech(&self) -> &str {
        self.output["response"]["speech"]["plain"]["speech"]
            .as_str()
            .unwrap_or_default()
    }

    fn first_delta(&self) -> Duration {
        self.deltas.first().expect("a content delta").1
    }

    fn conversation_id(&self) -> String {
        self.output["conversation_id"].as_str().unwrap().to_string()
    }
}

/// Say `text` to the pipeline (by the token's user, from `device`, in `conversation`, if
/// given); `on_delta` runs at each content delta as it comes.
async fn run(
    ws: &mut HaEvents,
    pipeline: &str,
    text: &str,
    device: &str,
    conversation: Option<&str>,
    mut on_delta: impl FnMut(&str),
) -> Run {
    let sent = Instant::now();
    let id = ws
        .subscribe(
            json!({"type": "assist_pipeline/run", "start_stage": "intent",
            "end_stage": "intent", "input": {"text": text}, "pipeline": pipeline,
            "device_id": device, "conversation_id": conversation}),
        )
        .await
        .unwrap_or_else(|e| panic!("assist_pipeline/run refused: {e}"));
    let (mut deltas, mut kinds, mut output, mut end_at) = (vec![], vec![], Value::Null, None);
    loop {
        let ev = ws.event(id, 30).await;
        let kind = ev["type"].as_str().unwrap_or_default().to_string();
        kinds.push(kind.clone());
        match kind.as_str() {
            "intent-progress" => {
                if let Some(c) = ev["data"]["chat_log_delta"]["content"].as_str() {
                    on_delta(c);
                    deltas.push((c.to_string(), sent.elapsed()));
                }
            }
            "intent-end" => {
                end_at = Some(sent.elapsed());
                output = ev["data"]["intent_output"].clone();
            }
            "error" => panic!("the pipeline failed on {text:?}: {ev}"),
            "run-end" => break,
            _ => {}
        }
    }
    Run {
        deltas,
        output,
        end_at: end_at.unwrap_or_else(|| panic!("no intent-end for {text:?}: {kinds:?}")),
        kinds,
    }
}

/// The first model request of the turn whose words are `words`.
fn request_for(fake: &FakeLlm, words: &str) -> Value {
    fake.requests()
        .into_iter()
        .find(|r| words_of(r) == words)
        .unwrap_or_else(|| panic!("homebot never asked the model about {words:?}"))
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a child this test started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_integration_in_real_pipelines() {
    let python = real_ha::ha_python();
    let ha = RealHa::start(&python).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[home_assistant]\nurl = \"{}\"\n\n[[members]]\nid = \"mom\"\nname = \"妈妈\"\nha_user_ids = [\"{USER_ID}\"]\n",
            ha.url()
        ),
    )
    .unwrap();
    let mut gw = Gateway::start(
        &ws,
        &fake,
        &[
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_HA_AGENT_TOKEN", AGENT),
            ("HOMEBOT_HA_TOKEN", TOKEN),
        ],
        &[],
    )
    .await;
    let base = format!("http://{}", gw.dashboard_addr().await);
    gw.wait_log("Home Assistant registries read", 60).await;

    // the integration, through HA's config flow; a pipeline whose agent is its entity
    let flow = ha
        .post(
            "/api/config/config_entries/flow",
            json!({"handler": "homebot"}),
        )
        .await;
    let flow = flow["flow_id"].as_str().unwrap();
    let done = ha
        .post(
            &format!("/api/config/config_entries/flow/{flow}"),
            json!({"url": base, "token": AGENT}),
        )
        .await;
    assert_eq!(done["type"], "create_entry", "{done}");
    let mut hws = HaWs::connect(ha.port).await;
    let entry = done["result"]["entry_id"].as_str().unwrap();
    let agent = hws.entity_of(entry, "conversation.").await["entity_id"]
        .as_str()
        .unwrap()
        .to_string();
    let entities = hws
        .call(json!({"type": "config/entity_registry/list"}))
        .await
        .unwrap();
    let kitchen = entities
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["entity_id"] == ha.satellite_entity.as_str())
        .unwrap()["device_id"]
        .as_str()
        .unwrap()
        .to_string();
    let pipeline = esphome::homebot_pipeline(&ha, &python, &mut hws, &agent).await;
    let pid = pipeline.id.clone();
    let mut runs = HaEvents::new(HaWs::connect(ha.port).await);

    // 1. a question in 厨房: streamed, open; then a statement: closed
    let mut first_seen = false;
    let q = run(
        &mut runs,
        &pid,
        "三个人要几个鸡蛋",
        &kitchen,
        None,
        |_| {
            if !first_seen {
                first_seen = true;
                // the model writes on only now: this delta came while it was still writing
                fake.open(1);
            }
        },
    )
    .await;
    println!(
        "pipeline (question, the model's second sentence waits for the first delta): \
         run → first delta {:?}, → intent-end {:?}",
        q.first_delta(),
        q.end_at
    );
    let said: Vec<&str> = q.deltas.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(said[0], "好，先打三个鸡蛋。", "{:?}", q.deltas);
    assert!(said.len() >= 2, "the reply came in deltas: {said:?}");
    let first = q.kinds.iter().position(|k| k == "intent-progress").unwrap();
    let end = q.kinds.iter().position(|k| k == "intent-end").unwrap();
    assert!(first < end, "deltas before intent-end: {:?}", q.kinds);
    assert_eq!(
        q.speech(),
        "好，先打三个鸡蛋。蛋液打好了吗？",
        "{}",
        q.output
    );
    assert_eq!(q.output["continue_conversation"], true, "{}", q.output);
    let asked = user_text(&request_for(&fake, "三个人要几个鸡蛋"));
    assert!(
        asked.contains("说话人 mom（妈妈）"),
        "the mapped member: {asked}"
    );
    assert!(asked.contains("房间 厨房"), "the device's room: {asked}");
    let conversation = q.conversation_id();
    let s = run(
        &mut runs,
        &pid,
        "蛋液好了",
        &kitchen,
        Some(&conversation),
        |_| {},
    )
    .await;
    println!(
        "pipeline (statement): run → first delta {:?}, → intent-end {:?}",
        s.first_delta(),
        s.end_at
    );
    assert_eq!(s.speech(), "好，热锅下油，先炒鸡蛋。", "{}", s.output);
    assert_eq!(s.output["continue_conversation"], false, "{}", s.output);
    assert_eq!(s.conversation_id(), conversation);
    let answered = request_for(&fake, "蛋液好了");
    assert!(
        user_text(&answered).contains("三个人要几个鸡蛋"),
        "the same conversation is the same chat"
    );

    // 2. the ESPHome satellite: listens again after a question, by itself
    esphome::listens_again(&ha, &pipeline, &fake, &gw, &ws).await;

    // 3. the mode, entered through HA; a later wake (a new conversation) continues it
    let on = run(&mut runs, &pid, "打开做饭模式", &kitchen, None, |_| {}).await;
    assert_eq!(on.speech(), "好，做饭模式开始了。", "{}", on.output);
    assert_eq!(action(&ws)["active"], true, "{}", action(&ws));
    let later = run(&mut runs, &pid, "葱花什么时候放", &kitchen, None, |_| {}).await;
    assert_ne!(later.conversation_id(), on.conversation_id(), "a new wake");
    let log = session_dir(&ws).join("conversation.jsonl");
    eventually(
        "both turns in the session's log",
        Duration::from_secs(10),
        || std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 2),
    )
    .await;
    let lines = jsonl(&log);
    let said: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["user"].as_str().unwrap(),
                l["chat_id"].as_str().unwrap(),
                l["speaker_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("打开做饭模式", on.conversation_id().as_str(), "mom"),
            ("葱花什么时候放", later.conversation_id().as_str(), "mom"),
        ],
        "the later wake is a turn of the mode's session"
    );
    let system = |w: &str| request_for(&fake, w)["messages"][0]["content"].to_string();
    assert!(
        system("葱花什么时候放").contains("做饭模式（home-cooking）"),
        "in the mode's frozen prompt"
    );

    // 4. homebot hung mid-turn, then gone: HA answers with the spoken error in time
    let hung_up = fake.hung_up();
    let sent = Instant::now();
    let gw_pid = gw.pid();
    let mut stopped = false;
    let hang = run(&mut runs, &pid, "讲个长故事", &kitchen, None, |_| {
        if !stopped {
            stopped = true;
            signal(gw_pid, libc::SIGSTOP);
        }
    })
    .await;
    signal(gw_pid, libc::SIGCONT);
    println!(
        "homebot hung after its first sentence: HA's error after {:?}",
        hang.end_at
    );
    assert!(stopped, "homebot's first sentence came: {:?}", hang.kinds);
    assert_eq!(
        hang.output["response"]["response_type"], "error",
        "{}",
        hang.output
    );
    assert_eq!(hang.speech(), ERROR_SPEECH);
    assert!(
        hang.end_at < Duration::from_secs(15),
        "{:?}",
        sent.elapsed()
    );
    eventually(
        "homebot to cancel the turn HA gave up on",
        Duration::from_secs(30),
        || fake.hung_up() > hung_up,
    )
    .await;
    gw.child.kill().await.unwrap();
    let gone = run(&mut runs, &pid, "你好", &kitchen, None, |_| {}).await;
    println!("homebot stopped: HA's error after {:?}", gone.end_at);
    assert_eq!(
        gone.output["response"]["response_type"], "error",
        "{}",
        gone.output
    );
    assert_eq!(gone.speech(), ERROR_SPEECH);
    assert!(gone.end_at < Duration::from_secs(15));
}
