//! A fake OpenAI-compatible model that streams real server-sent events over HTTP on
//! 127.0.0.1, each step only when the test has opened its gate; it records the requests
//! and counts the answers whose caller hung up before their end.
#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// One step of a streamed answer.
pub enum Step {
    /// Bytes sent as their own chunk.
    Send(String),
    /// Wait until the test has opened this many gates.
    Gate(usize),
}

pub type Script = dyn Fn(&Value, usize) -> Vec<Step> + Send + Sync;

pub struct Sse {
    pub seen: Mutex<Vec<Value>>,
    gates: watch::Sender<usize>,
    /// Answers whose stream was dropped before its end (the caller hung up).
    hung_up: AtomicUsize,
    script: Box<Script>,
}

impl Sse {
    /// How many answers were dropped before their end.
    pub fn hung_up(&self) -> usize {
        self.hung_up.load(Ordering::SeqCst)
    }

    pub fn open(&self, gate: usize) {
        self.gates.send_modify(|g| *g = (*g).max(gate));
    }
}

/// Counts a stream dropped before it was played to its end.
struct Playing {
    fake: Arc<Sse>,
    steps: std::vec::IntoIter<Step>,
    gates: watch::Receiver<usize>,
    done: bool,
}

impl Playing {
    fn finished(mut self) {
        self.done = true;
    }
}

impl Drop for Playing {
    fn drop(&mut self) {
        if !self.done {
            self.fake.hung_up.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn handle(State(f): State<Arc<Sse>>, body: String) -> Response {
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let n = {
        let mut s = f.seen.lock().unwrap();
        s.push(v.clone());
        s.len() - 1
    };
    let playing = Playing {
        steps: (f.script)(&v, n).into_iter(),
        gates: f.gates.subscribe(),
        fake: f.clone(),
        done: false,
    };
    let stream = futures_util::stream::unfold(playing, |mut p| async move {
        loop {
            match p.steps.next() {
                None => {
                    p.finished();
                    return None;
                }
                Some(Step::Gate(k)) => {
                    let _ = p.gates.wait_for(|g| *g >= k).await;
                }
                Some(Step::Send(s)) => {
                    return Some((Ok::<_, std::convert::Infallible>(Bytes::from(s)), p))
                }
            }
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

pub async fn start_sse(
    script: impl Fn(&Value, usize) -> Vec<Step> + Send + Sync + 'static,
) -> (String, Arc<Sse>) {
    let fake = Arc::new(Sse {
        seen: Mutex::new(Vec::new()),
        gates: watch::channel(0).0,
        hung_up: AtomicUsize::new(0),
        script: Box::new(script),
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(handle))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), fake)
}

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

pub fn answer(steps: Vec<Step>) -> Vec<Step> {
    let mut v = steps;
    v.extend(end("stop"));
    v
}
