//! Anthropic Messages through the kernel against a loopback fake of `/v1/messages`: the
//! request shape (headers, system blocks, tools with `input_schema`, tool_use /
//! tool_result mapping with merged results, `cache_control` breakpoints on the right
//! blocks and never more than four), usage with the cache fields, and retries on 529.

use crate::common;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use common::*;
use homebot::channels::cli;
use homebot::config::{EnvOverrides, Secret};
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

type Answer = dyn Fn(&Value, usize) -> (u16, Value) + Send + Sync;

struct Fake {
    seen: Mutex<Vec<(HeaderMap, Value)>>,
    answer: Box<Answer>,
}

async fn handle(State(f): State<Arc<Fake>>, headers: HeaderMap, body: String) -> Response {
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let n = {
        let mut seen = f.seen.lock().unwrap();
        seen.push((headers, v.clone()));
        seen.len() - 1
    };
    let (status, body) = (f.answer)(&v, n);
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

/// Anthropic's model list, for `homebot doctor`; only with the right headers.
async fn models(headers: HeaderMap) -> Response {
    if headers.get("x-api-key").is_none() || headers.get("anthropic-version").is_none() {
        return (StatusCode::UNAUTHORIZED, "no key").into_response();
    }
    axum::Json(
        json!({"data": [{"type": "model", "id": "claude-test", "display_name": "Test"}],
        "has_more": false}),
    )
    .into_response()
}

async fn start(
    answer: impl Fn(&Value, usize) -> (u16, Value) + Send + Sync + 'static,
) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake {
        seen: Mutex::new(Vec::new()),
        answer: Box::new(answer),
    });
    let app = axum::Router::new()
        .route("/v1/messages", axum::routing::post(handle))
        .route("/v1/models", axum::routing::get(models))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), fake)
}

fn text_answer(t: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": t}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 5,
                  "cache_creation_input_tokens": 100, "cache_read_input_tokens": 900}})
}

