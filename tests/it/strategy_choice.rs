//! `ask_user_choice` on every channel: the question ends the turn as a numbered list (QQ,
//! terminal) or spoken options (voice, which keeps listening); the next message of that
//! chat is parsed back and answered in a new turn whose tool result is `User selected: …`;
//! an unrelated reply cancels; in a QQ group only the asker's answer counts; a call with
//! 1 or 7 options is a tool error and nothing waits.

use crate::common;

use common::gateway::Gateway;
use common::satellite::{recv as recv_json, satellite};
use common::*;
use futures_util::SinkExt;
use serde_json::{json, Value};
use std::path::Path;

const DISHES: [&str; 3] = ["番茄炒蛋", "青椒肉丝", "红烧肉"];

/// A model that asks which dish when asked what to cook, and says what it was told.
fn chooser(body: &Value, _n: usize) -> FakeReply {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    if last["role"] == "tool" {
        let c = last["content"].as_str().unwrap_or_default();
        return text(&format!("收到：{c}"));
    }
    let u = last_user(body);
    if !u.contains("做什么菜") {
        return text("好的");
    }
    let n = if u.contains("一个选项") {
        1
    } else if u.contains("七个选项") {
        7
    } else {
        3
    };
    let options: Vec<String> = (0..n)
        .map(|i| {
            DISHES
                .get(i)
                .map(|d| d.to_string())
                .unwrap_or(format!("菜{i}"))
        })
        .collect();
    tool_call(
        "ask_user_choice",
        json!({
            "question": "今晚做哪个？",
            "options": options,
            "multi_select": u.contains("可以多选"),
            "allow_custom": u.contains("自己说"),
            "anyone": u.contains("大家说"),
        }),
    )
}

fn choices(ws: &Path) -> Value {
    let p = ws.join("strategy/state.json");
    if !p.exists() {
        return json!({});
    }
    read_json(&p)["choices"].clone()
}

/// The tool result of the last request, if it ends with one.
fn last_tool(fake: &FakeLlm) -> Option<String> {
    tool_results(fake.requests().last().unwrap())
        .last()
        .map(|(_, c)| c.clone())
}

#[tokio::test]
async fn terminal_single_multi_custom_and_unrelated_answers() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let kernel = start_kernel(ws, &fake);
    let turn = |t: &str| homebot::channels::cli::turn("local", "mom", t);

    let r = kernel.handle_turn(turn("今晚做什么菜")).await;
    assert!(r.awaits_answer && r.is_answered(), "{r:?}");
    assert_eq!(
        r.text,
        "今晚做哪个？\n1. 番茄炒蛋\n2. 青椒肉丝\n3. 红烧肉\n（回复序号或选项名）"
    );
    assert_eq!(fake.calls(), 1, "the question ends the turn");
    assert!(choices(ws)["cli:local"].is_object());
    let r = kernel.handle_turn(turn("第二个")).await;
    assert_eq!(r.text, "收到：User selected: 青椒肉丝");
    assert!(!r.awaits_answer);
    // the call is replayed before its result, after the user's answer
    let req = fake.requests().last().unwrap().clone();
    let msgs = req["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(
        msgs[n - 2]["tool_calls"][0]["function"]["name"],
        "ask_user_choice"
    );
    assert_eq!(msgs[n - 3]["role"], "user");
    assert_eq!(user_words(&msgs[n - 3]), "第二个");
    assert!(choices(ws).as_object().unwrap().is_empty());

    kernel.handle_turn(turn("今晚做什么菜，可以多选")).await;
    let r = kernel.handle_turn(turn("1 和 3")).await;
    assert_eq!(r.text, "收到：User selected: 番茄炒蛋, 红烧肉");
    kernel.handle_turn(turn("今晚做什么菜，可以多选")).await;
    let r = kernel.handle_turn(turn("都要")).await;
    assert_eq!(r.text, "收到：User selected: 番茄炒蛋, 青椒肉丝, 红烧肉");
    kernel.handle_turn(turn("今晚做什么菜，我自己说也行")).await;
    let r = kernel.handle_turn(turn("选番茄炒蛋")).await;
    assert_eq!(r.text, "收到：User selected: 番茄炒蛋");
    kernel.handle_turn(turn("今晚做什么菜，我自己说也行")).await;
    let r = kernel.handle_turn(turn("来个酸辣土豆丝")).await;
    assert!(
        r.text
            .starts_with("收到：User selected: 来个酸辣土豆丝 (their own answer"),
        "{}",
        r.text
    );

    // a number that is no option: asked again, nothing sent to the model
    kernel.handle_turn(turn("今晚做什么菜")).await;
    let calls = fake.calls();
    let r = kernel.handle_turn(turn("5")).await;
    assert_eq!(r.text, "没有第 5 个选项，请回复 1 到 3 之间的序号。");
    assert!(r.awaits_answer);
    assert_eq!(fake.calls(), calls);
    // an unrelated reply: the question is dropped and the message answered as itself
    let r = kernel.handle_turn(turn("明天几点起床？")).await;
    assert_eq!(r.text, "好的");
    assert!(last_tool(&fake).is_none());
    let u = last_user(fake.requests().last().unwrap());
    assert!(
        u.contains("[已取消的问题]") && u[5..].starts_with(" mom：明天几点起床？\n\n"),
        "{u}"
    );
    assert!(choices(ws).as_object().unwrap().is_empty());
    let r = kernel.handle_turn(turn("2")).await;
    assert_eq!(r.text, "好的", "no question is open any more");

    let log = std::fs::read_to_string(ws.join("logs/strategy.jsonl")).unwrap();
    assert!(log.contains("\"stage\":\"asked\"") && log.contains("\"stage\":\"cancelled\""));
}

