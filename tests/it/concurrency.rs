//! One mode, many channels: concurrent turns from simulated voice, QQ and CLI chats
//! against a slow fake provider, with enter / exit interleaved. Afterwards every file is
//! checked against the invariants listed in `src/modes/mode_core/mod.rs` (one active mode, every
//! turn recorded once in its session, archival once and last), and `action.json` is
//! checked to have been a complete, valid document at every moment a watcher looked.

use crate::common;

use common::*;
use homebot::channels::{cli, qq, voice};
use homebot::modes::action::ActionDoc;
use homebot::turn::{Failure, Outcome, Refusal};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn write_config(ws: &Path, extra: &str) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(ws.join("config.toml"), extra).unwrap();
}

/// Tiny deterministic PRNG so the "random" delays are reproducible.
fn jitter(n: usize) -> u64 {
    let mut x = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    x % 40
}

/// For each request that starts a turn: the user's words and the mode session the
/// prompt was built for (`None`: normal operation).
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// The mode session a request was built in: named by the frozen prompt's
/// `[本次会话]` block in the system message.
fn session_in_system(system: &str) -> Option<String> {
    let i = system.find("\n[本次会话]\n会话: ")?;
    let rest = &system[i + "\n[本次会话]\n会话: ".len()..];
    Some(rest.split_whitespace().next()?.to_string())
}

