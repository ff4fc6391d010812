//! Bad files in the workspace get clear errors, the rest keeps working, and nothing is
//! deleted: a corrupt mode.json, an unknown entrypoint, a corrupt action.json, a torn
//! conversation.jsonl.

use crate::common;

use common::*;
use homebot::channels::cli;
use std::collections::BTreeMap;
use std::path::Path;

fn write(p: &Path, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, s).unwrap();
}

/// Every file under `root` with its content. A file that vanishes while the folders are
/// walked (SQLite's journal of the memory thread, a temporary file of an atomic write
/// that a background writer of the previous kernel is finishing) was never state.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                match std::fs::read(&p) {
                    Ok(bytes) => {
                        out.insert(rel, bytes);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => panic!("{rel}: {e}"),
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn broken_mode_folders_are_reported_and_others_load() {
    let dir = workspace();
    let ws = dir.path();
    let skills = ws.join("skills");
    write(&skills.join("broken/mode.json"), "{\"id\": \"broken\", ");
    write(&skills.join("broken/SKILL.md"), "broken");
    write(
        &skills.join("typo/mode.json"),
        r#"{"id":"typo","display_name":"错字模式","enter_verb":["开"]}"#,
    );
    write(&skills.join("typo/SKILL.md"), "typo");
    write(
        &skills.join("ghost/mode.json"),
        r#"{"id":"ghost","display_name":"幽灵模式","entrypoint":"mode.py:GhostMode"}"#,
    );
    write(&skills.join("ghost/SKILL.md"), "ghost");
    let before = snapshot(ws);

    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    let broken = skills.join("broken/mode.json").canonicalize().unwrap();
    assert!(
        status.contains(&format!("mode not loaded: {}", broken.display())),
        "{status}"
    );
    assert!(status.contains("unknown field `enter_verb`"), "{status}");
    assert!(
        status.contains("unknown entrypoint \"mode.py:GhostMode\""),
        "{status}"
    );
    assert!(
        status.contains("做饭模式 (cooking)"),
        "cooking still loads: {status}"
    );
    assert!(!status.contains("(ghost)") && !status.contains("(typo)"));

    let r = kernel.command("/mode enter ghost").await;
    assert!(r.text.contains("unknown mode \"ghost\""), "{}", r.text);
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    assert!(r.text.contains("已进入做饭模式"), "{}", r.text);

    // the broken folders are untouched
    let after = snapshot(ws);
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{path} changed or vanished");
    }
}

#[tokio::test]
async fn corrupt_action_json_is_backed_up_and_the_live_session_restored() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    kernel
        .handle_turn(cli::turn("local", "mom", "切几个番茄"))
        .await;
    let before_doc = action(ws);
    let sdir = session_dir(ws);
    drop(kernel);

    let garbage = "{\"schema_version\":1,\"active\":tr";
    write(&ws.join("modes/action.json"), garbage);
    let before = snapshot(ws);

    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(status.contains("action.json is corrupt"), "{status}");
    assert!(
        status.contains("restored from its folder and continues"),
        "{status}"
    );
    // the corrupt file is kept for a human
    assert_eq!(
        std::fs::read_to_string(ws.join("modes/action.json.corrupt")).unwrap(),
        garbage
    );
    // the live session goes on: same lifecycle as before the damage
    let a = action(ws);
    for k in [
        "active",
        "mode_id",
        "display_name",
        "session_id",
        "skill_name",
        "started_at",
        "expires_at",
        "session_dir",
    ] {
        assert_eq!(a[k], before_doc[k], "{k}");
    }
    kernel
        .handle_turn(cli::turn("local", "mom", "然后呢"))
        .await;
    let users: Vec<String> = jsonl(&sdir.join("conversation.jsonl"))
        .iter()
        .map(|l| l["user"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["打开做饭模式", "切几个番茄", "然后呢"]);
    assert!(!sdir.join("summary.md").exists());
    // nothing that existed was deleted
    let after = snapshot(ws);
    for path in before.keys() {
        assert!(after.contains_key(path), "{path} vanished");
    }
    // and it ends normally
    kernel
        .handle_turn(cli::turn("local", "mom", "结束做饭模式"))
        .await;
    assert_eq!(action(ws)["exit_reason"], "user");
    assert!(sdir.join("summary.md").exists());
}

#[tokio::test]
async fn corrupt_action_json_without_a_live_session_starts_inactive() {
    let dir = workspace();
    let ws = dir.path();
    write(&ws.join("modes/action.json"), "not json at all");
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(
        status.contains("no unfinished session was found"),
        "{status}"
    );
    assert_eq!(action(ws)["active"], false);
    assert_eq!(action(ws)["exit_reason"], "recovered");
    assert!(ws.join("modes/action.json.corrupt").exists());
}

#[tokio::test]
async fn torn_conversation_tail_is_set_aside_at_start() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let conv = session_dir(ws).join("conversation.jsonl");
    drop(kernel);
    // a crash in the middle of an append
    let mut bytes = std::fs::read(&conv).unwrap();
    bytes.extend_from_slice(b"{\"timestamp\":\"2026-");
    std::fs::write(&conv, bytes).unwrap();

    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(status.contains("torn last line"), "{status}");
    let aside = std::fs::read_to_string(conv.with_extension("jsonl.corrupt")).unwrap();
    assert_eq!(aside, "{\"timestamp\":\"2026-\n");
    kernel
        .handle_turn(cli::turn("local", "mom", "下一步"))
        .await;
    let lines = jsonl(&conv);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["user"], "下一步");
}

