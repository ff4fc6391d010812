//! Spoken commands through the kernel: strategies changed by voice (`set_strategy`,
//! accepted only when the user's own words ask for it), presets that keep their thinking
//! depth and tool-round cap when a strategy is named, and unpunctuated mode commands (the
//! switch guard and `set_strategy` share one clause parser).

use crate::common;

use common::strategy::*;
use common::*;
use homebot::channels::{cli, qq};
use homebot::turn::Turn;
use serde_json::{json, Value};

fn mom(words: &str) -> Turn {
    cli::turn("local", "mom", words)
}

/// A model that proposes `set_strategy` whenever the words mention a strategy (the
/// backend decides), plans when asked to, relays tool results, else says 好的.
fn switcher(body: &Value, _n: usize) -> FakeReply {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    if last["role"] == "tool" {
        return text(&format!("（策略）{}", last["content"].as_str().unwrap()));
    }
    let words = user_words(last);
    let name = if words.contains("直接做") {
        Some("build")
    } else if words.contains("计划") {
        Some("plan")
    } else if words.contains("careful") {
        Some("careful")
    } else {
        None
    };
    if let Some(n) = name {
        return tool_call("set_strategy", json!({ "name": n }));
    }
    if last_user(body).contains("You are in planning mode") {
        return text(PLAN);
    }
    text("好的")
}

fn strategy_of(ws: &std::path::Path) -> Value {
    let p = ws.join("strategy/state.json");
    if p.exists() {
        state(ws)["strategy"].clone()
    } else {
        Value::Null
    }
}

#[tokio::test]
async fn a_spoken_strategy_change_is_accepted_only_when_the_words_ask_for_it() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);

    // refused: a question, a report — the strategy stays
    for (words, why) in [
        ("计划模式是什么", "does not ask to switch"),
        ("他说用计划模式", "talking about the strategy"),
        ("不要用计划模式", "said not to"),
    ] {
        let r = kernel.handle_turn(mom(words)).await;
        assert!(
            r.text.starts_with("（策略）refused:") && r.text.contains(why),
            "{words}: {}",
            r.text
        );
        assert_eq!(strategy_of(ws), Value::Null, "{words}");
    }
    assert!(kernel
        .command("/strategy")
        .await
        .text
        .contains("当前策略: build（配置默认）"));

    // accepted: the household's strategy is now plan, and the journal says who asked
    let r = kernel.handle_turn(mom("先给我个计划再做")).await;
    assert!(
        r.text.contains("已切换策略") && r.text.contains("当前策略: plan"),
        "{}",
        r.text
    );
    assert_eq!(strategy_of(ws), "plan");
    let set = journal(ws)
        .into_iter()
        .find(|e| e["stage"] == "set-by-voice")
        .expect("journaled");
    assert_eq!(set["text"], "先给我个计划再做");
    assert_eq!(set["speaker_id"], "mom");
    assert_eq!(set["detail"]["name"], "plan");

    // the next message is planned
    let r = kernel.handle_turn(mom("周末大扫除")).await;
    assert!(r.awaits_answer && r.text.contains("买菜"), "{r:?}");
    assert!(state(ws)["pending_work"].is_object());

    // in Plan, "直接做吧" reaches set_strategy from the planning request: back to build,
    // the pending plan dropped, no plan made
    let r = kernel.handle_turn(mom("直接做吧")).await;
    assert!(
        r.text.contains("当前策略: build") && r.text.contains("待确认的计划已作废"),
        "{}",
        r.text
    );
    assert!(!r.awaits_answer);
    assert_eq!(strategy_of(ws), "build");
    assert!(state(ws)["pending_work"].is_null());

    // Build (the configured default) sends the seed's wording as the system message's
    // strategy block
    kernel.handle_turn(mom("你好")).await;
    let last = fake.requests().last().unwrap().clone();
    let s = system_text(&last);
    assert!(
        s.ends_with("\n[策略]\nAct directly. Use tools when needed.\nBe efficient: prefer fewer steps, verify results between calls.\n[/策略]\n"),
        "{s}"
    );
    // the window last heard of Plan: this message says, once, that the system
    // message's block holds again; the next one says nothing
    let back = format!("[策略]\n{}\n[/策略]", homebot::prompt::STRATEGY_BACK);
    assert!(last_user(&last).contains(&back), "{}", last_user(&last));
    kernel.handle_turn(mom("谢谢")).await;
    let last = fake.requests().last().unwrap().clone();
    assert!(!last_user(&last).contains("[策略]"), "{}", last_user(&last));

    // the tool list is the same bytes in every request, whatever the strategy
    let reqs = fake.requests();
    let tools = serde_json::to_string(&reqs[0]["tools"]).unwrap();
    assert!(tools.contains("\"set_strategy\""));
    for r in &reqs {
        assert_eq!(serde_json::to_string(&r["tools"]).unwrap(), tools);
    }
}

