//! The scripted model as a real OpenAI-compatible HTTP server on `127.0.0.1:0`:
//! `POST /v1/chat/completions` (a JSON answer, or server-sent events when the request
//! asks to stream) and `GET /v1/models`. The gateway reaches it through its ordinary
//! provider path. What it answers is [`super::script::answer`]; its model name is
//! [`MODEL`], so the audit trail says which "model" spoke.
//!
//! Token counts are the script's estimates (about four bytes a token), and "cached"
//! tokens are the bytes this request shares from its start with the previous one: what a
//! prefix cache could reuse, not a measurement.
//!
//! Bounded like any server here: loopback only; at most [`MAX_CONNECTIONS`] connections
//! (one more is answered 503 and closed); a request head complete within
//! [`HEADER_TIMEOUT`] (also the longest a kept-alive connection idles); a request body of
//! at most [`MAX_BODY_BYTES`]; a body that is not JSON refused with 400.

use super::script::{answer, Answer, MODEL};
use crate::netutil::{accept_loop, ConnLimit};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Largest request body accepted (a long mode session's prompt fits many times over).
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// Connections open at once (the provider holds at most `provider.max_concurrent`).
pub const MAX_CONNECTIONS: usize = 32;
/// A request's head must be in within this of the accept, or of the previous answer.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Shared {
    /// The previous request's messages, serialized: the "cached" prefix is measured on it.
    previous: Mutex<Vec<u8>>,
    calls: AtomicUsize,
}

/// The running scripted model.
pub struct ScriptedModel {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl ScriptedModel {
    /// Bind `127.0.0.1:0` and serve until `cancel` fires.
    pub async fn start(cancel: CancellationToken) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let app = router(shared.clone());
        let limit = ConnLimit::new("demo-model", MAX_CONNECTIONS);
        tokio::spawn(accept_loop(
            "demo-model",
            listener,
            limit,
            cancel,
            move |stream, permit| {
                let app = app.clone();
                tokio::spawn(async move {
                    let _place = permit; // held until the connection ends
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "scripted model: connection closed");
                    }
                });
            },
            |stream| {
                let _ = stream.try_write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            },
        ));
        Ok(Self { addr, shared })
    }

    /// The base URL to give the provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests answered so far.
    pub fn calls(&self) -> usize {
        self.shared.calls.load(Ordering::SeqCst)
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/models", get(models))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(shared)
}

async fn models() -> Response {
    axum::Json(
        json!({"object": "list", "data": [{"id": MODEL, "object": "model",
        "owned_by": "homebot demo (scripted, not a model)"}]}),
    )
    .into_response()
}

async fn completions(State(st): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {"message": "the body is not JSON", "code": 400}})),
        )
            .into_response();
    };
    st.calls.fetch_add(1, Ordering::SeqCst);
    let usage = usage(&st, &req);
    let ans = answer(&req);
    if req["stream"] == true {
        let sse = stream_body(&ans, usage);
        return (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            sse,
        )
            .into_response();
    }
    axum::Json(whole_body(&ans, usage)).into_response()
}

/// Estimated usage: prompt tokens from the messages' size; "cached" from the prefix this
/// request shares with the previous one.
fn usage(st: &Shared, req: &Value) -> Value {
    let now = serde_json::to_vec(&req["messages"]).unwrap_or_default();
    let mut prev = st.previous.lock().unwrap_or_else(|p| p.into_inner());
    let shared = prev.iter().zip(&now).take_while(|(a, b)| a == b).count();
    *prev = now.clone();
    let prompt = now.len().div_ceil(4);
    json!({"prompt_tokens": prompt, "completion_tokens": 24, "total_tokens": prompt + 24,
           "prompt_tokens_details": {"cached_tokens": shared / 4}})
}

fn tool_call_json(name: &str, arguments: &Value) -> Value {
    json!({"id": format!("call_demo_{name}"), "type": "function",
           "function": {"name": name, "arguments": arguments.to_string()}})
}

