//! Streamed answers for the fake model ([`super::FakeLlm`]): OpenAI-compatible
//! server-sent events, each a chunk of its own, with [`Step::Gate`]s between them where
//! the test wants to act before the model "writes" on — so "the first sentence arrived
//! before the model wrote the second" is an order, not a timing.

pub use super::model::Step;
use super::FakeReply;
use serde_json::{json, Value};

pub fn data(v: Value) -> Step {
    Step::Send(format!("data: {v}\n\n"))
}

pub fn say(text: &str) -> Step {
    data(json!({"choices": [{"index": 0, "delta": {"content": text}}]}))
}

pub fn call(name: &str, args: Value) -> Step {
    data(
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("call_{name}"),
        "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}]}),
    )
}

/// The end of an answer: its finish reason, the usage chunk, `[DONE]`.
pub fn end(reason: &str) -> Vec<Step> {
    vec![
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})),
        data(json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}})),
        Step::Send("data: [DONE]\n\n".into()),
    ]
}

/// `steps`, then the end of a finished answer, as the fake's reply.
pub fn answer(steps: Vec<Step>) -> FakeReply {
    let mut v = steps;
    v.extend(end("stop"));
    FakeReply::Stream(v)
}

/// A fake model whose `script` answers each request (usually with [`answer`]): its
/// `…/v1` URL and the fake.
pub async fn start_sse(
    script: impl Fn(&Value, usize) -> FakeReply + Send + Sync + 'static,
) -> (String, super::FakeLlm) {
    let fake = super::FakeLlm::start(script).await;
    (fake.url.clone(), fake)
}