fn all_files(dir: &Path, name_ends: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            all_files(&p, name_ends, out);
        } else if p.to_string_lossy().ends_with(name_ends) {
            out.push(p);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_channels_keep_every_invariant() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    write_config(
        &ws,
        "[agent]\nmax_queued_per_chat = 64\n[provider]\nmax_concurrent = 16\n",
    );

    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    let fake = FakeLlm::start(move |body, n| {
        let msgs = body["messages"].as_array().unwrap();
        let last = msgs.last().unwrap();
        // a turn's first request (it offers tools); a compaction or a summary, which the
        // quiet chats and the ended sessions get in the background, offers none
        let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        if last["role"] == "user" && offers_tools {
            let system = msgs[0]["content"].as_str().unwrap();
            seen2
                .lock()
                .unwrap()
                .push((user_words(last), session_in_system(system)));
        }
        FakeReply::Delay(Duration::from_millis(jitter(n)), Box::new(scripted(body)))
    })
    .await;
    let kernel = start_kernel(&ws, &fake);

    // a watcher that reads action.json as fast as it can
    let stop = Arc::new(AtomicBool::new(false));
    let looks = Arc::new(AtomicUsize::new(0));
    let watcher = {
        let (stop, looks, path) = (stop.clone(), looks.clone(), ws.join("modes/action.json"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match ActionDoc::read(&path) {
                    Ok(Some(_)) => {
                        looks.fetch_add(1, Ordering::Relaxed);
                    }
                    other => panic!("action.json was not a valid document: {other:?}"),
                }
            }
        })
    };

    let chats: Vec<(&str, String)> = vec![
        ("voice", "wake-1".into()),
        ("voice", "wake-2".into()),
        ("voice", "wake-3".into()),
        ("qq", "group:5550001".into()),
        ("qq", "group:5550002".into()),
        ("qq", "private:10001".into()),
        ("cli", "local".into()),
    ];
    const PER_CHAT: usize = 24;
    // where the switches happen: (chat index, message index, words)
    let switches: HashMap<(usize, usize), &str> = HashMap::from([
        ((3, 2), "打开做饭模式"),
        ((6, 6), "结束做饭模式"),
        ((0, 9), "进入做饭模式"),
        ((4, 12), "退出做饭模式"),
        ((5, 14), "开始做饭模式"),
        ((1, 18), "关闭做饭模式"),
        ((2, 20), "启用做饭模式"),
    ]);
    let mut expected: Vec<(usize, usize, String)> = Vec::new();
    let mut pending = Vec::new();
    // round-robin arrival: every message is admitted at once, in this order
    for i in 0..PER_CHAT {
        for (c, (channel, chat)) in chats.iter().enumerate() {
            let text = match switches.get(&(c, i)) {
                Some(w) => format!("{w} [{c}#{i}]"),
                None => format!("番茄问题 [{c}#{i}]"),
            };
            expected.push((c, i, text.clone()));
            let speaker = format!("member{}", c % 3);
            pending.push(kernel.submit(crate::common::turn_of(
                channel,
                chat.clone(),
                speaker,
                text,
            )));
        }
        if i == 10 {
            // an explicit command in the middle of it all
            pending.push(kernel.submit(cli::turn("admin", "owner", "/mode status")));
        }
    }
    let mut errors = Vec::new();
    for p in pending {
        let r = p.reply().await;
        if !r.is_answered() {
            errors.push(r);
        }
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().expect("action.json stayed valid throughout");
    assert!(errors.is_empty(), "turns failed: {errors:?}");
    assert!(looks.load(Ordering::Relaxed) > 0);

    // gather every record from every session and chat file
    let mut files = Vec::new();
    all_files(&ws.join("modes/sessions"), "conversation.jsonl", &mut files);
    all_files(&ws.join("chats"), ".jsonl", &mut files);
    let mut where_recorded: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for f in &files {
        let mut last_seq: HashMap<usize, usize> = HashMap::new();
        for rec in jsonl(f) {
            let user = rec["user"].as_str().unwrap().to_string();
            let tag = user.rsplit('[').next().unwrap().trim_end_matches(']');
            let (c, i) = tag.split_once('#').unwrap();
            let (c, i): (usize, usize) = (c.parse().unwrap(), i.parse().unwrap());
            // order per chat inside every file
            if let Some(prev) = last_seq.insert(c, i) {
                assert!(
                    prev < i,
                    "{}: chat {c} out of order ({prev} then {i})",
                    f.display()
                );
            }
            assert_eq!(rec["channel"], chats[c].0);
            assert_eq!(rec["chat_id"], chats[c].1.as_str());
            where_recorded.entry(user).or_default().push(f.clone());
        }
    }
    // every turn recorded exactly once
    for (_, _, text) in &expected {
        let places = where_recorded.get(text).map(Vec::len).unwrap_or(0);
        assert_eq!(places, 1, "{text:?} recorded {places} times");
    }
    assert_eq!(where_recorded.len(), expected.len());

    // the provider saw each chat's turns in arrival order
    let seen = seen.lock().unwrap().clone();
    let mut last_seen: HashMap<usize, usize> = HashMap::new();
    for (words, _) in &seen {
        let tag = words.rsplit('[').next().unwrap().trim_end_matches(']');
        let (c, i) = tag.split_once('#').unwrap();
        let (c, i): (usize, usize) = (c.parse().unwrap(), i.parse().unwrap());
        if let Some(prev) = last_seen.insert(c, i) {
            assert!(
                prev < i,
                "chat {c} processed out of order ({prev} then {i})"
            );
        }
    }

    // each turn is recorded in the session it began in (or, for the turn that entered
    // a mode, in the session it made); normal-operation turns in their chat file
    let began_in: HashMap<String, Option<String>> = seen.into_iter().collect();
    for (text, places) in &where_recorded {
        let file = &places[0];
        let session = file
            .strip_prefix(ws.join("modes/sessions/cooking"))
            .ok()
            .and_then(|p| p.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let began = began_in.get(text).cloned().flatten();
        match (&session, &began) {
            (Some(s), Some(b)) => assert_eq!(s, b, "{text:?} began in {b} but is recorded in {s}"),
            (Some(_), None) => assert!(
                text.contains("做饭模式"),
                "{text:?} began outside any mode but is in a session"
            ),
            (None, Some(b)) => {
                panic!("{text:?} began in session {b} but is recorded as normal operation")
            }
            (None, None) => {}
        }
    }

    // archives: one summary per ended session, each indexed once
    let mut sessions: Vec<PathBuf> = std::fs::read_dir(ws.join("modes/sessions/cooking"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sessions.sort();
    assert!(
        sessions.len() >= 2,
        "the interleaved switches made several sessions: {sessions:?}"
    );
    let a = action(&ws);
    let history = std::fs::read_to_string(ws.join("cooking/history.md")).unwrap();
    for s in &sessions {
        let sid = s.file_name().unwrap().to_str().unwrap();
        let active = a["session_id"] == sid;
        assert_eq!(s.join("summary.md").exists(), !active, "{sid}");
        let index_lines = history
            .lines()
            .filter(|l| l.starts_with("- ") && l.contains(sid))
            .count();
        assert_eq!(
            index_lines,
            usize::from(!active),
            "{sid} indexed {index_lines} times"
        );
        let mut summaries = Vec::new();
        all_files(s, "summary.md", &mut summaries);
        assert!(summaries.len() <= 1);
    }
    let _: Value = a;
}

#[tokio::test]
async fn a_flooding_chat_is_told_to_wait_and_others_are_unaffected() {
    let dir = workspace();
    let ws = dir.path();
    write_config(ws, "[agent]\nmax_queued_per_chat = 2\n");
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_millis(300), Box::new(scripted(body)))
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    let mut flood = Vec::new();
    for i in 0..5 {
        flood.push(kernel.submit(qq::turn("group:1", "kid", format!("第{i}条"))));
    }
    let other = kernel.submit(qq::turn("group:2", "mom", "别的群"));
    let mut replies = Vec::new();
    for p in flood {
        replies.push(p.reply().await);
    }
    // the first runs, two wait, two are refused with a clear message
    let refused: Vec<_> = replies
        .iter()
        .filter(|r| r.text.contains("消息太多了"))
        .collect();
    assert_eq!(refused.len(), 2, "{replies:?}");
    for r in &refused {
        assert!(
            matches!(
                r.outcome,
                Outcome::Refused {
                    reason: Refusal::Busy,
                    ..
                }
            ),
            "{r:?}"
        );
    }
    assert_eq!(replies[0].text, "好的：第0条");
    assert_eq!(replies[1].text, "好的：第1条");
    assert_eq!(replies[2].text, "好的：第2条");
    assert_eq!(other.reply().await.text, "好的：别的群");
}

#[tokio::test]
async fn the_watchdog_ends_a_stuck_turn_and_the_chat_goes_on() {
    let dir = workspace();
    let ws = dir.path();
    write_config(ws, "[agent]\nturn_timeout_secs = 1\n");
    let fake = FakeLlm::start(|body, n| match n {
        0 => FakeReply::Delay(Duration::from_secs(30), Box::new(text("太晚了"))),
        _ => scripted(body),
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/mode enter cooking").await;
    let stuck = kernel.submit(voice::turn("w1", "dad", "卡住的问题"));
    let next = kernel.submit(voice::turn("w1", "dad", "下一句"));
    let r = stuck.reply().await;
    assert!(r.text.contains("处理时间太长"), "{}", r.text);
    assert!(
        matches!(
            r.outcome,
            Outcome::Failed {
                error: Failure::Timeout,
                ..
            }
        ),
        "{r:?}"
    );
    assert_eq!(next.reply().await.text, "好的：下一句");
    let lines = jsonl(&session_dir(ws).join("conversation.jsonl"));
    assert_eq!(lines.len(), 2);
    assert!(lines[0]["error"]
        .as_str()
        .unwrap()
        .contains("turn exceeded 1 s"));
    assert!(lines[1].get("error").is_none());
    // an exit after a stuck turn still archives (nothing is left "in flight")
    kernel.command("/mode exit").await;
    assert_eq!(action(ws)["active"], false);
}

#[tokio::test]
async fn shutdown_finishes_admitted_turns_and_refuses_new_ones() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_millis(400), Box::new(scripted(body)))
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/mode enter cooking").await;
    let sdir = session_dir(ws);
    let a = kernel.submit(voice::turn("w1", "dad", "第一句"));
    let b = kernel.submit(qq::turn("group:1", "mom", "第二句"));
    let k2 = kernel.clone();
    let stopping =
        tokio::spawn(async move { k2.shutdown_gracefully(Duration::from_secs(10)).await });
    eventually("shutdown closed admission", Duration::from_secs(10), || {
        !kernel.is_admitting()
    })
    .await;
    assert!(!kernel.is_admitting(), "shutdown closed admission");
    let late = kernel
        .submit(cli::turn("local", "owner", "太晚了"))
        .reply()
        .await;
    assert!(late.text.contains("正在关闭"), "{}", late.text);
    assert_eq!(a.reply().await.text, "好的：第一句");
    assert_eq!(b.reply().await.text, "好的：第二句");
    assert!(stopping.await.unwrap(), "finished within the deadline");
    let users: Vec<String> = jsonl(&sdir.join("conversation.jsonl"))
        .iter()
        .map(|l| l["user"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users.len(), 2);
    assert!(users.contains(&"第一句".to_string()) && users.contains(&"第二句".to_string()));
}

#[tokio::test]
async fn a_turn_still_running_when_the_grace_period_ends_is_stopped_and_recorded() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        FakeReply::Delay(Duration::from_secs(30), Box::new(scripted(body)))
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    let slow = kernel.submit(qq::turn("group:1", "mom", "慢慢想"));
    eventually(
        "the turn reached the provider",
        Duration::from_secs(30),
        || fake.calls() > 0,
    )
    .await;
    assert!(fake.calls() > 0, "the turn reached the provider");
    let clean = kernel.shutdown_gracefully(Duration::from_millis(100)).await;
    assert!(!clean, "the grace period was too short");
    let reply = slow.reply().await;
    assert!(reply.text.contains("正在关闭"), "{reply:?}");
    let chat = std::fs::read_dir(ws.join("chats/qq"))
        .expect("the qq chat has a history file")
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recs = jsonl(&chat);
    assert_eq!(recs.len(), 1, "stopped, and still recorded");
    assert_eq!(
        recs[0]["error"],
        "stopped by the shutdown before it finished"
    );
}
