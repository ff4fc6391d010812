//! homebot against a REAL Home Assistant (core 2025.4.4, offline; tests/it/real_ha): homebot
//! is added as HA's Wyoming conversation agent through the real config flow and answers
//! `conversation/process`; a reminder set through it is announced on the Wyoming satellite
//! stand-in (HA synthesises it and streams the audio to the satellite); and after a
//! question homebot asks HA to make the satellite listen again — which HA 2025.4 refuses
//! for a Wyoming satellite, as its source says (ESPHome and VoIP satellites only), and does
//! for an ESPHome satellite (tests/peers/ha/fake_voice_pe.py, added through the real
//! `esphome` config flow): the user's answer reaches homebot without a wake word.
//!
//! Needs the HA venv (`tests/run.sh` installs it); without it the test fails and says how
//! to install it.

use crate::common;
use crate::real_ha;

use common::gateway::Gateway;
use common::*;
use real_ha::{RealHa, TOKEN};
use serde_json::{json, Value};
use std::time::Duration;

async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            return text("好的，一秒后提醒你关火。");
        }
        let words = user_words(&last);
        if words.contains("提醒") {
            return tool_call("set_reminder", json!({"in_seconds": 1, "text": "关火"}));
        }
        if words.contains("鸡蛋") {
            return text("好，先打三个鸡蛋。蛋液打好了吗？[[继续]]");
        }
        if words.contains("打好了") {
            return text("好，热锅下油，先炒鸡蛋。");
        }
        text(&format!("好的：{words}"))
    })
    .await
}

async fn process(ha: &RealHa, agent: &str, text: &str) -> Value {
    ha.post(
        "/api/conversation/process",
        json!({"text": text, "language": "zh-cn", "agent_id": agent}),
    )
    .await
}

