//! Plan and Spec through the real kernel against the scripted fake provider: a plan made
//! in QQ and confirmed from a voice wake, one confirmed after a restart, two chats
//! confirming at once, Spec's fallback chain, and bad model output (invalid JSON, zero
//! steps) — a clear error to the model, nothing lost. Reflect, Assist, Custom, presets and
//! switching are in `strategy_switch.rs`; `ask_user_choice` in `strategy_choice.rs`.

use crate::common;

use common::strategy::*;
use common::*;
use homebot::channels::{cli, qq, voice};
use serde_json::{json, Value};
use std::path::Path;

#[tokio::test]
async fn a_plan_made_in_qq_is_confirmed_from_a_voice_wake() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    let r = kernel.command("/strategy plan").await;
    assert!(r.text.contains("当前策略: plan"), "{}", r.text);

    let r = kernel
        .handle_turn(qq::turn("group:5550001", "dad", "帮我计划今晚的三道菜"))
        .await;
    assert!(r.is_answered(), "{r:?}");
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
        .handle_turn(voice::turn("wake-7", "mom", "好的，开始吧。"))
        .await;
    assert!(r.is_answered(), "{r:?}");
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
    // the household's terminal sees every step; the group only its own
    let all = kernel.command("/strategy log").await.text;
    assert!(
        all.contains("plan/proposed qq:group:5550001 dad: 今晚三道菜"),
        "{all}"
    );
    assert!(all.contains("plan/summary voice:wake-7 mom: 总结"), "{all}");
    let group = kernel
        .handle_turn(qq::turn("group:5550001", "dad", "/strategy log"))
        .await
        .text;
    assert!(
        group.contains("plan/proposed") && !group.contains("voice:wake-7"),
        "{group}"
    );
    // a second "确认" has nothing to confirm
    let r = kernel
        .handle_turn(voice::turn("wake-8", "mom", "确认"))
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
        .handle_turn(cli::turn("local", "dad", "计划一下晚饭"))
        .await;
    assert!(r.awaits_answer, "{r:?}");
    drop(kernel);

    let kernel = start_kernel(ws, &fake);
    let shown = kernel.command("/strategy").await.text;
    assert!(shown.contains("当前策略: plan"), "{shown}");
    assert!(shown.contains("待确认的计划: 今晚三道菜（2 步"), "{shown}");
    let r = kernel
        .handle_turn(qq::turn("private:10001", "dad", "确认"))
        .await;
    assert_eq!(r.text, "总结：菜买好了，也做好了。");

    // another plan, cancelled
    kernel
        .handle_turn(cli::turn("local", "dad", "再计划一次"))
        .await;
    assert!(!state(ws)["pending_work"].is_null());
    let calls = fake.calls();
    let r = kernel.handle_turn(cli::turn("local", "dad", "算了")).await;
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
        .handle_turn(cli::turn("local", "dad", "计划晚饭"))
        .await;
    assert!(r.text.contains("没能做出一个有效的计划"), "{}", r.text);
    assert!(r.problem().unwrap().contains("after one retry"), "{r:?}");
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
        .handle_turn(cli::turn("local", "dad", "计划晚饭"))
        .await;
    let r = kernel
        .handle_turn(cli::turn("local", "dad", "改成两道菜"))
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
        .handle_turn(cli::turn("local", "dad", "年夜饭怎么安排"))
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
    let r = kernel.handle_turn(cli::turn("local", "dad", "确认")).await;
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
async fn two_chats_confirming_at_once_run_the_plan_once() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    kernel
        .handle_turn(qq::turn("group:5550001", "dad", "计划晚饭"))
        .await;
    let a = kernel.submit(voice::turn("wake-1", "mom", "确认"));
    let b = kernel.submit(qq::turn("private:10001", "mom", "确认"));
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
async fn a_weak_ok_elsewhere_does_not_run_the_plan_and_switching_away_drops_it() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(planner).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    kernel
        .handle_turn(qq::turn("group:5550001", "dad", "计划晚饭"))
        .await;
    // "好的" in another chat most likely answers something else: it becomes feedback
    kernel
        .handle_turn(qq::turn("private:10001", "mom", "好的"))
        .await;
    assert!(!stages(ws, "plan").contains(&"confirmed".to_string()));
    assert!(!state(ws)["pending_work"].is_null());
    let r = kernel.command("/strategy build").await;
    assert!(r.text.contains("待确认的计划已作废"), "{}", r.text);
    assert!(state(ws)["pending_work"].is_null());
    let r = kernel
        .handle_turn(qq::turn("group:5550001", "dad", "确认"))
        .await;
    assert_eq!(r.text, "好的", "nothing to confirm: an ordinary turn");
}

#[tokio::test]
async fn a_step_that_fails_keeps_the_plan_for_another_confirmation() {
    let dir = workspace();
    let ws = dir.path();
    let failed_once = std::sync::atomic::AtomicBool::new(false);
    let fake = FakeLlm::start(move |body, n| {
        if last_user(body).contains("[第 1/2 步]")
            && !failed_once.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return FakeReply::Status(400, vec![], "{\"error\":\"bad request\"}".into());
        }
        planner(body, n)
    })
    .await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy plan").await;
    kernel
        .handle_turn(cli::turn("local", "dad", "计划晚饭"))
        .await;
    let r = kernel.handle_turn(cli::turn("local", "dad", "确认")).await;
    assert!(!r.is_answered(), "{r:?}");
    assert!(
        r.text
            .starts_with("执行到第 1 步（买菜 — 番茄、鸡蛋、青椒）时出错了"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .ends_with("这个计划还保留着，回复“确认”可以重新执行。"),
        "{}",
        r.text
    );
    assert_eq!(state(ws)["pending_work"]["goal"], "今晚三道菜");
    let r = kernel.handle_turn(cli::turn("local", "dad", "确认")).await;
    assert_eq!(r.text, "总结：菜买好了，也做好了。");
    assert!(stages(ws, "plan").contains(&"step-failed".to_string()));
}
