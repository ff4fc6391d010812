//! The soak's model: the shared fake model (`common::FakeLlm`, which reads and parses
//! every request body, as a real one must) built to keep no copy of the requests (a soak
//! sends hundreds of thousands), answering after a fixed latency, with counts.
//!
//! What it answers is decided by the tag the driver put in the user's words,
//! `〔soak N k〕` (turn N, kind k): `c` a plain answer, `r` a `set_reminder` call (1 s),
//! `m` a `memory_commit` call, `e` / `x` a `switch_mode` call entering / leaving cooking
//! mode; after a tool result, a plain answer that says how the tool went. Requests
//! without tools (compaction, session summaries) get a short summary. The time each turn
//! spent in here is kept by turn number, so the driver can subtract it from the latency
//! it measured.

use crate::common::model::{FakeLlm, FakeReply, Options};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
pub struct Counts {
    pub turn_requests: AtomicU64,
    pub housekeeping: AtomicU64,
    pub unparsable: AtomicU64,
    pub reminders_ok: AtomicU64,
    pub reminders_refused: AtomicU64,
    pub commits_ok: AtomicU64,
    pub commits_refused: AtomicU64,
    pub switches_ok: AtomicU64,
    pub switches_refused: AtomicU64,
}

#[derive(Default)]
struct Shared {
    /// Turn number → time its requests spent in this server.
    spent: Mutex<HashMap<u64, Duration>>,
    counts: Counts,
}

pub struct Fake {
    /// The server (its calls and bytes are the requests' count and size).
    pub llm: FakeLlm,
    shared: Arc<Shared>,
}

impl Fake {
    pub async fn start(latency: Duration) -> Self {
        let shared = Arc::new(Shared::default());
        let spent = shared.clone();
        let options = Options {
            keep_requests: false,
            on_served: Some(Box::new(move |v, took| {
                if let Some((n, _)) = turn_of(v) {
                    *spent.spent.lock().unwrap().entry(n).or_default() += took;
                }
            })),
        };
        let counts = shared.clone();
        let llm = FakeLlm::start_with(options, move |v, _| {
            FakeReply::Delay(latency, Box::new(answer(&counts.counts, v)))
        })
        .await;
        Fake { llm, shared }
    }

    /// The time turn `n` spent in this server (forgotten once taken).
    pub fn take_spent(&self, n: u64) -> Duration {
        self.shared
            .spent
            .lock()
            .unwrap()
            .remove(&n)
            .unwrap_or_default()
    }

    pub fn counts(&self) -> &Counts {
        &self.shared.counts
    }
}

/// The tag of turn `n` of kind `kind`, put in the user's words.
pub fn tag(n: u64, kind: char) -> String {
    format!("〔soak {n} {kind}〕")
}

/// `(n, kind)` from a text holding a tag.
pub fn parse_tag(text: &str) -> Option<(u64, char)> {
    let i = text.rfind("〔soak ")?;
    let rest = &text[i + "〔soak ".len()..];
    let end = rest.find('〕')?;
    let mut parts = rest[..end].split(' ');
    let n = parts.next()?.parse().ok()?;
    let kind = parts.next()?.chars().next()?;
    Some((n, kind))
}

/// The turn a request is part of: the tag in its last user message, when it offers
/// tools (compaction and summaries do not).
fn turn_of(v: &Value) -> Option<(u64, char)> {
    let msgs = v["messages"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let with_tools = v["tools"].as_array().is_some_and(|t| !t.is_empty());
    // the current turn's user message: the last one (a tool round keeps it)
    let user = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    if with_tools {
        parse_tag(user)
    } else {
        None
    }
}

fn answer(c: &Counts, v: &Value) -> FakeReply {
    if v.is_null() {
        c.unparsable.fetch_add(1, Ordering::Relaxed);
        return FakeReply::Status(400, Vec::new(), "not JSON".into());
    }
    let msgs = v["messages"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let answer = match turn_of(v) {
        None => {
            c.housekeeping.fetch_add(1, Ordering::Relaxed);
            text("之前：一家人做饭、问时间、定了几个提醒，记下了几条家里的习惯。")
        }
        Some((n, kind)) => {
            c.turn_requests.fetch_add(1, Ordering::Relaxed);
            let last = msgs.last().cloned().unwrap_or(Value::Null);
            if last["role"] == "tool" {
                let result = last["content"].as_str().unwrap_or_default();
                let refused = match kind {
                    'e' | 'x' => !result.starts_with("ok"),
                    _ => result.starts_with("error"),
                };
                let counter = match kind {
                    'r' => Some((&c.reminders_ok, &c.reminders_refused)),
                    'm' => Some((&c.commits_ok, &c.commits_refused)),
                    'e' | 'x' => Some((&c.switches_ok, &c.switches_refused)),
                    _ => None,
                };
                if let Some((ok, no)) = counter {
                    if refused { no } else { ok }.fetch_add(1, Ordering::Relaxed);
                }
                text(&format!("好的（soak {n}）：{}", first_chars(result, 40)))
            } else {
                match kind {
                    'r' => tool_call(
                        "set_reminder",
                        json!({"in_seconds": 1, "text": format!("关火 soak {n}")}),
                    ),
                    'm' => tool_call(
                        "memory_commit",
                        json!({"content": format!("家里第{n}条习惯：做菜少放盐，饭后散步。")}),
                    ),
                    'e' => tool_call(
                        "switch_mode",
                        json!({"action": "enter", "mode_id": "cooking"}),
                    ),
                    'x' => tool_call(
                        "switch_mode",
                        json!({"action": "exit", "mode_id": "cooking",
                               "summary": "做了番茄炒蛋，三个人吃。"}),
                    ),
                    _ => text(&format!(
                        "好的（soak {n}）：两个人放两个番茄，约一百五十克，中火三分钟。"
                    )),
                }
            }
        }
    };
    FakeReply::Json(answer)
}

fn first_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn usage() -> Value {
    json!({"prompt_tokens": 1200, "completion_tokens": 20, "total_tokens": 1220,
           "prompt_cache_hit_tokens": 1100, "prompt_cache_miss_tokens": 100})
}

fn text(content: &str) -> Value {
    json!({
        "id": "chatcmpl-soak", "object": "chat.completion", "model": "soak",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": usage()
    })
}

fn tool_call(name: &str, args: Value) -> Value {
    json!({
        "id": "chatcmpl-soak", "object": "chat.completion", "model": "soak",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{name}"), "type": "function",
             "function": {"name": name, "arguments": args.to_string()}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": usage()
    })
}
