//! Mode expiry: the Cron actor ends a session at 00:10 after its start day (controlled
//! clock), and after downtime the check before the next turn does it first, so that
//! turn is not recorded in the expired session.

use crate::common;

use chrono::{DateTime, Utc};
use common::*;
use homebot::channels::{cli, voice};
use homebot::clock::ManualClock;
use homebot::kernel::{Kernel, KernelOptions};
use std::sync::Arc;
use std::time::Duration;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn kernel(ws: &std::path::Path, fake: &FakeLlm, clock: &ManualClock, period: Duration) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(Arc::new(clock.clone())),
            expiry_period: Some(period),
            ..Default::default()
        },
    )
    .unwrap()
}

#[tokio::test]
async fn cron_expires_the_session_after_midnight() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:55:00+08:00"));
    let k = kernel(ws, &fake, &clock, Duration::from_millis(20));
    k.handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let a = action(ws);
    assert_eq!(a["started_at"], "2026-10-22T19:55:00+08:00");
    assert_eq!(a["expires_at"], "2026-10-23T00:10:00+08:00");
    let sdir = session_dir(ws);

    // just before the deadline nothing happens, however often cron runs
    clock.set(at("2026-10-23T00:09:59+08:00"));
    for _ in 0..20 {
        assert_eq!(k.modes().check_expiry().await.unwrap(), None);
    }
    assert_eq!(action(ws)["active"], true);

    clock.set(at("2026-10-23T00:10:00+08:00"));
    eventually("cron expired the session", Duration::from_secs(5), || {
        action(ws)["active"] != true
    })
    .await;
    let a = action(ws);
    assert_eq!(a["exit_reason"], "expired");
    let summary = std::fs::read_to_string(sdir.join("summary.md")).unwrap();
    assert!(summary.contains("结束原因: expired"), "{summary}");
    assert!(
        summary.contains("结束: 2026-10-23T00:10:00+08:00"),
        "{summary}"
    );
    let history = std::fs::read_to_string(ws.join("cooking/history.md")).unwrap();
    assert!(
        history.contains("2026-10-22") && history.contains("结束原因 expired"),
        "{history}"
    );
    assert_eq!(jsonl(&sdir.join("conversation.jsonl")).len(), 1);
}

#[tokio::test]
async fn the_first_turn_after_downtime_catches_up() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:55:00+08:00"));
    let never = Duration::from_secs(3600);
    let k = kernel(ws, &fake, &clock, never);
    k.handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    k.handle_turn(cli::turn("local", "mom", "米饭煮多久")).await;
    let sdir = session_dir(ws);
    drop(k); // the gateway goes down for the night

    clock.set(at("2026-10-23T07:30:00+08:00"));
    let k = kernel(ws, &fake, &clock, never);
    let r = k.handle_turn(voice::turn("wake-9", "dad", "早上好")).await;
    assert_eq!(r.text, "好的：早上好");
    let a = action(ws);
    assert_eq!(a["active"], false);
    assert_eq!(a["exit_reason"], "expired");
    let lines = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(
        lines.len(),
        2,
        "the morning turn is not in the expired session"
    );
    assert!(lines.iter().all(|l| l["user"] != "早上好"));
    // the session ended at its expiry time, not when the catch-up noticed
    let summary = std::fs::read_to_string(sdir.join("summary.md")).unwrap();
    assert!(
        summary.contains("- 结束: 2026-10-23T00:10:00+08:00"),
        "{summary}"
    );
    // it went to normal operation: no mode prompt, recorded in the chat's history
    let req = fake.requests().last().unwrap().clone();
    assert!(!req["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("运行模式：做饭模式"));
    let chat = std::fs::read_dir(ws.join("chats/voice"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(jsonl(&chat)[0]["user"], "早上好");
    assert!(sdir.join("summary.md").exists());
}

#[tokio::test]
async fn status_after_downtime_shows_the_session_expired_before_any_turn() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:55:00+08:00"));
    let never = Duration::from_secs(3600);
    let k = kernel(ws, &fake, &clock, never);
    k.command("/mode enter cooking").await;
    let sdir = session_dir(ws);
    drop(k);

    clock.set(at("2026-10-24T09:00:00+08:00"));
    let k = kernel(ws, &fake, &clock, never);
    let status = k.command("/status").await.text;
    assert!(status.contains("无活动模式"), "{status}");
    assert!(status.contains("expired"), "{status}");
    let summary = std::fs::read_to_string(sdir.join("summary.md")).unwrap();
    assert!(
        summary.contains("- 结束: 2026-10-23T00:10:00+08:00"),
        "{summary}"
    );
    assert_eq!(fake.calls(), 0);
}
