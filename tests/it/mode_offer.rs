//! The backend's offer of a mode: outside a mode, when someone clearly starts cooking, a
//! scripted model asks for the offer (`switch_mode` with `action: "offer"`); the backend asks its fixed question
//! ("要打开做饭模式吗？（…）" with what the mode is for, 1. 打开 / 2. 不用) and judges the answer itself. Only the asker's
//! clear yes in that chat enters (the answering turn is the session's first record); "不用"
//! or anyone else's "好" drops it; no offer without the mode's words, to a guest, to a
//! sender who may not switch modes, inside a mode, or twice in a chat on one day (across a
//! restart) — nor twice at one satellite, whatever HA's conversations.

use crate::common;

use common::*;
use homebot::channels::{cli, home_assistant, qq, voice};
use homebot::turn::Reply;
use serde_json::{json, Value};
use std::path::Path;

/// The offer's question: it says what the mode is for (the first clauses of its SKILL.md
/// description, at most 40 characters).
pub(crate) const ASKED: &str =
    "要打开做饭模式吗？（在厨房里一步一步带着家人做饭——按人数算份量、食材替换、火候与计时、安全提醒）";
pub(crate) const QUESTION: &str = "要打开做饭模式吗？（在厨房里一步一步带着家人做饭——按人数算份量、食材替换、火候与计时、安全提醒）\n1. 打开\n2. 不用\n（回复序号或选项名）";

/// A model that asks for the offer whenever cooking or the weather comes up (the backend
/// must refuse the weather), relays tool results, and otherwise echoes.
fn offerer(body: &Value, _n: usize) -> FakeReply {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    if last["role"] == "tool" {
        return text(&format!(
            "（结果）{}",
            last["content"].as_str().unwrap_or_default()
        ));
    }
    let words = user_words(last);
    if ["红烧肉", "做饭", "天气"].iter().any(|w| words.contains(w)) {
        return tool_call(
            "switch_mode",
            json!({"action": "offer", "mode_id": "cooking"}),
        );
    }
    text(&format!("好的：{words}"))
}

/// Whether a mode is active now.
pub(crate) fn active(ws: &Path) -> bool {
    ws.join("modes/action.json").exists() && action(ws)["active"] == true
}

/// The chats' open questions (`strategy/state.json` `choices`).
pub(crate) fn pending(ws: &Path) -> Value {
    let p = ws.join("strategy/state.json");
    if !p.exists() {
        return json!({});
    }
    read_json(&p)["choices"].clone()
}

fn offered(r: &Reply) {
    assert_eq!(r.text, QUESTION, "{r:?}");
    assert!(r.awaits_answer && r.is_answered(), "{r:?}");
}

#[tokio::test]
async fn a_yes_from_the_asker_enters_as_their_command() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(offerer).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| cli::turn("local", "mom", t);

    offered(&kernel.handle_turn(mom("我要开始做红烧肉了")).await);
    assert!(!active(ws), "an offer changes nothing yet");
    let r = kernel.handle_turn(mom("好")).await;
    assert!(active(ws), "{r:?}");
    assert!(
        r.text
            .starts_with("（结果）User selected: 打开. The backend entered the mode"),
        "{}",
        r.text
    );
    let records = jsonl(&session_dir(ws).join("conversation.jsonl"));
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["speaker_id"], "mom");
    assert_eq!(records[0]["user"], format!("好（回答“{ASKED}”）"));
    assert!(pending(ws).as_object().unwrap().is_empty());
}

#[tokio::test]
async fn no_and_someone_elses_yes_drop_the_offer() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(offerer).await;
    let kernel = start_kernel(ws, &fake);

    offered(
        &kernel
            .handle_turn(cli::turn("a", "mom", "今晚我来做饭"))
            .await,
    );
    let r = kernel.handle_turn(cli::turn("a", "mom", "不用")).await;
    assert_eq!(r.text, "好的：不用");
    assert!(!active(ws));
    let last = turn_requests(&fake).last().unwrap().clone();
    assert!(
        common::strategy::last_user(&last).contains("[已作废的提议]"),
        "the model is told the offer is gone"
    );

    offered(
        &kernel
            .handle_turn(cli::turn("b", "mom", "我要开始做红烧肉了"))
            .await,
    );
    let r = kernel.handle_turn(cli::turn("b", "dad", "好")).await;
    assert_eq!(r.text, "好的：好");
    assert!(!active(ws), "a different person's yes does not switch");
    // and the offer is gone: the asker's late yes is an ordinary message
    kernel.handle_turn(cli::turn("b", "mom", "好")).await;
    assert!(!active(ws));
    assert!(pending(ws).as_object().unwrap().is_empty());
}

