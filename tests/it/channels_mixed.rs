//! Voice (the Python wyoming package), QQ (a OneBot simulator) and CLI (`homebot chat`
//! routed through the gateway) talking at once inside one cooking session: every turn
//! recorded once, in its chat's order, with its own channel and chat id.

use crate::common;

use common::gateway::Gateway;
use common::onebot::{self, text_of, BOT};
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn voice_qq_and_cli_interleave_in_one_mode_session() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("config.toml"), "[qq]\nsend_interval_ms = 10\n").unwrap();
    let fake = FakeLlm::start(|body, n| {
        FakeReply::Delay(
            std::time::Duration::from_millis(20 + (n as u64 * 37) % 120),
            Box::new(scripted(body)),
        )
    })
    .await;
    let gw = Gateway::start(
        &ws,
        &fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ALLOW_GROUPS", "5550001"),
            ("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0"),
        ],
        &["qq", "wyoming"],
    )
    .await;
    let mut qq = onebot::connect(gw.addr("qq"), Some(BOT), None, "Universal")
        .await
        .unwrap();
    qq.lifecycle().await;
    let at = json!({"type": "at", "data": {"qq": BOT.to_string()}});
    qq.group_msg(
        5_550_001,
        10_001,
        1,
        json!([at, {"type": "text", "data": {"text": "打开做饭模式"}}]),
    )
    .await;
    assert!(text_of(&qq.expect_send().await).contains("已进入做饭模式"));

    // QQ: three messages in a row, answered in order
    let qq_task = tokio::spawn(async move {
        for i in 0..3 {
            let at = json!({"type": "at", "data": {"qq": BOT.to_string()}});
            qq.group_msg(
                5_550_001,
                10_002,
                10 + i,
                json!([at, {"type": "text", "data": {"text": format!("群里第{i}问")}}]),
            )
            .await;
        }
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(text_of(&qq.expect_send().await).trim().to_string());
        }
        got
    });
    // voice: three wakes, one after another
    let (h, p) = gw
        .addr("wyoming")
        .rsplit_once(':')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap();
    let voice_task = tokio::spawn(async move {
        let mut got = Vec::new();
        for i in 0..3 {
            let r = run_peer(
                "wyoming_client.py",
                &[
                    &h,
                    &p,
                    "transcript",
                    &format!("厨房第{i}问"),
                    &format!("wake-{i}"),
                    "mom",
                ],
            )
            .await;
            got.push(r["text"].as_str().unwrap().to_string());
        }
        got
    });
    // CLI: three one-shots through the gateway's control socket
    let ws2 = ws.clone();
    let cli_task = tokio::spawn(async move {
        let mut got = Vec::new();
        for i in 0..3 {
            let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_homebot"))
                .arg("--workspace")
                .arg(&ws2)
                .args(["chat", "-m", &format!("终端第{i}问"), "--speaker", "dad"])
                .output()
                .await
                .unwrap();
            assert!(o.status.success());
            got.push(String::from_utf8(o.stdout).unwrap().trim().to_string());
        }
        got
    });
    let (q, v, c) = (
        qq_task.await.unwrap(),
        voice_task.await.unwrap(),
        cli_task.await.unwrap(),
    );
    assert_eq!(q, ["好的：群里第0问", "好的：群里第1问", "好的：群里第2问"]);
    assert_eq!(v, ["好的：厨房第0问", "好的：厨房第1问", "好的：厨房第2问"]);
    assert_eq!(c, ["好的：终端第0问", "好的：终端第1问", "好的：终端第2问"]);

    let lines = jsonl(&session_dir(&ws).join("conversation.jsonl"));
    assert_eq!(
        lines.len(),
        10,
        "the entering turn and nine more, each once"
    );
    let of = |channel: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["channel"] == channel)
            .map(|l| l["user"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        of("qq"),
        ["打开做饭模式", "群里第0问", "群里第1问", "群里第2问"]
    );
    assert_eq!(of("voice"), ["厨房第0问", "厨房第1问", "厨房第2问"]);
    assert_eq!(of("cli"), ["终端第0问", "终端第1问", "终端第2问"]);
    for l in &lines {
        match l["channel"].as_str().unwrap() {
            "qq" => assert_eq!(l["chat_id"], "group:5550001"),
            "voice" => assert!(l["chat_id"].as_str().unwrap().starts_with("wake-")),
            "cli" => assert_eq!(l["chat_id"], "local"),
            other => panic!("unexpected channel {other}"),
        }
    }
    // every request in the session shares the frozen system prompt
    let systems: std::collections::HashSet<String> = fake
        .requests()
        .iter()
        .skip(2) // the entering turn ran outside the mode
        .map(|r| r["messages"][0]["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(systems.len(), 1);
}
