//! Scene memory through the real kernel path: a fake OpenAI-compatible server scripts
//! `memory_commit`, the kernel runs the tool, and the recorded requests show what was
//! recalled — in the tail of the user message, never in the system prompt. Time is a
//! controlled clock: "a week later" is one `set`. What the scene is on each channel (a QQ
//! group, a voice speaker, a CLI injection) is in [`crate::memory_scenes`].

use crate::common;

use chrono::{DateTime, Utc};
use common::*;
use homebot::clock::ManualClock;
use homebot::config::ScenePolicy;
use homebot::kernel::{Kernel, KernelOptions};
use homebot::turn::Turn;
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A model that keeps what it is asked to remember ("记住：…" → `memory_commit`),
/// switches modes like [`scripted`], and otherwise answers briefly.
pub(crate) async fn fake() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or(Value::Null);
        if last["role"] == "tool" {
            return text(&format!(
                "（结果）{}",
                last["content"].as_str().unwrap_or_default()
            ));
        }
        let words = own_words(&last);
        if let Some(what) = words.strip_prefix("记住：") {
            return tool_call("memory_commit", json!({"content": what}));
        }
        if let Some(rest) = words.strip_prefix("记到别的群：") {
            return tool_call(
                "memory_commit",
                json!({"content": rest, "scene": "chan:qq/peer:group_2048"}),
            );
        }
        if words.contains("做饭模式") {
            return scripted(body);
        }
        text("好的。")
    })
    .await
}

/// The user's words: after the context block and any recalled block.
fn own_words(msg: &Value) -> String {
    let w = user_words(msg);
    match w.rsplit_once("[/场景记忆]\n\n") {
        Some((_, words)) => words.to_string(),
        None => w,
    }
}

