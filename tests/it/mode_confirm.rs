//! When the words of a switch are unsure, the backend asks: a model that proposes a switch
//! whenever a mode is named (the worst case) meets words the guard cannot place ("做饭模式，
//! 开始吧", "他说关闭做饭模式"); the backend ends the turn with its own short question
//! ("要打开做饭模式吗？"), the satellite keeps listening, and only the asker's short yes in
//! that chat, within the window, switches — with the checks of a command. A yes to an
//! exit makes the answering turn the session's last record; a yes to an enter its first.
//! A no, other words, another speaker or a late yes switch nothing. The same for a mode
//! declared only in a test workspace.

use crate::common;
use crate::mode_offer::{active, pending};

use common::*;
use homebot::channels::{cli, voice};
use homebot::clock::ManualClock;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Proposes a switch on every turn that names a mode (enter, or exit when an exit verb is
/// said), relays tool results, and otherwise echoes.
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
    let mode = if words.contains("做饭模式") {
        "cooking"
    } else if words.contains("作业模式") {
        "homework"
    } else {
        return text(&format!("好的：{words}"));
    };
    let exit = ["退出", "结束", "关闭", "收工"]
        .iter()
        .any(|v| words.contains(v));
    let action = if exit { "exit" } else { "enter" };
    tool_call("switch_mode", json!({"action": action, "mode_id": mode}))
}

fn kernel_at(ws: &Path, fake: &FakeLlm, clock: Arc<ManualClock>) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            clock: Some(clock),
            ..Default::default()
        },
    )
    .unwrap()
}

fn clock() -> Arc<ManualClock> {
    let t0 = chrono::DateTime::parse_from_rfc3339("2026-10-22T17:00:00+08:00")
        .unwrap()
        .with_timezone(&chrono::Utc);
    Arc::new(ManualClock::new(t0))
}

#[tokio::test]
async fn unsure_words_ask_and_the_askers_short_yes_enters() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| cli::turn("local", "mom", t);

    // a clear command switches at once, a clear non-command is refused: no question
    let r = kernel.handle_turn(mom("不要打开做饭模式")).await;
    assert!(r.text.starts_with("（结果）refused"), "{}", r.text);
    assert!(!r.awaits_answer && !active(ws));

    // the name and the verb in clauses of their own: asked, nothing switched yet
    let r = kernel.handle_turn(mom("做饭模式，开始吧")).await;
    assert_eq!(r.text, "要打开做饭模式吗？", "{r:?}");
    assert!(r.awaits_answer && r.is_answered(), "{r:?}");
    assert!(!active(ws), "a question changes nothing yet");
    assert_eq!(
        pending(ws)["cli:local"]["asked"]["offer"]["why"],
        "unsure",
        "{}",
        pending(ws)
    );
    // the question is recorded in the chat's history like any turn
    let chat = jsonl(&ws.join("chats/cli/local.jsonl"));
    assert_eq!(
        chat.last().unwrap()["assistant"],
        "要打开做饭模式吗？",
        "{chat:?}"
    );

    let r = kernel.handle_turn(mom("开吧")).await;
    assert!(active(ws), "{r:?}");
    assert!(
        r.text
            .starts_with("（结果）User selected: 打开. The backend switched the mode"),
        "{}",
        r.text
    );
    let records = jsonl(&session_dir(ws).join("conversation.jsonl"));
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["user"], "开吧（回答“要打开做饭模式吗？”）");
    assert!(pending(ws).as_object().unwrap().is_empty());
    let entered = read_json(&session_dir(ws).join("entered.json"));
    assert_eq!(entered["how"], "switch", "{entered}");
}

#[tokio::test]
async fn a_yes_to_an_exit_makes_the_answering_turn_the_last_record() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let dad = |t: &str| cli::turn("local", "dad", t);

    kernel.handle_turn(dad("打开做饭模式")).await;
    assert!(active(ws), "a clear command switches at once");
    let sdir = session_dir(ws);
    let r = kernel.handle_turn(dad("孩子说关闭做饭模式")).await;
    assert_eq!(r.text, "要退出做饭模式吗？", "{r:?}");
    assert!(active(ws));
    // the other action's verb is no yes to an exit
    let r = kernel.handle_turn(dad("打开")).await;
    assert!(active(ws), "{r:?}");
    let r = kernel.handle_turn(dad("孩子说关闭做饭模式")).await;
    assert_eq!(r.text, "要退出做饭模式吗？");
    let r = kernel.handle_turn(dad("退出吧")).await;
    assert!(!active(ws), "{r:?}");
    assert!(sdir.join("summary.md").exists(), "archived");
    let records = jsonl(&sdir.join("conversation.jsonl"));
    let last = records.last().unwrap();
    assert_eq!(
        last["user"], "退出吧（回答“要退出做饭模式吗？”）",
        "{records:?}"
    );
    assert_eq!(
        records[records.len() - 2]["assistant"],
        "要退出做饭模式吗？",
        "the question is in the session's history"
    );
}