#[tokio::test]
async fn a_choice_with_one_or_seven_options_is_a_tool_error_and_nothing_waits() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let kernel = start_kernel(ws, &fake);
    for (words, n) in [("做什么菜，一个选项", 1), ("做什么菜，七个选项", 7)] {
        let r = kernel
            .handle_turn(homebot::channels::cli::turn("local", "mom", words))
            .await;
        assert!(!r.awaits_answer);
        let expect = format!(
            "收到：error: ask_user_choice: options must have 2 to 6 entries, got {n}. Nothing was asked"
        );
        assert!(r.text.starts_with(&expect), "{}", r.text);
        assert!(choices(ws).as_object().is_none_or(|m| m.is_empty()));
    }
    // the conversation goes on
    let r = kernel
        .handle_turn(homebot::channels::cli::turn("local", "mom", "2"))
        .await;
    assert_eq!(r.text, "好的");
}

#[tokio::test]
async fn multi_select_with_allow_custom_is_refused_with_the_reason_and_nothing_waits() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let kernel = start_kernel(ws, &fake);
    let r = kernel
        .handle_turn(homebot::channels::cli::turn(
            "local",
            "mom",
            "今晚做什么菜，可以多选，我自己说也行",
        ))
        .await;
    assert!(!r.awaits_answer, "{r:?}");
    assert!(
        r.text.starts_with(
            "收到：error: ask_user_choice: multi_select and allow_custom are mutually exclusive"
        ),
        "{}",
        r.text
    );
    assert!(choices(ws).as_object().is_none_or(|m| m.is_empty()));
    // the same question with one of the two is asked
    let r = kernel
        .handle_turn(homebot::channels::cli::turn(
            "local",
            "mom",
            "今晚做什么菜，可以多选",
        ))
        .await;
    assert!(r.awaits_answer, "{r:?}");
    assert!(choices(ws)["cli:local"]["asked"]["multi_select"] == true);
}

#[tokio::test]
async fn in_a_group_only_the_askers_answer_counts_unless_anyone_may_answer() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let kernel = start_kernel(ws, &fake);
    let g = |who: &str, t: &str| homebot::channels::qq::turn("group:5550001", who, t);
    let r = kernel.handle_turn(g("dad", "今晚做什么菜")).await;
    assert!(
        r.text.contains("\n1. 番茄炒蛋\n") && r.text.contains("请提问的人 @我 回答"),
        "{}",
        r.text
    );
    let r = kernel.handle_turn(g("mom", "2")).await;
    assert_eq!(r.text, "好的", "mom's 2 is not the answer");
    let u = last_user(fake.requests().last().unwrap());
    assert!(
        u.contains("[待回答的问题]") && u.contains("在等 dad 本人回答"),
        "{u}"
    );
    assert!(choices(ws)["qq:group:5550001"].is_object(), "still open");
    let r = kernel.handle_turn(g("dad", "1")).await;
    assert_eq!(r.text, "收到：User selected: 番茄炒蛋");

    // "大家说": anyone answers
    let r = kernel.handle_turn(g("dad", "今晚做什么菜，大家说")).await;
    assert!(!r.text.contains("请提问的人"), "{}", r.text);
    let r = kernel.handle_turn(g("mom", "红烧肉")).await;
    assert_eq!(r.text, "收到：User selected: 红烧肉");
}

#[tokio::test]
async fn a_question_waits_across_a_restart() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let kernel = start_kernel(ws, &fake);
    kernel
        .handle_turn(homebot::channels::qq::turn(
            "private:10001",
            "mom",
            "今晚做什么菜",
        ))
        .await;
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    let r = kernel
        .handle_turn(homebot::channels::qq::turn(
            "private:10001",
            "mom",
            "第三个",
        ))
        .await;
    assert_eq!(r.text, "收到：User selected: 红烧肉");
}

const VOICE_TOKEN: &str = "voice-token-123";