pub(crate) fn kernel(ws: &std::path::Path, fake: &FakeLlm, clock: &ManualClock) -> Kernel {
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

fn qq(chat: &str, text: &str) -> Turn {
    homebot::channels::qq::turn(chat, "qq:10001", text)
}

/// The last user message of the latest first-request of a turn.
/// A kernel at 2026-03-02 19:30 whose first turn, in QQ group 1027, asked it to remember
/// a rule for that group (answered).
async fn kept_in_group_1027() -> (tempfile::TempDir, FakeLlm, ManualClock, Kernel) {
    let dir = workspace();
    let fake = fake().await;
    let clock = ManualClock::new(at("2026-03-02T19:30:00+08:00"));
    let k = kernel(dir.path(), &fake, &clock);
    let r = k
        .handle_turn(qq("group:1027", "记住：在这个群里回答要简短，不超过三句话"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    (dir, fake, clock, k)
}

pub(crate) fn last_tail(fake: &FakeLlm) -> String {
    let r = turn_requests(fake).pop().expect("a request was made");
    let msgs = r["messages"].as_array().unwrap().clone();
    msgs.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn system_of(req: &Value) -> String {
    req["messages"][0]["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_memory_kept_in_a_group_is_recalled_there_a_week_later_and_nowhere_else() {
    let (dir, fake, clock, k) = kept_in_group_1027().await;
    let ws = dir.path();
    let results = tool_results(fake.requests().last().unwrap());
    assert!(
        results[0]
            .1
            .contains("kept as memory #1 for scene chan:qq/peer:group_1027"),
        "{results:?}"
    );
    k.memory().flush().await;

    // a week later, in the morning, someone asks something that shares no word with it
    clock.set(at("2026-03-09T08:15:00+08:00"));
    k.handle_turn(qq("group:1027", "周末去哪里玩比较好？"))
        .await;
    let tail = last_tail(&fake);
    assert!(tail.contains("[场景记忆]"), "{tail}");
    assert!(
        tail.contains("[#1] 在这个群里回答要简短，不超过三句话"),
        "{tail}"
    );
    // after the user's words and the context block
    let (ctx, words) = (
        tail.find("[/上下文]").unwrap(),
        tail.find("周末去哪里玩比较好").unwrap(),
    );
    let mem = tail.find("[场景记忆]").unwrap();
    assert!(words < ctx && ctx < mem, "{tail}");
    let req = turn_requests(&fake).pop().unwrap();
    assert!(!system_of(&req).contains("简短，不超过三句话"));

    // another group at the same moment, a private chat, the terminal: nothing recalled
    for turn in [
        qq("group:2048", "周末去哪里玩比较好？"),
        qq("private:10001", "周末去哪里玩比较好？"),
        homebot::channels::cli::turn("local", "owner", "周末去哪里玩比较好？"),
    ] {
        k.handle_turn(turn.clone()).await;
        let tail = last_tail(&fake);
        assert!(!tail.contains("场景记忆"), "{}: {tail}", turn.chat_id);
    }

    // a memory for another group cannot be planted from this one
    k.handle_turn(qq("group:1027", "记到别的群：那个群的人都不喜欢香菜"))
        .await;
    let results = tool_results(fake.requests().last().unwrap());
    assert!(
        results[0].1.contains("is not this conversation's"),
        "{results:?}"
    );

    // forgotten from the command line while the kernel runs: no longer recalled
    let out = homebot(ws, None).args(["memory"]).output().await.unwrap();
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{out:?}");
    assert!(listing.contains("chan:qq/peer:group_1027"), "{listing}");
    assert!(listing.contains("在这个群里回答要简短"), "{listing}");
    assert!(!listing.contains("香菜"), "{listing}");
    let out = homebot(ws, None)
        .args(["memory", "--scene", "CHAN:QQ"])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("chan:qq/peer:group_1027"));
    let out = homebot(ws, None)
        .args(["memory", "--scene", "chan:qq2"])
        .output()
        .await
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(listing.contains("no scene under that key"), "{listing}");
    assert!(!listing.contains("在这个群里回答要简短"), "{listing}");
    let out = homebot(ws, None)
        .args(["memory", "forget", "1"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    k.memory().flush().await;
    k.handle_turn(qq("group:1027", "周末去哪里玩比较好？"))
        .await;
    assert!(!last_tail(&fake).contains("场景记忆"));
    let out = homebot(ws, None)
        .args(["memory", "forget", "1"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no memory 1"));
    k.shutdown();
}

#[tokio::test]
async fn recall_goes_into_the_tail_while_the_modes_system_prompt_stays_byte_identical() {
    let dir = workspace();
    let ws = dir.path();
    let fake = fake().await;
    let clock = ManualClock::new(at("2026-03-02T18:00:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    k.handle_turn(qq("group:1027", "打开做饭模式")).await;
    assert_eq!(action(ws)["active"], true);
    k.handle_turn(qq("group:1027", "今晚做番茄炒蛋")).await;
    let before = turn_requests(&fake).pop().unwrap();
    assert!(!last_tail(&fake).contains("场景记忆"));
    k.handle_turn(qq("group:1027", "记住：我们家做饭按三个人的量"))
        .await;
    k.memory().flush().await;
    clock.set(at("2026-03-02T19:00:00+08:00"));
    k.handle_turn(qq("group:1027", "下一步呢？")).await;
    let after = turn_requests(&fake).pop().unwrap();
    assert!(last_tail(&fake).contains("[#1] 我们家做饭按三个人的量"));
    // the stable prefix: the system prompt, byte for byte, and the tools
    assert_eq!(system_of(&before), system_of(&after));
    assert_eq!(before["tools"], after["tools"]);
    // and the history of the earlier request is the start of this one's
    let b = before["messages"].as_array().unwrap();
    let a = after["messages"].as_array().unwrap();
    assert_eq!(a[..b.len() - 1], b[..b.len() - 1]);
    let names: Vec<&str> = after["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        &names[names.len() - 3..],
        ["memory_commit", "memory_search", "ask_user_choice"]
    );
    k.shutdown();
}

#[tokio::test]
async fn a_turn_under_the_none_policy_leaves_no_trace() {
    let dir = workspace();
    let ws = dir.path();
    let fake = fake().await;
    let clock = ManualClock::new(at("2026-03-02T19:30:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    for day in 2..6 {
        clock.set(at(&format!("2026-03-0{day}T19:30:00+08:00")));
        let mut t = qq("group:1027", "晚饭吃什么");
        t.scene_policy = Some(ScenePolicy::None);
        k.handle_turn(t).await;
    }
    let mut t = qq("group:1027", "记住：不留痕迹");
    t.scene_policy = Some(ScenePolicy::None);
    k.handle_turn(t).await;
    let results = tool_results(fake.requests().last().unwrap());
    assert!(results[0].1.contains("policy is `none`"), "{results:?}");
    k.memory().flush().await;
    let store =
        homebot::memory::Store::open(&ws.join("memory/memory.db"), k.config().memory.clone())
            .unwrap();
    let st = store.stats().unwrap();
    assert_eq!((st.memories, st.scenes, st.evidence), (0, 0, 0));
    // the same turns with the default policy: evidence, then a scene
    for day in 6..8 {
        clock.set(at(&format!("2026-03-0{day}T19:30:00+08:00")));
        k.handle_turn(qq("group:1027", "晚饭吃什么")).await;
    }
    k.memory().flush().await;
    let st = store.stats().unwrap();
    assert_eq!((st.scenes, st.evidence), (1, 0));
    k.shutdown();
}

#[tokio::test]
async fn oversized_memory_and_query_are_refused_with_the_limit_and_the_database_is_private() {
    let dir = workspace();
    let ws = dir.path();
    let long = "长".repeat(501);
    let query = "问".repeat(201);
    let (l, q) = (long.clone(), query.clone());
    let fake = FakeLlm::start(move |body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or(Value::Null);
        if last["role"] == "tool" {
            return text("好");
        }
        tool_calls(&[
            ("memory_commit", json!({"content": l})),
            ("memory_search", json!({"query": q})),
            (
                "memory_commit",
                json!({"content": "短的", "scene": "chan:qq/part:evening"}),
            ),
            ("read_file", json!({"path": "memory/memory.db"})),
            ("list_files", json!({"path": "memory"})),
        ])
    })
    .await;
    let clock = ManualClock::new(at("2026-03-02T19:30:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    k.handle_turn(qq("group:1027", "随便")).await;
    let results = tool_results(fake.requests().last().unwrap());
    assert!(
        results[0].1.contains("501 characters; the limit is 500"),
        "{results:?}"
    );
    assert!(
        results[1].1.contains("201 characters; the limit is 200"),
        "{results:?}"
    );
    assert!(results[2].1.contains("weak feature"), "{results:?}");
    // the database is the memory thread's: the file tools never open it
    assert!(results[3].1.contains("is private"), "{results:?}");
    assert!(results[4].1.contains("is private"), "{results:?}");
    k.shutdown();
}

#[tokio::test]
async fn a_broken_memory_database_never_fails_a_turn_and_is_left_as_it_was() {
    let dir = workspace();
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("memory")).unwrap();
    let garbage = b"this is not an SQLite database, but someone's file".repeat(100);
    std::fs::write(ws.join("memory/memory.db"), &garbage).unwrap();
    let fake = fake().await;
    let clock = ManualClock::new(at("2026-03-02T19:30:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    // the database is opened by the first turn (a gateway that runs none never loads
    // SQLite); what it finds is unusable
    let r = k.handle_turn(qq("group:1027", "记住：三个人吃饭")).await;
    assert!(!k.memory().is_running());
    assert!(!k.memory().ready().await);
    assert!(r.is_answered(), "{r:?}");
    let results = tool_results(fake.requests().last().unwrap());
    assert!(results[0].1.contains("not kept"), "{results:?}");
    let r = k.handle_turn(qq("group:1027", "晚饭吃什么")).await;
    assert_eq!(r.text, "好的。");
    assert_eq!(std::fs::read(ws.join("memory/memory.db")).unwrap(), garbage);
    k.shutdown();
}

/// Scene memory opens its database with the first turn, not at start: that turn still
/// recalls what an earlier run of the kernel kept.
#[tokio::test]
async fn after_a_restart_the_very_first_turn_recalls_what_was_kept() {
    let (dir, fake, clock, k) = kept_in_group_1027().await;
    let ws = dir.path();
    k.shutdown_gracefully(std::time::Duration::from_secs(10))
        .await;
    drop(k);

    clock.set(at("2026-03-09T08:15:00+08:00"));
    let k = kernel(ws, &fake, &clock);
    k.handle_turn(qq("group:1027", "周末去哪里玩比较好？"))
        .await;
    let tail = last_tail(&fake);
    assert!(
        tail.contains("[#1] 在这个群里回答要简短，不超过三句话"),
        "{tail}"
    );
    k.shutdown();
}
