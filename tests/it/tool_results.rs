//! Key tool results in the history: a reminder set in one turn is kept in that turn's
//! record and sent once, as a `[工具结果]` block of the next request's user message —
//! never as replayed tool calls or tool messages — and replayed exactly from then on, so
//! a question two turns later is answered from it (the fake model reads the request).

use crate::common;

use chrono::{DateTime, Utc};
use common::*;
use homebot::channels::cli;
use homebot::clock::ManualClock;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

fn kernel(ws: &Path, fake: &FakeLlm, clock: &ManualClock) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(Arc::new(clock.clone())),
            ..Default::default()
        },
    )
    .unwrap()
}

/// The time the `[工具结果]` block of any user message of `body` says the reminder rings.
fn ring_time_in(body: &Value) -> Option<String> {
    let all = user_text(body);
    let block = all
        .split("[工具结果]\n")
        .nth(1)?
        .split("\n[/工具结果]")
        .next()?;
    let (_, after) = block.split_once("已设好，")?;
    Some(after.split(' ').nth(1)?.to_string())
}

/// Sets a ten-minute timer when asked to remind; asked when, answers from the
/// `[工具结果]` block it was sent (or says it does not know).
async fn model() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or_default();
        // the mode's summary: says when the reminder rings if its transcript shows it
        if msgs[0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with(SUMMARIZER_MARK))
        {
            let said = last["content"].as_str().unwrap_or_default();
            let ring = said
                .lines()
                .find(|l| l.starts_with("工具结果: — ") && l.contains("set_reminder"))
                .and_then(|l| {
                    l.split_once("已设好，")
                        .or_else(|| l.split_once("set for "))
                })
                .map(|(_, after)| after.to_string());
            return text(&format!(
                "## 总结\n提醒：{}",
                ring.unwrap_or_else(|| "不知道".into())
            ));
        }
        if last["role"] == "tool" {
            return text("好的，定好了。");
        }
        let words = user_words(&last);
        if words.contains("提醒我") {
            return tool_call("set_reminder", json!({"in_seconds": 600, "text": "关火"}));
        }
        if words.contains("几点") {
            return text(&match ring_time_in(body) {
                Some(t) => format!("定在 {t}。"),
                None => "我不知道。".to_string(),
            });
        }
        text("先放鸡蛋。")
    })
    .await
}

const SUMMARIZER_MARK: &str = "你是家庭助手 homebot 的会话总结员";

