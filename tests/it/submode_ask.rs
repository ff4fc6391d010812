//! The switch guard and its question apply to a sub-mode as to any mode (issue 41 §1): in a
//! cooking session, words that name 烘焙模式 without plainly asking for it are asked about
//! ("要打开烘焙模式吗？"), and only the asker's short yes enters it — under the cooking
//! session, which is paused, not ended. Outside its parent the same words are refused at
//! once, naming the parent, and never asked: a yes could not enter it.

use crate::common;
use crate::mode_offer::{active, pending};

use common::*;
use homebot::channels::cli;
use serde_json::{json, Value};

/// Proposes entering whichever mode the words name; relays tool results.
fn switcher(body: &Value, _n: usize) -> FakeReply {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    if last["role"] == "tool" {
        return text(&format!(
            "（结果）{}",
            last["content"].as_str().unwrap_or_default()
        ));
    }
    let words = user_words(last);
    let mode = if words.contains("烘焙模式") {
        "baking"
    } else if words.contains("做饭模式") {
        "cooking"
    } else {
        return text(&format!("好的：{words}"));
    };
    tool_call("switch_mode", json!({"action": "enter", "mode_id": mode}))
}

#[tokio::test]
async fn unsure_words_for_a_sub_mode_ask_and_a_yes_enters_it_under_its_parent() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| cli::turn("local", "mom", t);

    // outside cooking: refused at once, no question
    let r = kernel.handle_turn(mom("烘焙模式，开始吧")).await;
    assert!(!r.awaits_answer, "{r:?}");
    assert!(r.text.contains("做饭模式"), "names the parent: {}", r.text);
    assert!(!active(ws));
    assert!(pending(ws).as_object().is_none_or(|p| p.is_empty()));

    assert!(kernel.handle_turn(mom("打开做饭模式")).await.is_answered());
    assert_eq!(action(ws)["mode_id"], "cooking");
    let cook = action(ws)["session_id"].as_str().unwrap().to_string();

    // inside it: asked, nothing switched yet
    let r = kernel.handle_turn(mom("烘焙模式，开始吧")).await;
    assert_eq!(r.text, "要打开烘焙模式吗？", "{r:?}");
    assert!(r.awaits_answer && r.is_answered());
    assert_eq!(action(ws)["mode_id"], "cooking");
    assert!(!ws.join("modes/paused.json").exists());

    // another speaker's yes is not the asker's
    let r = kernel.handle_turn(cli::turn("local", "kid", "好")).await;
    assert_eq!(action(ws)["mode_id"], "cooking", "{r:?}");
    let r = kernel.handle_turn(mom("烘焙模式，开始吧")).await;
    assert_eq!(r.text, "要打开烘焙模式吗？", "{r:?}");

    // the asker's yes: the sub-mode runs, the cooking session is paused, not ended
    let r = kernel.handle_turn(mom("好")).await;
    assert!(r.is_answered(), "{r:?}");
    assert_eq!(action(ws)["mode_id"], "baking", "{r:?}");
    let paused = read_json(&ws.join("modes/paused.json"));
    assert_eq!(paused["parent"]["session_id"], cook.as_str(), "{paused}");
    let cook_dir = ws.join("modes/sessions/cooking").join(&cook);
    assert!(
        !cook_dir.join("summary.md").exists(),
        "the parent is not archived"
    );
    let bake = jsonl(&session_dir(ws).join("conversation.jsonl"));
    assert_eq!(
        bake.len(),
        1,
        "the answering turn is the sub-mode's first: {bake:?}"
    );
    assert_eq!(bake[0]["user"], "好（回答“要打开烘焙模式吗？”）");
    let entered = read_json(&session_dir(ws).join("entered.json"));
    assert_eq!(entered["how"], "switch", "{entered}");
    kernel.shutdown();
}