#[tokio::test]
async fn a_no_other_words_another_speaker_or_a_late_yes_switch_nothing() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let clock = clock();
    let kernel = kernel_at(ws, &fake, clock.clone());
    let turn = |who: &str, t: &str| cli::turn("local", who, t);
    let unsure = "我妈说打开做饭模式";

    assert_eq!(
        kernel.handle_turn(turn("mom", unsure)).await.text,
        "要打开做饭模式吗？"
    );
    let r = kernel.handle_turn(turn("mom", "不用")).await;
    assert_eq!(r.text, "好的：不用", "a no is answered as a normal turn");
    assert!(!active(ws));
    let last = turn_requests(&fake).last().unwrap().clone();
    assert!(
        common::strategy::last_user(&last).contains("[已作废的确认]"),
        "the model is told the question is gone"
    );

    kernel.handle_turn(turn("mom", unsure)).await;
    let r = kernel.handle_turn(turn("mom", "今天吃什么")).await;
    assert_eq!(
        r.text, "好的：今天吃什么",
        "other words drop it and are answered"
    );
    kernel.handle_turn(turn("mom", "好")).await;
    assert!(
        !active(ws),
        "the question is gone: a later yes is an ordinary message"
    );

    kernel.handle_turn(turn("mom", unsure)).await;
    kernel.handle_turn(turn("dad", "好")).await;
    assert!(!active(ws), "another speaker's yes does not switch");

    kernel.handle_turn(turn("mom", unsure)).await;
    clock.advance(chrono::Duration::minutes(6));
    kernel.handle_turn(turn("mom", "好")).await;
    assert!(!active(ws), "past the window a yes is an ordinary message");

    // and within it, the asker's yes does
    kernel.handle_turn(turn("mom", unsure)).await;
    clock.advance(chrono::Duration::minutes(4));
    kernel.handle_turn(turn("mom", "好")).await;
    assert!(active(ws));
}

#[tokio::test]
async fn a_satellite_listens_again_after_the_question() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let r = kernel
        .handle_turn(voice::turn("kitchen", "mom", "打开做饭模式吧？"))
        .await;
    assert_eq!(
        r.text, "要打开做饭模式吗？",
        "said as it is, no options read"
    );
    assert!(r.awaits_answer, "the satellite keeps listening: {r:?}");
    let shaped = homebot::channels::spoken::reply::compose(&r, Default::default());
    assert_eq!(
        shaped.state,
        homebot::channels::spoken::DialogueState::Continue
    );
}

#[tokio::test]
async fn a_mode_declared_only_here_is_asked_about_alike() {
    let dir = workspace();
    let ws = dir.path();
    declare_homework(ws);
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let kid = |t: &str| cli::turn("desk", "kid", t);

    let r = kernel.handle_turn(kid("作业模式，开始吧")).await;
    assert_eq!(r.text, "要打开作业模式吗？", "{r:?}");
    kernel.handle_turn(kid("好")).await;
    assert_eq!(action(ws)["mode_id"], "homework");
    // its own exit verb, retold: asked; its yes exits
    let r = kernel.handle_turn(kid("老师说作业模式可以收工")).await;
    assert_eq!(r.text, "要退出作业模式吗？", "{r:?}");
    kernel.handle_turn(kid("对")).await;
    assert!(!active(ws));
    // a clear command of its own verbs switches at once
    kernel.handle_turn(kid("开始作业模式")).await;
    assert_eq!(action(ws)["mode_id"], "homework");
    assert!(active(ws));
}

