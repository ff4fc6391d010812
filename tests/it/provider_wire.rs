//! What is sent to the provider and what of its answer is kept, against a real HTTP
//! server: a key goes only to its own endpoint and is never recorded when echoed back,
//! usage lines carry the household's offset, a huge answer is refused while it streams
//! in, a long reply is cut and marked, and DeepSeek's reasoning goes back within one
//! tool loop only. The kit and the retries, failures and tool loops are in
//! [`crate::provider`].

use crate::common;
use crate::provider::*;

use common::*;
use homebot::config::{EnvOverrides, Secret};
use homebot::kernel::{Kernel, KernelOptions};

#[tokio::test]
async fn a_deepseek_key_is_not_sent_to_another_endpoint() {
    let fake = FakeLlm::scripted().await;
    let with_env = |env: EnvOverrides| {
        let dir = workspace();
        let k = Kernel::start(
            dir.path(),
            KernelOptions {
                env: Some(env),
                ..Default::default()
            },
        )
        .unwrap();
        (dir, k)
    };
    let (_dir, k) = with_env(EnvOverrides {
        base_url: Some(fake.url.clone()),
        deepseek_api_key: Some(Secret::new("sk-deepseek-secret")),
        ..Default::default()
    });
    assert_eq!(turn(&k, "你好").await.text, "好的：你好");
    let h = fake.headers().pop().unwrap();
    assert!(
        h.get("authorization").is_none(),
        "the DeepSeek key went to {}: {h:?}",
        fake.url
    );
    // the endpoint's default model: no `model` asked for, and status says so
    assert!(fake.requests()[0].get("model").is_none());
    let summary = k.provider().summary();
    assert_eq!(
        summary,
        format!(
            "（端点默认模型）@ {} — set HOMEBOT_MODEL to choose one",
            fake.url
        )
    );
    drop(k);

    // a key given for this endpoint is sent to it
    let (_dir, k) = with_env(EnvOverrides {
        api_key: Some(Secret::new("sk-local")),
        ..fake.env()
    });
    turn(&k, "再来").await;
    let h = fake.headers().pop().unwrap();
    assert_eq!(h["authorization"], "Bearer sk-local");
    assert_eq!(fake.requests().last().unwrap()["model"], "fake-model");
    assert_eq!(k.provider().summary(), format!("fake-model @ {}", fake.url));
}

#[tokio::test]
async fn usage_lines_carry_the_households_offset() {
    let dir = workspace();
    let fake = FakeLlm::scripted().await;
    let cfg = homebot::config::Config::default()
        .resolve_provider(&fake.env())
        .unwrap();
    let log = dir.path().join("usage.jsonl");
    let p = homebot::provider::Provider::from_config(&cfg, log.clone())
        .unwrap()
        .with_timezone("Asia/Shanghai".parse::<homebot::zone::Zone>().unwrap());
    let msgs = [homebot::provider::Message::User {
        content: "你好".into(),
    }];
    let req = homebot::provider::ChatRequest {
        messages: &msgs,
        tools: &[],
        depth: None,
    };
    let r = p.complete(&req, &Default::default()).await.unwrap();
    assert_eq!(r.content.as_deref(), Some("好的：你好"));
    p.flush().await;
    let line = jsonl(&log).pop().unwrap();
    let ts = line["timestamp"].as_str().unwrap();
    let parsed = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
    assert_eq!(parsed.offset().local_minus_utc(), 8 * 3600, "{ts}");
    assert!(
        ts.ends_with("+08:00") && ts.len() == "2026-01-01T00:00:00.000+08:00".len(),
        "{ts}"
    );
    assert_eq!(line["model"], "fake-model");
    assert_eq!(line["usage"]["prompt_tokens"], 120);
}

#[tokio::test]
async fn a_refused_key_echoed_back_is_not_recorded() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, _| {
        FakeReply::Status(
            401,
            vec![],
            "Incorrect API key provided: sk-echo-secret. Check it.".into(),
        )
    })
    .await;
    let k = Kernel::start(
        dir.path(),
        KernelOptions {
            env: Some(EnvOverrides {
                api_key: Some(Secret::new("sk-echo-secret")),
                ..fake.env()
            }),
            ..Default::default()
        },
    )
    .unwrap();
    let r = turn(&k, "你好").await;
    let err = r.problem().unwrap();
    assert!(
        err.contains("HTTP 401") && err.contains("provided: ***."),
        "{err}"
    );
    k.provider().flush().await;
    for f in ["chats/cli/local.jsonl", "logs/usage.jsonl"] {
        let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(!text.contains("sk-echo"), "{f}: {text}");
    }
}

