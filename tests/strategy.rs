//! Agent strategies through the real kernel against the scripted fake provider: Plan made
//! in QQ and confirmed from a voice wake (and after a restart), Spec's fallback chain,
//! Reflect's draft → review → revision, Assist / Custom instructions, presets, bad model
//! output, and switching mid-session without touching the prefix.

mod common;

use common::*;
use homebot::turn::Turn;
use serde_json::{json, Value};
use std::path::Path;

/// The content of the last user message of a request.
fn last_user(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn last_role(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["role"]
        .as_str()
        .unwrap()
        .to_string()
}

const PLAN: &str = r#"{"goal":"今晚三道菜","steps":[{"title":"买菜","detail":"番茄、鸡蛋、青椒"},{"title":"做菜"}]}"#;

/// A model that plans, runs steps, summarizes, reviews and revises on cue.
fn planner(body: &Value, _n: usize) -> FakeReply {
    let u = last_user(body);
    if last_role(body) == "tool" {
        return text("工具已用");
    }
    if u.contains("全部 2 步都做完了") {
        return text("总结：菜买好了，也做好了。");
    }
    if u.contains("[第 2/2 步]") {
        return text("三道菜做好了");
    }
    if u.contains("[第 1/2 步]") {
        return text("菜买好了");
    }
    if u.contains("You are in planning mode") {
        return text(&format!("```json\n{PLAN}\n```"));
    }
    if u.contains("You are in spec mode") {
        return text(
            r#"{"goal":"一桌年夜饭","requirements":["荤素搭配","两小时内做完"],"constraints":["没有烤箱"]}"#,
        );
    }
    text("好的")
}

fn journal(ws: &Path) -> Vec<Value> {
    let p = ws.join("logs/strategy.jsonl");
    if !p.exists() {
        return vec![];
    }
    jsonl(&p)
}

fn stages(ws: &Path, flow: &str) -> Vec<String> {
    journal(ws)
        .iter()
        .filter(|e| e["flow"] == flow)
        .map(|e| e["stage"].as_str().unwrap().to_string())
        .collect()
}

fn state(ws: &Path) -> Value {
    read_json(&ws.join("strategy/state.json"))
}

#[tokio::test]
async fn a_plan_made_in_qq_is_confirmed_from_a_voice_wake() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    let r = kernel.command("/strategy plan").await;
    assert!(r.text.contains("当前策略: plan"), "{}", r.text);

    let r = kernel
        .handle_turn(Turn::new(
            "qq",
            "group:5550001",
            "dad",
            "帮我计划今晚的三道菜",
        ))
        .await;
    assert!(r.error.is_none(), "{r:?}");
    assert!(r.awaits_answer);
    assert!(
        r.text
            .starts_with("计划：今晚三道菜\n1. 买菜 — 番茄、鸡蛋、青椒\n2. 做菜\n"),
        "{}",
        r.text
    );
    // nothing ran yet: one planning request, and the instruction was in the tail, not the system prompt
    assert_eq!(fake.calls(), 1);
    let req = &fake.requests()[0];
    assert!(!req["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("planning mode"));
    assert_eq!(
        state(ws)["pending_work"]["steps"].as_array().unwrap().len(),
        2
    );

    // the kitchen speaker, a new wake, another speaker
    let r = kernel
        .handle_turn(Turn::new("voice", "wake-7", "mom", "好的，开始吧。"))
        .await;
    assert!(r.error.is_none(), "{r:?}");
    assert_eq!(r.text, "总结：菜买好了，也做好了。");
    assert!(!r.awaits_answer);
    assert!(state(ws)["pending_work"].is_null());
    assert_eq!(
        stages(ws, "plan"),
        ["proposed", "confirmed", "step", "step", "summary"]
    );
    let confirmed = journal(ws)
        .into_iter()
        .find(|e| e["stage"] == "confirmed")
        .unwrap();
    assert_eq!(confirmed["channel"], "voice");
    assert_eq!(confirmed["speaker_id"], "mom");
    // planning + two steps + summary
    assert_eq!(fake.calls(), 4);
    // a second "确认" has nothing to confirm
    let r = kernel
        .handle_turn(Turn::new("voice", "wake-8", "mom", "确认"))
        .await;
    assert!(
        r.text.starts_with("计划"),
        "a new plan is asked for: {}",
        r.text
    );
}

#[tokio::test]
async fn a_pending_plan_survives_a_restart_and_cancel_drops_it() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "dad", "计划一下晚饭"))
        .await;
    assert!(r.awaits_answer, "{r:?}");
    drop(kernel);

    let kernel = start_kernel(ws, &fake);
    let shown = kernel.command("/strategy").await.text;
    assert!(shown.contains("当前策略: plan"), "{shown}");
    assert!(shown.contains("待确认的计划: 今晚三道菜（2 步"), "{shown}");
    let r = kernel
        .handle_turn(Turn::new("qq", "private:10001", "dad", "确认"))
        .await;
    assert_eq!(r.text, "总结：菜买好了，也做好了。");

    // another plan, cancelled
    kernel
        .handle_turn(Turn::new("cli", "local", "dad", "再计划一次"))
        .await;
    assert!(!state(ws)["pending_work"].is_null());
    let calls = fake.calls();
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "dad", "算了"))
        .await;
    assert_eq!(r.text, "好，已取消这个计划。");
    assert_eq!(fake.calls(), calls, "cancelling asks no model");
    assert!(state(ws)["pending_work"].is_null());
}

