//! Streamed answers (`provider.stream = true`) against a loopback server sending real
//! server-sent events in separate chunks: OpenAI-compatible deltas with a tool call whose
//! arguments are split across chunks, `:` comment lines, usage in the final chunk and
//! `[DONE]`; Anthropic events; text deltas to a caller's sink; the byte cap.

use crate::common;

use common::sse::Step;
use common::*;
use homebot::channels::cli;
use homebot::config::{EnvOverrides, Secret};
use homebot::kernel::{Kernel, KernelOptions};
use homebot::provider::{CallMeta, ChatRequest, Message, Provider};
use serde_json::{json, Value};

/// The fake model answering every request with `script`'s chunks, each sent as its own
/// chunk: the server's root URL (the OpenAI path adds `/v1`) and the fake.
async fn start(
    script: impl Fn(&Value, usize) -> Vec<String> + Send + Sync + 'static,
) -> (String, FakeLlm) {
    let fake = FakeLlm::start(move |body, n| {
        FakeReply::Stream(script(body, n).into_iter().map(Step::Send).collect())
    })
    .await;
    (fake.root.clone(), fake)
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn kernel(ws: &std::path::Path, url: &str, toml: &str) -> Kernel {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(ws.join("config.toml"), toml).unwrap();
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(EnvOverrides {
                base_url: Some(url.to_string()),
                model: Some("fake-model".into()),
                api_key: Some(Secret::new("sk-test")),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap()
}

fn text_stream(words: &[&str]) -> Vec<String> {
    let mut v = vec![": OPENROUTER PROCESSING\n\n".to_string()];
    for w in words {
        v.push(data(
            json!({"choices": [{"index": 0, "delta": {"content": w}}]}),
        ));
    }
    v.push(data(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ));
    v.push(data(
        json!({"choices": [], "usage": {"prompt_tokens": 77, "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 64}}}),
    ));
    v.push("data: [DONE]\n\n".into());
    v
}

#[tokio::test]
async fn a_streamed_tool_call_with_split_arguments_runs_and_usage_is_read() {
    let dir = workspace();
    std::fs::create_dir_all(dir.path().join("notes")).unwrap();
    std::fs::write(dir.path().join("notes/菜单.md"), "番茄炒蛋").unwrap();
    let (url, fake) = start(|body, _| {
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "tool" {
            return text_stream(&["菜单上", "有番茄", "炒蛋"]);
        }
        vec![
            ": keep-alive\n\n".into(),
            data(json!({"model": "fake-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": "call_r", "type": "function",
                    "function": {"name": "read_file", "arguments": ""}}]}}]})),
            // one event split across two network chunks
            "data: {\"choices\": [{\"index\": 0, \"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"argu".into(),
            "ments\": \"{\\\"path\\\": \\\"no\"}}]}}]}\n\n".into(),
            data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "tes/菜单.md\"}"}}]}}]})),
            ": still thinking\n\n".into(),
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            data(json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 8, "prompt_cache_hit_tokens": 32}})),
            "data: [DONE]\n\n".into(),
        ]
    })
    .await;
    let k = kernel(
        dir.path(),
        &format!("{url}/v1"),
        "[provider]\nstream = true\n",
    );
    let r = k
        .handle_turn(cli::turn("local", "mom", "菜单上有什么"))
        .await;
    assert_eq!(r.text, "菜单上有番茄炒蛋", "{r:?}");
    let seen = fake.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["stream"], true);
    assert_eq!(seen[0]["stream_options"], json!({"include_usage": true}));
    let m = seen[1]["messages"].as_array().unwrap();
    let call = &m[m.len() - 2];
    assert_eq!(call["tool_calls"][0]["id"], "call_r");
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        "{\"path\": \"notes/菜单.md\"}"
    );
    let result = m.last().unwrap();
    assert_eq!(result["tool_call_id"], "call_r");
    assert!(
        result["content"].as_str().unwrap().contains("番茄炒蛋"),
        "{result}"
    );
    k.provider().flush().await;
    let usage = jsonl(&dir.path().join("logs/usage.jsonl"));
    assert_eq!(usage[0]["usage"]["prompt_tokens"], 50);
    assert_eq!(usage[0]["usage"]["cache_hit_tokens"], 32);
    assert_eq!(usage[1]["usage"]["cached_tokens"], 64);
}

#[tokio::test]
async fn text_deltas_reach_the_callers_sink_and_anthropic_streams_too() {
    let (url, _fake) = start(|body, _| {
        if body.get("max_tokens").is_some() && body.get("system").is_some() {
            // Anthropic
            let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
            return vec![
                ev("message_start", json!({"type": "message_start", "message": {"model": "claude-test", "content": [],
                    "usage": {"input_tokens": 3, "cache_read_input_tokens": 40, "output_tokens": 1}}})),
                ev("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
                ev("ping", json!({"type": "ping"})),
                ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "你"}})),
                ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "好"}})),
                ev("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
                ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}})),
                ev("message_stop", json!({"type": "message_stop"})),
            ];
        }
        text_stream(&["一", "二", "三"])
    })
    .await;
    let dir = workspace();
    let msgs = [
        Message::System {
            content: "s".into(),
        },
        Message::User {
            content: "数数".into(),
        },
    ];
    let req = ChatRequest {
        messages: &msgs,
        tools: &[],
        depth: None,
    };
    for (kind, base, expect, prompt, cached) in [
        ("openai", format!("{url}/v1"), "一二三", 77, 64),
        ("anthropic", url.clone(), "你好", 43, 40),
    ] {
        let cfg = homebot::config::Config::parse(
            &format!("[provider]\nkind = \"{kind}\"\nstream = true\n"),
            std::path::Path::new("test.toml"),
        )
        .unwrap()
        .resolve_provider(&EnvOverrides {
            base_url: Some(base),
            model: Some("m".into()),
            ..Default::default()
        })
        .unwrap();
        let p =
            Provider::from_config(&cfg, dir.path().join(format!("{kind}/usage.jsonl"))).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let r = p
            .complete_with(&req, &CallMeta::default(), Some(&tx))
            .await
            .unwrap();
        assert_eq!(r.content.as_deref(), Some(expect), "{kind}");
        assert_eq!(
            (r.usage.prompt_tokens, r.usage.cached()),
            (prompt, cached),
            "{kind}"
        );
        drop(tx);
        let mut got = String::new();
        let mut pieces = 0;
        while let Some(d) = rx.recv().await {
            got.push_str(&d);
            pieces += 1;
        }
        assert_eq!(got, expect, "{kind}");
        assert!(pieces >= 2, "{kind}: delivered as deltas");
        p.flush().await;
        let audit: Vec<_> = std::fs::read_dir(dir.path().join(kind).join("audit"))
            .unwrap()
            .collect();
        assert_eq!(audit.len(), 1, "{kind}: the dated audit file");
    }
}

#[tokio::test]
async fn a_stream_past_the_byte_cap_is_cut_off() {
    let dir = workspace();
    let (url, _fake) = start(|_, _| {
        let piece =
            data(json!({"choices": [{"index": 0, "delta": {"content": "啊".repeat(1000)}}]}));
        vec![piece; 200] // ~600 KB, never a [DONE]
    })
    .await;
    let k = kernel(
        dir.path(),
        &format!("{url}/v1"),
        "[provider]\nstream = true\nmax_response_bytes = 65536\nmax_retries = 0\n",
    );
    let r = k.handle_turn(cli::turn("local", "mom", "说个长的")).await;
    let err = r.problem().unwrap();
    assert!(err.contains("larger than 65536 bytes"), "{err}");
    assert!(r.text.contains("太长"), "{}", r.text);
}