#[tokio::test]
async fn a_sender_who_may_not_switch_modes_may_not_switch_the_strategy_by_voice() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let mut t = qq::turn("group:5550001", "qq:999", "switch to careful");
    t.may_switch_modes = false;
    let r = kernel.handle_turn(t.clone()).await;
    assert!(r.text.contains("没有切换策略的权限"), "{}", r.text);
    assert_eq!(strategy_of(ws), Value::Null);
    t.may_switch_modes = true;
    let r = kernel.handle_turn(t).await;
    assert!(r.text.contains("预设: careful"), "{}", r.text);
    assert_eq!(strategy_of(ws), "plan");
    assert_eq!(state(ws)["preset"], "careful");
}

/// A model that never stops calling tools.
fn runaway(_: &Value, _: usize) -> FakeReply {
    tool_call("list_files", json!({"path": "."}))
}

#[tokio::test]
async fn naming_a_strategy_keeps_the_presets_thinking_depth_and_tool_round_cap() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(runaway).await;
    let kernel = start_kernel(ws, &fake);

    kernel.command("/strategy quick").await;
    let r = kernel.command("/strategy build").await;
    assert!(r.text.contains("预设: quick"), "kept: {}", r.text);
    assert_eq!(state(ws)["preset"], "quick");
    let before = fake.calls();
    let r = kernel.handle_turn(mom("随便看看")).await;
    assert_eq!(
        fake.calls() - before,
        11,
        "quick: 10 tool rounds, then stop"
    );
    assert!(r.text.contains("超过了 10 次"), "{}", r.text);
    let u = last_user(fake.requests().last().unwrap());
    assert!(u.contains("思考深度：快速"), "{u}");

    // standard: the default cap (agent.max_tool_rounds, 25), standard thinking
    kernel.command("/strategy standard").await;
    let before = fake.calls();
    let r = kernel.handle_turn(mom("随便看看")).await;
    assert_eq!(
        fake.calls() - before,
        26,
        "default: 25 tool rounds, then stop"
    );
    assert!(r.text.contains("超过了 25 次"), "{}", r.text);
    assert!(!last_user(fake.requests().last().unwrap()).contains("思考深度"));

    // careful, then a strategy by name: deep thinking stays
    kernel.command("/strategy careful").await;
    let r = kernel.command("/strategy reflect").await;
    assert!(
        r.text.contains("当前策略: reflect") && r.text.contains("预设: careful"),
        "{}",
        r.text
    );
    drop(kernel);
    // and it survives a restart
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let kernel = start_kernel(ws, &fake);
    kernel.handle_turn(mom("你好")).await;
    let u = last_user(&fake.requests()[0]);
    assert!(
        u.contains("思考深度：深入") && u.contains("review it critically"),
        "{u}"
    );
}

#[tokio::test]
async fn a_preset_never_raises_agent_max_tool_rounds() {
    let dir = workspace();
    let ws = dir.path();
    std::fs::write(ws.join("config.toml"), "[agent]\nmax_tool_rounds = 4\n").unwrap();
    let fake = FakeLlm::start(runaway).await;
    let kernel = start_kernel(ws, &fake);
    kernel.command("/strategy quick").await;
    let r = kernel.handle_turn(mom("随便看看")).await;
    assert_eq!(
        fake.calls(),
        5,
        "4 rounds: the configured bound, not quick's 10"
    );
    assert!(r.text.contains("超过了 4 次"), "{}", r.text);
}

