//! `homebot doctor` as a user runs it: the real binary against a fake llama.cpp-style
//! server on 127.0.0.1:0 (`/v1/models`, `/props`), against one that lists too much, and
//! against a closed port; and the fallback endpoints, one line each.

use crate::common;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use common::*;
use serde_json::json;
use std::process::Output;
use std::sync::{Arc, Mutex};

/// Authorization headers the fake saw, per path.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

struct FakeServer {
    base: String,
    seen: Seen,
}

fn auth(h: &HeaderMap) -> Option<String> {
    h.get("authorization")
        .map(|v| v.to_str().unwrap().to_string())
}

/// A llama.cpp-like server: two models, `n_ctx` 8192 at the root's `/props`.
async fn llama_like() -> FakeServer {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/v1/models",
            get(|State(seen): State<Seen>, h: HeaderMap| async move {
                seen.lock().unwrap().push(("/v1/models".into(), auth(&h)));
                Json(json!({"object": "list", "data": [
                    {"id": "qwen2.5-1.5b-instruct", "object": "model"},
                    {"id": "smollm2-135m", "object": "model"}
                ]}))
            }),
        )
        .route(
            "/props",
            get(|State(seen): State<Seen>, h: HeaderMap| async move {
                seen.lock().unwrap().push(("/props".into(), auth(&h)));
                Json(json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}))
            }),
        )
        .with_state(seen.clone());
    serve(app, seen).await
}

/// A server whose model list is larger than doctor reads, and with no `/props`.
async fn oversized() -> FakeServer {
    let seen: Seen = Arc::default();
    let huge: Vec<_> = (0..40_000)
        .map(|i| json!({"id": format!("model-{i:06}-padding-padding")}))
        .collect();
    let app = Router::new().route(
        "/v1/models",
        get(move || {
            let huge = huge.clone();
            async move { Json(json!({"data": huge})) }
        }),
    );
    serve(app, seen).await
}

async fn serve(app: Router, seen: Seen) -> FakeServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    FakeServer {
        base: format!("http://{addr}/v1"),
        seen,
    }
}

async fn doctor(env: &[(&str, &str)]) -> (Output, String) {
    let dir = workspace();
    doctor_in(dir.path(), env).await
}

async fn doctor_in(ws: &std::path::Path, env: &[(&str, &str)]) -> (Output, String) {
    let mut cmd = homebot(ws, None);
    cmd.arg("doctor");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    (out, stdout)
}

fn line<'a>(stdout: &'a str, prefix: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{stdout}"))
}

#[tokio::test]
async fn doctor_reports_models_context_and_a_wrong_model_name() {
    let fake = llama_like().await;
    let (out, stdout) = doctor(&[
        ("HOMEBOT_BASE_URL", &fake.base),
        ("HOMEBOT_MODEL", "qwen2.5-7b"),
        ("HOMEBOT_API_KEY", "sk-doctor-secret"),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        line(&stdout, "endpoint:"),
        format!("endpoint: {}", fake.base)
    );
    assert_eq!(line(&stdout, "model:"), "model: qwen2.5-7b");
    assert_eq!(line(&stdout, "key:"), "key: set (from HOMEBOT_API_KEY)");
    assert_eq!(
        line(&stdout, "limits:"),
        "limits: timeout 300 s, max_tokens 4096, retries 2, concurrent calls 8",
        "loopback defaults"
    );
    assert_eq!(
        line(&stdout, "reachable:"),
        format!("reachable: yes (GET {}/models → HTTP 200)", fake.base)
    );
    assert_eq!(
        line(&stdout, "models:"),
        "models: qwen2.5-1.5b-instruct, smollm2-135m"
    );
    let origin = fake.base.trim_end_matches("/v1");
    assert_eq!(
        line(&stdout, "context:"),
        format!("context: 8192 tokens (GET {origin}/props)")
    );
    let hint = line(&stdout, "hint:");
    assert!(
        hint.contains("\"qwen2.5-7b\"") && hint.contains("HOMEBOT_MODEL"),
        "{hint}"
    );
    // the key went to the endpoint, and nowhere into the output
    assert!(!stdout.contains("sk-doctor") && !stderr.contains("sk-doctor"));
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("/v1/models".into(), Some("Bearer sk-doctor-secret".into())),
            ("/props".into(), Some("Bearer sk-doctor-secret".into())),
        ]
    );
}