#[tokio::test]
async fn a_huge_answer_is_refused_while_it_streams_in() {
    let dir = workspace();
    // a loopback endpoint: max_tokens 1024, so the answer cap is the 256 KiB floor
    let fake = FakeLlm::start(|_, _| text(&"啊".repeat(2 * 1024 * 1024))).await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "说个长的").await;
    assert!(
        r.text.contains("回答太长，已拒收"),
        "{}",
        &r.text[..r.text.len().min(300)]
    );
    let rec = last_chat_record(dir.path());
    assert_eq!(rec["assistant"], r.text);
    assert!(
        rec["error"]
            .as_str()
            .unwrap()
            .contains("larger than 262144 bytes"),
        "{rec}"
    );
    assert_eq!(fake.calls(), 1, "a too-large answer is not asked for again");
}

#[tokio::test]
async fn a_long_reply_is_cut_and_marked_where_it_is_recorded_and_delivered() {
    let dir = workspace();
    let long = "很".repeat(10_000);
    let fake = FakeLlm::start(move |_, _| text(&long)).await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "说个长的").await;
    assert_eq!(
        r.text.chars().count(),
        4000,
        "agent.max_reply_chars by default"
    );
    assert!(r.text.ends_with("…（回答过长，已截断）"), "{}", r.text);
    assert!(r.text.starts_with("很很很"));
    let rec = last_chat_record(dir.path());
    assert_eq!(rec["assistant"], r.text);

    // configured lower, in a mode session too
    let dir = workspace();
    with_config(dir.path(), "[agent]\nmax_reply_chars = 100\n");
    let k = start_kernel(dir.path(), &fake);
    k.command("/mode enter cooking").await;
    let r = turn(&k, "再说个长的").await;
    assert_eq!(r.text.chars().count(), 100);
    let lines = jsonl(&session_dir(dir.path()).join("conversation.jsonl"));
    assert_eq!(lines.last().unwrap()["assistant"], r.text);
}

/// DeepSeek thinking models: the reasoning of this turn's tool-calling rounds goes back
/// with them; no earlier turn's reasoning is ever sent.
#[tokio::test]
async fn deepseek_reasoning_is_replayed_within_the_tool_loop_only() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| {
        let reasoning = format!("思考{n}");
        match n {
            0 | 2 => FakeReply::Json(serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": null, "reasoning_content": reasoning,
                    "tool_calls": [{"id": format!("c{n}"), "type": "function",
                        "function": {"name": "list_files", "arguments": "{\"path\": \"notes/\"}"}}]},
                    "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}})),
            _ => {
                let _ = body;
                FakeReply::Json(serde_json::json!({
                    "choices": [{"message": {"role": "assistant", "content": format!("答{n}"),
                        "reasoning_content": reasoning}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}}))
            }
        }
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    assert_eq!(turn(&k, "第一问").await.text, "答1");
    assert_eq!(turn(&k, "第二问").await.text, "答3");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4);
    let with_reasoning = |r: &serde_json::Value| -> Vec<String> {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["reasoning_content"].as_str().map(str::to_string))
            .collect()
    };
    assert!(with_reasoning(&reqs[0]).is_empty());
    assert_eq!(
        with_reasoning(&reqs[1]),
        ["思考0"],
        "this turn's tool round"
    );
    assert!(
        with_reasoning(&reqs[2]).is_empty(),
        "no earlier turn's reasoning: {}",
        reqs[2]
    );
    assert_eq!(with_reasoning(&reqs[3]), ["思考2"]);
    // the tool round's assistant message carries it beside its tool calls
    let m = reqs[3]["messages"].as_array().unwrap();
    let a = &m[m.len() - 2];
    assert_eq!(a["tool_calls"][0]["id"], "c2");
    assert_eq!(a["reasoning_content"], "思考2");
}
