//! The reasoning depth a strategy preset sends, through the real kernel against the fake
//! OpenAI-compatible server: DeepSeek's thinking switch (`careful` → on at max effort,
//! no temperature, reasoning replayed in the tool loop; `quick` → off; `standard` →
//! nothing), OpenAI's `reasoning_effort` for an o-model, nothing for a model with no known
//! way (unless `[provider] reasoning` names one), nothing on background calls, and the
//! reasoning tokens a response reports in the usage log, the audit record and `stats`.
//! The Anthropic side is in `provider_depth_anthropic.rs`.

use crate::common;

use common::*;
use homebot::channels::{cli, qq};
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A kernel on `fake` asking for `model`, with `temperature = 0.5` and `extra` in
/// `[provider]`.
fn kernel(ws: &Path, fake: &FakeLlm, model: &str, extra: &str) -> Kernel {
    std::fs::write(
        ws.join("config.toml"),
        format!("[provider]\ntemperature = 0.5\n{extra}\n"),
    )
    .unwrap();
    let mut env = fake.env();
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

/// `/strategy PRESET`, then back to build (a preset's depth stays: naming a strategy
/// changes the strategy only), so a turn is one plain tool loop.
async fn preset(k: &Kernel, name: &str) {
    let r = k.command(&format!("/strategy {name}")).await;
    assert!(r.text.contains(name), "{}", r.text);
    k.command("/strategy build").await;
}

/// The fields a body says about depth: `thinking`, `reasoning_effort`, `temperature`.
fn depth(body: &Value) -> (Value, Value, Value) {
    (
        body["thinking"].clone(),
        body["reasoning_effort"].clone(),
        body["temperature"].clone(),
    )
}

/// A tool round with reasoning, then an answer.
fn tool_then_answer(_: &Value, n: usize) -> FakeReply {
    match n {
        0 => FakeReply::Json(json!({
            "choices": [{"message": {"role": "assistant", "content": null,
                "reasoning_content": "先看看笔记目录",
                "tool_calls": [{"id": "c0", "type": "function",
                    "function": {"name": "list_files", "arguments": "{\"path\": \"notes/\"}"}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}})),
        _ => text("笔记里什么也没有。"),
    }
}

#[tokio::test]
async fn a_careful_turn_asks_deepseek_for_max_thinking_without_temperature_and_replays_its_reasoning(
) {
    let dir = workspace();
    let fake = FakeLlm::start(tool_then_answer).await;
    let k = kernel(dir.path(), &fake, "deepseek-chat", "");
    preset(&k, "careful").await;
    let r = k
        .handle_turn(cli::turn("local", "mom", "笔记里有什么？"))
        .await;
    assert_eq!(r.text, "笔记里什么也没有。");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "a tool round and the answer");
    for req in &reqs {
        assert_eq!(
            depth(req),
            (json!({"type": "enabled"}), json!("max"), Value::Null),
            "thinking on at the most, and no temperature (thinking ignores it): {req}"
        );
        assert_eq!(req["max_tokens"], 4096);
    }
    // with thinking on, the tool round's reasoning goes back with it
    let m = reqs[1]["messages"].as_array().unwrap();
    let a = &m[m.len() - 2];
    assert_eq!(a["tool_calls"][0]["id"], "c0");
    assert_eq!(a["reasoning_content"], "先看看笔记目录");
}

#[tokio::test]
async fn quick_turns_deepseek_thinking_off_and_standard_sends_the_model_as_configured() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let k = kernel(dir.path(), &fake, "deepseek-chat", "");
    k.handle_turn(cli::turn("local", "mom", "一")).await;
    preset(&k, "quick").await;
    k.handle_turn(cli::turn("local", "mom", "二")).await;
    preset(&k, "standard").await;
    k.handle_turn(cli::turn("local", "mom", "三")).await;
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let t = json!(0.5);
    assert_eq!(
        depth(&reqs[0]),
        (Value::Null, Value::Null, t.clone()),
        "no preset: nothing"
    );
    assert_eq!(
        depth(&reqs[1]),
        (json!({"type": "disabled"}), Value::Null, t.clone()),
        "quick: thinking off, the temperature as configured"
    );
    assert_eq!(
        depth(&reqs[2]),
        (Value::Null, Value::Null, t),
        "standard: the model as configured"
    );
}

#[tokio::test]
async fn a_model_with_no_known_way_is_sent_no_depth_unless_the_config_names_one() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let k = kernel(dir.path(), &fake, "qwen2.5-7b-instruct", "");
    preset(&k, "careful").await;
    k.handle_turn(cli::turn("local", "mom", "想深一点")).await;
    let req = &fake.requests()[0];
    assert_eq!(depth(req), (Value::Null, Value::Null, json!(0.5)), "{req}");
    assert_eq!(req["max_tokens"], 4096);
    k.shutdown();

    // the same model named as DeepSeek-style by the config
    let dir = workspace();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let k = kernel(
        dir.path(),
        &fake,
        "qwen2.5-7b-instruct",
        "reasoning = \"deepseek\"",
    );
    preset(&k, "careful").await;
    k.handle_turn(cli::turn("local", "mom", "想深一点")).await;
    assert_eq!(
        depth(&fake.requests()[0]),
        (json!({"type": "enabled"}), json!("max"), Value::Null)
    );
}

#[tokio::test]
async fn an_openai_reasoning_model_gets_reasoning_effort_and_no_temperature() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let k = kernel(dir.path(), &fake, "o3-mini", "");
    preset(&k, "quick").await;
    k.handle_turn(cli::turn("local", "mom", "快点")).await;
    preset(&k, "careful").await;
    k.handle_turn(cli::turn("local", "mom", "仔细点")).await;
    let reqs = fake.requests();
    assert_eq!(depth(&reqs[0]), (Value::Null, json!("low"), Value::Null));
    assert_eq!(depth(&reqs[1]), (Value::Null, json!("high"), Value::Null));
    for r in &reqs {
        // the o-series refuse `max_tokens`; their cap is `max_completion_tokens`
        assert_eq!(r["max_completion_tokens"], 4096, "{r}");
        assert!(r.get("max_tokens").is_none(), "{r}");
    }
}

#[tokio::test]
async fn a_mode_sessions_summary_call_carries_no_depth_under_a_careful_preset() {
    let dir = workspace();
    // an exit without a summary of the model's own: the summarizer writes one
    let fake = FakeLlm::start(|body, _| {
        if last_user(body).contains("结束做饭模式") && body.get("tools").is_some() {
            let last = &body["messages"].as_array().unwrap().last().unwrap()["role"];
            if last != "tool" {
                return tool_call(
                    "switch_mode",
                    json!({"action": "exit", "mode_id": "cooking"}),
                );
            }
        }
        scripted(body)
    })
    .await;
    let k = kernel(dir.path(), &fake, "deepseek-chat", "");
    preset(&k, "careful").await;
    k.handle_turn(cli::turn("local", "mom", "打开做饭模式"))
        .await;
    k.handle_turn(qq::turn("group:5550001", "dad", "番茄要放几个？"))
        .await;
    k.handle_turn(qq::turn("group:5550001", "dad", "好了，结束做饭模式"))
        .await;
    // the summary is written in the background, without tools
    eventually(
        "the session's summary call",
        Duration::from_secs(20),
        || fake.requests().iter().any(|r| r.get("tools").is_none()),
    )
    .await;
    let (turns, background): (Vec<Value>, Vec<Value>) = fake
        .requests()
        .into_iter()
        .partition(|r| r.get("tools").is_some());
    assert!(turns.len() >= 3, "{turns:?}");
    for r in &turns {
        assert_eq!(depth(r).0, json!({"type": "enabled"}), "a turn's call: {r}");
    }
    for r in &background {
        assert_eq!(
            depth(r),
            (Value::Null, Value::Null, json!(0.5)),
            "a background call is the model as configured: {r}"
        );
    }
}

async fn stats(ws: &Path) -> String {
    let o = homebot(ws, None).arg("stats").output().await.unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[tokio::test]
async fn reasoning_tokens_a_response_reports_reach_the_usage_log_the_audit_and_stats() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|_, _| {
        FakeReply::Json(json!({
            "choices": [{"message": {"role": "assistant", "content": "想好了",
                "reasoning_content": "……"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 40,
                "completion_tokens_details": {"reasoning_tokens": 31}}}))
    })
    .await;
    let k = kernel(ws, &fake, "deepseek-chat", "");
    preset(&k, "careful").await;
    assert_eq!(
        k.handle_turn(cli::turn("local", "mom", "算一算"))
            .await
            .text,
        "想好了"
    );
    k.shutdown_gracefully(Duration::from_secs(5)).await;
    drop(k);

    let usage = jsonl(&ws.join("logs/usage.jsonl"));
    assert_eq!(
        usage.last().unwrap()["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 40, "reasoning_tokens": 31}),
        "reasoning is a part of the completion, not added to it"
    );
    let audit_dir = ws.join("logs/audit");
    let day = std::fs::read_dir(&audit_dir).unwrap().next().unwrap();
    let rec = jsonl(&day.unwrap().path()).pop().unwrap();
    assert_eq!(
        rec["usage"],
        json!({"prompt": 100, "cached": 0, "completion": 40, "reasoning": 31})
    );
    let out = stats(ws).await;
    let header = out.lines().find(|l| l.starts_with("day ")).unwrap();
    assert!(header.contains("completion  reasoning"), "{out}");
    let total: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("total"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(total, ["total", "1", "0", "100", "0", "40", "31", "0.0%"]);
}
