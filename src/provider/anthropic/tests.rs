//! Unit tests of the Anthropic mapping: units, breakpoints, answers, streams.

use super::*;
use crate::provider::anthropic_stream::{parse_response, StreamAssembler};
use crate::provider::ToolCall;
use serde_json::json;

fn sys(s: &str) -> Message {
    Message::System { content: s.into() }
}
fn user(s: &str) -> Message {
    Message::User { content: s.into() }
}
fn said(s: &str) -> Message {
    Message::Assistant {
        content: Some(s.into()),
        tool_calls: vec![],
        reasoning_content: None,
        thinking: vec![],
    }
}
fn calls(ids: &[&str]) -> Message {
    Message::Assistant {
        content: Some("我查一下".into()),
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: id.to_string(),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"{id}.md\"}}"),
            })
            .collect(),
        reasoning_content: None,
        thinking: vec![],
    }
}
fn result(id: &str) -> Message {
    Message::Tool {
        tool_call_id: id.into(),
        content: format!("content of {id}"),
    }
}

/// Every `cache_control` in a body, as JSON pointers.
fn marks(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "cache_control" {
                    assert_eq!(x, &json!({"type": "ephemeral"}));
                    out.push(at.clone());
                } else {
                    marks(x, format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                marks(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn tool_results_merge_and_breakpoints_sit_on_the_stable_prefix() {
    let client = Anthropic::new(&crate::provider::tests::test_cfg()).unwrap();
    let tools = vec![
        crate::provider::ToolDef {
            name: "list_files".into(),
            description: "列出".into(),
            parameters: json!({"type": "object"}),
        },
        crate::provider::ToolDef {
            name: "read_file".into(),
            description: "读".into(),
            parameters: json!({"type": "object"}),
        },
    ];
    let msgs = vec![
        sys("你是家里的助手"),
        user("第一问"),
        said("第一答"),
        user("第二问"),
        said("第二答"),
        user("现在的问题"),
        calls(&["a", "b"]),
        result("a"),
        result("b"),
    ];
    let body = client.body(&ChatRequest {
        messages: &msgs,
        tools: &tools,
        depth: None,
    });
    assert_eq!(body["max_tokens"], 4096, "required by the API");
    assert_eq!(body["system"][0]["text"], "你是家里的助手");
    let m = body["messages"].as_array().unwrap();
    assert_eq!(m.len(), 7, "two tool results are one user message: {m:?}");
    assert_eq!(m[5]["role"], "assistant");
    assert_eq!(
        m[5]["content"][0],
        json!({"type": "text", "text": "我查一下"})
    );
    assert_eq!(
        m[5]["content"][1],
        json!({"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "a.md"}})
    );
    assert_eq!(m[6]["role"], "user");
    assert_eq!(m[6]["content"][0]["type"], "tool_result");
    assert_eq!(m[6]["content"][0]["tool_use_id"], "a");
    assert_eq!(m[6]["content"][1]["tool_use_id"], "b");
    assert_eq!(m[6]["content"][1]["content"], "content of b");
    let mut found = Vec::new();
    marks(&body, String::new(), &mut found);
    assert_eq!(
        found,
        [
            "/messages/3/content/0", // the last history message before the current question
            "/messages/6/content/1", // the newest tool round
            "/system/0",
            "/tools/1",
        ]
    );
    assert!(found.len() <= MAX_BREAKPOINTS);
    // the first request of a turn: no tool round yet; no tools, no system
    let first = &msgs[..6];
    let body = client.body(&ChatRequest {
        messages: &first[1..],
        tools: &[],
        depth: None,
    });
    let mut found = Vec::new();
    marks(&body, String::new(), &mut found);
    assert_eq!(found, ["/messages/3/content/0"]);
    assert!(body.get("system").is_none() && body.get("tools").is_none());
    // a lone question: only the system is marked
    let body = client.body(&ChatRequest {
        messages: &[sys("s"), user("q")],
        tools: &[],
        depth: None,
    });
    let mut found = Vec::new();
    marks(&body, String::new(), &mut found);
    assert_eq!(found, ["/system/0"]);
}

#[test]
fn breakpoints_never_pass_four() {
    for n in 0..12 {
        let mut msgs = vec![sys("s")];
        for i in 0..n {
            msgs.push(if i % 3 == 2 {
                result("x")
            } else if i % 2 == 0 {
                user("u")
            } else {
                calls(&["x"])
            });
        }
        let (s, u) = units(&msgs);
        for tools in [0, 3] {
            assert!(breakpoints(&msgs, tools, s, &u).count() <= MAX_BREAKPOINTS);
        }
    }
}

#[test]
fn answers_and_usage_with_cache_fields() {
    let r = parse_response(
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "好的"},
                        {"type": "tool_use", "id": "tu_1", "name": "list_files", "input": {"path": "notes/"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 20, "output_tokens": 7,
                      "cache_creation_input_tokens": 30, "cache_read_input_tokens": 1000}})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(r.content.as_deref(), Some("好的"));
    assert_eq!(r.reasoning_content.as_deref(), Some("hmm"));
    assert_eq!(r.tool_calls[0].id, "tu_1");
    assert_eq!(r.tool_calls[0].arguments, "{\"path\":\"notes/\"}");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.usage.prompt_tokens, 1050);
    assert_eq!(r.usage.completion_tokens, 7);
    assert_eq!(r.usage.cache_read_tokens, Some(1000));
    assert_eq!(r.usage.cache_creation_tokens, Some(30));
    assert_eq!(r.usage.cached(), 1000);
    let r =
        parse_response(br#"{"content":[{"type":"text","text":"x"}],"stop_reason":"max_tokens"}"#)
            .unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    let e = parse_response(
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )
    .unwrap_err();
    assert!(e.is_retryable(), "{e}");
}

#[test]
fn a_stream_with_split_tool_input_and_usage() {
    let events = [
        json!({"type": "message_start", "message": {"model": "claude-x", "content": [],
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "好"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "tu_9", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a.md\"}"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 15}}),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut a = StreamAssembler::default();
    for e in &events {
        assert!(!a.push(&e.to_string(), Some(&tx)).unwrap());
    }
    assert!(a.push(r#"{"type":"message_stop"}"#, None).unwrap());
    let r = a.finish().unwrap();
    assert_eq!(r.content.as_deref(), Some("好"));
    assert_eq!(r.tool_calls[0].arguments, "{\"path\":\"a.md\"}");
    assert_eq!(
        (
            r.usage.prompt_tokens,
            r.usage.cached(),
            r.usage.completion_tokens
        ),
        (905, 900, 15)
    );
    assert_eq!(rx.try_recv().unwrap(), "好");
    let mut a = StreamAssembler::default();
    let e = a
        .push(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            None,
        )
        .unwrap_err();
    assert!(matches!(e, ProviderError::Http { status: 529, .. }), "{e}");
}
