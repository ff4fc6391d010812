//! Bad files in the workspace get clear errors, the rest keeps working, and nothing is
//! deleted: a corrupt mode.json, an unknown entrypoint, a corrupt action.json, a torn
//! conversation.jsonl.

mod common;

use common::*;
use homebot::turn::Turn;
use std::collections::BTreeMap;
use std::path::Path;

fn write(p: &Path, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, s).unwrap();
}

/// Every file under `root` with its content.
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
                out.insert(rel, std::fs::read(&p).unwrap());
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
        .handle_turn(Turn::new("cli", "local", "mom", "打开做饭模式"))
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
        .handle_turn(Turn::new("cli", "local", "mom", "打开做饭模式"))
        .await;
    kernel
        .handle_turn(Turn::new("cli", "local", "mom", "切几个番茄"))
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
        .handle_turn(Turn::new("cli", "local", "mom", "然后呢"))
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
        .handle_turn(Turn::new("cli", "local", "mom", "结束做饭模式"))
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
        .handle_turn(Turn::new("cli", "local", "mom", "打开做饭模式"))
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
        .handle_turn(Turn::new("cli", "local", "mom", "下一步"))
        .await;
    let lines = jsonl(&conv);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["user"], "下一步");
}
