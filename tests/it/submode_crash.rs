//! Kill tests of a sub-mode's push and pop: the process is SIGKILLed at each step
//! (failpoints, `src/failpoint.rs`), restarted, and the workspace checked — the parent
//! runs again (or, when the parent was ending, both are archived), its history holds the
//! sub-mode's conclusion exactly once, `paused.json` is gone, one summary each. And an
//! entry the disk refuses, in a running gateway and after its restart.

use crate::common;
use crate::crash::{chat, chat_killed_at};

use common::*;
use std::path::{Path, PathBuf};

fn sessions(ws: &Path, mode: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(ws.join("modes/sessions").join(mode))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    v.sort();
    v
}

fn conclusions(cook_dir: &Path, bake: &str) -> usize {
    jsonl(&cook_dir.join("conversation.jsonl"))
        .iter()
        .filter(|l| l["channel"] == "mode" && l["chat_id"] == bake)
        .count()
}

/// Cooking with one turn, then baking with one: (cooking folder, baking folder).
async fn cooking_and_baking(ws: &Path, fake: &FakeLlm) -> (PathBuf, PathBuf) {
    chat(ws, fake, "打开做饭模式").await;
    let cook = session_dir(ws);
    chat(ws, fake, "番茄几个").await;
    assert!(chat(ws, fake, "打开烘焙模式")
        .await
        .contains("已进入烘焙模式"));
    let bake = session_dir(ws);
    chat(ws, fake, "蛋白打发").await;
    (cook, bake)
}

#[tokio::test]
async fn killed_while_entering_a_sub_mode_leaves_the_parent_running() {
    let fake = FakeLlm::scripted().await;
    let dir = workspace();
    let ws = dir.path();
    chat(ws, &fake, "打开做饭模式").await;
    let cook = session_dir(ws);
    chat_killed_at(ws, &fake, "打开烘焙模式", "submode.after_paused").await;
    // paused.json written, action.json not yet
    assert!(ws.join("modes/paused.json").exists());
    assert_eq!(action(ws)["mode_id"], "cooking");
    let status = chat(ws, &fake, "/status").await;
    assert!(status.contains("做饭模式 (cooking) 活动中"), "{status}");
    assert!(!status.contains("暂停中"), "{status}");
    assert!(!ws.join("modes/paused.json").exists());
    assert_eq!(session_dir(ws), cook);
    assert!(
        sessions(ws, "baking").is_empty(),
        "no half-made sub-session"
    );
    // and the sub-mode can be entered now
    assert!(chat(ws, &fake, "打开烘焙模式")
        .await
        .contains("已进入烘焙模式"));
    assert!(chat(ws, &fake, "/status")
        .await
        .contains("暂停中: 做饭模式"));
}

#[tokio::test]
async fn killed_at_each_step_of_the_return_resumes_it_with_one_conclusion() {
    let fake = FakeLlm::scripted().await;
    for point in [
        "archive.after_marker",
        "archive.after_summary",
        "archive.after_index",
        "archive.after_conclusion",
        "archive.after_resume",
    ] {
        let dir = workspace();
        let ws = dir.path();
        let (cook, bake) = cooking_and_baking(ws, &fake).await;
        let bake_id = bake.file_name().unwrap().to_str().unwrap().to_string();
        let prompt = std::fs::read(cook.join("system_prompt.md")).unwrap();
        chat_killed_at(ws, &fake, "回到做饭模式", point).await;
        assert!(bake.join("exit.json").exists(), "{point}");
        assert_eq!(
            conclusions(&cook, &bake_id),
            usize::from(matches!(
                point,
                "archive.after_conclusion" | "archive.after_resume"
            )),
            "{point}"
        );
        assert_eq!(
            action(ws)["mode_id"],
            if point == "archive.after_resume" {
                "cooking"
            } else {
                "baking"
            },
            "{point}"
        );
        assert!(ws.join("modes/paused.json").exists(), "{point}");

        // restart: the return completes, exactly once
        let status = chat(ws, &fake, "/status").await;
        assert!(
            status.contains("做饭模式 (cooking) 活动中"),
            "{point}: {status}"
        );
        assert_eq!(session_dir(ws), cook, "{point}");
        assert!(!ws.join("modes/paused.json").exists(), "{point}");
        assert_eq!(conclusions(&cook, &bake_id), 1, "{point}");
        let summary = std::fs::read_to_string(bake.join("summary.md")).unwrap();
        assert_eq!(summary.matches("## 总结").count(), 1, "{point}");
        assert_eq!(
            std::fs::read(cook.join("system_prompt.md")).unwrap(),
            prompt
        );
        // the kitchen goes on in the same session; a second restart changes nothing
        chat(ws, &fake, "接着炒").await;
        let lines = jsonl(&cook.join("conversation.jsonl"));
        let words: Vec<&str> = lines.iter().map(|l| l["user"].as_str().unwrap()).collect();
        assert_eq!(words.len(), 4, "{point}: {words:?}");
        assert_eq!(words[..2], ["打开做饭模式", "番茄几个"], "{point}");
        assert_eq!(words[3], "接着炒", "{point}");
        assert_eq!(conclusions(&cook, &bake_id), 1, "{point}");
    }
}

