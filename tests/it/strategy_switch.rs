//! Strategies that shape answers rather than plans — Reflect, Assist, Custom, presets, a
//! mode's default — and switching them mid-session: history kept, `system_prompt.md` and
//! the request prefix unchanged (measured against a system-prompt block); the state file
//! and the `/strategy` permission.

use crate::common;

use common::strategy::*;
use common::*;
use homebot::channels::{cli, qq};
use homebot::turn::{Outcome, Refusal};
use serde_json::{json, Value};

#[tokio::test]
async fn reflect_sends_only_the_revision_and_records_only_it() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        let u = last_user(body);
        if u.contains("做饭模式") {
            return scripted(body);
        }
        if last_role(body) == "tool" {
            return text("已进入");
        }
        if u.starts_with("Review the answer above critically") {
            return text("问题：没说火候。");
        }
        if u.starts_with("Now rewrite the answer") {
            return text("修订稿：中火炒三分钟。");
        }
        text("草稿：炒一下。")
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let sdir = session_dir(ws);
    kernel.command("/strategy reflect").await;
    let r = kernel
        .handle_turn(cli::turn("local", "mom", "番茄炒蛋怎么炒？"))
        .await;
    assert_eq!(r.text, "修订稿：中火炒三分钟。");
    let reqs = fake.requests();
    let draft_req = &reqs[reqs.len() - 3];
    assert!(
        last_user(draft_req).contains("review it critically"),
        "the instruction is in the tail"
    );
    let lines = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(lines.last().unwrap()["assistant"], "修订稿：中火炒三分钟。");
    let all = std::fs::read_to_string(sdir.join("conversation.jsonl")).unwrap();
    assert!(!all.contains("草稿") && !all.contains("没说火候"), "{all}");
    assert_eq!(stages(ws, "reflect"), ["draft", "review", "revision"]);
    let draft = journal(ws)
        .into_iter()
        .find(|e| e["stage"] == "draft")
        .unwrap();
    assert_eq!(draft["session_id"], action(ws)["session_id"]);
}

