//! Unit tests of the reasoning depth on the wire: where the fields go (after `messages`,
//! so the cached prefix is the same bytes whatever the preset), what each way sends, the
//! Anthropic budget's bounds, and thinking blocks read from a stream and sent back only
//! within the current tool loop.

use super::anthropic::{Anthropic, ThinkingParam, MAX_THINKING_CALL_TOKENS, THINKING_BUDGET};
use super::anthropic_stream::StreamAssembler;
use super::openai::OpenAiCompatible;
use super::tests::test_cfg;
use super::types::{ChatRequest, Depth, Message, ThinkingBlock, ToolCall};
use crate::config::{ModelChoice, ProviderKind, Reasoning, ResolvedProvider};
use serde_json::{json, Value};

fn user(s: &str) -> Message {
    Message::User { content: s.into() }
}

fn req(messages: &[Message], depth: Option<Depth>) -> ChatRequest<'_> {
    ChatRequest {
        messages,
        tools: &[],
        depth,
    }
}

fn deepseek() -> ResolvedProvider {
    ResolvedProvider {
        model: ModelChoice(Some("deepseek-chat".into())),
        temperature: Some(0.5),
        max_tokens: Some(4096),
        reasoning: Reasoning::Deepseek,
        ..test_cfg()
    }
}

#[test]
fn depth_fields_come_after_messages_and_leave_the_prefix_bytes_alone() {
    let client = OpenAiCompatible::new(&deepseek()).unwrap();
    let msgs = [
        Message::System {
            content: "sys".into(),
        },
        user("你好"),
    ];
    let plain = client.encode(&req(&msgs, None));
    let quick = client.encode(&req(&msgs, Some(Depth::Low)));
    let careful = client.encode(&req(&msgs, Some(Depth::High)));
    let text = String::from_utf8(plain.clone()).unwrap();
    let end = text.find("],\"stream\"").unwrap() + 1;
    assert_eq!(&quick[..end], &plain[..end]);
    assert_eq!(&careful[..end], &plain[..end]);
    assert_eq!(
        client.cache_counts(),
        (4, 2),
        "the messages were encoded once"
    );
    let tail = |b: &[u8]| String::from_utf8(b[end..].to_vec()).unwrap();
    assert_eq!(
        tail(&plain),
        r#","stream":false,"temperature":0.5,"max_tokens":4096}"#
    );
    assert_eq!(
        tail(&quick),
        r#","stream":false,"thinking":{"type":"disabled"},"temperature":0.5,"max_tokens":4096}"#
    );
    assert_eq!(
        tail(&careful),
        r#","stream":false,"thinking":{"type":"enabled"},"reasoning_effort":"max","max_tokens":4096}"#
    );
}

#[test]
fn an_openai_reasoning_model_takes_an_effort_and_a_completion_cap_and_others_nothing() {
    let o = OpenAiCompatible::new(&ResolvedProvider {
        reasoning: Reasoning::Openai,
        ..deepseek()
    })
    .unwrap();
    let msgs = [user("u")];
    let b = o.body(&req(&msgs, Some(Depth::Low)));
    assert_eq!(
        (
            &b["reasoning_effort"],
            &b["temperature"],
            &b["max_completion_tokens"]
        ),
        (&json!("low"), &Value::Null, &json!(4096))
    );
    assert!(b.get("max_tokens").is_none());
    // the model as configured when no preset asks
    let b = o.body(&req(&msgs, None));
    assert_eq!(
        (&b["reasoning_effort"], &b["temperature"]),
        (&Value::Null, &json!(0.5))
    );

    let none = OpenAiCompatible::new(&ResolvedProvider {
        reasoning: Reasoning::None,
        ..deepseek()
    })
    .unwrap();
    for d in [Some(Depth::Low), Some(Depth::High)] {
        let b = none.body(&req(&msgs, d));
        assert!(b.get("thinking").is_none() && b.get("reasoning_effort").is_none());
        assert_eq!(
            (&b["temperature"], &b["max_tokens"]),
            (&json!(0.5), &json!(4096))
        );
    }
}

fn claude(adaptive: bool, max_tokens: u32) -> Anthropic {
    Anthropic::new(&ResolvedProvider {
        model: ModelChoice(Some("claude".into())),
        kind: ProviderKind::Anthropic,
        max_tokens: Some(max_tokens),
        temperature: Some(0.5),
        reasoning: Reasoning::Anthropic { adaptive },
        ..test_cfg()
    })
    .unwrap()
}