#[tokio::test]
async fn invalid_plan_json_is_asked_again_once_then_a_clear_error() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|_, _| text("好的，我想想：先买菜，再做饭 {steps: [买菜")).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "dad", "计划晚饭"))
        .await;
    assert!(r.text.contains("没能做出一个有效的计划"), "{}", r.text);
    assert!(
        r.error.as_deref().unwrap().contains("after one retry"),
        "{r:?}"
    );
    assert_eq!(fake.calls(), 2, "asked once more, not more");
    let retry = last_user(&fake.requests()[1]);
    assert!(
        retry.starts_with("That plan was not valid: the answer contains no JSON object"),
        "{retry}"
    );
    assert!(state_or_default(ws)["pending_work"].is_null());
    // the turn itself is recorded
    let hist = std::fs::read_to_string(ws.join("chats/cli/local.jsonl")).unwrap();
    assert!(hist.contains("计划晚饭"), "{hist}");
    assert_eq!(stages(ws, "plan"), ["invalid", "invalid"]);
}

fn state_or_default(ws: &Path) -> Value {
    let p = ws.join("strategy/state.json");
    if p.exists() {
        read_json(&p)
    } else {
        json!({})
    }
}

#[tokio::test]
async fn a_plan_with_zero_steps_is_refused_to_the_model_and_the_old_plan_is_kept() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, _| {
        let u = last_user(body);
        if u.contains("改成两道菜") {
            return text(r#"{"goal":"两道菜","steps":[]}"#);
        }
        if u.contains("not valid") {
            return text(r#"{"goal":"两道菜","steps":[]}"#);
        }
        text(PLAN)
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    kernel
        .handle_turn(Turn::new("cli", "local", "dad", "计划晚饭"))
        .await;
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "dad", "改成两道菜"))
        .await;
    assert!(r.text.contains("the plan has 0 steps"), "{}", r.text);
    let req = &fake.requests()[1];
    assert!(
        last_user(req).contains("[待确认的计划]"),
        "the revision sees the pending plan"
    );
    let retry = last_user(&fake.requests()[2]);
    assert!(
        retry.contains("the plan has 0 steps; a plan needs at least one step"),
        "{retry}"
    );
    assert_eq!(
        state(ws)["pending_work"]["goal"],
        "今晚三道菜",
        "nothing lost"
    );
}

