//! What a runaway model can make the file tools do, against the fake OpenAI-compatible
//! server: calls per response and per turn, bytes per turn and per writable folder, one
//! oversized argument string — each refused with a tool error the model reads, and every
//! `tool_call_id` still answered. And files that are not what their path says: a FIFO
//! (which used to freeze the gateway) and a hard link to `config.toml`.

use crate::common;

use common::*;
use homebot::channels::cli;
use homebot::kernel::Kernel;
use serde_json::{json, Value};
use std::path::Path;

fn with_config(ws: &Path, toml: &str) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(ws.join("config.toml"), toml).unwrap();
}

async fn turn(k: &Kernel, chat: &str, text: &str) -> homebot::turn::Reply {
    k.handle_turn(cli::turn(chat, "mom", text)).await
}

/// The model replies with the tool results it got, one per line, as `id=content`.
fn echo_results(body: &Value) -> FakeReply {
    let lines: Vec<String> = tool_results(body)
        .into_iter()
        .map(|(id, c)| format!("{id}={c}"))
        .collect();
    text(&lines.join("\n"))
}

fn notes_files(ws: &Path) -> usize {
    std::fs::read_dir(ws.join("notes"))
        .map(|d| d.flatten().filter(|e| e.path().is_file()).count())
        .unwrap_or(0)
}

