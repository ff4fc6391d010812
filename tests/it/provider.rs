//! The provider against a real HTTP server: retries with backoff on 429 / 5xx, honest
//! replies when it is down, slow or confused, invalid tool arguments and runaway tool
//! loops — and the turn is still recorded, marked as failed; a call waiting to retry or
//! every slot held does not hold up other turns or mode commands. What is sent to the
//! provider and what of its answer is kept (keys, usage lines, sizes, reasoning) is in
//! [`crate::provider_wire`].

use crate::common;

use common::*;
use homebot::channels::cli;
use homebot::kernel::Kernel;
use homebot::turn::{Failure, Outcome};
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) fn with_config(ws: &Path, toml: &str) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(ws.join("config.toml"), toml).unwrap();
}

pub(crate) fn last_chat_record(ws: &Path) -> serde_json::Value {
    jsonl(&ws.join("chats/cli/local.jsonl")).pop().unwrap()
}

pub(crate) async fn turn(k: &Kernel, text: &str) -> homebot::turn::Reply {
    k.handle_turn(cli::turn("local", "mom", text)).await
}

#[tokio::test]
async fn retries_429_with_retry_after_then_succeeds() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, n| match n {
        0 => FakeReply::Status(429, vec![("retry-after", "1".into())], "slow down".into()),
        _ => text("好了"),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "你好").await;
    assert_eq!(r.text, "好了");
    assert!(r.is_answered());
    assert_eq!(fake.calls(), 2);
}

