//! The tool registry in a running kernel, against the fake OpenAI-compatible server: the
//! tools every request carries are the registry's, in its order and unchanged from turn
//! to turn (entering a mode changes nothing); a call the model gets wrong — an unknown
//! tool, arguments of the wrong shape, a missing path — is answered with what is wrong;
//! and the permissions the tools declare are checked for the sender.

use crate::common;

use common::*;
use homebot::channels::{cli, qq};
use serde_json::{json, Value};

const ORDER: [&str; 11] = [
    "switch_mode",
    "set_strategy",
    "read_file",
    "list_files",
    "write_file",
    "set_reminder",
    "list_reminders",
    "cancel_reminder",
    "memory_commit",
    "memory_search",
    "ask_user_choice",
];

/// The model replies with the tool results it got, one per line, as `id=content`.
fn echo_results(body: &Value) -> FakeReply {
    let lines: Vec<String> = tool_results(body)
        .into_iter()
        .map(|(id, c)| format!("{id}={c}"))
        .collect();
    text(&lines.join("\n"))
}

#[tokio::test]
async fn every_request_carries_the_registrys_tools_in_order_unchanged() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, _| scripted(body)).await;
    let k = start_kernel(dir.path(), &fake);
    for words in [
        "你好",
        "打开做饭模式",
        "番茄炒蛋怎么做",
        "退出做饭模式",
        "谢谢",
    ] {
        let r = k.handle_turn(cli::turn("local", "mom", words)).await;
        assert!(r.is_answered(), "{words}: {r:?}");
    }
    let requests = fake.requests();
    assert!(requests.len() >= 7, "two switches took two requests each");
    let first = &requests[0]["tools"];
    let names: Vec<&str> = first
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ORDER);
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(&r["tools"], first, "request {i} carried other tools");
    }
}

#[tokio::test]
async fn calls_the_model_gets_wrong_are_answered_with_what_is_wrong() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_calls(&[
            ("delete_everything", json!({})),
            ("read_file", json!({"path": 3})),
            ("list_reminders", json!({"x": 1})),
            ("cancel_reminder", json!({"id": -1})),
            ("read_file", json!({})),
            (
                "switch_mode",
                json!({"action": "open", "mode_id": "cooking"}),
            ),
        ]),
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    k.handle_turn(cli::turn("local", "mom", "试试工具")).await;
    let results = tool_results(&fake.requests()[1]);
    let got: Vec<&str> = results.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(
        got[0],
        format!(
            "error: there is no tool named \"delete_everything\"; available: {}",
            ORDER.join(", ")
        )
    );
    assert!(
        got[1].starts_with("error: invalid arguments for read_file: invalid type: integer `3`")
            && got[1].ends_with("Call it again with valid JSON arguments."),
        "{}",
        got[1]
    );
    assert!(
        got[2].starts_with("error: invalid arguments for list_reminders: unknown field `x`"),
        "{}",
        got[2]
    );
    assert!(
        got[3].starts_with(
            "error: invalid arguments for cancel_reminder: invalid value: integer `-1`"
        ),
        "{}",
        got[3]
    );
    assert_eq!(got[4], "error: a path is required");
    assert!(
        got[5].starts_with(
            "error: invalid arguments for switch_mode: unknown variant `open`, expected `enter` or `exit`"
        ),
        "{}",
        got[5]
    );
}

#[tokio::test]
async fn a_sender_who_may_not_switch_modes_is_refused_the_tools_that_do() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_calls(&[
            (
                "switch_mode",
                json!({"action": "enter", "mode_id": "cooking"}),
            ),
            ("set_strategy", json!({"name": "plan"})),
            (
                "write_file",
                json!({"path": "notes/a.md", "content": "鸡蛋"}),
            ),
        ]),
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let mut t = qq::turn("group:5550001", "qq:999", "打开做饭模式，用计划模式");
    t.may_switch_modes = false;
    k.handle_turn(t).await;
    let results = tool_results(&fake.requests()[1]);
    let got: Vec<&str> = results.iter().map(|(_, c)| c.as_str()).collect();
    assert!(got[0].contains("没有切换模式的权限"), "{}", got[0]);
    assert!(got[1].contains("没有切换策略的权限"), "{}", got[1]);
    // writing files is declared too, but anyone may (within the zones and the budget)
    assert!(got[2].starts_with("ok: wrote notes/a.md"), "{}", got[2]);
    let action = dir.path().join("modes/action.json");
    assert!(
        !action.exists() || read_json(&action)["active"] == false,
        "no mode was entered"
    );
}