#[tokio::test]
async fn unpunctuated_mode_commands_switch_and_reports_do_not() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let kernel = start_kernel(ws, &fake);
    let active = || {
        let p = ws.join("modes/action.json");
        p.exists() && action(ws)["active"] == true
    };
    for (words, switches, active_after) in [
        ("他说打开做饭模式", false, false),
        ("打开做饭模式今晚吃什么", true, true),
        ("做饭模式结束了吗", false, true),
        ("好了关闭做饭模式谢谢", true, false),
        ("如果我打开做饭模式会怎样", false, false),
        ("我已经洗好菜了打开做饭模式", true, true),
        ("别关闭做饭模式", false, true),
        ("退出做饭模式吧我吃完了", true, false),
    ] {
        let r = kernel.handle_turn(mom(words)).await;
        // retold words are asked about (the backend's question), never switched
        let switched = !r.text.contains("refused") && !r.awaits_answer;
        assert_eq!(switched, switches, "{words}: {}", r.text);
        assert_eq!(active(), active_after, "{words}");
    }
}

#[tokio::test]
async fn the_standing_strategy_is_in_the_system_message_and_a_switched_one_in_each_tail() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let kernel = start_kernel(ws, &fake);
    const BUILD: &str = "Act directly. Use tools when needed.";
    let req = |i: usize| fake.requests()[i].clone();
    for words in ["你好", "今天几号"] {
        kernel.handle_turn(mom(words)).await;
    }
    // the configured default's block ends the system message, the same bytes each turn
    assert!(system_text(&req(0)).contains(BUILD));
    assert_eq!(system_text(&req(0)), system_text(&req(1)));
    assert!(!last_user(&req(0)).contains("[策略]") && !last_user(&req(1)).contains("[策略]"));
    // the first message is replayed exactly as it was sent
    assert_eq!(
        req(1)["messages"][1]["content"],
        last_user(&req(0)).as_str()
    );
    assert!(last_user(&req(0))[5..].starts_with(" mom：你好\n\n[上下文]\n"));

    // a switch leaves the system message as it was (no prefix broken) and sends the
    // switched strategy once, in the first message after it, saying it replaces the
    // standing one; the next turn replays that message and holds the previous request
    // whole
    kernel.command("/strategy assist").await;
    for words in ["做个菜", "再来一个"] {
        kernel.handle_turn(mom(words)).await;
    }
    let switched = |u: &str| {
        u.contains("[策略]\n家里人切换了策略：以下取代系统消息里的 [策略]。\n")
            && u.contains("you MUST call ask_user_choice")
            && !u.contains(BUILD)
    };
    for i in [2, 3] {
        assert_eq!(system_text(&req(i)), system_text(&req(0)));
    }
    assert!(switched(&last_user(&req(2))), "{}", last_user(&req(2)));
    assert!(
        !last_user(&req(3)).contains("[策略]"),
        "{}",
        last_user(&req(3))
    );
    let (m2, m3) = (
        req(2)["messages"].as_array().unwrap().clone(),
        req(3)["messages"].as_array().unwrap().clone(),
    );
    assert_eq!(
        m3[..m2.len()],
        m2[..],
        "the request after the switch is held whole"
    );
    // back to the standing strategy: one message says so, once
    kernel.command("/strategy build").await;
    for words in ["好的", "谢谢"] {
        kernel.handle_turn(mom(words)).await;
    }
    assert!(
        last_user(&req(4)).contains(&format!(
            "[策略]\n{}\n[/策略]",
            homebot::prompt::STRATEGY_BACK
        )),
        "{}",
        last_user(&req(4))
    );
    assert!(
        !last_user(&req(5)).contains("[策略]"),
        "{}",
        last_user(&req(5))
    );
    assert_eq!(system_text(&req(5)), system_text(&req(0)));
}