#[test]
fn the_anthropic_budget_stays_in_the_apis_bounds_and_raises_max_tokens_within_a_cap() {
    let c = claude(false, 4096);
    let budget = ThinkingParam::Enabled {
        budget_tokens: THINKING_BUDGET,
    };
    assert_eq!(c.thinking(Some(Depth::High)), Some(budget));
    assert_eq!(c.max_tokens_for(Some(Depth::High)), 4096 + THINKING_BUDGET);
    assert_eq!(
        (c.thinking(Some(Depth::Low)), c.thinking(None)),
        (None, None)
    );
    assert_eq!(c.max_tokens_for(Some(Depth::Low)), 4096);
    // raised only up to the cap, and never below what is configured
    let c = claude(false, 30_000);
    assert_eq!(
        c.max_tokens_for(Some(Depth::High)),
        MAX_THINKING_CALL_TOKENS
    );
    assert_eq!(c.thinking(Some(Depth::High)), Some(budget));
    let c = claude(false, 64_000);
    assert_eq!(c.max_tokens_for(Some(Depth::High)), 64_000);
    // adaptive: no budget of ours
    let c = claude(true, 4096);
    assert_eq!(c.thinking(Some(Depth::High)), Some(ThinkingParam::Adaptive));
    let b = c.body(&req(&[user("u")], Some(Depth::High)));
    assert_eq!(b["thinking"], json!({"type": "adaptive"}));
    assert!(b.get("temperature").is_none());
}

fn thought() -> Vec<ThinkingBlock> {
    vec![
        ThinkingBlock::Thinking {
            thinking: "想".into(),
            signature: "sig".into(),
        },
        ThinkingBlock::RedactedThinking { data: "enc".into() },
    ]
}

fn tool_round() -> Message {
    Message::Assistant {
        content: None,
        tool_calls: vec![ToolCall {
            id: "t1".into(),
            name: "list_files".into(),
            arguments: "{}".into(),
        }],
        reasoning_content: Some("想".into()),
        thinking: thought(),
    }
}

#[test]
fn thinking_blocks_go_back_first_and_only_within_the_current_tool_loop() {
    let c = claude(false, 4096);
    let result = Message::Tool {
        tool_call_id: "t1".into(),
        content: "[]".into(),
    };
    let in_loop = [user("一"), tool_round(), result.clone()];
    let b = c.body(&req(&in_loop, Some(Depth::High)));
    let content = &b["messages"][1]["content"];
    assert_eq!(
        content[0],
        json!({"type": "thinking", "thinking": "想", "signature": "sig"})
    );
    assert_eq!(
        content[1],
        json!({"type": "redacted_thinking", "data": "enc"})
    );
    assert_eq!(content[2]["type"], "tool_use");
    // the same message before a later user message: not sent back, and its cached
    // bytes are not the replayed ones
    let later = [user("一"), tool_round(), result, user("二")];
    let b = c.body(&req(&later, Some(Depth::High)));
    assert_eq!(b["messages"][1]["content"][0]["type"], "tool_use");
}

#[test]
fn a_stream_keeps_each_thinking_blocks_signature_and_redacted_data() {
    let events = [
        json!({"type": "message_start", "message": {"model": "claude", "content": [],
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "先"}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "想"}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCgIYAh=="}}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "enc=="}}),
        json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "tu", "name": "list_files", "input": {}}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 40}}),
    ];
    let mut a = StreamAssembler::default();
    for e in &events {
        assert!(!a.push(&e.to_string(), None).unwrap());
    }
    assert!(a.push(r#"{"type":"message_stop"}"#, None).unwrap());
    let r = a.finish().unwrap();
    assert_eq!(
        r.thinking,
        [
            ThinkingBlock::Thinking {
                thinking: "先想".into(),
                signature: "EqQBCgIYAh==".into()
            },
            ThinkingBlock::RedactedThinking {
                data: "enc==".into()
            }
        ]
    );
    assert_eq!(r.reasoning_content.as_deref(), Some("先想"));
    assert_eq!(r.tool_calls[0].id, "tu");
    // thinking is inside the output count: Anthropic reports no separate one
    assert_eq!(
        (r.usage.completion_tokens, r.usage.reasoning_tokens),
        (40, None)
    );
}

#[test]
fn an_old_assistant_record_without_thinking_still_loads() {
    let m: Message =
        serde_json::from_str(r#"{"role":"assistant","content":"好","reasoning_content":null}"#)
            .unwrap();
    assert!(matches!(m, Message::Assistant { ref thinking, .. } if thinking.is_empty()));
    // and one with blocks round-trips
    let s = serde_json::to_string(&tool_round()).unwrap();
    assert_eq!(serde_json::from_str::<Message>(&s).unwrap(), tool_round());
}