/// A switch since the question — from another chat, by command — voids its yes: asked to
/// enter, someone enters and leaves again; the yes that follows enters nothing.
#[tokio::test]
async fn a_switch_since_the_question_voids_its_yes() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| cli::turn("local", "mom", t);
    let dad = |t: &str| cli::turn("study", "dad", t);
    let r = kernel.handle_turn(mom("做饭模式，开始吧")).await;
    assert_eq!(r.text, "要打开做饭模式吗？", "{r:?}");
    assert!(kernel
        .handle_turn(dad("/mode enter cooking"))
        .await
        .is_answered());
    assert!(active(ws));
    assert!(kernel.handle_turn(dad("/mode exit")).await.is_answered());
    until(|| !active(ws)).await;
    let before = fake.requests().len();
    let r = kernel.handle_turn(mom("好")).await;
    assert!(!active(ws), "the yes entered nothing: {r:?}");
    assert!(
        pending(ws).as_object().unwrap().is_empty(),
        "{}",
        pending(ws)
    );
    // answered as a message, told why the yes did not count
    let asked = fake.requests()[before..].to_vec();
    assert!(
        asked
            .iter()
            .any(|b| last_user(b).contains("之后模式已经切换过了")),
        "{asked:?}"
    );
    // a question asked after the switch is answered as ever
    let r = kernel.handle_turn(mom("做饭模式，开始吧")).await;
    assert_eq!(r.text, "要打开做饭模式吗？", "{r:?}");
    kernel.handle_turn(mom("好")).await;
    assert!(active(ws));
}

/// A newer question replaces the older one in the chat's one slot: the yes answers the
/// newer (another mode's), not the first.
#[tokio::test]
async fn a_newer_question_replaces_the_older() {
    let dir = workspace();
    let ws = dir.path();
    declare_homework(ws);
    let fake = FakeLlm::start(switcher).await;
    let kernel = start_kernel(ws, &fake);
    let mom = |t: &str| cli::turn("local", "mom", t);
    let r = kernel.handle_turn(mom("做饭模式，开始吧")).await;
    assert_eq!(r.text, "要打开做饭模式吗？", "{r:?}");
    let r = kernel.handle_turn(mom("作业模式，开始吧")).await;
    assert_eq!(r.text, "要打开作业模式吗？", "{r:?}");
    assert_eq!(
        pending(ws)["cli:local"]["asked"]["offer"]["mode_id"],
        "homework",
        "{}",
        pending(ws)
    );
    kernel.handle_turn(mom("好")).await;
    assert_eq!(action(ws)["mode_id"], "homework");
    assert!(active(ws));
}

/// Through Home Assistant's conversation-agent endpoint, as a satellite's pipeline asks:
/// the question's reply frame says `continue`, so HA keeps the microphone open, and the
/// spoken yes that follows switches.
#[tokio::test]
async fn through_home_assistant_the_satellite_keeps_listening_for_the_yes() {
    use crate::ha_agent::{frames, house};
    use common::sse::{answer, call, say, start_sse};
    let (url, fake) = start_sse(|body, _| {
        let msgs = body["messages"].as_array().unwrap();
        let last = msgs.last().unwrap();
        if last["role"] == "tool" {
            return answer(vec![say("好的。")]);
        }
        if user_words(last).contains("做饭模式") {
            return answer(vec![call(
                "switch_mode",
                json!({"action": "enter", "mode_id": "cooking"}),
            )]);
        }
        answer(vec![say("好的。")])
    })
    .await;
    let dir = workspace();
    let ws = dir.path();
    let h = house(ws, &url).await;
    let say_it = |text: &str| {
        json!({"text": text, "conversation_id": "01jqhaconv0009", "device_id": "dev-kitchen-sat",
               "language": "zh-cn", "user_id": "ha-user-mom"})
    };
    let mut f = frames(&h.base, say_it("做饭模式，开始吧")).await;
    let frames_seen = f.until_reply().await;
    let reply = frames_seen.last().unwrap();
    assert_eq!(reply["text"], "要打开做饭模式吗？", "{reply}");
    assert_eq!(reply["dialogue_state"], "continue", "{reply}");
    assert!(!active(ws));
    let mut f = frames(&h.base, say_it("好")).await;
    let reply = f.until_reply().await.pop().unwrap();
    assert_eq!(reply["error"], false, "{reply}");
    assert!(active(ws), "{reply}");
    drop(fake);
}

fn declare_homework(ws: &Path) {
    let skills = ws.join("skills/homework");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("mode.json"),
        r#"{"id":"homework","display_name":"作业模式","enter_verbs":["开始"],"exit_verbs":["收工"]}"#,
    )
    .unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: homework\ndescription: 陪孩子写作业\n---\n引导孩子自己思考。\n",
    )
    .unwrap();
}
