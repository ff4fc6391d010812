//! The `homebot` binary as other tools use it: `chat -m` prints the reply and exits 0,
//! the environment selects the provider, interactive chat reads lines, `config check`
//! reports broken skills.

use crate::common;

use common::*;
use std::process::Output;
use tokio::io::AsyncWriteExt;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test]
async fn one_shot_chat_against_an_openai_compatible_endpoint() {
    let dir = workspace();
    let ws = dir.path().join("fresh/ws"); // does not exist yet
    let fake = FakeLlm::scripted().await;
    let run = |args: &[&str]| {
        let mut c = homebot(&ws, None);
        c.env("HOMEBOT_BASE_URL", &fake.url)
            .env("HOMEBOT_API_KEY", "sk-test-secret-123")
            .env("HOMEBOT_MODEL", "smol")
            .arg("chat")
            .args(args);
        c.output()
    };
    let o = run(&["-m", "你好"]).await.unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stdout(&o), "好的：你好\n");
    assert!(
        ws.join("config.toml").exists(),
        "workspace created with defaults"
    );

    let o = run(&[
        "-m",
        "打开做饭模式",
        "--speaker",
        "mom",
        "--chat-id",
        "kitchen",
    ])
    .await
    .unwrap();
    assert!(stdout(&o).contains("已进入做饭模式"), "{o:?}");
    let o = run(&["-m", "番茄要放几个？", "--speaker", "dad"])
        .await
        .unwrap();
    assert_eq!(stdout(&o), "好的：番茄要放几个？\n");
    let lines = jsonl(&session_dir(&ws).join("conversation.jsonl"));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["chat_id"], "kitchen");
    assert_eq!(lines[1]["speaker_id"], "dad");
    assert_eq!(lines[1]["channel"], "cli");

    // the key went to the provider as a bearer token and nowhere else
    let h = fake.headers();
    assert_eq!(h[0]["authorization"], "Bearer sk-test-secret-123");
    assert_eq!(fake.requests()[0]["model"], "smol");
    let mut stack = vec![ws.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.is_file() {
                let t = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&t).contains("sk-test-secret"),
                    "key in {}",
                    p.display()
                );
            }
        }
    }
    let o = run(&["-m", "/mode status"]).await.unwrap();
    assert!(stdout(&o).contains("已记录 2 轮"), "{}", stdout(&o));
}

#[tokio::test]
async fn without_a_provider_commands_work_and_chat_explains() {
    let dir = workspace();
    let ws = dir.path();
    let o = homebot(ws, None)
        .args(["chat", "-m", "你好"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("DEEPSEEK_API_KEY") && stdout(&o).contains("HOMEBOT_BASE_URL"),
        "{o:?}"
    );
    let o = homebot(ws, None)
        .args(["chat", "-m", "/mode enter cooking"])
        .output()
        .await
        .unwrap();
    assert!(stdout(&o).contains("已进入做饭模式"), "{o:?}");
    let o = homebot(ws, None).arg("status").output().await.unwrap();
    assert!(stdout(&o).contains("做饭模式 (cooking) 活动中"), "{o:?}");
    assert!(stdout(&o).contains("未配置"), "{o:?}");
    let o = homebot(ws, None).arg("sessions").output().await.unwrap();
    assert!(stdout(&o).starts_with("cooking\tcook-"), "{o:?}");
}

#[tokio::test]
async fn interactive_chat_reads_lines_until_eof() {
    let dir = workspace();
    let ws = dir.path();
    let fake = FakeLlm::scripted().await;
    let mut child = homebot(ws, None)
        .env("HOMEBOT_BASE_URL", &fake.url)
        .args(["chat", "--speaker", "mom"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all("第一句\n/status\n第二句\n".as_bytes())
        .await
        .unwrap();
    drop(stdin); // Ctrl-D
    let o = child.wait_with_output().await.unwrap();
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    assert!(out.contains("好的：第一句"), "{out}");
    assert!(out.contains("模式: 无活动模式"), "{out}");
    assert!(out.contains("好的：第二句"), "{out}");
    let chat = jsonl(&ws.join("chats/cli/local.jsonl"));
    assert_eq!(chat.len(), 2);
    // the second turn carried the first as history
    let last = fake.requests().last().unwrap().clone();
    assert_eq!(user_words(&last["messages"][1]), "第一句");
}

#[tokio::test]
async fn config_check_names_the_broken_file_and_key() {
    let dir = workspace();
    let ws = dir.path();
    let o = homebot(ws, None)
        .args(["config", "check"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("mode: 做饭模式 (cooking)"));

    std::fs::create_dir_all(ws.join("skills/bad")).unwrap();
    std::fs::write(
        ws.join("skills/bad/mode.json"),
        r#"{"id":"bad","display_name":"坏模式","colour":1}"#,
    )
    .unwrap();
    std::fs::write(ws.join("skills/bad/SKILL.md"), "x").unwrap();
    let o = homebot(ws, None)
        .args(["config", "check"])
        .output()
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skills/bad/mode.json") && err.contains("unknown field `colour`"),
        "{err}"
    );

    std::fs::write(
        ws.join("config.toml"),
        "[household]\ntimezone = \"Nowhere/City\"\n",
    )
    .unwrap();
    let o = homebot(ws, None)
        .args(["chat", "-m", "hi"])
        .output()
        .await
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("config.toml") && err.contains("household.timezone"),
        "{err}"
    );
}

#[tokio::test]
async fn config_check_applies_the_environment_as_the_gateway_would() {
    let dir = workspace();
    let o = homebot(dir.path(), None)
        .args(["config", "check"])
        .env("HOMEBOT_QQ_LISTEN", "not-an-address")
        .output()
        .await
        .unwrap();
    assert!(!o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("qq.listen"), "{err}");
    assert!(!stdout(&o).contains("config: ok"), "{o:?}");
}

#[tokio::test]
async fn config_check_works_out_the_context_window_as_start_up_does() {
    let dir = workspace();
    let o = homebot(dir.path(), None)
        .args(["config", "check"])
        .env("HOMEBOT_CONTEXT_WINDOW", "lots")
        .output()
        .await
        .unwrap();
    assert!(!o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("HOMEBOT_CONTEXT_WINDOW"), "{err}");
    let o = homebot(dir.path(), None)
        .args(["config", "check"])
        .env("HOMEBOT_CONTEXT_WINDOW", "32768")
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("context: window 32768 tokens"), "{o:?}");
}
