//! Unit tests of the OpenAI-compatible client: wire format, answers, streaming.

use super::*;
use crate::provider::http::{short, MAX_ERROR_CHARS};
use crate::provider::openai_wire::parse_response;
use crate::provider::types::{ToolCall, Usage};
use serde_json::json;

#[test]
fn reads_all_usage_dialects() {
    let v = json!({
        "choices": [{"message": {"role":"assistant","content":"hi"}, "finish_reason":"stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5,
                  "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36,
                  "prompt_tokens_details": {"cached_tokens": 64}}
    });
    let r = parse(&v).unwrap();
    assert_eq!(r.content.as_deref(), Some("hi"));
    assert_eq!(r.usage.cached_tokens, Some(64));
    assert_eq!(r.usage.cache_hit_tokens, Some(64));
    assert_eq!(r.usage.cache_miss_tokens, Some(36));
}

#[test]
fn body_carries_tools_and_replays_reasoning() {
    let cfg = ResolvedProvider {
        model: ModelChoice(Some("deepseek-reasoner".into())),
        max_tokens: Some(512),
        ..super::super::tests::test_cfg()
    };
    let client = OpenAiCompatible::new(&cfg).unwrap();
    let messages = vec![
        Message::System {
            content: "sys".into(),
        },
        Message::User {
            content: "u".into(),
        },
        Message::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            reasoning_content: Some("thinking".into()),
            thinking: vec![],
        },
        Message::Tool {
            tool_call_id: "c1".into(),
            content: "result".into(),
        },
    ];
    let skills = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let registry = crate::modes::ModeRegistry::load(&[skills], crate::skills::PLUGINS);
    let tools = crate::tools::definitions(&registry, &["notes/".into()]);
    let body = client.body(&ChatRequest {
        messages: &messages,
        tools: &tools,
        depth: None,
    });
    assert_eq!(body["model"], "deepseek-reasoner");
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["tools"][0]["function"]["name"], "switch_mode");
    assert_eq!(body["messages"][2]["reasoning_content"], "thinking");
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
    assert_eq!(body["messages"][3]["tool_call_id"], "c1");
    assert_eq!(client.http.url, "http://127.0.0.1:9/v1/chat/completions");
}

#[test]
fn reads_tool_calls() {
    let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "switch_mode", "arguments": "{\"action\":\"enter\"}"}}
    ]}}]});
    let r = parse(&v).unwrap();
    assert_eq!(r.tool_calls[0].name, "switch_mode");
    assert_eq!(r.tool_calls[0].arguments, "{\"action\":\"enter\"}");
    assert!(parse(&json!({"choices": []})).is_err());
}

fn parse(v: &Value) -> Result<ChatResponse, ProviderError> {
    parse_response(v.to_string().as_bytes())
}

#[test]
fn object_arguments_become_their_json_text_and_ids_are_filled_in() {
    let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
        {"type": "function", "function": {"name": "list_files", "arguments": {"path": "notes/"}}},
        {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
        {"id": null, "type": "function", "function": {"name": "list_files"}}
    ]}, "finish_reason": "tool_calls"}]});
    let r = parse(&v).unwrap();
    let calls: Vec<_> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_0", "list_files", "{\"path\":\"notes/\"}"),
            ("c2", "read_file", "{\"path\":\"a\"}"),
            ("call_2", "list_files", "{}"),
        ]
    );
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    let parsed: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
    assert_eq!(parsed, json!({"path": "notes/"}));
}

#[test]
fn missing_or_null_usage_reads_as_zero() {
    for v in [
        json!({"choices": [{"message": {"content": "hi"}}]}),
        json!({"choices": [{"message": {"content": "hi"}}], "usage": null}),
        json!({"choices": [{"message": {"content": "hi"}}],
               "usage": {"prompt_tokens": null, "prompt_tokens_details": null}}),
    ] {
        let r = parse(&v).unwrap();
        assert_eq!(r.content.as_deref(), Some("hi"), "{v}");
        assert_eq!(r.usage, Usage::default(), "{v}");
        assert_eq!(r.finish_reason, None);
    }
    let r = parse(
        &json!({"model": "qwen2.5-7b", "choices": [{"message": {"content": "x"}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                  "prompt_tokens_details": {"cached_tokens": 3}}}),
    )
    .unwrap();
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (7, 2));
    assert_eq!(r.usage.cached_tokens, Some(3));
    assert_eq!(r.usage.cache_hit_tokens, None);
    assert_eq!(r.model.as_deref(), Some("qwen2.5-7b"));
}

