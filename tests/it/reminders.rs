//! Reminders: set by the model's `set_reminder` call, kept in `reminders.json`, rung by
//! the Cron actor on the (controlled) clock through the outbound door of the channel
//! that asked — never as an LLM turn, never into a mode session.

use crate::common;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use common::*;
use homebot::channels::{cli, qq};
use homebot::clock::ManualClock;
use homebot::cron::RetryPolicy;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::outbound::{DeliveryError, Outbound};
use homebot::reminders::Origin;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a due reminder may take to reach the door.
const RING: Duration = Duration::from_secs(10);

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A door that records what it was asked to deliver; fails its first `fail_first` calls.
#[derive(Default)]
struct Recorder {
    got: Mutex<Vec<(String, String)>>,
    fail_first: Mutex<usize>,
}

#[async_trait]
impl Outbound for Recorder {
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let mut left = self.fail_first.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            return Err(DeliveryError::Unreachable(format!("{target} (test)")));
        }
        self.got.lock().unwrap().push((target.into(), text.into()));
        Ok(())
    }
}

impl Recorder {
    /// A recorder registered as the kernel's `cli` door, failing its first `fail_first`.
    fn at_cli(k: &Kernel, fail_first: usize) -> Arc<Self> {
        let door = Arc::new(Recorder::default());
        *door.fail_first.lock().unwrap() = fail_first;
        k.doors().register("cli", door.clone());
        door
    }

    fn got(&self) -> Vec<(String, String)> {
        self.got.lock().unwrap().clone()
    }
}

fn kernel(ws: &Path, fake: &FakeLlm, clock: &ManualClock) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(Arc::new(clock.clone())),
            reminder_retry: Some(RetryPolicy {
                give_up_after: Duration::from_millis(400),
                first_wait: Duration::from_millis(20),
                max_wait: Duration::from_millis(50),
            }),
            ..Default::default()
        },
    )
    .unwrap()
}

/// A model that sets a ten-minute timer when asked to remind, then relays the result.
async fn reminding_model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            return text(&format!(
                "（工具结果）{}",
                last["content"].as_str().unwrap()
            ));
        }
        let words = user_words(&last);
        if words.contains("提醒") {
            return tool_call("set_reminder", json!({"in_seconds": 600, "text": "关火"}));
        }
        scripted(body)
    })
    .await
}

fn origin(target: &str) -> Origin {
    Origin {
        channel: "cli".into(),
        chat_id: "local".into(),
        speaker_id: "mom".into(),
        target: target.into(),
    }
}

#[tokio::test]
async fn a_timer_set_by_the_model_rings_on_time_in_the_chat_that_asked() {
    let dir = workspace();
    let ws = dir.path();
    let fake = reminding_model().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    let door = Recorder::at_cli(&k, 0);
    k.command("/mode enter cooking").await;
    let sdir = session_dir(ws);
    let prompt_before = std::fs::read(sdir.join("system_prompt.md")).unwrap();

    let r = k
        .handle_turn(cli::turn("local", "mom", "十分钟后提醒我关火"))
        .await;
    // the tool result names the exact local time, so the reply can say it
    assert!(r.text.contains("2026-10-22T20:00:00+08:00"), "{}", r.text);
    assert!(ws.join("reminders.json").exists());
    let calls = fake.calls();

    clock.set(at("2026-10-22T19:59:59+08:00"));
    k.reminders().wake().await;
    // a ring starts in the wake itself (its id is being delivered); none did
    assert!(
        k.reminders().delivering().await.is_empty(),
        "not a second early"
    );

    clock.set(at("2026-10-22T20:00:00+08:00"));
    k.reminders().wake().await;
    let got = eventually_some("a ring at the door", RING, || {
        Some(door.got()).filter(|g| !g.is_empty())
    })
    .await;
    assert_eq!(got, [("local".to_string(), "提醒：关火".to_string())]);
    assert_eq!(fake.calls(), calls, "ringing never asks the model");
    // the mode session is untouched: no record, the same frozen prompt
    let recs = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(recs.len(), 1, "only the turn that set it");
    assert_eq!(
        std::fs::read(sdir.join("system_prompt.md")).unwrap(),
        prompt_before
    );
    // the ring is marked once the door has taken it: poll for the mark
    let all = eventually_async("the reminder marked rung", RING, || async {
        let all = k.command("/reminders all").await.text;
        if all.contains("已响") {
            Ok(all)
        } else {
            Err(all)
        }
    })
    .await;
    assert!(all.contains("#1"), "{all}");
    assert_eq!(k.command("/reminders").await.text, "没有提醒。");
}

