//! The offer made from the answer: outside any mode, when a normal chat's answer turns out
//! to be cooking mode's work (a recipe walked step by step: `offer.answer` in its
//! `mode.json`), the backend puts its question after the answer — though the user's words
//! said no offer word — and judges the reply as any offer. Once a day per chat, never to a
//! guest or a sender who may not switch, never inside a mode, never after another kind of
//! how-to.

use crate::common;
use crate::mode_offer::{active, pending, ASKED, QUESTION};

use common::*;
use homebot::channels::{cli, qq, voice};
use serde_json::Value;

const RECIPE: &str = "红烧肉这样做：\n1. 五花肉切块，冷水下锅焯水。\n2. 少油小火炒糖色。\n3. 肉块下锅翻炒上色，加生抽和料酒。\n4. 加热水小火炖四十分钟，大火收汁出锅。";
const SPOKEN: &str = "先把五花肉焯水，然后小火炒糖色，再把肉下锅翻炒，最后加生抽小火炖四十分钟。";
const ROUTER: &str = "这样设置：\n1. 插上电源。\n2. 连上网线。\n3. 打开管理页面设置密码。";

/// A model that answers how-to questions step by step (a recipe, a spoken recipe, a
/// router), relays tool results and otherwise echoes. It never asks for an offer.
fn teacher(body: &Value, _n: usize) -> FakeReply {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    if last["role"] == "tool" {
        return text(&format!(
            "（结果）{}",
            last["content"].as_str().unwrap_or_default()
        ));
    }
    let words = user_words(last);
    if words.contains("路由器") {
        return text(ROUTER);
    }
    if words.contains("说说") {
        return text(SPOKEN);
    }
    if words.contains("怎么做") {
        return text(RECIPE);
    }
    text(&format!("好的：{words}"))
}

#[tokio::test]
async fn a_recipe_answered_outside_a_mode_is_followed_by_the_offer_and_a_yes_enters() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(teacher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| cli::turn("local", "mom", t);

    let r = kernel.handle_turn(mom("红烧肉怎么做？")).await;
    assert_eq!(r.text, format!("{RECIPE}\n\n{QUESTION}"), "{r:?}");
    assert!(r.awaits_answer && r.is_answered(), "{r:?}");
    assert!(!active(ws), "an offer changes nothing yet");
    let open = &pending(ws)["cli:local"];
    assert_eq!(open["asker"], "mom");
    assert_eq!(open["asked"]["offer"]["mode_id"], "cooking");
    // the answer and its question are the chat's record, as any turn
    let requests = turn_requests(&fake);
    assert_eq!(requests.len(), 1, "no second model call decides the offer");

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
    assert_eq!(records[0]["user"], format!("好（回答“{ASKED}”）"));
    // the mode's first turn goes on from the recipe it followed
    let last = fake.requests().last().unwrap().clone();
    let told = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        told.contains("The offer followed this answer of yours") && told.contains(RECIPE),
        "{told}"
    );
}

#[tokio::test]
async fn a_spoken_recipe_asks_aloud_and_keeps_the_satellite_listening() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(teacher).await;
    let kernel = start_kernel(ws, &fake);

    let r = kernel
        .handle_turn(voice::turn("sess-1", "mom", "说说红烧肉"))
        .await;
    assert!(r.text.starts_with(SPOKEN), "{}", r.text);
    let question = r.text[SPOKEN.len()..].trim();
    assert!(
        question.starts_with(ASKED),
        "said with what the mode is for: {question}"
    );
    assert!(r.awaits_answer, "the satellite listens for the answer");
    let r = kernel
        .handle_turn(voice::turn("sess-1", "mom", "不用"))
        .await;
    assert_eq!(r.text, "好的：不用");
    assert!(!active(ws));
    assert!(pending(ws).as_object().unwrap().is_empty());
}

#[tokio::test]
async fn once_a_day_never_to_a_guest_inside_a_mode_or_after_another_how_to() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(teacher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| qq::turn("private:10001", "mom", t);

    let r = kernel.handle_turn(mom("红烧肉怎么做？")).await;
    assert!(r.text.ends_with(QUESTION), "{}", r.text);
    kernel.handle_turn(mom("不用")).await;
    let r = kernel.handle_turn(mom("那糖醋排骨怎么做？")).await;
    assert_eq!(r.text, RECIPE, "offered once a day per chat");
    assert!(!r.awaits_answer);
    drop(kernel);
    let kernel = start_kernel(ws, &fake);
    let r = kernel.handle_turn(mom("红烧肉怎么做？")).await;
    assert_eq!(r.text, RECIPE, "and across a restart");

    // another how-to is no mode's work
    let r = kernel
        .handle_turn(qq::turn("private:10002", "dad", "路由器怎么设置？"))
        .await;
    assert_eq!(r.text, ROUTER);
    assert!(!r.awaits_answer);

    // a guest, a sender who may not switch here
    let r = kernel
        .handle_turn(voice::turn("sess-2", "guest", "红烧肉怎么做？"))
        .await;
    assert_eq!(r.text, RECIPE);
    let mut kid = qq::turn("group:1027", "kid", "红烧肉怎么做？");
    kid.may_switch_modes = false;
    let r = kernel.handle_turn(kid).await;
    assert_eq!(r.text, RECIPE);
    assert!(pending(ws).as_object().unwrap().is_empty());

    // inside the mode the answer is the mode's anyway
    kernel
        .handle_turn(cli::turn("m", "mom", "/mode enter cooking"))
        .await;
    let r = kernel
        .handle_turn(cli::turn("m", "mom", "红烧肉怎么做？"))
        .await;
    assert_eq!(r.text, RECIPE);
    assert!(!r.awaits_answer);
}