#[tokio::test]
async fn assist_custom_and_presets_are_tail_instructions_that_persist() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy assist").await;
    kernel
        .handle_turn(cli::turn("local", "mom", "做个菜"))
        .await;
    assert!(
        last_user(&fake.requests()[0]).contains("you MUST call ask_user_choice BEFORE proceeding")
    );

    let r = kernel.command("/strategy custom 回答前先说“收到”").await;
    assert!(
        r.text.contains("自定义指令: 回答前先说“收到”"),
        "{}",
        r.text
    );
    let r = kernel.command("/strategy yolo").await;
    assert!(
        !r.is_answered() && r.text.contains("没有叫 \"yolo\" 的策略"),
        "{r:?}"
    );
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    kernel.handle_turn(cli::turn("local", "mom", "你好")).await;
    let u = last_user(fake.requests().last().unwrap());
    assert!(
        u.contains("Custom instructions take priority") && u.contains("回答前先说“收到”"),
        "{u}"
    );

    let r = kernel.command("/strategy careful").await;
    assert!(
        r.text
            .contains("当前策略: plan（由家里人设置） · 预设: careful"),
        "{}",
        r.text
    );
    let r = kernel.command("/strategy quick").await;
    assert!(
        r.text.contains("当前策略: build") && r.text.contains("quick"),
        "{}",
        r.text
    );
    kernel
        .handle_turn(cli::turn("local", "mom", "几点了"))
        .await;
    assert!(last_user(fake.requests().last().unwrap()).contains("思考深度：快速"));
    // naming a strategy keeps the preset's thinking depth (a hot patch of the
    // strategy alone); a preset sets it again
    let r = kernel.command("/strategy build").await;
    assert!(r.text.contains("· 预设: quick"), "{}", r.text);
    let r = kernel.command("/strategy standard").await;
    assert!(
        r.text.contains("· 预设: standard（思考深度：标准）"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn a_mode_names_its_default_strategy_and_strategy_wins_in_that_session() {
    let dir = workspace();
    let ws = dir.path();
    let skills = ws.join("skills-test");
    copy_skills(&skills);
    let mj = skills.join("home-cooking/mode.json");
    let mut m: Value = read_json(&mj);
    m["strategy"] = json!("assist");
    std::fs::write(&mj, m.to_string()).unwrap();
    let fake = FakeLlm::scripted().await;
    let kernel = homebot::kernel::Kernel::start(
        ws,
        homebot::kernel::KernelOptions {
            env: Some(fake.env()),
            skills_dirs: Some(vec![skills.clone()]),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(kernel
        .command("/strategy")
        .await
        .text
        .contains("当前策略: build（配置默认）"));
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let shown = kernel.command("/strategy").await.text;
    assert!(
        shown.contains("当前策略: assist（当前模式 cooking 的默认）"),
        "{shown}"
    );
    let status = kernel.command("/status").await.text;
    assert!(status.contains("策略: assist"), "{status}");
    kernel.command("/strategy reflect").await;
    assert!(kernel
        .command("/strategy")
        .await
        .text
        .contains("当前策略: reflect（由家里人设置）"));

    // an unknown strategy name in mode.json is a load error for that mode
    m["strategy"] = json!("yolo");
    assert!(homebot::modes::ModeManifest::parse(&m.to_string()).is_err());
}

/// Length of the common byte prefix of two strings.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[tokio::test]
async fn switching_strategy_mid_session_keeps_history_prompt_and_prefix() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        let u = last_user(body);
        if u.starts_with("Review the answer") {
            return text("评审：可以。");
        }
        if u.starts_with("Now rewrite") {
            return text("修订：好的。");
        }
        scripted(body)
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    let sdir = session_dir(ws);
    let frozen = std::fs::read(sdir.join("system_prompt.md")).unwrap();
    kernel
        .handle_turn(cli::turn("local", "mom", "番茄几个？"))
        .await;
    let mut firsts = vec![fake.requests().len()];
    for (cmd, words) in [
        ("/strategy assist", "蛋几个？"),
        ("/strategy reflect", "盐放多少？"),
        ("/strategy custom 少说话", "火多大？"),
        ("/strategy build", "好了吗？"),
    ] {
        assert!(kernel.command(cmd).await.is_answered(), "{cmd}");
        firsts.push(fake.requests().len());
        let r = kernel.handle_turn(cli::turn("local", "mom", words)).await;
        assert!(r.is_answered(), "{r:?}");
    }
    assert_eq!(
        std::fs::read(sdir.join("system_prompt.md")).unwrap(),
        frozen
    );
    let lines = jsonl(&sdir.join("conversation.jsonl"));
    assert_eq!(lines.len(), 6, "no turn lost, nothing cleared");

    let reqs = fake.requests();
    let mut tail_kept = Vec::new();
    let mut block_kept = Vec::new();
    // the first request of turn k (index firsts[k]) and of turn k-1
    let first_of: Vec<&Value> = std::iter::once(&reqs[firsts[0] - 1])
        .chain(firsts[1..].iter().map(|&i| &reqs[i]))
        .collect();
    for w in first_of.windows(2) {
        let (prev, next) = (w[0], w[1]);
        assert_eq!(prev["tools"], next["tools"], "the tools never change");
        let pm = prev["messages"].as_array().unwrap();
        let nm = next["messages"].as_array().unwrap();
        assert_eq!(
            pm[..pm.len() - 1],
            nm[..pm.len() - 1],
            "the prefix up to the previous turn is identical"
        );
        // bytes: as sent (strategy in the tail) and as if the strategy were a block in
        // the system prompt (it changes with every switch)
        let a = serde_json::to_string(prev).unwrap();
        let b = serde_json::to_string(next).unwrap();
        tail_kept.push((common_prefix(&a, &b), b.len()));
        let sys = next["messages"][0]["content"].as_str().unwrap();
        let mut alt = next.clone();
        // the block would follow the mode prompt and change with every switch
        alt["messages"][0]["content"] = json!(format!("{sys}\n## Strategy: changed"));
        let c = serde_json::to_string(&alt).unwrap();
        block_kept.push((common_prefix(&a, &c), c.len()));
    }
    println!("prefix kept across each switch (bytes of the request): tail {tail_kept:?} vs system block {block_kept:?}");
    for (t, s) in tail_kept.iter().zip(&block_kept) {
        assert!(
            t.0 > s.0,
            "the tail keeps more of the prefix: {t:?} vs {s:?}"
        );
    }
}

#[tokio::test]
async fn switching_needs_the_mode_switch_permission_and_custom_text_is_bounded() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let kernel = start_kernel(ws, &fake);
    let mut t = qq::turn("group:5550001", "qq:999", "/strategy plan");
    t.may_switch_modes = false;
    let r = kernel.handle_turn(t.clone()).await;
    assert!(
        !r.is_answered() && r.text.contains("没有切换策略的权限"),
        "{r:?}"
    );
    t.text = "/strategy".into();
    let r = kernel.handle_turn(t).await;
    assert!(r.text.contains("当前策略: build（配置默认）"), "{r:?}");
    let long = format!("/strategy custom {}", "很".repeat(1001));
    let r = kernel.command(&long).await;
    assert!(
        matches!(
            r.outcome,
            Outcome::Refused {
                reason: Refusal::Command,
                ..
            }
        ) && r.text.contains("上限 1000 字"),
        "{r:?}"
    );
    assert!(
        !ws.join("strategy/state.json").exists(),
        "nothing was changed"
    );
    let r = kernel.command("/strategy custom").await;
    assert!(r.text.starts_with("用法: /strategy custom"), "{r:?}");
}

#[tokio::test]
async fn a_corrupt_state_file_is_set_aside_and_the_defaults_apply() {
    let dir = workspace();
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("strategy")).unwrap();
    std::fs::write(ws.join("strategy/state.json"), "{\"strategy\":\"pl").unwrap();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let kernel = start_kernel(ws, &fake);
    assert!(kernel
        .command("/strategy")
        .await
        .text
        .contains("当前策略: build（配置默认）"));
    assert_eq!(
        std::fs::read_to_string(ws.join("strategy/state.json.corrupt")).unwrap(),
        "{\"strategy\":\"pl",
        "kept for a human"
    );
    let r = kernel.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert_eq!(r.text, "好的");
    kernel.command("/strategy reflect").await;
    assert_eq!(state(ws)["strategy"], "reflect");
}
