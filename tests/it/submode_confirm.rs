//! An unsure way back: while 烘焙模式 runs inside 做饭模式, words that may ask for the
//! paused parent ("要不要回到做饭模式呢") are asked about as going back — "要回到做饭模式吗？"
//! (yes option 回到), said on voice with the satellite kept listening — and the asker's
//! clear yes (好, 回去吧) returns to the same cooking session, with the sub-mode's
//! conclusion; another verb (关吧) is no yes to it.

use crate::common;
use crate::mode_offer::pending;

use common::*;
use homebot::channels::voice;
use serde_json::{json, Value};

/// Proposes a switch whenever a mode is named — 烘焙模式 enter or exit, 做饭模式 enter
/// (going back to it) — relays tool results, and otherwise echoes.
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
    if words.contains("烘焙模式") {
        let exit = ["退出", "结束", "关闭"].iter().any(|v| words.contains(v));
        let action = if exit { "exit" } else { "enter" };
        return tool_call(
            "switch_mode",
            json!({"action": action, "mode_id": "baking"}),
        );
    }
    if words.contains("做饭模式") {
        return tool_call(
            "switch_mode",
            json!({"action": "enter", "mode_id": "cooking"}),
        );
    }
    text(&format!("好的：{words}"))
}

/// The conclusion records of sub-session `sub` in a session folder's history.
fn conclusions(dir: &std::path::Path, sub: &str) -> usize {
    jsonl(&dir.join("conversation.jsonl"))
        .iter()
        .filter(|l| l["channel"] == "mode" && l["chat_id"] == sub)
        .count()
}

#[tokio::test]
async fn unsure_words_about_the_paused_parent_ask_to_go_back_and_a_yes_returns() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| voice::turn("kitchen", "mom", t);
    let unsure = "要不要回到做饭模式呢";

    kernel.handle_turn(mom("打开做饭模式")).await;
    let cook = action(ws)["session_id"].as_str().unwrap().to_string();
    let cook_dir = session_dir(ws);
    for (round, yes) in ["好", "回去吧"].into_iter().enumerate() {
        let r = kernel.handle_turn(mom("打开烘焙模式")).await;
        assert!(r.text.contains("已进入烘焙模式"), "{round}: {}", r.text);
        let bake = action(ws)["session_id"].as_str().unwrap().to_string();
        let bake_dir = session_dir(ws);

        let r = kernel.handle_turn(mom(unsure)).await;
        assert_eq!(r.text, "要回到做饭模式吗？", "{round}: {r:?}");
        assert!(r.awaits_answer && r.is_answered(), "{r:?}");
        let shaped = homebot::channels::spoken::reply::compose(&r, Default::default());
        assert_eq!(
            shaped.state,
            homebot::channels::spoken::DialogueState::Continue,
            "the satellite keeps listening"
        );
        let asked = &pending(ws)["voice:kitchen"]["asked"];
        assert_eq!(asked["options"], json!(["回到", "不用"]), "{asked}");
        assert_eq!(asked["offer"]["returns"], true, "{asked}");
        assert_eq!(asked["offer"]["mode_id"], "cooking", "{asked}");
        assert_eq!(
            action(ws)["session_id"],
            bake.as_str(),
            "nothing switched yet"
        );

        if round == 0 {
            // the other action's verb is no yes to going back: the question is dropped
            let r = kernel.handle_turn(mom("关吧")).await;
            assert_eq!(action(ws)["session_id"], bake.as_str(), "{r:?}");
            assert!(pending(ws).as_object().unwrap().is_empty());
            let r = kernel.handle_turn(mom(unsure)).await;
            assert_eq!(r.text, "要回到做饭模式吗？", "{r:?}");
        }
        let r = kernel.handle_turn(mom(yes)).await;
        assert!(
            r.text
                .starts_with("（结果）User selected: 回到. The backend switched the mode"),
            "{round}: {}",
            r.text
        );
        // back in the same cooking session, the sub-mode archived with its conclusion
        let a = action(ws);
        assert_eq!(a["session_id"], cook.as_str(), "{round}: {a}");
        assert!(!ws.join("modes/paused.json").exists());
        assert!(bake_dir.join("summary.md").exists());
        let last = jsonl(&bake_dir.join("conversation.jsonl")).pop().unwrap();
        assert_eq!(
            last["user"],
            format!("{yes}（回答“要回到做饭模式吗？”）"),
            "the yes is the sub-session's last record"
        );
        assert_eq!(conclusions(&cook_dir, &bake), 1, "{round}");
        assert!(pending(ws).as_object().unwrap().is_empty());
    }
    // the kitchen goes on in it
    kernel.handle_turn(mom("接着炒")).await;
    let last = jsonl(&cook_dir.join("conversation.jsonl")).pop().unwrap();
    assert_eq!(last["user"], "接着炒");
}
