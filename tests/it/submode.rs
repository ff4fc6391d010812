//! A sub-mode through the real channels: 烘焙模式 entered from a QQ group (the OneBot
//! simulator) inside a cooking session and ended by voice (the Python `wyoming` package)
//! with "回到做饭模式"; the kitchen's next request is the same cooking session's — the
//! same frozen prompt and tools, its last request and answer byte for byte, then the
//! sub-mode's conclusion, then the new words (so the provider's prefix cache holds).

use crate::common;

use common::gateway::Gateway;
use common::onebot::text_of;
use common::qq::{at_bot, sim, text, GROUP, MOM, TOKEN};
use common::*;
use serde_json::Value;

/// The first request of the turn whose words were `words`.
fn request_of(fake: &FakeLlm, words: &str) -> Value {
    turn_requests(fake)
        .into_iter()
        .rfind(|r| user_words(r["messages"].as_array().unwrap().last().unwrap()) == words)
        .unwrap_or_else(|| panic!("no request for {words:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_mode_entered_from_qq_and_ended_by_voice_returns_the_kitchen_to_its_session() {
    let dir = workspace();
    let ws = dir.path().canonicalize().unwrap();
    common::qq::config(&ws, "");
    let fake = FakeLlm::scripted().await;
    let gw = Gateway::start(
        &ws,
        &fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &GROUP.to_string()),
            ("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0"),
        ],
        &["qq", "wyoming"],
    )
    .await;
    let mut s = sim(&gw).await;
    let mut id = 0;
    let mut say = |words: &str| {
        id += 1;
        (id, serde_json::json!([at_bot(), text(words)]))
    };

    let (n, m) = say("打开做饭模式");
    s.group_msg(GROUP, MOM, n, m).await;
    assert!(text_of(&s.expect_send().await).contains("已进入做饭模式"));
    let cook = action(&ws)["session_id"].as_str().unwrap().to_string();
    let (n, m) = say("番茄炒蛋三个人放几个蛋");
    s.group_msg(GROUP, MOM, n, m).await;
    assert_eq!(
        text_of(&s.expect_send().await).trim(),
        "好的：番茄炒蛋三个人放几个蛋"
    );

    // the sub-mode, from QQ: the parent is paused, action.json names the sub-mode
    let (n, m) = say("打开烘焙模式");
    s.group_msg(GROUP, MOM, n, m).await;
    let reply = text_of(&s.expect_send().await);
    assert!(
        reply.contains("已进入烘焙模式") && reply.contains("做饭模式已暂停"),
        "{reply}"
    );
    let a = action(&ws);
    assert_eq!(a["mode_id"], "baking");
    assert_eq!(a.as_object().unwrap().len(), 10);
    let paused = read_json(&ws.join("modes/paused.json"));
    assert_eq!(paused["parent"]["session_id"], cook.as_str());
    let bake = a["session_id"].as_str().unwrap().to_string();
    let (n, m) = say("蛋白打到什么程度");
    s.group_msg(GROUP, MOM, n, m).await;
    assert_eq!(
        text_of(&s.expect_send().await).trim(),
        "好的：蛋白打到什么程度"
    );
    let in_sub = request_of(&fake, "蛋白打到什么程度");
    let sub_system = in_sub["messages"][0]["content"].as_str().unwrap();
    assert!(
        sub_system.contains(&bake) && !sub_system.contains(&cook),
        "the sub-mode's own frozen prompt"
    );

    // ended by voice, by the parent's name
    let (h, p) = gw.addr("wyoming").rsplit_once(':').unwrap();
    let r = run_peer(
        "wyoming_client.py",
        &[h, p, "transcript", "回到做饭模式", "wake-1"],
    )
    .await;
    let said = r["text"].as_str().unwrap();
    assert!(
        said.contains("已请求退出烘焙模式") && said.contains("之后回到做饭模式"),
        "{said}"
    );
    let a = action(&ws);
    assert_eq!(
        a["session_id"],
        cook.as_str(),
        "the same cooking session runs again"
    );
    assert!(!ws.join("modes/paused.json").exists());
    let bake_dir = ws.join("modes/sessions/baking").join(&bake);
    assert!(bake_dir.join("summary.md").exists());
    let sub_lines = jsonl(&bake_dir.join("conversation.jsonl"));
    let sub_words: Vec<&str> = sub_lines
        .iter()
        .map(|l| l["user"].as_str().unwrap())
        .collect();
    assert_eq!(
        sub_words,
        ["打开烘焙模式", "蛋白打到什么程度", "回到做饭模式"]
    );
    assert_eq!(sub_lines[2]["channel"], "voice");

    // the kitchen's next request, from QQ again
    let (n, m) = say("蛋炒好了然后呢");
    s.group_msg(GROUP, MOM, n, m).await;
    assert_eq!(
        text_of(&s.expect_send().await).trim(),
        "好的：蛋炒好了然后呢"
    );
    let before = request_of(&fake, "番茄炒蛋三个人放几个蛋");
    let after = request_of(&fake, "蛋炒好了然后呢");
    assert_eq!(after["tools"], before["tools"]);
    let (b, a) = (
        before["messages"].as_array().unwrap(),
        after["messages"].as_array().unwrap(),
    );
    assert_eq!(
        a[..b.len()],
        b[..],
        "the last cooking request, byte for byte"
    );
    assert_eq!(a[b.len()]["role"], "assistant");
    assert_eq!(a[b.len()]["content"], "好的：番茄炒蛋三个人放几个蛋");
    let conclusion = a[b.len() + 1]["content"].as_str().unwrap();
    assert!(
        conclusion.starts_with(&format!("[子模式结论: 烘焙模式 {bake}]")),
        "{conclusion}"
    );
    assert!(
        conclusion.contains("烤了一个六寸戚风，150度50分钟，正在放凉。"),
        "{conclusion}"
    );
    assert_eq!(a[b.len() + 2]["role"], "assistant");
    assert_eq!(a.len(), b.len() + 4, "then the new words");
    assert_eq!(user_words(&a[b.len() + 3]), "蛋炒好了然后呢");
    // and on disk: the parent's records, the conclusion once
    let lines = jsonl(
        &ws.join("modes/sessions/cooking")
            .join(&cook)
            .join("conversation.jsonl"),
    );
    let words: Vec<&str> = lines.iter().map(|l| l["user"].as_str().unwrap()).collect();
    assert_eq!(words.len(), 4);
    assert_eq!(words[..2], ["打开做饭模式", "番茄炒蛋三个人放几个蛋"]);
    assert_eq!(lines[2]["chat_id"], bake.as_str());
    assert_eq!(words[3], "蛋炒好了然后呢");
}