#[test]
fn malformed_answers_say_what_is_missing_briefly() {
    let msg = |v: Value| parse(&v).unwrap_err().to_string();
    assert!(msg(json!({"choices": [{}]})).contains("choice without a message"));
    assert!(msg(json!({})).contains("no choices"));
    assert!(
        msg(json!({"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}))
            .contains("tool call without a function")
    );
    assert!(
        msg(json!({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}))
            .contains("tool call without a name")
    );
    let long = format!("{{\"choices\": \"{}", "x".repeat(5000));
    let e = parse_response(long.as_bytes()).unwrap_err().to_string();
    assert!(e.chars().count() < 400, "{e}");
    assert_eq!(short(&"y ".repeat(1000)).chars().count(), MAX_ERROR_CHARS);
}

#[test]
fn body_omits_the_model_when_none_is_configured() {
    let cfg = super::super::tests::test_cfg();
    let client = OpenAiCompatible::new(&cfg).unwrap();
    let body = client.body(&ChatRequest {
        messages: &[],
        tools: &[],
        depth: None,
    });
    assert!(body.get("model").is_none(), "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
    assert_eq!(client.model_name(), "(endpoint default)");
}

fn user(s: &str) -> Message {
    Message::User { content: s.into() }
}

#[test]
fn reasoning_goes_back_only_within_the_current_turns_tool_loop() {
    let cfg = ResolvedProvider {
        model: ModelChoice(Some("deepseek-reasoner".into())),
        ..super::super::tests::test_cfg()
    };
    let client = OpenAiCompatible::new(&cfg).unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: "{\"path\":\"a\"}".into(),
    };
    let messages = vec![
        Message::System {
            content: "sys".into(),
        },
        user("昨天的问题"),
        Message::Assistant {
            content: Some("昨天的回答".into()),
            tool_calls: vec![],
            reasoning_content: Some("earlier turn's thinking".into()),
            thinking: vec![],
        },
        user("今天的问题"),
        Message::Assistant {
            content: None,
            tool_calls: vec![call.clone()],
            reasoning_content: Some("this turn's thinking".into()),
            thinking: vec![],
        },
        Message::Tool {
            tool_call_id: "c1".into(),
            content: "内容".into(),
        },
    ];
    assert_eq!(reasoning_replay_from(&messages), 4);
    let body = client.body(&ChatRequest {
        messages: &messages,
        tools: &[],
        depth: None,
    });
    let msgs = body["messages"].as_array().unwrap();
    assert!(msgs[2].get("reasoning_content").is_none(), "{}", msgs[2]);
    assert_eq!(msgs[2]["content"], "昨天的回答");
    assert_eq!(msgs[4]["reasoning_content"], "this turn's thinking");
    assert_eq!(msgs[4]["tool_calls"][0]["id"], "c1");
    // the same assistant message encodes differently by position: the cache keys on it
    let mut later = messages.clone();
    later.push(Message::Assistant {
        content: Some("答".into()),
        tool_calls: vec![],
        reasoning_content: None,
        thinking: vec![],
    });
    later.push(user("明天的问题"));
    let body = client.body(&ChatRequest {
        messages: &later,
        tools: &[],
        depth: None,
    });
    let msgs = body["messages"].as_array().unwrap();
    assert!(msgs[4].get("reasoning_content").is_none(), "{}", msgs[4]);
    assert_eq!(reasoning_replay_from(&[]), 0);
}

#[test]
fn tools_come_before_messages_and_old_messages_are_not_encoded_again() {
    let client = OpenAiCompatible::new(&super::super::tests::test_cfg()).unwrap();
    let tools = vec![crate::provider::ToolDef {
        name: "list_files".into(),
        description: "列出文件".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }];
    let mut messages = vec![
        Message::System {
            content: "sys \"quoted\" 换行\n".into(),
        },
        user("一"),
    ];
    let first = client.encode(&ChatRequest {
        messages: &messages,
        tools: &tools,
        depth: None,
    });
    let text = String::from_utf8(first.clone()).unwrap();
    let (t, m) = (
        text.find("\"tools\"").unwrap(),
        text.find("\"messages\"").unwrap(),
    );
    assert!(t < m, "{text}");
    assert_eq!(client.cache_counts(), (0, 2));
    messages.push(Message::Assistant {
        content: Some("好".into()),
        tool_calls: vec![],
        reasoning_content: None,
        thinking: vec![],
    });
    messages.push(user("二"));
    let second = client.encode(&ChatRequest {
        messages: &messages,
        tools: &tools,
        depth: None,
    });
    assert_eq!(
        client.cache_counts(),
        (2, 4),
        "only the two new messages are encoded"
    );
    // the first request's messages are a byte prefix of the second's
    let end = text.find("],\"stream\"").unwrap();
    assert_eq!(&second[..end], &first[..end]);
    assert_eq!(second[end], b',');
    let v: Value = serde_json::from_slice(&second).unwrap();
    assert_eq!(v["messages"][0]["content"], "sys \"quoted\" 换行\n");
    assert_eq!(v["messages"][3]["content"], "二");
    assert_eq!(v["tools"][0]["function"]["name"], "list_files");
}

#[test]
fn a_stream_is_assembled_by_index_with_split_arguments_and_final_usage() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut asm = StreamAssembler::default();
    let chunks = [
        json!({"model": "deepseek-chat", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "好"}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "的"}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 1, "id": "c_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"pa"}},
            {"index": 0, "id": "c_a", "type": "function", "function": {"name": "list_files", "arguments": ""}}
        ]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "th\":\"笔记"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": ".md\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9, "prompt_cache_hit_tokens": 32}}),
    ];
    for c in &chunks {
        assert!(!asm.push(&c.to_string(), Some(&tx)).unwrap());
    }
    assert!(asm.push("[DONE]", Some(&tx)).unwrap());
    let r = asm.finish().unwrap();
    assert_eq!(r.content.as_deref(), Some("好的"));
    let calls: Vec<_> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("c_a", "list_files", "{}"),
            ("c_b", "read_file", "{\"path\":\"笔记.md\"}")
        ]
    );
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!((r.usage.prompt_tokens, r.usage.cached()), (50, 32));
    assert_eq!(r.model.as_deref(), Some("deepseek-chat"));
    assert_eq!(rx.try_recv().unwrap(), "好");
    assert_eq!(rx.try_recv().unwrap(), "的");
    assert!(StreamAssembler::default().finish().is_err());
    assert!(StreamAssembler::default().push("{not json", None).is_err());
}

#[test]
fn an_error_inside_a_stream_is_an_http_error() {
    let mut asm = StreamAssembler::default();
    asm.push(r#"{"choices": [{"delta": {"content": "半"}}]}"#, None)
        .unwrap();
    let e = asm
        .push(
            r#"{"error": {"message": "upstream overloaded", "code": 503}}"#,
            None,
        )
        .unwrap_err();
    assert!(matches!(e, ProviderError::Http { status: 503, .. }), "{e}");
    assert!(e.is_retryable());
    let e = StreamAssembler::default()
        .push(r#"{"error": {"message": "x"}}"#, None)
        .unwrap_err();
    assert!(matches!(e, ProviderError::Http { status: 500, .. }), "{e}");
}

#[test]
fn a_stream_cut_before_its_finish_reason_is_a_retryable_truncation() {
    let mut asm = StreamAssembler::default();
    let cut = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\":\"notes/a"}}
    ]}}]});
    asm.push(&cut.to_string(), None).unwrap();
    let e = asm.finish().unwrap_err();
    assert!(matches!(e, ProviderError::Truncated), "{e}");
    assert!(e.is_retryable());
}
