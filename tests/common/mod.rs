//! The kit the integration tests, the soak and the benches share: the peers homebot talks
//! to — the fake model ([`model`], with its streamed answers in [`sse`]), the OneBot
//! simulator ([`onebot`], [`qq`]), the Wyoming client ([`wyoming`]), a native voice
//! satellite ([`satellite`]), the `homebot gateway`
//! child ([`gateway`]) — the one way to wait ([`wait`]), ports for peers that bind later
//! ([`ports`]), a socket watched to its end ([`watch`]), a slow client's transport
//! ([`dribble`]), and kernel / workspace set-up.
// Each includer (the `it` binary, the soak, the benches) uses part of the kit.
#![allow(dead_code, unused_imports)]

pub mod dribble;
pub mod gateway;
pub mod model;
pub mod onebot;
pub mod ports;
pub mod qq;
pub mod satellite;
pub mod sse;
pub mod strategy;
pub mod wait;
pub mod watch;
pub mod wyoming;

pub use model::{text, tool_call, tool_call_raw, tool_calls, FakeLlm, FakeReply};
pub use ports::Refusing;
pub use wait::{eventually, eventually_async, eventually_some, until};

use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A turn of the named channel, as that channel builds it (`qq`, `voice`, or the
/// terminal for anything else): for tests whose cast moves between channels.
pub fn turn_of(
    channel: &str,
    chat: impl Into<String>,
    who: impl Into<String>,
    text: impl Into<String>,
) -> homebot::turn::Turn {
    use homebot::channels::{cli, qq, voice};
    match channel {
        qq::CHANNEL => qq::turn(chat, who, text),
        voice::CHANNEL => voice::turn(chat, who, text),
        _ => cli::turn(chat, who, text),
    }
}

/// The content of a request's last user message (empty when it has none).
pub fn last_user(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Every user message of a request, joined (the words, the turn's tail and its aside).
pub fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
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

/// A stand-in model: asks for `switch_mode` when the user mentions 做饭模式 or its
/// sub-mode 烘焙模式 with a verb, or says 回到做饭模式 (letting the backend decide),
/// relays tool results, otherwise echoes.
pub fn scripted(body: &Value) -> FakeReply {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        let result = last["content"].as_str().unwrap_or_default();
        return text(&format!("（模式操作结果）{result}"));
    }
    let words = user_words(&last);
    if words.contains("烘焙模式") {
        let exit = ["退出", "结束", "关闭"].iter().any(|v| words.contains(v));
        let args = if exit {
            json!({"action": "exit", "mode_id": "baking", "summary": "烤了一个六寸戚风，150度50分钟，正在放凉。"})
        } else {
            json!({"action": "enter", "mode_id": "baking"})
        };
        return tool_call("switch_mode", args);
    }
    if words.contains("回到做饭模式") {
        let args = json!({"action": "enter", "mode_id": "cooking", "summary": "烤了一个六寸戚风，150度50分钟，正在放凉。"});
        return tool_call("switch_mode", args);
    }
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