fn whole_body(ans: &Answer, usage: Value) -> Value {
    let (message, finish) = match ans {
        Answer::Text(t) => (json!({"role": "assistant", "content": t}), "stop"),
        Answer::Tool { name, arguments } => (
            json!({"role": "assistant", "content": null,
                   "tool_calls": [tool_call_json(name, arguments)]}),
            "tool_calls",
        ),
    };
    json!({"id": "chatcmpl-demo", "object": "chat.completion", "model": MODEL,
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": usage})
}

/// The answer as server-sent events: text a sentence per chunk (as a model streams it),
/// a tool call in one chunk, the finish reason, the usage chunk, `[DONE]`.
fn stream_body(ans: &Answer, usage: Value) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-demo", "object": "chat.completion.chunk", "model": MODEL,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(json!({"role": "assistant"}), Value::Null)];
    let finish = match ans {
        Answer::Text(t) => {
            for piece in sentences(t) {
                events.push(chunk(json!({"content": piece}), Value::Null));
            }
            "stop"
        }
        Answer::Tool { name, arguments } => {
            let mut call = tool_call_json(name, arguments);
            call["index"] = json!(0);
            events.push(chunk(json!({"tool_calls": [call]}), Value::Null));
            "tool_calls"
        }
    };
    events.push(chunk(json!({}), json!(finish)));
    events.push(
        json!({"id": "chatcmpl-demo", "object": "chat.completion.chunk", "model": MODEL,
                       "choices": [], "usage": usage}),
    );
    let mut out = String::new();
    for e in events {
        out.push_str(&format!("data: {e}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

/// `text` cut after each sentence end (the pieces join back to `text`).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if matches!(c, '。' | '！' | '？' | '；' | '\n') {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn post(addr: SocketAddr, body: Vec<u8>) -> (u16, String) {
        let r = reqwest::Client::new()
            .post(format!("http://{addr}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    #[tokio::test]
    async fn answers_json_and_sse_and_refuses_what_is_too_big_or_not_json() {
        let cancel = CancellationToken::new();
        let m = ScriptedModel::start(cancel.clone()).await.unwrap();
        assert!(m.addr.ip().is_loopback());
        let req =
            json!({"model": MODEL, "messages": [{"role": "user", "content": "妈妈：盐放多少"}]});
        let (status, body) = post(m.addr, req.to_string().into_bytes()).await;
        assert_eq!(status, 200);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["model"], MODEL);
        let text = v["choices"][0]["message"]["content"].as_str().unwrap();
        assert!(text.starts_with(super::super::script::LABEL), "{text}");

        let mut streamed = req.clone();
        streamed["stream"] = json!(true);
        let (status, body) = post(m.addr, streamed.to_string().into_bytes()).await;
        assert_eq!(status, 200);
        assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
        let joined: String = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .filter_map(|d| {
                serde_json::from_str::<Value>(d).unwrap()["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(joined, text, "the streamed pieces are the whole answer");
        assert!(
            body.contains("\"cached_tokens\""),
            "the second request reports its shared prefix"
        );

        let (status, _) = post(m.addr, b"not json".to_vec()).await;
        assert_eq!(status, 400);
        let (status, _) = post(m.addr, vec![b' '; MAX_BODY_BYTES + 1]).await;
        assert_eq!(status, 413, "a body over the limit is refused");
        assert_eq!(m.calls(), 2);
        cancel.cancel();
    }

    #[tokio::test]
    async fn a_connection_over_the_cap_is_refused_at_once() {
        use tokio::io::AsyncReadExt;
        let cancel = CancellationToken::new();
        let m = ScriptedModel::start(cancel.clone()).await.unwrap();
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            idle.push(tokio::net::TcpStream::connect(m.addr).await.unwrap());
        }
        // accepted in order: by the time this one is, every place is held
        let mut extra = tokio::net::TcpStream::connect(m.addr).await.unwrap();
        let mut answer = Vec::new();
        extra.read_to_end(&mut answer).await.unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 503"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        drop(idle);
        cancel.cancel();
    }
}