fn roles(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_reminder_set_two_turns_ago_answers_when_it_rings() {
    two_turns_later(false).await;
}

#[tokio::test]
async fn a_reminder_set_in_a_cooking_session_answers_two_turns_later() {
    two_turns_later(true).await;
}

/// A timer set, another question, then "when?" — in a normal chat, or in a cooking
/// session (the session's record keeps the result).
async fn two_turns_later(in_mode: bool) {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(
        DateTime::parse_from_rfc3339("2026-12-06T19:50:00+08:00")
            .unwrap()
            .with_timezone(&Utc),
    );
    let k = kernel(ws, &fake, &clock);
    if in_mode {
        assert!(k.command("/mode enter cooking").await.is_answered());
    }
    let say = |words: &'static str| k.handle_turn(cli::turn("local", "mom", words));

    let r1 = say("十分钟后提醒我关火").await;
    assert!(r1.text.contains("定好了"), "{}", r1.text);
    // the turn's record keeps what set_reminder returned
    let log = if in_mode {
        session_dir(ws).join("conversation.jsonl")
    } else {
        std::fs::read_dir(ws.join("chats/cli"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .unwrap()
    };
    let recs = jsonl(&log);
    assert_eq!(
        recs[0]["tool_results"][0]["tool"], "set_reminder",
        "{:?}",
        recs[0]
    );
    let kept = recs[0]["tool_results"][0]["result"].as_str().unwrap();
    assert!(kept.contains("20:00:00"), "{kept}");

    say("番茄炒蛋先放什么？").await;
    let r3 = say("你刚才把提醒定在几点？").await;
    assert_eq!(r3.text, "定在 20:00:00。");

    let reqs = turn_requests(&fake);
    let (second, third) = (&reqs[1], &reqs[2]);
    // the next request's user message carries the block once, after the words
    let msg2 = last_user(second);
    assert!(
        msg2.contains("番茄炒蛋先放什么？")
            && msg2.contains("\n[工具结果]\n— 19:50 set_reminder：ok: reminder #1 set")
            && msg2.contains("20:00:00"),
        "{msg2}"
    );
    // never as tool calls or tool messages: turn 1 is replayed as its words and reply
    for req in [second, third] {
        assert!(!roles(req).iter().any(|r| r == "tool"), "{:?}", roles(req));
        let calls = req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.get("tool_calls").is_some_and(|c| !c.is_null()));
        assert!(!calls, "{req}");
    }
    // turn 3: the second message is replayed byte for byte, the block is not sent again
    let replayed: Vec<&str> = third["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(replayed.contains(&msg2.as_str()), "{replayed:?}");
    assert!(!last_user(third).contains("[工具结果]"));
    assert_eq!(user_text(third).matches("[工具结果]").count(), 1);

    // the bill: the block's tokens are a block of the second request's audit shape
    k.provider().flush().await;
    let wsp = homebot::workspace::Workspace::open(&ws.canonicalize().unwrap()).unwrap();
    let audit = homebot::audit::load(&wsp, None).unwrap();
    let turns: Vec<_> = audit
        .records
        .iter()
        .filter(|r| r.purpose == "turn")
        .filter_map(|r| r.shape.as_ref())
        .collect();
    let block = |s: &homebot::provider::PromptShape| {
        s.blocks
            .iter()
            .find(|b| b.name == "tool_results")
            .map(|b| b.tokens)
    };
    let with: Vec<u64> = turns.iter().filter_map(|s| block(s)).collect();
    assert_eq!(with.len(), 1, "sent once: {turns:?}");
    assert!(with[0] > 20, "{with:?}");
    k.shutdown();
}

/// The mode ends after the timer was set: the summary's transcript shows what the tool
/// returned, under the turn that set it, so the summary (and the next session's "last
/// time") can say when it rings.
#[tokio::test]
async fn a_mode_s_summary_reads_what_its_tools_kept() {
    let dir = workspace();
    let ws = dir.path();
    let fake = model().await;
    let clock = ManualClock::new(
        DateTime::parse_from_rfc3339("2026-12-06T19:50:00+08:00")
            .unwrap()
            .with_timezone(&Utc),
    );
    let k = kernel(ws, &fake, &clock);
    assert!(k.command("/mode enter cooking").await.is_answered());
    let sdir = session_dir(ws);
    let say = |words: &'static str| k.handle_turn(cli::turn("local", "mom", words));
    say("十分钟后提醒我关火").await;
    say("番茄炒蛋先放什么？").await;
    assert!(k.command("/mode exit").await.is_answered());
    let summary = sdir.join("summary.md");
    until(|| std::fs::read_to_string(&summary).is_ok_and(|s| s.contains("提醒："))).await;
    let asked = fake
        .requests()
        .into_iter()
        .find(|b| {
            b["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with(SUMMARIZER_MARK))
        })
        .expect("a summary request");
    let transcript = asked["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    let set = transcript.find("十分钟后提醒我关火").unwrap();
    let kept = transcript
        .find("工具结果: — 19:50 set_reminder：ok: reminder #1 set")
        .unwrap_or_else(|| panic!("{transcript}"));
    assert!(set < kept && kept < transcript.find("番茄炒蛋先放什么").unwrap());
    let written = std::fs::read_to_string(&summary).unwrap();
    assert!(written.contains("20:00:00"), "{written}");
    k.shutdown();
}