#[tokio::test]
async fn ending_the_parent_from_inside_the_sub_mode_ends_both() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let turn = |w: &str| turn_of("qq", "group:1", "mom", w);
    kernel.handle_turn(turn("打开做饭模式")).await;
    let cook = action(ws)["session_id"].as_str().unwrap().to_string();
    // refused outside its parent: nothing changes
    kernel.handle_turn(turn("结束做饭模式")).await;
    let r = kernel.handle_turn(turn("打开烘焙模式")).await;
    assert!(r.text.contains("只能在做饭模式里打开"), "{}", r.text);
    assert_eq!(action(ws)["active"], false);
    kernel.handle_turn(turn("打开做饭模式")).await;
    let cook2 = action(ws)["session_id"].as_str().unwrap().to_string();
    assert_ne!(cook, cook2);
    kernel.handle_turn(turn("打开烘焙模式")).await;
    let bake = action(ws)["session_id"].as_str().unwrap().to_string();
    let r = kernel.handle_turn(turn("结束做饭模式")).await;
    assert!(r.text.contains("已请求退出做饭模式"), "{}", r.text);
    let a = action(ws);
    assert_eq!(a["active"], false);
    assert_eq!(a["exit_reason"], "user");
    assert!(!ws.join("modes/paused.json").exists());
    for (mode, sid) in [("baking", &bake), ("cooking", &cook2)] {
        assert!(ws
            .join("modes/sessions")
            .join(mode)
            .join(sid)
            .join("summary.md")
            .exists());
    }
    let summary = std::fs::read_to_string(
        ws.join("modes/sessions/cooking")
            .join(&cook2)
            .join("summary.md"),
    )
    .unwrap();
    assert!(summary.contains("子模式结论"), "{summary}");
    let status = kernel.handle_turn(turn("/status")).await;
    assert!(status.text.contains("无活动模式"), "{}", status.text);
}
