//! The midnight expiry of a running sub-mode, through the real Cron actor (a controlled
//! clock, its timer every 20 ms): 烘焙模式 runs inside 做饭模式 when 00:10 comes; the
//! sub-mode is archived first — its conclusion reaches the cooking session's history
//! once, as its last record — then the cooking session, so the parent's summary and its
//! index line already hold the conclusion. `paused.json` is gone and `action.json`
//! says the state ended by expiry.

use crate::common;

use chrono::{DateTime, Utc};
use common::*;
use homebot::channels::cli;
use homebot::clock::ManualClock;
use homebot::kernel::{Kernel, KernelOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn kernel(ws: &Path, fake: &FakeLlm, clock: &ManualClock) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(Arc::new(clock.clone())),
            expiry_period: Some(Duration::from_millis(20)),
            ..Default::default()
        },
    )
    .unwrap()
}

/// The conclusion records of sub-session `sub` in a session folder's history.
fn conclusions(dir: &Path, sub: &str) -> Vec<serde_json::Value> {
    jsonl(&dir.join("conversation.jsonl"))
        .into_iter()
        .filter(|l| l["channel"] == "mode" && l["chat_id"] == sub)
        .collect()
}

#[tokio::test]
async fn cron_expires_a_running_sub_mode_first_then_its_parent() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:55:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    let mom = |t: &str| cli::turn("local", "mom", t);

    k.handle_turn(mom("打开做饭模式")).await;
    let cook_dir = session_dir(ws);
    let cook = action(ws)["session_id"].as_str().unwrap().to_string();
    k.handle_turn(mom("番茄几个")).await;
    clock.set(at("2026-10-22T21:30:00+08:00"));
    let r = k.handle_turn(mom("打开烘焙模式")).await;
    assert!(r.text.contains("已进入烘焙模式"), "{}", r.text);
    let bake_dir = session_dir(ws);
    let bake = action(ws)["session_id"].as_str().unwrap().to_string();
    assert_ne!(bake, cook);
    assert_eq!(action(ws)["expires_at"], "2026-10-23T00:10:00+08:00");
    k.handle_turn(mom("蛋白打发到什么程度")).await;
    assert!(ws.join("modes/paused.json").exists());

    // just before the deadline nothing happens, however often it is checked
    clock.set(at("2026-10-23T00:09:59+08:00"));
    for _ in 0..20 {
        assert_eq!(k.modes().check_expiry().await.unwrap(), None);
    }
    assert_eq!(action(ws)["session_id"], bake.as_str());
    assert!(ws.join("modes/paused.json").exists());

    // the Cron actor's own timer ends both
    clock.set(at("2026-10-23T00:10:00+08:00"));
    eventually(
        "cron expired both sessions",
        Duration::from_secs(10),
        || action(ws)["active"] == false,
    )
    .await;
    let a = action(ws);
    assert_eq!(a["exit_reason"], "expired", "{a}");
    assert!(!ws.join("modes/paused.json").exists());

    // the sub-mode: archived, ended by expiry at 00:10
    for d in [&bake_dir, &cook_dir] {
        let exit = read_json(&d.join("exit.json"));
        assert_eq!(exit["reason"], "expired", "{}: {exit}", d.display());
        assert_eq!(exit["requested_at"], "2026-10-23T00:10:00+08:00");
        let summary = std::fs::read_to_string(d.join("summary.md")).unwrap();
        assert!(summary.contains("- 结束原因: expired"), "{summary}");
        assert!(
            summary.contains("- 结束: 2026-10-23T00:10:00+08:00"),
            "{summary}"
        );
    }
    let bake_summary = std::fs::read_to_string(bake_dir.join("summary.md")).unwrap();
    assert!(bake_summary.contains("- 轮数: 2"), "{bake_summary}");

    // its conclusion reached the parent once, as the parent's last record: the excerpt
    // of its turns (expiry writes no model summary)
    let found = conclusions(&cook_dir, &bake);
    assert_eq!(found.len(), 1, "{found:?}");
    let c = &found[0];
    let user = c["user"].as_str().unwrap();
    assert!(
        user.starts_with(&format!("[子模式结论: 烘焙模式 {bake}]")),
        "{user}"
    );
    assert!(
        user.contains("没有模型给出的总结") && user.contains("蛋白打发到什么程度"),
        "{user}"
    );
    assert_eq!(c["timestamp"], "2026-10-23T00:10:00+08:00");
    let cook_lines = jsonl(&cook_dir.join("conversation.jsonl"));
    let words: Vec<&str> = cook_lines
        .iter()
        .map(|l| l["user"].as_str().unwrap())
        .collect();
    assert_eq!(words.len(), 3, "{words:?}");
    assert_eq!(words[..2], ["打开做饭模式", "番茄几个"]);
    assert_eq!(cook_lines[2]["chat_id"], bake.as_str());

    // then the parent was archived, with the conclusion in it: its summary counts it and
    // quotes it, and so do its index line and the plugin's copy of the summary
    let cook_summary = std::fs::read_to_string(cook_dir.join("summary.md")).unwrap();
    assert!(cook_summary.contains("- 轮数: 3"), "{cook_summary}");
    assert!(
        cook_summary.contains(&format!("[子模式结论: 烘焙模式 {bake}]")),
        "{cook_summary}"
    );
    let index = std::fs::read_to_string(ws.join("cooking/history.md")).unwrap();
    let lines: Vec<&str> = index.lines().filter(|l| l.contains(&cook)).collect();
    assert_eq!(lines.len(), 1, "{index}");
    assert!(
        lines[0].contains("3 轮") && lines[0].contains("结束原因 expired"),
        "{index}"
    );
    let copy =
        std::fs::read_to_string(ws.join("cooking/summaries").join(format!("{cook}.md"))).unwrap();
    assert!(copy.contains("子模式结论"), "{copy}");
    assert!(
        !index.contains(&bake),
        "the sub-mode is not in the cooking index"
    );

    // nothing is active or paused, and the morning's turn is no mode's
    let status = k.command("/status").await.text;
    assert!(
        status.contains("无活动模式（上次结束原因: expired）") && !status.contains("暂停中"),
        "{status}"
    );
    clock.set(at("2026-10-23T07:30:00+08:00"));
    let r = k.handle_turn(mom("早上好")).await;
    assert_eq!(r.text, "好的：早上好");
    assert_eq!(jsonl(&cook_dir.join("conversation.jsonl")).len(), 3);
    assert_eq!(jsonl(&bake_dir.join("conversation.jsonl")).len(), 2);
}
