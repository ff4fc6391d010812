//! Request-body encoding cost per turn, measured (not asserted): `cargo bench --bench
//! encode`. A mode session of N recorded turns (2N + 2 messages) is encoded three ways:
//!
//! - `value tree` — the old path: a `serde_json::Value` per message, then serialized;
//! - `typed, cold` — typed structs straight to bytes, nothing cached;
//! - `typed, warm` — the next turn's request (two new messages) with the earlier
//!   messages' bytes reused from the fragment cache: what a turn really costs.
//!
//! Under `cargo test` it runs a tiny smoke version instead.

use homebot::config::{ModelChoice, ProviderKind, ResolvedProvider};
use homebot::provider::openai::OpenAiCompatible;
use homebot::provider::{ChatRequest, Message, ToolDef};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn cfg() -> ResolvedProvider {
    ResolvedProvider {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: ModelChoice(Some("bench".into())),
        api_key: None,
        api_key_source: None,
        timeout_secs: 5,
        max_retries: 0,
        max_concurrent: 1,
        temperature: None,
        max_tokens: Some(4096),
        max_response_bytes: 1 << 20,
        kind: ProviderKind::Openai,
        stream: false,
        reasoning: Default::default(),
    }
}

fn session(turns: usize) -> Vec<Message> {
    let mut m = vec![Message::System {
        content: "你是家里的做饭助手。[ROLE] …… [RULES] ……".repeat(20),
    }];
    for i in 0..turns {
        m.push(Message::User {
            content: format!("第{i}步之后要做什么？番茄要切成多大的块？"),
        });
        m.push(Message::Assistant {
            content: Some("切成一厘米见方的小块，下锅前先把蛋液炒到七分熟盛出备用。".into()),
            tool_calls: vec![],
            reasoning_content: None,
            thinking: vec![],
        });
    }
    m
}

/// The encoding before this change, for comparison.
fn value_tree(messages: &[Message], tools: &[ToolDef]) -> Vec<u8> {
    let msgs: Vec<Value> = messages
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, .. } => json!({"role": "assistant", "content": content}),
            Message::Tool {
                tool_call_id,
                content,
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        })
        .collect();
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
        .collect();
    serde_json::to_vec(&json!({"model": "bench", "messages": msgs, "tools": tools,
        "tool_choice": "auto", "stream": false, "max_tokens": 4096}))
    .unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (sizes, samples): (&[usize], usize) = if full {
        (&[10, 100, 1_000, 2_000, 10_000], 30)
    } else {
        (&[10, 100], 3)
    };
    let tools: Vec<ToolDef> = (0..6)
        .map(|i| ToolDef {
            name: format!("tool_{i}"),
            description: "一个工具的说明，几十个字。".repeat(4),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect();
    println!("\nrequest body encoding per turn (medians, µs)");
    println!(
        "{:>8} {:>10} {:>14} {:>14} {:>14}",
        "turns", "body KB", "value tree", "typed, cold", "typed, warm"
    );
    for &n in sizes {
        let mut msgs = session(n);
        let mut old = Vec::new();
        let mut cold = Vec::new();
        let mut warm = Vec::new();
        let mut size = 0;
        for i in 0..samples {
            let t = Instant::now();
            let b = value_tree(&msgs, &tools);
            old.push(t.elapsed());
            size = b.len();
            let fresh = OpenAiCompatible::new(&cfg()).unwrap();
            let r = ChatRequest {
                messages: &msgs,
                tools: &tools,
                depth: None,
            };
            let t = Instant::now();
            let b2 = fresh.encode(&r);
            cold.push(t.elapsed());
            assert_eq!(b2.len(), size, "the same fields, in another order");
            // the next turn on a warm client: two new messages
            msgs.push(Message::User {
                content: format!("新问题{i}"),
            });
            msgs.push(Message::Assistant {
                content: Some("新回答".into()),
                tool_calls: vec![],
                reasoning_content: None,
                thinking: vec![],
            });
            let r = ChatRequest {
                messages: &msgs,
                tools: &tools,
                depth: None,
            };
            let t = Instant::now();
            let _ = fresh.encode(&r);
            warm.push(t.elapsed());
        }
        println!(
            "{:>8} {:>10.1} {:>14} {:>14} {:>14}",
            n,
            size as f64 / 1024.0,
            us(median(old)),
            us(median(cold)),
            us(median(warm))
        );
    }
}