/// A live session with one recorded turn; the kernel is stopped again.
async fn live_session(ws: &Path, fake: &FakeLlm) -> std::path::PathBuf {
    let kernel = start_kernel(ws, fake);
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    session_dir(ws)
}

fn users(conv: &Path) -> Vec<String> {
    jsonl(conv)
        .iter()
        .map(|l| l["user"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_non_utf8_action_json_is_set_aside_and_the_live_session_continues() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let sdir = live_session(ws, &fake).await;
    let sid = action(ws)["session_id"].clone();
    let garbage: &[u8] = b"{\"schema_version\":1,\"active\":\xff\xfe true}";
    std::fs::write(ws.join("modes/action.json"), garbage).unwrap();

    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(status.contains("action.json is corrupt"), "{status}");
    assert_eq!(
        std::fs::read(ws.join("modes/action.json.corrupt")).unwrap(),
        garbage
    );
    assert_eq!(action(ws)["session_id"], sid);
    kernel
        .handle_turn(cli::turn("local", "mom", "然后呢"))
        .await;
    assert_eq!(
        users(&sdir.join("conversation.jsonl")),
        ["打开做饭模式", "然后呢"]
    );
}

#[tokio::test]
async fn a_conversation_jsonl_that_is_a_directory_is_set_aside() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let sdir = live_session(ws, &fake).await;
    let conv = sdir.join("conversation.jsonl");
    std::fs::remove_file(&conv).unwrap();
    write(&conv.join("kept.txt"), "a human's file");
    // a chat history that is a directory too
    let chat = ws.join("chats/cli/local.jsonl");
    write(&chat.join("kept.txt"), "another");

    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(status.contains("活动中"), "{status}");
    assert!(
        status.contains("conversation.jsonl is not a file; moved aside to"),
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(sdir.join("conversation.jsonl.corrupt/kept.txt")).unwrap(),
        "a human's file"
    );
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "然后呢"))
        .await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(users(&conv), ["然后呢"]);

    // outside a mode, the chat's history file gets the same treatment
    kernel.command("/mode exit").await;
    let r = kernel.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(users(&chat), ["你好"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("chats/cli/local.jsonl.corrupt/kept.txt")).unwrap(),
        "another"
    );
}

#[tokio::test]
async fn a_session_that_starts_in_the_future_survives_a_corrupt_action_json() {
    use homebot::clock::ManualClock;
    use homebot::kernel::{Kernel, KernelOptions};
    let at = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let start = |ws: &Path, fake: &FakeLlm, now: &str| {
        Kernel::start(
            ws,
            KernelOptions {
                env: Some(fake.env()),
                clock: Some(std::sync::Arc::new(ManualClock::new(at(now)))),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start(ws, &fake, "2026-10-22T20:00:00+08:00");
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let before = action(ws);
    let sdir = session_dir(ws);
    drop(kernel);
    write(&ws.join("modes/action.json"), "{\"schema_version\":1,");

    // the clock went back an hour: the session "starts in the future"
    let kernel = start(ws, &fake, "2026-10-22T19:00:00+08:00");
    let status = kernel.command("/status").await.text;
    assert!(
        status.contains("restored from its folder and continues"),
        "{status}"
    );
    assert_eq!(action(ws)["session_id"], before["session_id"]);
    assert_eq!(action(ws)["expires_at"], before["expires_at"]);
    assert!(!sdir.join("summary.md").exists());
    kernel
        .handle_turn(cli::turn("local", "mom", "然后呢"))
        .await;
    assert_eq!(
        users(&sdir.join("conversation.jsonl")),
        ["打开做饭模式", "然后呢"]
    );
}

#[tokio::test]
async fn an_empty_orphan_session_is_never_indexed_and_never_fatal() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    drop(start_kernel(ws, &fake));
    // what a failed entry of an older homebot left: a prompt and an empty conversation
    let empty = ws.join("modes/sessions/cooking/cook-20261021-190000-abcdef");
    write(&empty.join("system_prompt.md"), "frozen");
    write(&empty.join("conversation.jsonl"), "");
    // no records either, but something a human may want to look at
    let odd = ws.join("modes/sessions/cooking/cook-20261021-200000-fedcba");
    write(&odd.join("conversation.jsonl"), "");
    write(
        &odd.join("conversation.jsonl.corrupt"),
        "{\"timestamp\":\"20\n",
    );

    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(
        status.contains("cook-20261021-190000-abcdef has no records; removed"),
        "{status}"
    );
    assert!(
        status.contains("cook-20261021-200000-fedcba has no records; set aside as"),
        "{status}"
    );
    assert!(!status.contains("recovered"), "{status}");
    assert!(!empty.exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(
            "modes/sessions/cooking/.cook-20261021-200000-fedcba.empty/conversation.jsonl.corrupt"
        ))
        .unwrap(),
        "{\"timestamp\":\"20\n"
    );
    let index = std::fs::read_to_string(ws.join("cooking/history.md")).unwrap_or_default();
    assert!(!index.contains("cook-20261021"), "{index}");
    let tz = "Asia/Shanghai".parse().unwrap();
    let ws_ = homebot::workspace::Workspace::open(ws).unwrap();
    assert!(homebot::modes::listing::list_sessions(&ws_, tz, chrono::Utc::now()).is_empty());
    // a second start is quiet about them
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    let status = kernel.command("/status").await.text;
    assert!(!status.contains("cook-20261021"), "{status}");
}
