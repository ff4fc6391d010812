//! Kill tests: the process is SIGKILLed at each step of the archive sequence and in the
//! middle of an append, restarted, and the workspace is checked — exactly one summary,
//! one index entry, an inactive action.json, no torn record, nothing acknowledged lost.

mod common;

use common::*;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

async fn chat(ws: &Path, fake: &FakeLlm, text: &str) -> String {
    let o = homebot(ws, Some(fake))
        .args(["chat", "-m", text])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// Run `chat -m text` with a failpoint; SIGKILL the process when it gets there.
async fn chat_killed_at(ws: &Path, fake: &FakeLlm, text: &str, point: &str) {
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
    let raw = std::fs::read_to_string(&conv).unwrap();
    assert!(!raw.ends_with('\n'), "the file really holds half a record");

    let status = chat(ws, &fake, "/status").await;
    assert!(status.contains("torn last line"), "{status}");
    let aside = std::fs::read_to_string(conv.with_extension("jsonl.corrupt")).unwrap();
    assert!(aside.starts_with("{\"timestamp\""), "{aside}");
    assert_eq!(jsonl(&conv).len(), 1, "the acknowledged turn is intact");
    chat(ws, &fake, "蛋打几个").await;
    let users: Vec<String> = jsonl(&conv)
        .iter()
        .map(|l| l["user"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["打开做饭模式", "蛋打几个"]);
}
