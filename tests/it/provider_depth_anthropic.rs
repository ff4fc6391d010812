//! The reasoning depth on Anthropic Messages, through the real kernel against the fake's
//! `/v1/messages`: `careful` asks a Claude that thinks for a thinking budget under a
//! raised `max_tokens` and without temperature, and the tool loop's next request sends
//! the thinking blocks back first, signature and redacted data unchanged; `quick` sends
//! nothing (thinking is off unless asked for); a Claude 4.6 asks for adaptive thinking.

use crate::common;

use common::*;
use homebot::channels::cli;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;

fn kernel(ws: &Path, fake: &FakeLlm, model: &str) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        "[provider]\nkind = \"anthropic\"\ntemperature = 0.5\n",
    )
    .unwrap();
    let mut env = fake.env();
    env.base_url = Some(fake.root.clone());
    env.model = Some(model.into());
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(env),
            ..Default::default()
        },
    )
    .unwrap()
}

async fn preset(k: &Kernel, name: &str) {
    k.command(&format!("/strategy {name}")).await;
    k.command("/strategy build").await;
}

fn answer(content: Value, stop: &str) -> FakeReply {
    FakeReply::Json(
        json!({"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude", "content": content, "stop_reason": stop,
        "usage": {"input_tokens": 50, "output_tokens": 30}}),
    )
}

/// Thinks (one signed block, one redacted), calls a tool, then answers.
fn thinking_tool_loop(_: &Value, n: usize) -> FakeReply {
    match n {
        0 => answer(
            json!([
                {"type": "thinking", "thinking": "先列出笔记", "signature": "sig-Ab12=="},
                {"type": "redacted_thinking", "data": "EncRypted=="},
                {"type": "tool_use", "id": "toolu_1", "name": "list_files",
                 "input": {"path": "notes/"}}
            ]),
            "tool_use",
        ),
        _ => answer(
            json!([{"type": "text", "text": "笔记是空的。"}]),
            "end_turn",
        ),
    }
}

#[tokio::test]
async fn a_careful_claude_turn_thinks_on_a_budget_and_replays_its_signed_thinking_in_the_tool_loop()
{
    let dir = workspace();
    let fake = FakeLlm::start(thinking_tool_loop).await;
    let k = kernel(dir.path(), &fake, "claude-sonnet-4-5");
    preset(&k, "careful").await;
    let r = k
        .handle_turn(cli::turn("local", "mom", "笔记里有什么？"))
        .await;
    assert_eq!(r.text, "笔记是空的。");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for req in &reqs {
        let budget = req["thinking"]["budget_tokens"].as_u64().unwrap();
        assert_eq!(req["thinking"]["type"], "enabled", "{req}");
        assert!(budget >= 1024, "the API's least: {budget}");
        assert!(
            budget < req["max_tokens"].as_u64().unwrap(),
            "the budget stays under the call's max_tokens: {req}"
        );
        assert_eq!(req["max_tokens"], 4096 + budget, "raised by the budget");
        assert!(req.get("temperature").is_none(), "thinking takes none");
    }
    // the assistant message of the tool round: its thinking first, unchanged
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let a = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(
        a["content"][0],
        json!({"type": "thinking", "thinking": "先列出笔记", "signature": "sig-Ab12=="})
    );
    assert_eq!(
        a["content"][1],
        json!({"type": "redacted_thinking", "data": "EncRypted=="})
    );
    assert_eq!(a["content"][2]["type"], "tool_use");
    assert_eq!(a["content"][2]["id"], "toolu_1");
}

#[tokio::test]
async fn a_quick_claude_turn_sends_no_thinking_and_a_claude_4_6_careful_one_thinks_adaptively() {
    let dir = workspace();
    let fake =
        FakeLlm::start(|_, _| answer(json!([{"type": "text", "text": "好的"}]), "end_turn")).await;
    let k = kernel(dir.path(), &fake, "claude-sonnet-4-5");
    preset(&k, "quick").await;
    k.handle_turn(cli::turn("local", "mom", "快点")).await;
    let req = &fake.requests()[0];
    assert!(req.get("thinking").is_none(), "{req}");
    assert_eq!(
        (&req["max_tokens"], &req["temperature"]),
        (&json!(4096), &json!(0.5))
    );
    k.shutdown();

    let dir = workspace();
    let fake =
        FakeLlm::start(|_, _| answer(json!([{"type": "text", "text": "好的"}]), "end_turn")).await;
    let k = kernel(dir.path(), &fake, "claude-opus-4-6");
    preset(&k, "careful").await;
    k.handle_turn(cli::turn("local", "mom", "仔细点")).await;
    let req = &fake.requests()[0];
    assert_eq!(req["thinking"], json!({"type": "adaptive"}), "{req}");
    assert!(req.get("temperature").is_none());
}