#[tokio::test]
async fn doctor_with_no_model_and_only_a_deepseek_key_sends_no_key() {
    let fake = llama_like().await;
    let (out, stdout) = doctor(&[
        ("HOMEBOT_BASE_URL", &fake.base),
        ("DEEPSEEK_API_KEY", "sk-deepseek-secret"),
    ])
    .await;
    assert!(out.status.success(), "{stdout}");
    assert_eq!(
        line(&stdout, "model:"),
        "model: (endpoint default) — set HOMEBOT_MODEL to choose one"
    );
    assert_eq!(line(&stdout, "key:"), "key: none");
    assert!(line(&stdout, "note:").contains("DEEPSEEK_API_KEY"));
    assert!(line(&stdout, "hint:").contains("HOMEBOT_MODEL=qwen2.5-1.5b-instruct"));
    assert!(!stdout.contains("sk-deepseek"));
    let seen = fake.seen.lock().unwrap().clone();
    assert!(
        !seen.is_empty() && seen.iter().all(|(_, a)| a.is_none()),
        "{seen:?}"
    );
}

#[tokio::test]
async fn doctor_bounds_what_it_reads() {
    let fake = oversized().await;
    let (out, stdout) = doctor(&[("HOMEBOT_BASE_URL", &fake.base)]).await;
    assert!(out.status.success(), "reachable even so: {stdout}");
    assert_eq!(
        line(&stdout, "models:"),
        "models: not read — the answer is larger than 1048576 bytes"
    );
    assert_eq!(
        line(&stdout, "context:"),
        "context: not reported by the server (no llama.cpp /props)"
    );
    assert!(!stdout.contains("hint:"), "{stdout}");
}

#[tokio::test]
async fn doctor_exits_1_when_nothing_listens() {
    let closed = Refusing::new(); // bound, never listening: connections are refused
    let port = closed.port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let (out, stdout) = doctor(&[("HOMEBOT_BASE_URL", &base)]).await;
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let reach = line(&stdout, "reachable:");
    assert!(
        reach.starts_with(&format!(
            "reachable: no — cannot connect to {base}/models: "
        )),
        "{reach}"
    );
    assert!(
        reach.to_lowercase().contains("connection refused"),
        "{reach}"
    );
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("models:") || l.starts_with("context:")),
        "nothing more is probed: {stdout}"
    );

    // and with nothing configured at all
    let (out, stdout) = doctor(&[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.starts_with("provider: not configured"), "{stdout}");
}

#[tokio::test]
async fn doctor_probes_each_fallback_on_its_own_line() {
    let primary = llama_like().await;
    let second = llama_like().await;
    let refusing = Refusing::new(); // bound, never listening: connections are refused
    let closed = format!("http://127.0.0.1:{}/v1", refusing.port());
    let dir = workspace();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[[provider.fallback]]\nbase_url = \"{}\"\nmodel = \"smollm2-135m\"\napi_key = \"sk-fallback-secret\"\n\n\
             [[provider.fallback]]\nbase_url = \"{}\"\nmodel = \"qwen2.5-7b\"\n\n\
             [[provider.fallback]]\nbase_url = \"{closed}\"\n",
            second.base, primary.base
        ),
    )
    .unwrap();
    let (out, stdout) = doctor_in(
        dir.path(),
        &[
            ("HOMEBOT_BASE_URL", &primary.base),
            ("HOMEBOT_MODEL", "smollm2-135m"),
        ],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "a fallback that does not answer fails the check: {stdout}"
    );
    assert_eq!(
        line(&stdout, "reachable:"),
        format!("reachable: yes (GET {}/models → HTTP 200)", primary.base),
        "the primary's lines as before"
    );
    assert_eq!(
        line(&stdout, "fallback-1:"),
        format!(
            "fallback-1: smollm2-135m @ {b}, key set (from provider.fallback.api_key) — reachable: yes (GET {b}/models → HTTP 200); lists smollm2-135m",
            b = second.base
        )
    );
    assert_eq!(
        line(&stdout, "fallback-2:"),
        format!(
            "fallback-2: qwen2.5-7b @ {b}, key none — reachable: yes (GET {b}/models → HTTP 200); does not list \"qwen2.5-7b\" (it has \"qwen2.5-1.5b-instruct\", …)",
            b = primary.base
        )
    );
    let third = line(&stdout, "fallback-3:");
    assert!(
        third.starts_with(&format!(
            "fallback-3: (endpoint default) @ {closed}, key none — reachable: no — cannot connect to {closed}/models: "
        )),
        "{third}"
    );
    // each line its own: three fallbacks, three lines
    assert_eq!(stdout.matches("fallback-").count(), 3, "{stdout}");
    // a fallback's key went to its own endpoint only, and never into the output
    assert!(!stdout.contains("sk-fallback"));
    let sent = |seen: &Seen| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(_, a)| a.as_deref() == Some("Bearer sk-fallback-secret"))
            .count()
    };
    assert_eq!(sent(&second.seen), 1);
    assert_eq!(sent(&primary.seen), 0);
}