#[tokio::test]
async fn calls_beyond_the_per_response_cap_are_not_run_but_all_answered() {
    let dir = workspace();
    let fake = FakeLlm::start(|body, n| match n {
        0 => {
            let calls: Vec<(&str, Value)> = (0..50)
                .map(|i| {
                    (
                        "write_file",
                        json!({"path": format!("notes/n{i}.md"), "content": "x"}),
                    )
                })
                .collect();
            tool_calls(&calls)
        }
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    turn(&k, "local", "记五十条笔记").await;
    assert_eq!(
        notes_files(dir.path()),
        8,
        "the default cap: 8 calls per response"
    );
    let results = tool_results(&fake.requests()[1]);
    assert_eq!(results.len(), 50, "one result for every tool_call_id");
    for (i, (id, content)) in results.iter().enumerate() {
        assert_eq!(id, &format!("call_{i}"));
        if i < 8 {
            assert!(content.starts_with("ok: wrote"), "{i}: {content}");
        } else {
            assert!(content.starts_with("error: not run"), "{i}: {content}");
        }
    }
    assert!(
        results[8].1.contains("at most 8 tool calls"),
        "{}",
        results[8].1
    );
}

#[tokio::test]
async fn a_turn_runs_at_most_its_cap_of_calls_over_all_rounds() {
    let dir = workspace();
    let fake = FakeLlm::start(|_, n| {
        // four rounds of eight writes: 32 asked, 24 allowed per turn
        let calls: Vec<(String, Value)> = (0..8)
            .map(|i| {
                let p = format!("notes/r{n}-{i}.md");
                ("write_file".to_string(), json!({"path": p, "content": "x"}))
            })
            .collect();
        let calls: Vec<(&str, Value)> =
            calls.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
        if n < 4 {
            tool_calls(&calls)
        } else {
            text("记好了")
        }
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "local", "多记点").await;
    assert_eq!(r.text, "记好了");
    assert_eq!(notes_files(dir.path()), 24);
    let last = tool_results(&fake.requests()[4]);
    assert_eq!(last.len(), 8);
    assert!(
        last.iter()
            .all(|(_, c)| c.contains("already run 24 tool calls")),
        "{last:?}"
    );
}

#[tokio::test]
async fn bytes_written_per_turn_are_capped() {
    let dir = workspace();
    // room in the answer for 8 × 200 KiB of arguments
    with_config(
        dir.path(),
        "[provider]\nmax_tokens = 100000\n[context]\nwindow_tokens = 10000000\n",
    );
    let big = "字".repeat(200 * 1024 / 3);
    let fake = FakeLlm::start(move |body, n| match n {
        0 => {
            let calls: Vec<(&str, Value)> = (0..8)
                .map(|i| {
                    (
                        "write_file",
                        json!({"path": format!("notes/big{i}.md"), "content": big}),
                    )
                })
                .collect();
            tool_calls(&calls)
        }
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    turn(&k, "local", "写大文件").await;
    // 5 × 200 KiB fit in 1 MiB, the sixth would not
    assert_eq!(notes_files(dir.path()), 5);
    let results = tool_results(&fake.requests()[1]);
    assert_eq!(results.len(), 8);
    assert!(results[5].1.contains("per turn"), "{}", results[5].1);
}

#[tokio::test]
async fn a_writable_folder_has_a_quota_of_files_and_bytes() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_calls(&[
            (
                "write_file",
                json!({"path": "notes/one-too-many.md", "content": "x"}),
            ),
            (
                "write_file",
                json!({"path": "notes/f0.md", "content": "replaced"}),
            ),
        ]),
        2 => tool_call(
            "write_file",
            json!({"path": "cooking/recipes/汤.md", "content": "再来一点"}),
        ),
        4 => tool_call(
            "write_file",
            json!({"path": "cooking/recipes/big.bin", "content": "小"}),
        ),
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(ws, &fake);
    // notes/ already holds its 500 files (the default quota)
    std::fs::create_dir_all(ws.join("notes/sub")).unwrap();
    for i in 0..500 {
        let d = if i % 2 == 0 { "notes" } else { "notes/sub" };
        std::fs::write(ws.join(format!("{d}/f{i}.md")), "x").unwrap();
    }
    let r = turn(&k, "local", "再记一条").await;
    let lines: Vec<&str> = r.text.lines().collect();
    assert!(
        lines[0].starts_with("call_0=error:") && lines[0].contains("quota is 500"),
        "{}",
        r.text
    );
    assert!(
        lines[1].starts_with("call_1=ok: wrote"),
        "replacing a file stays allowed: {}",
        r.text
    );
    assert!(!ws.join("notes/one-too-many.md").exists());

    // cooking/recipes/ (cooking's knowledge: written in cooking mode) already holds
    // 20 MiB (a sparse file: the size counts, not the disk)
    let entered = turn(&k, "local", "/mode enter cooking").await;
    assert!(entered.is_answered(), "{}", entered.text);
    std::fs::create_dir_all(ws.join("cooking/recipes")).unwrap();
    let f = std::fs::File::create(ws.join("cooking/recipes/big.bin")).unwrap();
    f.set_len(20 * 1024 * 1024).unwrap();
    drop(f);
    let r = turn(&k, "local", "记个汤").await;
    assert!(r.text.contains("quota is 20971520"), "{}", r.text);
    assert!(!ws.join("cooking/recipes/汤.md").exists());
    // replacing the big file with a small one frees the folder
    let r = turn(&k, "local", "把大文件换掉").await;
    assert!(r.text.contains("=ok: wrote"), "{}", r.text);
    assert_eq!(
        std::fs::metadata(ws.join("cooking/recipes/big.bin"))
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn an_oversized_argument_string_is_refused_unrun() {
    let dir = workspace();
    with_config(
        dir.path(),
        "[provider]\nmax_tokens = 100000\n[context]\nwindow_tokens = 10000000\n",
    );
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_call(
            "read_file",
            json!({"path": format!("notes/{}", "a".repeat(600 * 1024))}),
        ),
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(dir.path(), &fake);
    let r = turn(&k, "local", "读一下").await;
    assert!(
        r.text.contains("the limit is 524288") && r.text.contains("was not run"),
        "{}",
        &r.text[..r.text.len().min(300)]
    );
}

#[tokio::test]
async fn a_fifo_is_refused_at_once_and_other_chats_keep_flowing() {
    let dir = workspace();
    let ws = dir.path().to_path_buf();
    let fake = FakeLlm::start(|body, _| {
        let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
        let last = last.unwrap_or_default();
        let words = user_words(&last);
        if last["role"] == "tool" {
            echo_results(body)
        } else if words == "读管道" {
            tool_call("read_file", json!({"path": "notes/pipe"}))
        } else {
            text(&format!("好的：{words}"))
        }
    })
    .await;
    let k = start_kernel(&ws, &fake);
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    let pipe = ws.join("notes/pipe");
    let c = std::ffi::CString::new(pipe.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

    // A writer that comes only once another chat has been answered. A reader that
    // blocks on the FIFO (as it used to, on an async worker) holds everything up, and the
    // other chat is never answered; the writer then gives up waiting after a while and
    // writes anyway, so the old behaviour ends as a failed assertion, not a hang.
    let (answered_tx, answered_rx) = std::sync::mpsc::channel::<()>();
    let wrote_unasked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = wrote_unasked.clone();
    let pipe_w = pipe.clone();
    std::thread::spawn(move || {
        if answered_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .is_err()
        {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // blocks until someone opens the FIFO for reading; a refused read never does,
        // and the thread is left behind when the test ends
        let _ = std::fs::write(&pipe_w, "管道里的内容");
    });

    let reader = tokio::spawn({
        let k = k.clone();
        async move { turn(&k, "pipe-chat", "读管道").await }
    });
    // the reader's model has asked for the FIFO before the other chat speaks
    until(|| fake.calls() >= 1).await;
    let other = turn(&k, "other-chat", "你好").await;
    assert_eq!(other.text, "好的：你好");
    let _ = answered_tx.send(());
    let r = reader.await.unwrap();
    assert!(
        !wrote_unasked.load(std::sync::atomic::Ordering::SeqCst),
        "the other chat waited for the FIFO read"
    );
    assert!(r.text.contains("not a regular file"), "{}", r.text);
    assert!(!r.text.contains("管道里的内容"), "{}", r.text);
}

#[tokio::test]
async fn a_hard_link_to_the_config_is_not_read() {
    let dir = workspace();
    let ws = dir.path();
    with_config(ws, "[provider]\napi_key = \"sk-hardlink-secret\"\n");
    let fake = FakeLlm::start(|body, n| match n {
        0 => tool_call("read_file", json!({"path": "notes/配置.md"})),
        _ => echo_results(body),
    })
    .await;
    let k = start_kernel(ws, &fake);
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    std::fs::hard_link(ws.join("config.toml"), ws.join("notes/配置.md")).unwrap();
    let r = turn(&k, "local", "看看配置").await;
    assert!(r.text.contains("more than one name"), "{}", r.text);
    for req in fake.requests() {
        assert!(
            !req.to_string().contains("sk-hardlink-secret"),
            "the key reached the model"
        );
    }
    assert!(!std::fs::read_to_string(ws.join("chats/cli/local.jsonl"))
        .unwrap()
        .contains("sk-hardlink-secret"));
}