#[tokio::test]
async fn no_offer_without_the_words_to_a_guest_or_inside_a_mode() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(offerer).await;
    let kernel = start_kernel(ws, &fake);

    let r = kernel
        .handle_turn(cli::turn("w", "mom", "今天天气怎么样"))
        .await;
    assert!(
        r.text
            .starts_with("（结果）not offered: the user's own words do not start"),
        "{}",
        r.text
    );
    assert!(!r.awaits_answer);
    let r = kernel
        .handle_turn(cli::turn("w2", "mom", "我不想做饭"))
        .await;
    assert!(r.text.starts_with("（结果）not offered"), "{}", r.text);

    let r = kernel
        .handle_turn(voice::turn("sess-1", "guest", "我要开始做红烧肉了"))
        .await;
    assert!(
        r.text
            .starts_with("（结果）not offered: modes are offered only"),
        "{}",
        r.text
    );
    let mut kid = qq::turn("group:1027", "kid", "我要开始做红烧肉了");
    kid.may_switch_modes = false;
    let r = kernel.handle_turn(kid).await;
    assert!(
        r.text
            .starts_with("（结果）refused: this sender may not switch modes"),
        "{}",
        r.text
    );
    assert!(pending(ws).as_object().unwrap().is_empty());

    kernel
        .handle_turn(cli::turn("m", "mom", "/mode enter cooking"))
        .await;
    assert!(active(ws));
    let r = kernel
        .handle_turn(cli::turn("m", "mom", "我要开始做红烧肉了"))
        .await;
    assert!(
        r.text.starts_with("（结果）not offered: a mode is active"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn once_per_chat_per_day_even_across_a_restart() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(offerer).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| qq::turn("private:10001", "mom", t);

    offered(&kernel.handle_turn(mom("我要开始做红烧肉了")).await);
    kernel.handle_turn(mom("不用")).await;
    let again = "（结果）not offered: this chat was offered a mode today already";
    let r = kernel.handle_turn(mom("那我来做饭吧")).await;
    assert!(r.text.starts_with(again), "{}", r.text);
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    let r = kernel.handle_turn(mom("我要开始做红烧肉了")).await;
    assert!(r.text.starts_with(again), "{}", r.text);
    // another chat is offered
    offered(
        &kernel
            .handle_turn(qq::turn("private:10002", "dad", "我要开始做红烧肉了"))
            .await,
    );
}

#[tokio::test]
async fn a_satellite_is_offered_once_a_day_whatever_its_conversations() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(offerer).await;
    let kernel = start_kernel(ws, &fake);
    // mom, opted in at the kitchen satellite; HA opens a new conversation after 5 quiet
    // minutes, so each of these is a chat of its own
    let kitchen = |conversation: &str, t: &str| {
        home_assistant::turn(conversation, "mom", t, Some("assist_satellite.kitchen"))
    };
    let r = kernel
        .handle_turn(kitchen("01jqa", "我要开始做红烧肉了"))
        .await;
    assert!(
        r.text.contains("要打开做饭模式吗") && r.awaits_answer,
        "{r:?}"
    );
    kernel.handle_turn(kitchen("01jqa", "不用")).await;
    let r = kernel.handle_turn(kitchen("01jqb", "那我来做饭吧")).await;
    assert!(
        r.text
            .starts_with("（结果）not offered: this chat was offered a mode today already"),
        "a new conversation at the same satellite was offered again: {}",
        r.text
    );
    // typed in the HA app (no satellite) is a chat of its own
    let typed = home_assistant::turn("01jqc", "mom", "我要开始做红烧肉了", None);
    offered(&kernel.handle_turn(typed).await);
}