#[tokio::test]
async fn voice_speaks_the_options_keeps_listening_and_takes_the_spoken_answer() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let gw = Gateway::start(
        ws,
        &fake,
        &[
            ("HOMEBOT_VOICE_WS_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_VOICE_TOKEN", VOICE_TOKEN),
        ],
        &["voice-ws"],
    )
    .await;
    let mut s = satellite(gw.addr("voice-ws"), "kitchen", VOICE_TOKEN).await;
    let say = |t: &str| {
        tokio_tungstenite::tungstenite::Message::Text(
            json!({"type": "transcript", "session_id": "wake-1", "satellite_id": "kitchen", "text": t})
                .to_string(),
        )
    };
    s.send(say("今晚做什么菜")).await.unwrap();
    let r = recv_json(&mut s).await;
    assert_eq!(
        r["text"],
        "今晚做哪个？ 一，番茄炒蛋；二，青椒肉丝；三，红烧肉。请说序号或名字。"
    );
    assert_eq!(r["dialogue_state"], "continue");
    s.send(say("第二个")).await.unwrap();
    let r = recv_json(&mut s).await;
    assert_eq!(r["text"], "收到：User selected: 青椒肉丝");
    assert_eq!(r["dialogue_state"], "end");
}

#[tokio::test]
async fn qq_group_shows_a_numbered_list_and_takes_the_askers_answer() {
    use common::onebot::text_of;
    use common::qq::*;
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let gw = gateway(ws, &fake).await;
    let mut sim = sim(&gw).await;
    sim.group_msg(GROUP, DAD, 1, json!([at_bot(), text("今晚做什么菜")]))
        .await;
    let out = text_of(&sim.expect_send().await);
    assert!(
        out.contains("今晚做哪个？\n1. 番茄炒蛋\n2. 青椒肉丝\n3. 红烧肉"),
        "{out}"
    );
    // mom (a member) answers: not the asker
    sim.group_msg(GROUP, MOM, 2, json!([at_bot(), text("2")]))
        .await;
    let out = text_of(&sim.expect_send().await);
    assert!(out.contains("好的"), "{out}");
    sim.group_msg(GROUP, DAD, 3, json!([at_bot(), text("第一个")]))
        .await;
    let out = text_of(&sim.expect_send().await);
    assert!(out.contains("收到：User selected: 番茄炒蛋"), "{out}");
}

#[tokio::test]
async fn an_unanswered_question_and_an_unconfirmed_plan_lapse() {
    use homebot::clock::ManualClock;
    use homebot::kernel::{Kernel, KernelOptions};
    let t0 = chrono::DateTime::parse_from_rfc3339("2026-10-22T18:00:00+08:00")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let clock = std::sync::Arc::new(ManualClock::new(t0));
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, n| {
        if last_user(body).contains("You are in planning mode") {
            return text(r#"{"goal":"晚饭","steps":["买菜"]}"#);
        }
        chooser(body, n)
    })
    .await;
    let kernel = Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(clock.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let turn = |t: &str| homebot::channels::cli::turn("local", "mom", t);
    kernel.handle_turn(turn("今晚做什么菜")).await;
    clock.advance(chrono::Duration::minutes(31));
    let r = kernel.handle_turn(turn("2")).await;
    assert_eq!(
        r.text, "好的",
        "a question older than strategy.choice_minutes is gone"
    );

    kernel.command("/strategy plan").await;
    let r = kernel.handle_turn(turn("计划晚饭")).await;
    assert!(r.awaits_answer, "{r:?}");
    clock.advance(chrono::Duration::hours(25));
    let calls = fake.calls();
    let r = kernel.handle_turn(turn("确认")).await;
    assert!(
        r.text.starts_with("计划：晚饭"),
        "a new plan, not the old one run: {}",
        r.text
    );
    assert_eq!(fake.calls(), calls + 1);
}

#[tokio::test]
async fn home_assistant_through_wyoming_keeps_the_conversation_open_for_the_answer() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(chooser).await;
    let gw = Gateway::start(
        ws,
        &fake,
        &[("HOMEBOT_WYOMING_LISTEN", "127.0.0.1:0")],
        &["wyoming"],
    )
    .await;
    let (h, p) = gw.addr("wyoming").rsplit_once(':').unwrap();
    let (h, p) = (h.to_string(), p.to_string());
    let wy = |text: &'static str| {
        let (h, p) = (h.clone(), p.clone());
        async move { run_peer("wyoming_client.py", &[&h, &p, "transcript", text, "conv-9"]).await }
    };
    let r = wy("今晚做什么菜").await;
    assert_eq!(r["type"], "handled");
    assert_eq!(
        r["text"],
        "今晚做哪个？ 一，番茄炒蛋；二，青椒肉丝；三，红烧肉。请说序号或名字。"
    );
    assert_eq!(r["context"]["dialogue_state"], "continue");
    let r = wy("红烧肉").await;
    assert_eq!(r["text"], "收到：User selected: 红烧肉");
    assert_eq!(r["context"]["dialogue_state"], "end");
}
