//! The one fake model: an OpenAI-compatible server (`/v1/chat/completions`, and the
//! Anthropic `/v1/messages` on the same handler) on `127.0.0.1:0`, answering what the
//! test's responder says — a JSON body, an error status, raw bytes, any of them after a
//! delay, or server-sent events played chunk by chunk, each step only once the test has
//! opened its gate ([`FakeLlm::open`]). It counts calls, bytes and requests in flight,
//! keeps every request (unless built not to: a soak sends hundreds of thousands), counts
//! the streams whose caller hung up before their end, and can report the time each
//! request spent in it ([`Options::on_served`]).

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use homebot::config::EnvOverrides;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What the fake server answers.
pub enum FakeReply {
    Json(Value),
    Status(u16, Vec<(&'static str, String)>, String),
    Raw(String),
    Delay(Duration, Box<FakeReply>),
    /// A `text/event-stream` body played step by step.
    Stream(Vec<Step>),
}

/// One step of a streamed answer.
pub enum Step {
    /// Bytes sent as their own chunk.
    Send(String),
    /// Wait until the test has opened this many gates.
    Gate(usize),
}

type Responder = dyn Fn(&Value, usize) -> FakeReply + Send + Sync;
/// Called with each request and the time it spent in the server, once its answer is ready.
type Served = dyn Fn(&Value, Duration) + Send + Sync;

/// How the fake is built; [`FakeLlm::start`] takes the defaults.
pub struct Options {
    /// Keep every request for [`FakeLlm::requests`] (default); a soak keeps none.
    pub keep_requests: bool,
    pub on_served: Option<Box<Served>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            keep_requests: true,
            on_served: None,
        }
    }
}

struct FakeState {
    options: Options,
    requests: Mutex<Vec<Value>>,
    headers: Mutex<Vec<HeaderMap>>,
    calls: AtomicUsize,
    bytes: AtomicU64,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    gates: watch::Sender<usize>,
    /// Streams dropped before their end (the caller hung up).
    hung_up: AtomicUsize,
    responder: Box<Responder>,
}

pub struct FakeLlm {
    /// Base URL to give homebot (`…/v1`).
    pub url: String,
    /// The server's root (`http://127.0.0.1:port`), for a provider that adds `/v1` itself.
    pub root: String,
    state: Arc<FakeState>,
}

impl FakeLlm {
    pub async fn start(
        responder: impl Fn(&Value, usize) -> FakeReply + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(Options::default(), responder).await
    }

    pub async fn start_with(
        options: Options,
        responder: impl Fn(&Value, usize) -> FakeReply + Send + Sync + 'static,
    ) -> Self {
        let state = Arc::new(FakeState {
            options,
            requests: Mutex::new(Vec::new()),
            headers: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            gates: watch::channel(0).0,
            hung_up: AtomicUsize::new(0),
            responder: Box::new(responder),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .route("/v1/messages", post(handle))
            .layer(DefaultBodyLimit::disable())
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}/v1"),
            root: format!("http://{addr}"),
            state,
        }
    }

    /// A fake that plays a household's cooking assistant (see [`super::scripted`]).
    pub async fn scripted() -> Self {
        Self::start(|body, _| super::scripted(body)).await
    }

    /// The last user message the model saw (its dynamic tail says the room, the speaker).
    pub fn last_user(&self) -> String {
        self.requests()
            .iter()
            .rev()
            .map(super::last_user)
            .find(|u| !u.is_empty())
            .unwrap_or_default()
    }

    pub fn requests(&self) -> Vec<Value> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn headers(&self) -> Vec<HeaderMap> {
        self.state.headers.lock().unwrap().clone()
    }

    pub fn calls(&self) -> usize {
        self.state.calls.load(Ordering::SeqCst)
    }

    /// Request body bytes received in all.
    pub fn bytes(&self) -> u64 {
        self.state.bytes.load(Ordering::Relaxed)
    }

    /// Requests the server is answering now.
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests the server was answering at one time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// Let every stream past its [`Step::Gate`]s up to `gate`.
    pub fn open(&self, gate: usize) {
        self.state.gates.send_modify(|g| *g = (*g).max(gate));
    }

    /// How many streamed answers were dropped before their end.
    pub fn hung_up(&self) -> usize {
        self.state.hung_up.load(Ordering::SeqCst)
    }

    pub fn env(&self) -> EnvOverrides {
        EnvOverrides {
            base_url: Some(self.url.clone()),
            model: Some("fake-model".into()),
            ..Default::default()
        }
    }
}

async fn handle(State(st): State<Arc<FakeState>>, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = Instant::now();
    let n = st.calls.fetch_add(1, Ordering::SeqCst);
    st.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    let now = st.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    st.max_in_flight.fetch_max(now, Ordering::SeqCst);
    // counted out however the handler ends (answered, or dropped by a closed connection)
    struct Out<'a>(&'a AtomicUsize);
    impl Drop for Out<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _out = Out(&st.in_flight);
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if st.options.keep_requests {
        st.requests.lock().unwrap().push(v.clone());
        st.headers.lock().unwrap().push(headers);
    }
    let mut reply = (st.responder)(&v, n);
    loop {
        match reply {
            FakeReply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            reply => {
                if let Some(served) = &st.options.on_served {
                    served(&v, arrived.elapsed());
                }
                return respond(&st, reply);
            }
        }
    }
}

fn respond(st: &Arc<FakeState>, reply: FakeReply) -> Response {
    match reply {
        FakeReply::Json(v) => axum::Json(v).into_response(),
        FakeReply::Raw(s) => {
            (StatusCode::OK, [("content-type", "application/json")], s).into_response()
        }
        FakeReply::Status(code, hdrs, body) => {
            let mut r = (StatusCode::from_u16(code).unwrap(), body).into_response();
            for (k, v) in hdrs {
                r.headers_mut().insert(k, v.parse().unwrap());
            }
            r
        }
        FakeReply::Stream(steps) => stream(st, steps),
        FakeReply::Delay(..) => unreachable!("delays are waited out by the handler"),
    }
}

/// Counts a stream dropped before it was played to its end.
struct Playing {
    state: Arc<FakeState>,
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
            self.state.hung_up.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn stream(st: &Arc<FakeState>, steps: Vec<Step>) -> Response {
    let playing = Playing {
        state: st.clone(),
        steps: steps.into_iter(),
        gates: st.gates.subscribe(),
        done: false,
    };
    let body = futures_util::stream::unfold(playing, |mut p| async move {
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
        .body(Body::from_stream(body))
        .unwrap()
}

pub fn text(content: &str) -> FakeReply {
    FakeReply::Json(json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132,
                  "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 56,
                  "prompt_tokens_details": {"cached_tokens": 64}}
    }))
}

pub fn tool_call(name: &str, args: Value) -> FakeReply {
    tool_call_raw(name, &args.to_string())
}

pub fn tool_call_raw(name: &str, arguments: &str) -> FakeReply {
    FakeReply::Json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{name}"), "type": "function", "function": {"name": name, "arguments": arguments}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}
    }))
}

/// One response asking for several tool calls at once, with ids `call_0`, `call_1`, ….
pub fn tool_calls(calls: &[(&str, Value)]) -> FakeReply {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    FakeReply::Json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}
    }))
}
