//! The ESPHome half of [`super`]: a Voice PE stand-in (tests/peers/ha/fake_voice_pe.py)
//! in 餐厅 and a Wyoming speech-to-text stand-in (fake_asr.py) that hears
//! "我要做番茄炒鸡蛋", then "切好了"; the pipeline (homebot's entity as its agent, HA's
//! preferred one) that they and the text runs use; and the check that the satellite
//! listens again after homebot's question by itself.

use crate::common;
use crate::real_ha;

use common::gateway::Gateway;
use common::*;
use real_ha::{HaWs, RealHa};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Child;

/// HA's pipeline and the stand-ins behind it (killed when dropped).
pub struct Pipeline {
    pub id: String,
    voice_pe: Child,
    _asr: Child,
    /// The Voice PE stand-in's log (events.jsonl).
    out: PathBuf,
    satellite: String,
}

/// Start the stand-ins, add them through HA's config flows, put the Voice PE in 餐厅 and
/// make a pipeline with homebot's entity as its agent HA's preferred one.
pub async fn homebot_pipeline(ha: &RealHa, python: &Path, hws: &mut HaWs, agent: &str) -> Pipeline {
    let out = ha.dir.path().join("voice_pe");
    let args = ["--outdir", out.to_str().unwrap()];
    let voice_pe = ha.peer(python, "fake_voice_pe.py", &args);
    let args = ["--text", "我要做番茄炒鸡蛋", "--text", "切好了"];
    let asr = ha.peer(python, "fake_asr.py", &args);
    let ((voice_pe, pe_port), (asr, asr_port)) = tokio::join!(voice_pe, asr);
    let stt_entry = ha.add_wyoming(asr_port).await;
    let stt = hws.entity_of(&stt_entry, "stt.").await["entity_id"].clone();
    let pe_entry = ha.add_esphome(pe_port).await;
    let sat = hws.entity_of(&pe_entry, "assist_satellite.").await;
    let area = hws
        .call(json!({"type": "config/area_registry/create", "name": "餐厅"}))
        .await
        .unwrap();
    hws.call(json!({"type": "config/device_registry/update",
                    "device_id": sat["device_id"], "area_id": area["area_id"]}))
        .await
        .unwrap();
    let pipeline = hws
        .call(
            json!({"type": "assist_pipeline/pipeline/create", "name": "homebot",
            "conversation_engine": agent, "conversation_language": "zh-cn", "language": "zh-cn",
            "stt_engine": stt, "stt_language": "zh", "tts_engine": "demo", "tts_language": "en",
            "tts_voice": null, "wake_word_entity": null, "wake_word_id": null}),
        )
        .await
        .unwrap();
    hws.call(
        json!({"type": "assist_pipeline/pipeline/set_preferred", "pipeline_id": pipeline["id"]}),
    )
    .await
    .unwrap();
    Pipeline {
        id: pipeline["id"].as_str().unwrap().to_string(),
        voice_pe,
        _asr: asr,
        out,
        satellite: sat["entity_id"].as_str().unwrap().to_string(),
    }
}

impl Pipeline {
    /// What the Voice PE stand-in logged.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.out.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Its `VOICE_ASSISTANT_INTENT_END` events' data.
    fn intent_ends(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == "pipeline-event" && e["event_type"] == 6)
            .map(|e| e["data"].clone())
            .collect()
    }
}

/// The Voice PE stand-in wakes and hears "我要做番茄炒鸡蛋"; homebot asks back; HA's
/// INTENT_END says continue_conversation "1", the stand-in listens again when the reply
/// was played, hears "切好了", and that reaches homebot in the same conversation, in
/// 餐厅 — with no `start_conversation` call from anyone.
pub async fn listens_again(
    ha: &RealHa,
    pipeline: &Pipeline,
    fake: &FakeLlm,
    gw: &Gateway,
    ws: &Path,
) {
    // homebot knows the new satellite in its room; HA has subscribed to its voice
    let room = format!("{}（餐厅）", pipeline.satellite);
    eventually_async(
        "homebot to see the Voice PE in 餐厅",
        Duration::from_secs(60),
        || async {
            let o = homebot(ws, None).arg("status").output().await.unwrap();
            let status = String::from_utf8_lossy(&o.stdout).to_string();
            status.contains(&room).then_some(()).ok_or(status)
        },
    )
    .await;
    eventually(
        "HA to subscribe to the Voice PE's voice",
        Duration::from_secs(30),
        || {
            pipeline
                .events()
                .iter()
                .any(|e| e["name"] == "SubscribeVoiceAssistantRequest")
        },
    )
    .await;
    let pid = pipeline.voice_pe.id().unwrap();
    super::signal(pid, libc::SIGUSR1); // the wake word
    eventually_async(
        "the answer to reach homebot",
        Duration::from_secs(60),
        || {
            let arrived = fake
                .requests()
                .iter()
                .any(|r| super::words_of(r) == "切好了");
            let seen = (!arrived).then(|| {
                format!(
                    "\nVoice PE: {:?}\nhomebot:\n{}\nHA:\n{}",
                    pipeline.events(),
                    gw.log(),
                    ha.log()
                )
            });
            async move { seen.map_or(Ok(()), Err) }
        },
    )
    .await;
    eventually("the second INTENT_END", Duration::from_secs(30), || {
        pipeline.intent_ends().len() >= 2
    })
    .await;
    let ends = pipeline.intent_ends();
    let events = pipeline.events();
    assert_eq!(
        ends[0]["continue_conversation"], "1",
        "after the question: {events:?}"
    );
    assert_eq!(
        ends[1]["continue_conversation"], "0",
        "after the statement: {events:?}"
    );
    assert_eq!(
        ends[0]["conversation_id"], ends[1]["conversation_id"],
        "one conversation"
    );
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "wake").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "listening-again").count(),
        1,
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"announce"),
        "no start_conversation (HA announces it first): {events:?}"
    );
    assert!(!gw.log().contains("listens again"), "homebot asked nothing");
    let answer = super::request_for(fake, "切好了");
    let heard = crate::common::user_text(&answer);
    assert!(heard.contains("房间 餐厅"), "{heard}");
    // a satellite's pipeline carries no HA user (and no speaker is mapped to this one)
    let woke = crate::common::user_text(&super::request_for(fake, "我要做番茄炒鸡蛋"));
    assert!(woke.contains("说话人 guest"), "{woke}");
    assert!(
        heard.contains("我要做番茄炒鸡蛋") && !heard.contains("三个人要几个鸡蛋"),
        "the satellite's conversation is its own chat: {heard}"
    );
    println!("Voice PE stand-in saw: {kinds:?}");

    // a later wake on the same satellite: HA 2025.4.4's satellite entity keeps its
    // conversation id until the chat session expires (5 minutes idle) or an automation's
    // start_conversation begins a new one (assist_satellite/entity.py), so it is not a
    // new conversation per wake
    super::signal(pid, libc::SIGUSR1);
    eventually(
        "the later wake's INTENT_END",
        Duration::from_secs(60),
        || pipeline.intent_ends().len() >= 3,
    )
    .await;
    let later = &pipeline.intent_ends()[2];
    assert_eq!(
        later["conversation_id"], ends[0]["conversation_id"],
        "HA kept the satellite's conversation across wakes: {later}"
    );
}
