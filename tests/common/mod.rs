//! Shared helpers for the integration tests: a fake OpenAI-compatible server on
//! `127.0.0.1:0` that records every request, and kernel / workspace set-up.
#![allow(dead_code)]

pub mod gateway;
pub mod onebot;
pub mod qq;
pub mod strategy;
pub mod wyoming;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use homebot::config::EnvOverrides;
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the fake server answers.
pub enum FakeReply {
    Json(Value),
    Status(u16, Vec<(&'static str, String)>, String),
    Raw(String),
    Delay(Duration, Box<FakeReply>),
}

type Responder = dyn Fn(&Value, usize) -> FakeReply + Send + Sync;

struct FakeState {
    requests: Mutex<Vec<Value>>,
    headers: Mutex<Vec<HeaderMap>>,
    calls: AtomicUsize,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    responder: Box<Responder>,
}

pub struct FakeLlm {
    /// Base URL to give homebot (`…/v1`).
    pub url: String,
    state: Arc<FakeState>,
}

impl FakeLlm {
    pub async fn start(
        responder: impl Fn(&Value, usize) -> FakeReply + Send + Sync + 'static,
    ) -> Self {
        let state = Arc::new(FakeState {
            requests: Mutex::new(Vec::new()),
            headers: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            responder: Box::new(responder),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}/v1"),
            state,
        }
    }

    /// A fake that plays a household's cooking assistant (see [`scripted`]).
    pub async fn scripted() -> Self {
        Self::start(|body, _| scripted(body)).await
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

    /// Requests the server is answering now.
    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests the server was answering at one time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    pub fn env(&self) -> EnvOverrides {
        EnvOverrides {
            base_url: Some(self.url.clone()),
            model: Some("fake-model".into()),
            ..Default::default()
        }
    }
}

async fn handle(State(st): State<Arc<FakeState>>, headers: HeaderMap, body: String) -> Response {
    let n = st.calls.fetch_add(1, Ordering::SeqCst);
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
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    st.requests.lock().unwrap().push(v.clone());
    st.headers.lock().unwrap().push(headers);
    let mut reply = (st.responder)(&v, n);
    loop {
        match reply {
            FakeReply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            FakeReply::Json(v) => return axum::Json(v).into_response(),
            FakeReply::Raw(s) => {
                return (StatusCode::OK, [("content-type", "application/json")], s).into_response()
            }
            FakeReply::Status(code, hdrs, body) => {
                let mut r = (StatusCode::from_u16(code).unwrap(), body).into_response();
                for (k, v) in hdrs {
                    r.headers_mut().insert(k, v.parse().unwrap());
                }
                return r;
            }
        }
    }
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

/// The user's own words in a user message: after the speaker tag ("妈妈：") and before
/// the dynamic tail that the current message carries after them ("\n\n[上下文]\n…").
pub fn user_words(msg: &Value) -> String {
    let c = msg["content"].as_str().unwrap_or_default();
    let said = c.rsplit_once("\n\n[上下文]\n").map_or(c, |(said, _)| said);
    match said.split_once('：') {
        Some((tag, words)) if !tag.contains('\n') && tag.chars().count() <= 40 => words.to_string(),
        _ => said.to_string(),
    }
}

/// A stand-in model: asks for `switch_mode` when the user mentions 做饭模式 with a
/// verb (letting the backend decide), relays tool results, otherwise echoes.
pub fn scripted(body: &Value) -> FakeReply {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default();
        return text(&format!("（模式操作结果）{result}"));
    }
    let words = user_words(&last);
    if words.contains("做饭模式") {
        let exit = ["退出", "结束", "关闭"].iter().any(|v| words.contains(v));
        let args = if exit {
            json!({"action": "exit", "mode_id": "cooking", "summary": "做了番茄炒蛋，三个人吃。"})
        } else {
            json!({"action": "enter", "mode_id": "cooking"})
        };
        return tool_call("switch_mode", args);
    }
    text(&format!("好的：{words}"))
}

/// A fresh workspace folder.
pub fn workspace() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn repo_skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
}

/// Copy the repository's skills into `dest` (for tests that edit or break them).
pub fn copy_skills(dest: &Path) {
    copy_dir(&repo_skills(), dest);
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

pub fn start_kernel(ws: &Path, fake: &FakeLlm) -> Kernel {
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(fake.env()),
            ..Default::default()
        },
    )
    .unwrap()
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

pub fn action(ws: &Path) -> Value {
    read_json(&ws.join("modes/action.json"))
}

pub fn jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The session folder named by an active `action.json`.
pub fn session_dir(ws: &Path) -> PathBuf {
    PathBuf::from(
        action(ws)["session_dir"]
            .as_str()
            .expect("a mode is active"),
    )
}

/// Requests whose last message is a user message (the first request of each turn).
pub fn turn_requests(fake: &FakeLlm) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map(|m| m["role"] == "user")
                .unwrap_or(false)
        })
        .collect()
}

/// The Python with the peer libraries (`wyoming`), installed by `tests/run.sh` into
/// `.venv`; `HOMEBOT_TEST_PYTHON` overrides.
pub fn peer_python() -> PathBuf {
    if let Ok(p) = std::env::var("HOMEBOT_TEST_PYTHON") {
        return PathBuf::from(p);
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    assert!(
        p.exists(),
        "the Python peer libraries are missing: run tests/run.sh (it creates .venv with `wyoming`)"
    );
    p
}

/// Run `tests/peers/<script>` with `args`; parse the JSON it prints.
pub async fn run_peer(script: &str, args: &[&str]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script);
    let o = tokio::process::Command::new(peer_python())
        .arg(&path)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        o.status.success(),
        "{script} {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// The `homebot` binary on workspace `ws`, with a clean environment (no provider, no
/// failpoint, quiet logs); `fake` becomes its provider when given.
pub fn homebot(ws: &Path, fake: Option<&FakeLlm>) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_homebot"));
    c.arg("--workspace").arg(ws);
    for k in [
        "HOMEBOT_BASE_URL",
        "HOMEBOT_API_KEY",
        "HOMEBOT_MODEL",
        "DEEPSEEK_API_KEY",
        "HOMEBOT_SKILLS_DIR",
        "HOMEBOT_FAILPOINT",
    ] {
        c.env_remove(k);
    }
    c.env("RUST_LOG", "warn").kill_on_drop(true);
    if let Some(f) = fake {
        c.env("HOMEBOT_BASE_URL", &f.url);
    }
    c
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

/// The tool results (`role: tool`) at the end of a request, as (tool_call_id, content).
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let tail: Vec<&Value> = msgs
        .iter()
        .rev()
        .take_while(|m| m["role"] == "tool")
        .collect();
    tail.into_iter()
        .rev()
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Poll `cond` until it holds (every 5 ms), failing with `what` after `deadline`.
pub async fn eventually(what: &str, deadline: Duration, mut cond: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + deadline;
    while !cond() {
        assert!(
            std::time::Instant::now() < end,
            "{what}: not so after {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// [`eventually`] with a 30 s deadline, for a condition the test names by its place.
#[track_caller]
pub fn until(cond: impl FnMut() -> bool) -> impl std::future::Future<Output = ()> {
    let at = std::panic::Location::caller().to_string();
    async move {
        eventually(
            &format!("the condition at {at}"),
            Duration::from_secs(30),
            cond,
        )
        .await
    }
}