#[tokio::test]
async fn killed_while_ending_the_parent_from_the_sub_mode_ends_both_once() {
    let fake = FakeLlm::scripted().await;
    for point in ["submode.after_parent_marker", "archive.after_conclusion"] {
        let dir = workspace();
        let ws = dir.path();
        let (cook, bake) = cooking_and_baking(ws, &fake).await;
        let bake_id = bake.file_name().unwrap().to_str().unwrap().to_string();
        chat_killed_at(ws, &fake, "结束做饭模式", point).await;
        assert!(
            cook.join("exit.json").exists(),
            "{point}: the parent's marker is the commit"
        );
        let status = chat(ws, &fake, "/status").await;
        assert!(
            status.contains("无活动模式（上次结束原因: user）"),
            "{point}: {status}"
        );
        assert!(!ws.join("modes/paused.json").exists(), "{point}");
        for d in [&cook, &bake] {
            let summary = std::fs::read_to_string(d.join("summary.md")).unwrap();
            assert_eq!(summary.matches("## 总结").count(), 1, "{point}");
        }
        assert_eq!(conclusions(&cook, &bake_id), 1, "{point}");
        assert_eq!(sessions(ws, "cooking").len(), 1);
        assert!(chat(ws, &fake, "打开做饭模式")
            .await
            .contains("已进入做饭模式"));
    }
}

/// The disk refuses the sub-mode's session (every atomic write fails while `paused.json`
/// exists: it is written, the new session's folder is not), in a running gateway the
/// terminal's turns go through: the person is told 烘焙模式 did not open and 做饭模式 goes
/// on; `paused.json` is gone, `action.json` names the cooking session, no half-made
/// baking folder is left, and the kitchen goes on in the same session — in that process
/// and after a restart, where the sub-mode then opens.
#[tokio::test]
async fn a_sub_mode_the_disk_refuses_leaves_the_parent_running_and_a_restart_agrees() {
    use common::gateway::Gateway;
    let fake = FakeLlm::scripted().await;
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    let ws = ws.as_path();
    let paused = ws.join("modes/paused.json");
    let failpoint = format!("write.enospc@{}", paused.display());
    let mut gw = Gateway::start(ws, &fake, &[("HOMEBOT_FAILPOINT", &failpoint)], &[]).await;

    assert!(chat(ws, &fake, "打开做饭模式")
        .await
        .contains("已进入做饭模式"));
    let cook = session_dir(ws);
    chat(ws, &fake, "番茄几个").await;
    let out = chat(ws, &fake, "打开烘焙模式").await;
    assert!(
        out.contains("烘焙模式没能打开")
            && out.contains("做饭模式照常进行")
            && out.contains("No space left on device"),
        "{out}"
    );
    assert!(!paused.exists(), "no paused.json names the running parent");
    let a = action(ws);
    assert_eq!(
        (a["active"].clone(), a["mode_id"].clone()),
        (true.into(), "cooking".into())
    );
    assert_eq!(session_dir(ws), cook);
    let baking: Vec<_> = std::fs::read_dir(ws.join("modes/sessions/baking"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(baking.is_empty(), "nothing half-made: {baking:?}");
    let status = chat(ws, &fake, "/status").await;
    assert!(
        status.contains("做饭模式 (cooking) 活动中") && !status.contains("暂停中"),
        "{status}"
    );
    assert!(status.contains("could not enter 烘焙模式"), "{status}");
    // the kitchen goes on in the same session; the failed turn is its own record there
    assert_eq!(chat(ws, &fake, "接着炒").await.trim(), "好的：接着炒");
    let words = |d: &Path| -> Vec<String> {
        jsonl(&d.join("conversation.jsonl"))
            .iter()
            .map(|l| l["user"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        words(&cook),
        ["打开做饭模式", "番茄几个", "打开烘焙模式", "接着炒"]
    );

    // a restart finds the same state, and the sub-mode opens now
    let pid = gw.pid().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let exit = tokio::time::timeout(std::time::Duration::from_secs(30), gw.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    let status = chat(ws, &fake, "/status").await;
    assert!(
        status.contains("做饭模式 (cooking) 活动中")
            && !status.contains("暂停中")
            && !status.contains("recovered"),
        "{status}"
    );
    assert_eq!(session_dir(ws), cook);
    assert!(sessions(ws, "cooking").len() == 1 && sessions(ws, "baking").is_empty());
    assert!(chat(ws, &fake, "打开烘焙模式")
        .await
        .contains("已进入烘焙模式"));
    assert_eq!(
        read_json(&paused)["parent"]["session_dir"],
        cook.display().to_string()
    );
    assert_eq!(words(&cook).len(), 4);
}
