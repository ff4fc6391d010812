//! `/why` and "你为什么这么说" through the real gateway: the chat's own last answer
//! explained from the audit trail (mode, strategy, knowledge, memories, history, tokens),
//! no model call for it, and nothing of another chat's.

use crate::common;

use common::qq::{at_bot, gateway, sim, text as seg, GROUP, MOM};
use common::*;
use homebot::channels::cli;
use serde_json::{json, Value};

/// Keeps what it is asked to remember ("记住：…" → `memory_commit`), switches modes as
/// [`scripted`] does, else answers briefly.
async fn fake() -> FakeLlm {
    FakeLlm::start(|body, _| {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.last().cloned().unwrap_or(Value::Null);
        if last["role"] == "tool" {
            return text("记下了。");
        }
        let words = user_words(&last);
        let words = words.rsplit("\n\n").next().unwrap_or_default().to_string();
        if let Some(what) = words.strip_prefix("记住：") {
            return tool_call("memory_commit", json!({"content": what}));
        }
        if words.contains("做饭模式") {
            return scripted(body);
        }
        text("明早八点出发。")
    })
    .await
}

#[tokio::test]
async fn over_qq_a_group_sees_its_own_last_answer_and_no_private_memory() {
    let dir = workspace();
    let ws = dir.path();
    let fake = fake().await;
    let gw = gateway(ws, &fake).await;
    let mut s = sim(&gw).await;
    // mom's private chat keeps something private and asks about it
    s.private_msg(MOM, 1, json!([seg("记住：我下周二去医院复查")]))
        .await;
    s.expect_send().await;
    s.private_msg(MOM, 2, json!([seg("我下周二做什么？")]))
        .await;
    s.expect_send().await;
    // the group keeps its own rule, then asks
    let said = |t: &str| json!([at_bot(), seg(t)]);
    s.group_msg(GROUP, MOM, 3, said("记住：这个群里说话要简短"))
        .await;
    s.expect_send().await;
    s.group_msg(GROUP, MOM, 4, said("明天几点出发？")).await;
    s.expect_send().await;
    let calls = fake.requests().len();

    s.group_msg(GROUP, MOM, 5, said("/why")).await;
    let why = onebot::text_of(&s.expect_send().await);
    for want in [
        "上一次回答",
        "模式：无",
        "策略：build",
        "资料：没用到",
        "这个群里说话要简短（场景）",
        "调用模型 1 次",
        "缓存命中",
    ] {
        assert!(why.contains(want), "{want:?} missing:\n{why}");
    }
    assert!(!why.contains("复查") && !why.contains("医院"), "{why}");
    // said in words: the same explanation (the question made no call of its own)
    s.group_msg(GROUP, MOM, 6, said("你为什么这么说？")).await;
    assert_eq!(onebot::text_of(&s.expect_send().await), why);
    assert_eq!(fake.requests().len(), calls, "/why never calls the model");

    // the private chat's own last answer is what its /why explains
    s.private_msg(MOM, 7, json!([seg("/why")])).await;
    let private = onebot::text_of(&s.expect_send().await);
    assert!(private.contains("下周二去医院复查（场景）"), "{private}");
    assert!(!private.contains("说话要简短"), "{private}");
    // a question about a thing is a message, not /why
    s.group_msg(GROUP, MOM, 8, said("为什么要早点出发？")).await;
    s.expect_send().await;
    assert_eq!(fake.requests().len(), calls + 1);
    s.close().await;
}

#[tokio::test]
async fn in_a_mode_it_names_the_mode_the_knowledge_and_the_history() {
    let dir = workspace();
    let ws = dir.path();
    copy_skills(ws);
    let fake = FakeLlm::start(|body, _| scripted(body)).await;
    let k = start_kernel(ws, &fake);
    let turn = |t: &str| k.handle_turn(cli::turn("local", "mom", t));
    let nothing = turn("/why").await;
    assert!(
        nothing.text.contains("还没有可以解释的回答"),
        "{}",
        nothing.text
    );
    assert!(turn("/mode enter cooking").await.is_answered());
    turn("今晚三个人吃饭").await;
    turn("红烧肉怎么做？炒糖色要注意什么").await;
    let why = turn("/why").await;
    assert!(why.is_answered(), "{why:?}");
    for want in [
        "模式：做饭模式 (cooking)",
        "资料：",
        "basics/家常菜.md",
        "历史：回放了最近 1 轮（第 1 轮）",
        "调用模型 1 次",
    ] {
        assert!(why.text.contains(want), "{want:?} missing:\n{}", why.text);
    }
    // /why is not a turn of the session: nothing recorded for it
    let records = jsonl(&session_dir(ws).join("conversation.jsonl"));
    assert!(
        records.iter().all(|r| !r.to_string().contains("/why")),
        "{records:?}"
    );
}