#[tokio::test]
async fn retries_5xx_a_bounded_number_of_times() {
    let dir = workspace();
    with_config(dir.path(), "[provider]\nmax_retries = 2\n");
    let fake = FakeLlm::start(|_, n| match n {
        0 => FakeReply::Status(502, vec![], "bad gateway".into()),
        1 => FakeReply::Status(503, vec![], "unavailable".into()),
        _ => text("第三次成功"),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    assert_eq!(turn(&k, "你好").await.text, "第三次成功");
    assert_eq!(fake.calls(), 3);

    let down = FakeLlm::start(|_, _| FakeReply::Status(500, vec![], "boom".into())).await;
    let dir2 = workspace();
    with_config(dir2.path(), "[provider]\nmax_retries = 2\n");
    let k = start_kernel(dir2.path(), &down);
    let r = turn(&k, "在吗").await;
    assert_eq!(down.calls(), 3, "1 try + 2 retries, then give up");
    assert!(r.text.contains("模型服务出错了（HTTP 500）"), "{}", r.text);
    let rec = last_chat_record(dir2.path());
    assert_eq!(rec["user"], "在吗");
    assert_eq!(rec["assistant"], r.text);
    assert!(rec["error"].as_str().unwrap().contains("HTTP 500"), "{rec}");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, _| FakeReply::Status(401, vec![], "bad key".into())).await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "你好").await;
    assert_eq!(fake.calls(), 1);
    assert!(
        r.text.contains("HTTP 401") && r.text.contains("检查配置"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn a_timeout_is_reported_and_the_turn_recorded_in_the_mode() {
    let dir = workspace();
    with_config(
        dir.path(),
        "[provider]\ntimeout_secs = 1\nmax_retries = 0\n",
    );
    let fake =
        FakeLlm::start(|_, _| FakeReply::Delay(Duration::from_secs(5), Box::new(text("太晚了"))))
            .await;
    let k = start_kernel(dir.path(), &fake);
    k.command("/mode enter cooking").await;
    let r = turn(&k, "油温多少").await;
    assert!(r.text.contains("超时"), "{}", r.text);
    assert_eq!(fake.calls(), 1, "a slow model is not asked again");
    let lines = jsonl(&session_dir(dir.path()).join("conversation.jsonl"));
    assert_eq!(lines.len(), 1, "a failed turn in a mode is still recorded");
    assert_eq!(lines[0]["user"], "油温多少");
    assert!(lines[0]["error"]
        .as_str()
        .unwrap()
        .contains("did not answer within 1 s"));
}

#[tokio::test]
async fn connection_refused_and_malformed_json() {
    let closed = Refusing::new(); // bound, never listening: connections are refused
    let port = closed.port();
    let dir = workspace();
    with_config(dir.path(), "[provider]\nmax_retries = 1\n");
    let k = Kernel::start(
        dir.path(),
        homebot::kernel::KernelOptions {
            env: Some(homebot::config::EnvOverrides {
                base_url: Some(format!("http://127.0.0.1:{port}/v1")),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .unwrap();
    let r = turn(&k, "你好").await;
    assert!(r.text.contains("连不上模型服务"), "{}", r.text);
    assert!(last_chat_record(dir.path())["error"]
        .as_str()
        .unwrap()
        .contains("cannot reach"));

    let dir = workspace();
    let fake = FakeLlm::start(|_, _| FakeReply::Raw("{\"choices\": [".into())).await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "你好").await;
    assert!(r.text.contains("无法解析"), "{}", r.text);
    assert_eq!(fake.calls(), 1, "a malformed answer is not retried");
}

#[tokio::test]
async fn invalid_tool_arguments_go_back_to_the_model() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_call_raw("switch_mode", "{\"action\": \"enter\", mode_id"),
        _ => {
            let last = body["messages"].as_array().unwrap().last().unwrap().clone();
            text(&format!("工具说：{}", last["content"].as_str().unwrap()))
        }
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "打开做饭模式").await;
    assert!(
        r.text.contains("invalid arguments for switch_mode"),
        "{}",
        r.text
    );
    assert_eq!(action(dir.path())["active"], false);
    // the follow-up request carries the assistant's call and the tool error after the prefix
    let req = &fake.requests()[1];
    let msgs = req["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(
        msgs[n - 2]["tool_calls"][0]["function"]["name"],
        "switch_mode"
    );
    assert_eq!(msgs[n - 1]["role"], "tool");
    assert_eq!(msgs[n - 1]["tool_call_id"], "call_switch_mode");
}

#[tokio::test]
async fn a_runaway_tool_loop_is_capped() {
    let dir = workspace();
    with_config(dir.path(), "[agent]\nmax_tool_rounds = 3\n");
    let fake =
        FakeLlm::start(|_, _| tool_call("list_files", serde_json::json!({"path": "."}))).await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "随便看看").await;
    assert_eq!(fake.calls(), 4, "3 tool rounds, then stop");
    assert!(r.text.contains("超过了 3 次"), "{}", r.text);
    let rec = last_chat_record(dir.path());
    assert!(rec["error"].as_str().unwrap().contains("tool round limit"));
    // and the bot is fine afterwards
    let ok = FakeLlm::scripted().await;
    drop(k);
    let k = start_kernel(dir.path(), &ok);
    assert_eq!(turn(&k, "你好").await.text, "好的：你好");
}

#[tokio::test]
async fn file_tools_read_the_cooking_index() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_call(
            "read_file",
            serde_json::json!({"path": "cooking/history.md"}),
        ),
        1 => tool_call("read_file", serde_json::json!({"path": "../../etc/passwd"})),
        _ => {
            let msgs = body["messages"].as_array().unwrap();
            let n = msgs.len();
            text(&format!(
                "{}|{}",
                msgs[n - 3]["content"].as_str().unwrap(),
                msgs[n - 1]["content"].as_str().unwrap()
            ))
        }
    })
    .await;
    let k = start_kernel(ws, &fake);
    k.command("/mode enter cooking").await;
    let r = turn(&k, "上次做了什么").await;
    let (index, escape) = r.text.split_once('|').unwrap();
    assert!(index.starts_with("# 做饭历史"), "{}", r.text);
    assert!(escape.contains("outside the workspace"), "{}", r.text);
}

