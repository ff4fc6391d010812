//! homebot's own Home Assistant integration (`custom_components/homebot`) in the real
//! Home Assistant 2025.4.4, through HA's own APIs: the config flow refuses a wrong token
//! and an unreachable URL and creates the entry with the right one; its conversation
//! entity answers through homebot's agent endpoint, and a reply that asks something keeps
//! the conversation open while a statement does not.

use crate::common;
use crate::real_ha;

use common::gateway::Gateway;
use common::*;
use real_ha::{HaWs, RealHa};
use serde_json::{json, Value};
use std::time::Duration;

const AGENT: &str = "agent-token-for-the-integration-42";
/// The agent token after the household changed it.
const NEW_AGENT: &str = "a-new-agent-token-for-the-integration-43";

async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        let words = user_words(&last);
        if words.contains("鸡蛋") {
            return text("好，先打三个鸡蛋。蛋液打好了吗？[[继续]]");
        }
        text(&format!("好的：{words}"))
    })
    .await
}

/// One step of a config flow: HA's answer.
async fn step(ha: &RealHa, flow: &str, input: Value) -> Value {
    ha.post(&format!("/api/config/config_entries/flow/{flow}"), input)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_integration_in_a_real_home_assistant() {
    let python = real_ha::ha_python();
    let ha = RealHa::start(&python).await;
    let fake = model().await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let gw = Gateway::start(
        &ws,
        &fake,
        &[
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_HA_AGENT_TOKEN", AGENT),
        ],
        &[],
    )
    .await;
    let base = format!("http://{}", gw.dashboard_addr().await);

    // the config flow: a wrong token, an unreachable URL, then the right token
    let flow = ha
        .post(
            "/api/config/config_entries/flow",
            json!({"handler": "homebot"}),
        )
        .await;
    assert_eq!(flow["type"], "form", "{flow}\n{}", ha.log());
    let id = flow["flow_id"].as_str().unwrap().to_string();
    let wrong = step(&ha, &id, json!({"url": base, "token": "not-the-token"})).await;
    assert_eq!(wrong["errors"]["base"], "invalid_auth", "{wrong}");
    let refusing = Refusing::new(); // bound, never listening: connections are refused
    let closed = format!("http://127.0.0.1:{}", refusing.port());
    let away = step(&ha, &id, json!({"url": closed, "token": AGENT})).await;
    assert_eq!(away["errors"]["base"], "cannot_connect", "{away}");
    let done = step(&ha, &id, json!({"url": base, "token": AGENT})).await;
    assert_eq!(done["type"], "create_entry", "{done}");
    let entry = done["result"]["entry_id"].as_str().unwrap().to_string();
    assert!(
        !ha.log().contains(AGENT) && !gw.log().contains(AGENT),
        "the token never shows"
    );

    // the conversation entity answers through homebot
    let mut ws_api = HaWs::connect(ha.port).await;
    let entity = ws_api.entity_of(&entry, "conversation.").await;
    let agent = entity["entity_id"].as_str().unwrap().to_string();
    let ask = |text: &str| {
        ha.post(
            "/api/conversation/process",
            json!({"text": text, "language": "zh-cn", "agent_id": agent}),
        )
    };
    let q = ask("三个人要几个鸡蛋").await;
    let speech = q["response"]["speech"]["plain"]["speech"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(speech, "好，先打三个鸡蛋。蛋液打好了吗？", "{q}");
    assert_eq!(
        q["continue_conversation"], true,
        "a question keeps it open: {q}"
    );
    let s = ask("打好了").await;
    let speech = s["response"]["speech"]["plain"]["speech"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(speech, "好的：打好了", "{s}");
    assert_eq!(
        s["continue_conversation"], false,
        "a statement does not: {s}"
    );

    // diagnostics show the entry with the token redacted
    let diag = ha
        .get(&format!("/api/diagnostics/config_entry/{entry}"))
        .await
        .unwrap()
        .to_string();
    assert!(!diag.contains(AGENT) && diag.contains("REDACTED"), "{diag}");

    // homebot's token changes: the next turn says so, HA asks for the new token, and
    // with it the entity answers again
    let addr = gw.dashboard_addr().await;
    gw.stop().await;
    let env = [
        ("HOMEBOT_HTTP_LISTEN", addr.as_str()),
        ("HOMEBOT_HA_AGENT_TOKEN", NEW_AGENT),
    ];
    let gw = Gateway::start(&ws, &fake, &env, &[]).await;
    gw.dashboard_addr().await;
    let refused = ask("你好").await;
    let said = refused["response"]["speech"]["plain"]["speech"].to_string();
    assert!(said.contains("拒绝了令牌"), "{refused}");
    // (flows not started by a user: HA's own list, as its frontend reads it)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let reauth = loop {
        let flows = ws_api
            .call(json!({"type": "config_entries/flow/progress"}))
            .await
            .unwrap();
        let found = flows
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["handler"] == "homebot" && f["context"]["source"] == "reauth");
        if let Some(f) = found {
            break f["flow_id"].as_str().unwrap().to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "HA never asked for the new token: {flows}\n{}",
            ha.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let wrong = step(&ha, &reauth, json!({"token": AGENT})).await;
    assert_eq!(wrong["errors"]["base"], "invalid_auth", "{wrong}");
    let done = step(&ha, &reauth, json!({"token": NEW_AGENT})).await;
    assert_eq!(done["reason"], "reauth_successful", "{done}");
    eventually_async(
        "the entity answers with the new token",
        Duration::from_secs(30),
        || async {
            // HA reloads the entry after the reauth: its entity is briefly unknown (400)
            let r = ha
                .try_post(
                    "/api/conversation/process",
                    json!({"text": "又好了", "language": "zh-cn", "agent_id": agent}),
                )
                .await?;
            let speech = r["response"]["speech"]["plain"]["speech"].to_string();
            if speech.contains("好的：又好了") {
                Ok(())
            } else {
                Err(r.to_string())
            }
        },
    )
    .await;
    assert!(!ha.log().contains(NEW_AGENT), "the token never shows");
}
