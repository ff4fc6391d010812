//! Kill tests: the process is SIGKILLed at each step of the archive sequence and in the
//! middle of an append, restarted, and the workspace is checked — exactly one summary,
//! one index entry, an inactive action.json, no torn record, nothing acknowledged lost.

use crate::common;

use common::*;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

pub(crate) async fn chat(ws: &Path, fake: &FakeLlm, text: &str) -> String {
    let o = homebot(ws, Some(fake))
        .args(["chat", "-m", text])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// Run `chat -m text` with a failpoint; SIGKILL the process when it gets there.
pub(crate) async fn chat_killed_at(ws: &Path, fake: &FakeLlm, text: &str, point: &str) {
    let mut child = homebot(ws, Some(fake))
        .env("HOMEBOT_FAILPOINT", point)
        .args(["chat", "-m", text])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let want = format!("homebot: failpoint {point} reached");
    let reached = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if l.contains(&want) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(reached, "never reached {point}");
    child.start_kill().unwrap(); // SIGKILL
    let status = child.wait().await.unwrap();
    assert!(!status.success());
}

fn index_lines(ws: &Path, sid: &str) -> usize {
    std::fs::read_to_string(ws.join("cooking/history.md"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("- ") && l.contains(sid))
        .count()
}

#[tokio::test]
async fn killed_at_each_archive_step_ends_in_one_clean_archive() {
    let fake = FakeLlm::scripted().await;
    for (point, exit_turn_recorded) in [
        ("archive.after_marker", false),
        ("archive.after_summary", true),
        ("archive.after_index", true),
    ] {
        let dir = workspace();
        let ws = dir.path();
        chat(ws, &fake, "打开做饭模式").await;
        chat(ws, &fake, "番茄几个").await;
        let sdir = session_dir(ws);
        let sid = sdir.file_name().unwrap().to_str().unwrap().to_string();

        chat_killed_at(ws, &fake, "结束做饭模式", point).await;
        // the process died mid-archive: the mode is still formally active
        assert_eq!(action(ws)["active"], true, "{point}");
        assert!(sdir.join("exit.json").exists(), "{point}");
        assert_eq!(
            sdir.join("summary.md").exists(),
            point != "archive.after_marker",
            "{point}"
        );
        assert_eq!(
            index_lines(ws, &sid),
            usize::from(point == "archive.after_index"),
            "{point}"
        );

        // restart: the archive resumes and completes exactly once
        let status = chat(ws, &fake, "/status").await;
        assert!(
            status.contains("无活动模式（上次结束原因: user）"),
            "{point}: {status}"
        );
        let a = action(ws);
        assert_eq!(a["active"], false, "{point}");
        assert_eq!(a["exit_reason"], "user", "{point}");
        assert_eq!(index_lines(ws, &sid), 1, "{point}");
        let summary = std::fs::read_to_string(sdir.join("summary.md")).unwrap();
        assert_eq!(summary.matches("## 总结").count(), 1, "{point}");
        let lines = jsonl(&sdir.join("conversation.jsonl"));
        let users: Vec<&str> = lines.iter().map(|l| l["user"].as_str().unwrap()).collect();
        let mut want = vec!["打开做饭模式", "番茄几个"];
        if exit_turn_recorded {
            want.push("结束做饭模式");
        }
        assert_eq!(users, want, "{point}");
        // a second restart changes nothing
        let before = std::fs::read_to_string(ws.join("cooking/history.md")).unwrap();
        chat(ws, &fake, "/status").await;
        assert_eq!(
            std::fs::read_to_string(ws.join("cooking/history.md")).unwrap(),
            before
        );
        // and a new session can start
        assert!(
            chat(ws, &fake, "打开做饭模式")
                .await
                .contains("已进入做饭模式"),
            "{point}"
        );
    }
}

#[tokio::test]
async fn killed_during_an_append_loses_only_the_unacknowledged_turn() {
    let fake = FakeLlm::scripted().await;
    let dir = workspace();
    let ws = dir.path();
    chat(ws, &fake, "打开做饭模式").await;
    let conv = session_dir(ws).join("conversation.jsonl");
    chat_killed_at(ws, &fake, "蛋打几个", "append.partial").await;
    // half a record's bytes: it may end inside a character (the record holds Chinese)
    let raw = std::fs::read(&conv).unwrap();
    assert!(!raw.ends_with(b"\n"), "the file really holds half a record");

    let status = chat(ws, &fake, "/status").await;
    assert!(status.contains("torn last line"), "{status}");
    let aside = std::fs::read(conv.with_extension("jsonl.corrupt")).unwrap();
    assert!(aside.starts_with(b"{\"timestamp\""), "{aside:?}");
    assert_eq!(jsonl(&conv).len(), 1, "the acknowledged turn is intact");
    chat(ws, &fake, "蛋打几个").await;
    let users: Vec<String> = jsonl(&conv)
        .iter()
        .map(|l| l["user"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["打开做饭模式", "蛋打几个"]);
}

/// `homebot status` with a failpoint; its output, which must be a success.
async fn status_with(ws: &Path, fake: &FakeLlm, failpoint: Option<&str>) -> String {
    let mut c = homebot(ws, Some(fake));
    if let Some(p) = failpoint {
        c.env("HOMEBOT_FAILPOINT", p);
    }
    let o = c.arg("status").output().await.unwrap();
    assert!(
        o.status.success(),
        "status failed to start ({failpoint:?}): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Session folders (hidden ones included) of the cooking mode.
fn cooking_folders(ws: &Path) -> Vec<String> {
    match std::fs::read_dir(ws.join("modes/sessions/cooking")) {
        Ok(it) => it
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[tokio::test]
async fn a_mode_entry_on_a_full_disk_leaves_nothing_behind_and_start_up_survives() {
    let fake = FakeLlm::scripted().await;
    let dir = workspace();
    let ws = dir.path();
    status_with(ws, &fake, None).await; // a workspace with its config and action.json

    let o = homebot(ws, Some(&fake))
        .env("HOMEBOT_FAILPOINT", "write.enospc")
        .args(["chat", "-m", "/mode enter cooking"])
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("No space left on device"), "{o:?}");
    assert_eq!(cooking_folders(ws), Vec::<String>::new(), "left behind");

    // the disk is still full at the next start: start-up goes on
    let status = status_with(ws, &fake, Some("write.enospc")).await;
    assert!(status.contains("无活动模式"), "{status}");
    // and with space again nothing half-made is indexed or listed
    let status = status_with(ws, &fake, None).await;
    assert!(!status.contains("recovered"), "{status}");
    assert_eq!(index_lines(ws, "cook-"), 0);
    let o = homebot(ws, None).arg("sessions").output().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "no mode sessions yet\n");
    assert!(chat(ws, &fake, "/mode enter cooking")
        .await
        .contains("已进入做饭模式"));
}

#[tokio::test]
async fn killed_while_a_session_is_made_leaves_no_session() {
    let fake = FakeLlm::scripted().await;
    let dir = workspace();
    let ws = dir.path();
    chat_killed_at(ws, &fake, "/mode enter cooking", "session.before_rename").await;
    assert_eq!(action(ws)["active"], false);
    let made = cooking_folders(ws);
    assert!(
        made.len() == 1 && made[0].starts_with(".cook-") && made[0].ends_with(".tmp"),
        "only the half-made folder, under a temporary name: {made:?}"
    );

    let status = status_with(ws, &fake, None).await;
    assert!(!status.contains("recovered"), "{status}");
    assert_eq!(
        cooking_folders(ws),
        Vec::<String>::new(),
        "cleaned at start"
    );
    assert_eq!(index_lines(ws, "cook-"), 0);
    assert!(chat(ws, &fake, "/mode enter cooking")
        .await
        .contains("已进入做饭模式"));
}

#[tokio::test]
async fn an_orphan_that_cannot_be_archived_does_not_stop_start_up() {
    let fake = FakeLlm::scripted().await;
    let dir = workspace();
    let ws = dir.path();
    chat(ws, &fake, "打开做饭模式").await;
    chat(ws, &fake, "番茄几个").await;
    let sdir = session_dir(ws);
    let sid = sdir.file_name().unwrap().to_str().unwrap().to_string();
    // the lifecycle forgot the session (an older homebot, a restored backup): an orphan
    std::fs::write(
        ws.join("modes/action.json"),
        serde_json::to_string(&homebot::modes::action::ActionDoc::inactive(None)).unwrap(),
    )
    .unwrap();

    let status = status_with(ws, &fake, Some("write.enospc")).await;
    assert!(
        status.contains(&format!("could not archive the unfinished session {sid}"))
            && status.contains("No space left on device"),
        "{status}"
    );
    assert!(!sdir.join("summary.md").exists());
    assert_eq!(index_lines(ws, &sid), 0);

    // the next start with space archives it, once
    let status = status_with(ws, &fake, None).await;
    assert!(status.contains("archived as `recovered`"), "{status}");
    assert!(sdir.join("summary.md").exists());
    assert_eq!(index_lines(ws, &sid), 1);
    assert_eq!(jsonl(&sdir.join("conversation.jsonl")).len(), 2);
}