#[tokio::test]
async fn a_spec_without_deliverables_runs_its_requirements() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, n| {
        let u = last_user(body);
        if u.contains("You are in spec mode") {
            return planner(body, n);
        }
        if u.contains("全部 2 步都做完了") {
            return text("年夜饭规格完成。");
        }
        text("做了")
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy spec").await;
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "dad", "年夜饭怎么安排"))
        .await;
    assert!(
        r.text
            .starts_with("需求规格：一桌年夜饭\n需求：\n- 荤素搭配"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("将依次完成：\n1. 荤素搭配\n2. 两小时内做完"),
        "{}",
        r.text
    );
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "dad", "确认"))
        .await;
    assert_eq!(r.text, "年夜饭规格完成。");
    let steps: Vec<String> = fake
        .requests()
        .iter()
        .map(last_user)
        .filter(|u| u.contains("[第 "))
        .collect();
    assert!(steps[0].contains("[第 1/2 步] 荤素搭配"), "{steps:?}");
    assert_eq!(
        stages(ws, "spec"),
        ["proposed", "confirmed", "step", "step", "summary"]
    );
}

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
        .handle_turn(Turn::new("cli", "local", "mom", "打开做饭模式"))
        .await;
    let sdir = session_dir(ws);
    kernel.command("/strategy reflect").await;
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "mom", "番茄炒蛋怎么炒？"))
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
        .handle_turn(Turn::new("cli", "local", "mom", "做个菜"))
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
        r.error.is_some() && r.text.contains("没有叫 \"yolo\" 的策略"),
        "{r:?}"
    );
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(Turn::new("cli", "local", "mom", "你好"))
        .await;
    let u = last_user(fake.requests().last().unwrap());
    assert!(
        u.contains("Custom instructions take priority") && u.contains("回答前先说“收到”"),
        "{u}"
    );

    let r = kernel.command("/strategy careful").await;
    assert!(
        r.text
            .contains("当前策略: plan（由 /strategy 设置） · 预设: careful"),
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
        .handle_turn(Turn::new("cli", "local", "mom", "几点了"))
        .await;
    assert!(last_user(fake.requests().last().unwrap()).contains("思考深度：快速"));
    let r = kernel.command("/strategy build").await;
    assert!(!r.text.contains("· 预设"), "{}", r.text);
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
        .handle_turn(Turn::new("cli", "local", "mom", "打开做饭模式"))
        .await;
    let shown = kernel.command("/strategy").await.text;
    assert!(
        shown.contains("当前策略: assist（当前模式 cooking 的默认）"),
        "{shown}"
    );
    kernel.command("/strategy reflect").await;
    assert!(kernel
        .command("/strategy")
        .await
        .text
        .contains("当前策略: reflect（由 /strategy 设置）"));

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
        .handle_turn(Turn::new("cli", "local", "mom", "打开做饭模式"))
        .await;
    let sdir = session_dir(ws);
    let frozen = std::fs::read(sdir.join("system_prompt.md")).unwrap();
    kernel
        .handle_turn(Turn::new("cli", "local", "mom", "番茄几个？"))
        .await;
    let mut firsts = vec![fake.requests().len()];
    for (cmd, words) in [
        ("/strategy assist", "蛋几个？"),
        ("/strategy reflect", "盐放多少？"),
        ("/strategy custom 少说话", "火多大？"),
        ("/strategy build", "好了吗？"),
    ] {
        assert!(kernel.command(cmd).await.error.is_none(), "{cmd}");
        firsts.push(fake.requests().len());
        let r = kernel
            .handle_turn(Turn::new("cli", "local", "mom", words))
            .await;
        assert!(r.error.is_none(), "{r:?}");
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
async fn two_chats_confirming_at_once_run_the_plan_once() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    kernel
        .handle_turn(Turn::new("qq", "group:5550001", "dad", "计划晚饭"))
        .await;
    let a = kernel.submit(Turn::new("voice", "wake-1", "mom", "确认"));
    let b = kernel.submit(Turn::new("qq", "private:10001", "mom", "确认"));
    let (ra, rb) = tokio::join!(a.reply(), b.reply());
    let summaries = [&ra, &rb]
        .iter()
        .filter(|r| r.text == "总结：菜买好了，也做好了。")
        .count();
    assert_eq!(summaries, 1, "{ra:?} {rb:?}");
    assert_eq!(
        stages(ws, "plan")
            .iter()
            .filter(|s| *s == "confirmed")
            .count(),
        1
    );
}

#[tokio::test]
async fn switching_needs_the_mode_switch_permission_and_custom_text_is_bounded() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let kernel = start_kernel(ws, &fake);
    let mut t = Turn::new("qq", "group:5550001", "qq:999", "/strategy plan");
    t.may_switch_modes = false;
    let r = kernel.handle_turn(t.clone()).await;
    assert!(
        r.error.is_some() && r.text.contains("没有切换策略的权限"),
        "{r:?}"
    );
    t.text = "/strategy".into();
    let r = kernel.handle_turn(t).await;
    assert!(r.text.contains("当前策略: build（配置默认）"), "{r:?}");
    let long = format!("/strategy custom {}", "很".repeat(1001));
    let r = kernel.command(&long).await;
    assert!(
        r.error.is_some() && r.text.contains("上限 1000 字"),
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
async fn a_weak_ok_elsewhere_does_not_run_the_plan_and_switching_away_drops_it() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    kernel
        .handle_turn(Turn::new("qq", "group:5550001", "dad", "计划晚饭"))
        .await;
    // "好的" in another chat most likely answers something else: it becomes feedback
    kernel
        .handle_turn(Turn::new("qq", "private:10001", "mom", "好的"))
        .await;
    assert!(!stages(ws, "plan").contains(&"confirmed".to_string()));
    assert!(!state(ws)["pending_work"].is_null());
    let r = kernel.command("/strategy build").await;
    assert!(r.text.contains("待确认的计划已作废"), "{}", r.text);
    assert!(state(ws)["pending_work"].is_null());
    let r = kernel
        .handle_turn(Turn::new("qq", "group:5550001", "dad", "确认"))
        .await;
    assert_eq!(r.text, "好的", "nothing to confirm: an ordinary turn");
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
    let r = kernel
        .handle_turn(Turn::new("cli", "local", "mom", "你好"))
        .await;
    assert_eq!(r.text, "好的");
    kernel.command("/strategy reflect").await;
    assert_eq!(state(ws)["strategy"], "reflect");
}