#[tokio::test]
async fn limits_list_and_cancel() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(dir.path(), &fake, &clock);
    let rem = k.reminders();
    let e = rem
        .set(Some(8 * 86_400), None, "太远".into(), origin("local"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("7 days"), "{e}");
    let e = rem
        .set(None, Some("明天".into()), "看不懂".into(), origin("local"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("HH:MM"), "{e}");
    let chat = |i: i64| Origin {
        chat_id: format!("chat-{}", i % 3),
        ..origin("local")
    };
    for i in 0..50 {
        rem.set(Some(60 + i), None, format!("第{i}个"), chat(i))
            .await
            .unwrap();
    }
    let e = rem
        .set(Some(60), None, "第51个".into(), origin("local"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("50 pending"), "{e}");
    let cancelled = k.command("/reminders cancel 7").await;
    assert!(cancelled.text.contains("已取消提醒 #7"), "{cancelled:?}");
    assert_eq!(rem.list(false).await.unwrap().len(), 49);
    assert!(rem.cancel(7).await.is_err(), "not twice");
}

#[tokio::test]
async fn a_reminder_due_while_down_rings_at_start_marked_late_and_two_in_one_second_ring_once_in_order(
) {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    let rem = k.reminders().clone();
    rem.set(None, Some("20:00".into()), "关火".into(), origin("local"))
        .await
        .unwrap();
    rem.set(None, Some("20:00".into()), "下面条".into(), origin("local"))
        .await
        .unwrap();
    drop(k); // down before it rang (the file was written when it was set)

    clock.set(at("2026-10-22T20:03:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    let door = Recorder::at_cli(&k, 0);
    // the start-up tick ran before the door existed: it is retried, then delivered
    let got = eventually_some("two rings at the door", RING, || {
        Some(door.got()).filter(|g| g.len() >= 2)
    })
    .await;
    assert_eq!(
        got.iter().map(|g| g.1.as_str()).collect::<Vec<_>>(),
        ["提醒：关火（晚了 3 分钟）", "提醒：下面条（晚了 3 分钟）"]
    );
    eventually("two rings at the door", RING, || door.got().len() == 2).await;
    let rem = k.reminders();
    eventually_async("both rings marked", Duration::from_secs(10), || async {
        let d = rem.delivering().await;
        if d.is_empty() {
            Ok(())
        } else {
            Err(format!("{} still delivering", d.len()))
        }
    })
    .await;
    assert!(rem.delivering().await.is_empty(), "both marked");
    rem.wake().await;
    assert!(
        rem.delivering().await.is_empty(),
        "marked fired: never started again"
    );
    assert_eq!(door.got().len(), 2, "each rang once");
}

#[tokio::test]
async fn a_delivery_that_keeps_failing_is_marked_undelivered() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(dir.path(), &fake, &clock);
    let door = Recorder::at_cli(&k, 2);
    let rem = k.reminders();
    rem.set(Some(60), None, "关火".into(), origin("local"))
        .await
        .unwrap();
    clock.set(at("2026-10-22T19:51:00+08:00"));
    rem.wake().await;
    // the first fails twice, then is delivered within the retry window
    let got = eventually_some("a ring at the door", RING, || {
        Some(door.got()).filter(|g| !g.is_empty())
    })
    .await;
    assert_eq!(got, [("local".to_string(), "提醒：关火".to_string())]);
    // a channel that is not running at all: undelivered once the retries give up
    k.doors().withdraw("cli");
    rem.set(Some(30), None, "最后一个".into(), origin("local"))
        .await
        .unwrap();
    clock.set(at("2026-10-22T19:52:00+08:00"));
    rem.wake().await;
    let text = eventually_async("the reminder marked undelivered", RING, || async {
        let text = k.command("/reminders all").await.text;
        if text.contains("未送达") {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    assert!(
        text.contains("最后一个") && text.contains("not running"),
        "{text}"
    );
}

#[tokio::test]
async fn homebot_reminders_lists_and_cancels() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(Utc::now());
    let k = kernel(ws, &fake, &clock);
    k.reminders()
        .set(Some(3600), None, "收衣服".into(), origin("local"))
        .await
        .unwrap();
    drop(k);
    let o = homebot(ws, None).arg("reminders").output().await.unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(
        out.contains("#1") && out.contains("收衣服") && out.contains("待响"),
        "{out}"
    );
    let o = homebot(ws, None)
        .args(["reminders", "cancel", "1"])
        .output()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("已取消提醒 #1"),
        "{o:?}"
    );
    let o = homebot(ws, None)
        .args(["reminders", "cancel", "1"])
        .output()
        .await
        .unwrap();
    assert!(!o.status.success(), "cancelling twice is an error");
    let o = homebot(ws, None)
        .args(["reminders", "--all"])
        .output()
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("已取消"),
        "{o:?}"
    );
}

#[tokio::test]
async fn the_timer_rings_by_itself_without_a_wake() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(dir.path(), &fake, &clock);
    let door = Recorder::at_cli(&k, 0);
    k.reminders()
        .set(Some(1), None, "翻面".into(), origin("local"))
        .await
        .unwrap();
    // the Cron armed a one-second sleep; when it ends, the clock says it is due
    clock.set(at("2026-10-22T19:50:01+08:00"));
    let got = eventually_some("a ring at the door", RING, || {
        Some(door.got()).filter(|g| !g.is_empty())
    })
    .await;
    assert_eq!(got[0].1, "提醒：翻面");
}

#[tokio::test]
async fn a_reminder_cancelled_while_it_is_being_delivered_does_not_ring() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(dir.path(), &fake, &clock);
    let door = Recorder::at_cli(&k, 1_000); // unreachable: retried
    let rem = k.reminders();
    let r = rem
        .set(Some(60), None, "关火".into(), origin("local"))
        .await
        .unwrap();
    clock.set(at("2026-10-22T19:51:00+08:00"));
    rem.wake().await;
    assert_eq!(rem.delivering().await, [r.id]);
    rem.cancel(r.id).await.unwrap();
    assert!(rem.delivering().await.is_empty(), "its delivery stopped");
    *door.fail_first.lock().unwrap() = 0; // reachable again: it must still not ring
    rem.wake().await;
    assert!(rem.delivering().await.is_empty());
    assert!(door.got().is_empty());
}

#[tokio::test]
async fn a_chat_sees_and_cancels_only_its_own_reminders() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let clock = ManualClock::new(at("2026-10-22T19:50:00+08:00"));
    let k = kernel(dir.path(), &fake, &clock);
    let private = Origin {
        channel: "qq".into(),
        chat_id: "private:10001".into(),
        speaker_id: "mom".into(),
        target: "private:10001".into(),
    };
    let r = k
        .reminders()
        .set(Some(600), None, "给爸爸的惊喜".into(), private)
        .await
        .unwrap();
    // a guest in the family group sees none of it and cannot cancel it
    let group = |text: &str| qq::turn("group:5550001", "qq:99999", text);
    let listed = k.handle_turn(group("/reminders")).await.text;
    assert_eq!(listed, "没有提醒。", "{listed}");
    let cancel = k
        .handle_turn(group(&format!("/reminders cancel {}", r.id)))
        .await;
    assert!(!cancel.is_answered(), "{cancel:?}");
    assert_eq!(k.reminders().list(false).await.unwrap().len(), 1);
    // the chat that set it, and the owner, see it
    let own = k
        .handle_turn(qq::turn("private:10001", "mom", "/reminders"))
        .await
        .text;
    assert!(own.contains("给爸爸的惊喜"), "{own}");
    assert!(k.command("/reminders").await.text.contains("给爸爸的惊喜"));
}