fn kernel(ws: &std::path::Path, url: &str, extra: &str) -> Kernel {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!("[provider]\nkind = \"anthropic\"\n{extra}"),
    )
    .unwrap();
    Kernel::start(
        ws,
        KernelOptions {
            env: Some(EnvOverrides {
                base_url: Some(url.to_string()),
                model: Some("claude-test".into()),
                api_key: Some(Secret::new("sk-ant-test")),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap()
}

/// JSON pointers of every `cache_control` in a body.
fn marks(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "cache_control" {
                    assert_eq!(x, &json!({"type": "ephemeral"}), "{at}");
                    out.push(at.clone());
                } else {
                    marks(x, format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                marks(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn a_tool_turn_maps_blocks_and_marks_the_stable_prefix() {
    let dir = workspace();
    std::fs::create_dir_all(dir.path().join("notes")).unwrap();
    std::fs::write(dir.path().join("notes/a.md"), "A").unwrap();
    std::fs::write(dir.path().join("notes/b.md"), "B").unwrap();
    let (url, fake) = start(|body, _| {
        let msgs = body["messages"].as_array().unwrap();
        let last = msgs.last().unwrap();
        if last["content"][0]["type"] == "tool_result" {
            return (200, text_answer("两个文件都读了"));
        }
        let words = last["content"][0]["text"].as_str().unwrap_or_default();
        if words.contains("读笔记") {
            return (
                200,
                json!({"type": "message", "role": "assistant", "model": "claude-test",
                "content": [
                    {"type": "text", "text": "我看看"},
                    {"type": "tool_use", "id": "tu_a", "name": "read_file", "input": {"path": "notes/a.md"}},
                    {"type": "tool_use", "id": "tu_b", "name": "read_file", "input": {"path": "notes/b.md"}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 0}}),
            );
        }
        (200, text_answer("好的"))
    })
    .await;
    let k = kernel(dir.path(), &url, "");
    let r = k.handle_turn(cli::turn("local", "mom", "你好")).await;
    assert_eq!(r.text, "好的");
    let r = k
        .handle_turn(cli::turn("local", "mom", "读笔记 a 和 b"))
        .await;
    assert_eq!(r.text, "两个文件都读了", "{r:?}");

    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    for (h, body) in &seen {
        assert_eq!(h["x-api-key"], "sk-ant-test");
        assert_eq!(h["anthropic-version"], "2023-06-01");
        assert!(h.get("authorization").is_none());
        assert_eq!(body["model"], "claude-test");
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["system"][0]["type"], "text");
        let tools = body["tools"].as_array().unwrap();
        assert!(tools.iter().all(|t| t["input_schema"].is_object()));
        let mut found = Vec::new();
        marks(body, String::new(), &mut found);
        assert!(found.len() <= 4, "{found:?}");
        // the last tool and the system are always marked
        assert!(
            found.contains(&format!("/tools/{}", tools.len() - 1)),
            "{found:?}"
        );
        assert!(found.contains(&"/system/0".to_string()), "{found:?}");
    }
    // turn 2, first request: history [user, assistant] + the question; the assistant
    // message before the question is the history breakpoint
    let (_, b) = &seen[1];
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    let mut found = Vec::new();
    marks(b, String::new(), &mut found);
    assert_eq!(found.len(), 3);
    assert!(
        found.contains(&"/messages/1/content/0".to_string()),
        "{found:?}"
    );
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["content"][0]["text"], "好的");
    // the tool round: both results in one user message, after the assistant's tool_use
    let (_, b) = &seen[2];
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 5, "{m:?}");
    assert_eq!(m[3]["role"], "assistant");
    assert_eq!(m[3]["content"][1]["type"], "tool_use");
    assert_eq!(m[3]["content"][1]["id"], "tu_a");
    assert_eq!(m[3]["content"][2]["input"], json!({"path": "notes/b.md"}));
    assert_eq!(m[4]["role"], "user");
    let results = m[4]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "tu_a");
    assert!(results[0]["content"].as_str().unwrap().contains('A'));
    assert_eq!(results[1]["tool_use_id"], "tu_b");
    let mut found = Vec::new();
    marks(b, String::new(), &mut found);
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(found.contains(&"/messages/1/content/0".to_string()));
    assert!(found.contains(&"/messages/4/content/1".to_string()));

    // usage: prompt = input + cache read + cache creation; cached = cache read
    k.provider().flush().await;
    let usage = jsonl(&dir.path().join("logs/usage.jsonl"));
    assert_eq!(usage.len(), 3);
    assert_eq!(usage[0]["usage"]["prompt_tokens"], 1012);
    assert_eq!(usage[0]["usage"]["cache_read_tokens"], 900);
    assert_eq!(usage[0]["usage"]["cache_creation_tokens"], 100);
    assert_eq!(usage[0]["usage"]["completion_tokens"], 5);
    let audit_dir = dir.path().join("logs/audit");
    let day = std::fs::read_dir(&audit_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recs = jsonl(&day);
    assert_eq!(recs.len(), 3);
    assert_eq!(
        recs[0]["usage"],
        json!({"prompt": 1012, "cached": 900, "completion": 5})
    );
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let dir = workspace();
    let (url, fake) = start(|_, n| match n {
        0 => (
            529,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        _ => (200, text_answer("第二次好了")),
    })
    .await;
    let k = kernel(dir.path(), &url, "max_retries = 1\n");
    let r = k.handle_turn(cli::turn("local", "mom", "在吗")).await;
    assert_eq!(r.text, "第二次好了", "{r:?}");
    assert_eq!(fake.seen.lock().unwrap().len(), 2);
}

#[test]
fn anthropic_is_inferred_from_its_url_and_its_key_goes_only_there() {
    let c = homebot::config::Config::default();
    let r = c
        .resolve_provider(&EnvOverrides {
            anthropic_api_key: Some(Secret::new("sk-ant")),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(r.base_url, "https://api.anthropic.com");
    assert_eq!(r.kind, homebot::config::ProviderKind::Anthropic);
    assert_eq!(r.api_key.as_ref().map(Secret::expose), Some("sk-ant"));
    assert_eq!(r.model.name(), Some(homebot::config::ANTHROPIC_MODEL));
    let r = c
        .resolve_provider(&EnvOverrides {
            base_url: Some("https://proxy.example/v1".into()),
            anthropic_api_key: Some(Secret::new("sk-ant")),
            ..Default::default()
        })
        .unwrap();
    assert!(r.api_key.is_none(), "not to another endpoint");
    assert_eq!(r.kind, homebot::config::ProviderKind::Openai);
}

#[tokio::test]
async fn doctor_lists_anthropic_models_with_its_headers() {
    let (url, _fake) = start(|_, _| (200, text_answer("x"))).await;
    let env = EnvOverrides {
        base_url: Some(url),
        model: Some("claude-test".into()),
        api_key: Some(Secret::new("sk-ant-test")),
        ..Default::default()
    };
    let cfg = homebot::config::Config::parse(
        "[provider]\nkind = \"anthropic\"\n",
        std::path::Path::new("c.toml"),
    )
    .unwrap();
    let r = homebot::doctor::diagnose(cfg.resolve_provider(&env).as_ref(), &env).await;
    assert!(r.reachable, "{:?}", r.lines);
    let text = r.lines.join("\n");
    assert!(text.contains("/v1/models → HTTP 200"), "{text}");
    assert!(text.contains("claude-test"), "{text}");
    assert!(!text.contains("sk-ant-test"), "{text}");
    assert!(!text.contains("hint:"), "the model is listed: {text}");
}