#[tokio::test]
async fn failed_turns_are_recorded_but_not_replayed_and_overflow_is_explained() {
    let dir = workspace();
    with_config(dir.path(), "[provider]\nmax_retries = 0\n");
    let fake = FakeLlm::start(|body, n| match n {
        0 => FakeReply::Status(500, vec![], "boom".into()),
        1 => FakeReply::Status(
            400,
            vec![],
            r#"{"error":{"code":400,"message":"request (8209 tokens) exceeds the available context size (8192 tokens)"}}"#.into(),
        ),
        _ => scripted(body),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let r1 = turn(&k, "第一问").await;
    assert!(
        matches!(
            r1.outcome,
            Outcome::Failed {
                error: Failure::Provider,
                ..
            }
        ),
        "{r1:?}"
    );
    let r2 = turn(&k, "第二问").await;
    assert!(r2.text.contains("对话太长"), "{}", r2.text);
    assert_eq!(turn(&k, "第三问").await.text, "好的：第三问");
    // both failures are in the record, marked
    let recs = jsonl(&dir.path().join("chats/cli/local.jsonl"));
    assert_eq!(recs.len(), 3);
    assert!(
        recs[0]["error"].is_string()
            && recs[1]["error"].is_string()
            && recs[2].get("error").is_none()
    );
    // but the model never sees the apologies
    let last = fake.requests().last().unwrap().clone();
    let msgs = last["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "system + this question only: {msgs:?}");
    assert_eq!(last["max_tokens"], 4096, "an output cap is always sent");
    // the usage log has a line for every call, failed ones with their error
    k.provider().flush().await; // the usage lines are written off the turn's path
    let usage = jsonl(&dir.path().join("logs/usage.jsonl"));
    assert_eq!(usage.len(), 3);
    assert!(usage[0]["error"].as_str().unwrap().contains("HTTP 500"));
    assert!(usage[2]["usage"]["prompt_tokens"].is_u64());
}

#[tokio::test]
async fn a_tool_call_cut_off_by_the_output_limit_is_not_run() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| match n {
        0 => FakeReply::Json(serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "w1", "type": "function", "function": {"name": "write_file",
                 "arguments": "{\"path\": \"notes/菜谱.md\", \"content\": \"第一步"}}
            ]}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4096}
        })),
        _ => {
            let last = body["messages"].as_array().unwrap().last().unwrap().clone();
            text(last["content"].as_str().unwrap())
        }
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "把菜谱记下来").await;
    assert!(r.text.contains("cut off by the output limit"), "{}", r.text);
    assert!(
        !dir.path().join("notes/菜谱.md").exists(),
        "half a file was not written"
    );
}

/// The user's words of the request's last message.
fn asked(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(user_words)
        .unwrap_or_default()
}

#[tokio::test]
async fn the_slot_is_free_while_a_call_waits_to_retry() {
    let dir = workspace();
    with_config(
        dir.path(),
        "[provider]\nmax_concurrent = 1\nmax_retries = 1\n",
    );
    let a_calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = a_calls.clone();
    let fake = FakeLlm::start(move |body, _| {
        let words = asked(body);
        if words == "A" && seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            FakeReply::Status(429, vec![("retry-after", "1".into())], "slow down".into())
        } else {
            text(&format!("答：{words}"))
        }
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let started = Instant::now();
    let a = tokio::spawn({
        let k = k.clone();
        async move {
            let r = k.handle_turn(cli::turn("chat-a", "mom", "A")).await;
            (r, Instant::now())
        }
    });
    // B is sent once A's first call has been refused, i.e. while A sleeps on Retry-After
    eventually("A's first call", Duration::from_secs(30), || {
        fake.calls() >= 1
    })
    .await;
    let b = k.handle_turn(cli::turn("chat-b", "dad", "B")).await;
    let b_done = Instant::now();
    let (a, a_done) = a.await.unwrap();
    assert_eq!(b.text, "答：B");
    assert_eq!(a.text, "答：A");
    assert!(
        b_done < a_done,
        "B went through during A's backoff: the single slot was free"
    );
    assert!(
        a_done - started >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
    let order: Vec<String> = fake.requests().iter().map(asked).collect();
    assert_eq!(order, ["A", "B", "A"]);
}

#[tokio::test]
async fn mode_commands_answer_while_every_provider_slot_is_held() {
    let dir = workspace();
    // a slow call that is not done within the timeout (30 s) fails then; a command that
    // waited for a slot would answer only after that, when the slow turns are finished
    with_config(
        dir.path(),
        "[provider]\nmax_concurrent = 2\ntimeout_secs = 30\nmax_retries = 0\n",
    );
    let fake =
        FakeLlm::start(|_, _| FakeReply::Delay(Duration::from_secs(3600), Box::new(text("终于"))))
            .await;
    let k = start_kernel(dir.path(), &fake);
    let slow: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|chat| {
            let k = k.clone();
            tokio::spawn(async move { k.handle_turn(cli::turn(chat, "mom", "慢慢想")).await })
        })
        .collect();
    // both slots are taken once both calls have reached the server
    until(|| fake.calls() == 2).await;
    let status = k.handle_turn(cli::turn("c", "dad", "/mode status")).await;
    assert!(status.text.contains("无活动模式"), "{}", status.text);
    let enter = k
        .handle_turn(cli::turn("c", "dad", "/mode enter cooking"))
        .await;
    assert!(enter.is_answered(), "{}", enter.text);
    assert_eq!(action(dir.path())["active"], true);
    assert!(
        slow.iter().all(|t| !t.is_finished()),
        "the commands answered while the slow calls still held every slot"
    );
    assert_eq!(fake.calls(), 2, "the commands never called the provider");
}
