//! Editing a skill's SKILL.md during a session does not change that session's prompt,
//! not even across a restart; the next session picks the edit up.

use crate::common;

use common::*;
use homebot::channels::{cli, voice};

fn system_of(req: &serde_json::Value) -> String {
    req["messages"][0]["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn skill_edits_do_not_reach_a_running_session() {
    let dir = workspace();
    let ws = dir.path();
    // the workspace's own copy of the skill shadows the shipped one
    copy_skills(&ws.join("skills"));
    let skill_md = ws.join("skills/home-cooking/SKILL.md");
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let frozen_file = session_dir(ws).join("system_prompt.md");
    let frozen = std::fs::read_to_string(&frozen_file).unwrap();

    kernel
        .handle_turn(cli::turn("local", "mom", "第一步是什么"))
        .await;
    let before = system_of(fake.requests().last().unwrap());
    assert!(
        before.contains(frozen.trim()),
        "the frozen prompt is in the system message"
    );

    let mut text = std::fs::read_to_string(&skill_md).unwrap();
    text.push_str("\n所有回答都要加上 EDITED-MARKER。\n");
    std::fs::write(&skill_md, text).unwrap();

    kernel
        .handle_turn(cli::turn("local", "mom", "然后呢"))
        .await;
    let after = system_of(fake.requests().last().unwrap());
    assert_eq!(before, after, "system prompt changed mid-session");
    assert!(!after.contains("EDITED-MARKER"));
    assert_eq!(std::fs::read_to_string(&frozen_file).unwrap(), frozen);

    // a restart reads the frozen file, not the skill
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(voice::turn("wake-2", "guest", "下一步"))
        .await;
    assert_eq!(system_of(fake.requests().last().unwrap()), before);

    // the next session is frozen from the edited skill
    kernel
        .handle_turn(cli::turn("local", "mom", "结束做饭模式"))
        .await;
    assert_eq!(action(ws)["active"], false);
    kernel
        .handle_turn(cli::turn("local", "mom", "再打开做饭模式"))
        .await;
    let frozen2 = std::fs::read_to_string(session_dir(ws).join("system_prompt.md")).unwrap();
    assert!(frozen2.contains("EDITED-MARKER"));
}