fn speech(v: &Value) -> String {
    v["response"]["speech"]["plain"]["speech"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn homebot_with_a_real_home_assistant() {
    let python = real_ha::ha_python();
    let ha = RealHa::start(&python).await;
    println!("satellite stand-in: {}", ha.satellite_entity);

    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // HA 2025.4 tells a Wyoming agent nothing of the satellite: the default names it
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[voice]\nwyoming_listen = \"127.0.0.1:0\"\n\n[home_assistant]\nurl = \"{}\"\ndefault_satellite = \"{}\"\n",
            ha.url(),
            ha.satellite_entity
        ),
    )
    .unwrap();
    let gw = Gateway::start(&ws, &fake, &[("HOMEBOT_HA_TOKEN", TOKEN)], &["wyoming"]).await;
    gw.wait_log("Home Assistant registries read", 60).await;
    let port: u16 = gw
        .addr("wyoming")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    // 1. homebot as HA's conversation agent, through the real config flow
    let entry = ha.add_wyoming(port).await;
    let mut hws = real_ha::HaWs::connect(ha.port).await;
    let agent = loop {
        let entities = hws
            .call(json!({"type": "config/entity_registry/list"}))
            .await
            .unwrap();
        let found = entities.as_array().unwrap().iter().find_map(|e| {
            let id = e["entity_id"].as_str()?;
            (e["config_entry_id"] == entry.as_str() && id.starts_with("conversation."))
                .then(|| id.to_string())
        });
        if let Some(a) = found {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("homebot is HA's agent {agent}");
    let st = {
        let o = homebot(&ws, None).arg("status").output().await.unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    assert!(
        st.contains("Home Assistant: connected · 版本 2025.4.4"),
        "{st}"
    );
    assert!(
        st.contains(&format!("{}（厨房）", ha.satellite_entity)),
        "{st}"
    );
    // `homebot doctor` connects once by itself; a wrong token is named as such
    for (token, expect) in [
        (TOKEN, "/api/websocket: connected · 版本 2025.4.4"),
        ("wrong-token", "access token refused"),
    ] {
        let o = homebot(&ws, None)
            .arg("doctor")
            .env("HOMEBOT_HA_TOKEN", token)
            .output()
            .await
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(out.contains(expect), "{out}");
        assert!(!out.contains(token), "the token is never printed: {out}");
        println!("homebot doctor:\n{out}");
    }
    let r = process(&ha, &agent, "你好").await;
    assert_eq!(speech(&r), "好的：你好", "{r}");
    assert!(
        fake.last_user().contains("房间 厨房"),
        "{}",
        fake.last_user()
    );

    // 2. a reminder set through HA rings on the satellite: HA says success only after it
    // streamed the announcement to the stand-in
    let r = process(&ha, &agent, "一秒后提醒我关火").await;
    assert!(speech(&r).contains("提醒"), "{r}");
    let started = std::time::Instant::now();
    let recorded = loop {
        if let Some(e) = ha
            .satellite_events()
            .into_iter()
            .find(|e| e["type"] == "announcement-recorded")
        {
            break e;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no announcement reached the satellite.\nhomebot:\n{}\nHA:\n{}",
            gw.log(),
            ha.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(recorded["bytes"].as_u64().unwrap() > 1000, "{recorded}");
    gw.wait_log("announced on a Home Assistant satellite", 30)
        .await;
    common::eventually_async(
        "the reminder marked delivered",
        Duration::from_secs(20),
        || async {
            let all = homebot(&ws, None)
                .args(["reminders", "--all"])
                .output()
                .await
                .unwrap();
            let all = String::from_utf8_lossy(&all.stdout).to_string();
            if !all.contains("待") && all.contains("关火") {
                Ok(())
            } else {
                Err(all)
            }
        },
    )
    .await;
    // `homebot announce` by area name
    let o = homebot(&ws, None)
        .args(["announce", "--channel", "voice", "--to", "厨房", "晚饭好了"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let n = ha
        .satellite_events()
        .iter()
        .filter(|e| e["type"] == "announcement-recorded")
        .count();
    assert_eq!(n, 2, "{:?}", ha.satellite_events());
    // … and through Home Assistant's own channel, whose door takes its areas
    let o = homebot(&ws, None)
        .args([
            "announce",
            "--channel",
            "home_assistant",
            "--to",
            "厨房",
            "汤也好了",
        ])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let n = ha
        .satellite_events()
        .iter()
        .filter(|e| e["type"] == "announcement-recorded")
        .count();
    assert_eq!(n, 3, "{:?}", ha.satellite_events());

    // 3. a question: HA does not keep listening for a Wyoming agent (continue_conversation
    // stays false whatever homebot says), so homebot asks through start_conversation
    let r = process(&ha, &agent, "我要做番茄炒鸡蛋").await;
    assert_eq!(speech(&r), "好，先打三个鸡蛋。蛋液打好了吗？", "{r}");
    assert_eq!(r["continue_conversation"], false, "HA 2025.4: {r}");
    gw.wait_log("cannot make this satellite listen again", 30)
        .await;
    let line = gw
        .log()
        .lines()
        .find(|l| l.contains("cannot make this satellite listen again"))
        .unwrap()
        .to_string();
    println!("HA's answer to start_conversation: {line}");
    assert!(
        line.contains("start_conversation") || line.contains("support"),
        "{line}"
    );

    // 4. an ESPHome satellite (a Voice PE stand-in) in the dining room, whose pipeline's
    // agent is homebot and whose speech-to-text hears "我要做番茄炒鸡蛋", then "打好了"
    let out = ha.dir.path().join("voice_pe");
    let pe_args = ["--outdir", out.to_str().unwrap()];
    let pe = ha.peer(&python, "fake_voice_pe.py", &pe_args);
    let asr = ha.peer(
        &python,
        "fake_asr.py",
        &["--text", "我要做番茄炒鸡蛋", "--text", "打好了"],
    );
    let ((_pe, pe_port), (_asr, asr_port)) = tokio::join!(pe, asr);
    let stt_entry = ha.add_wyoming(asr_port).await;
    let stt = hws.entity_of(&stt_entry, "stt.").await["entity_id"]
        .as_str()
        .unwrap()
        .to_string();
    let pe_entry = ha.add_esphome(pe_port).await;
    let pe_sat = hws.entity_of(&pe_entry, "assist_satellite.").await;
    let pe_entity = pe_sat["entity_id"].as_str().unwrap().to_string();
    let area = hws
        .call(json!({"type": "config/area_registry/create", "name": "餐厅"}))
        .await
        .unwrap();
    hws.call(
        json!({"type": "config/device_registry/update", "device_id": pe_sat["device_id"],
                    "area_id": area["area_id"]}),
    )
    .await
    .unwrap();
    let pipeline = hws
        .call(
            json!({"type": "assist_pipeline/pipeline/create", "name": "homebot",
            "conversation_engine": agent, "conversation_language": "en", "language": "en",
            "stt_engine": stt, "stt_language": "en", "tts_engine": "demo", "tts_language": "en",
            "tts_voice": null, "wake_word_entity": null, "wake_word_id": null}),
        )
        .await
        .unwrap();
    hws.call(
        json!({"type": "assist_pipeline/pipeline/set_preferred", "pipeline_id": pipeline["id"]}),
    )
    .await
    .unwrap();
    // homebot learns the new satellite and its room from the registry events
    let room = format!("{pe_entity}（餐厅）");
    eventually_async(
        "the status to show the new satellite in its room",
        Duration::from_secs(60),
        || async {
            let o = homebot(&ws, None).arg("status").output().await.unwrap();
            let status = String::from_utf8_lossy(&o.stdout).to_string();
            if status.contains(&room) {
                Ok(())
            } else {
                Err(status)
            }
        },
    )
    .await;
    // an automation asks (start_conversation); the user's words reach homebot, which asks
    // back; the satellite then listens again by itself and the answer reaches homebot
    hws.call(json!({"type": "call_service", "domain": "assist_satellite", "service": "start_conversation",
                    "target": {"entity_id": pe_entity},
                    "service_data": {"start_message": "想做什么菜？", "preannounce": false}}))
        .await
        .unwrap();
    eventually_async(
        "the answer to reach homebot",
        Duration::from_secs(60),
        || {
            let arrived = fake
                .requests()
                .iter()
                .any(|r| r.to_string().contains("打好了"));
            let seen = (!arrived).then(|| {
                format!(
                    "\nVoice PE: {}\nhomebot:\n{}\nHA:\n{}",
                    std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default(),
                    gw.log(),
                    ha.log()
                )
            });
            async move { seen.map_or(Ok(()), Err) }
        },
    )
    .await;
    let said = fake.last_user();
    assert!(
        said.contains("打好了") && said.contains("房间 餐厅"),
        "{said}"
    );
    gw.wait_log("satellite listens again for the answer", 30)
        .await;
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    let asked: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"announce\"") && l.contains("\"start_conversation\": true"))
        .collect();
    assert_eq!(asked.len(), 2, "the automation's and homebot's: {events}");
    println!("Voice PE stand-in saw:\n{events}");
}
