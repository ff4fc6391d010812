//! `homebot demo --exit`, the binary itself: the cooking session it plays across QQ,
//! voice and the terminal leaves the workspace a real gateway would — a mode session
//! with turns from all three channels and its summary, a timer that rang on the
//! satellite — and every answer the scripted model wrote says it is scripted.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

const LABEL: &str = "〔演示脚本〕";

async fn demo(ws: &Path) -> Output {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_homebot"));
    c.arg("--workspace").arg(ws).args(["demo", "--exit"]);
    for k in [
        "HOMEBOT_BASE_URL",
        "HOMEBOT_API_KEY",
        "HOMEBOT_MODEL",
        "DEEPSEEK_API_KEY",
        "ANTHROPIC_API_KEY",
        "HOMEBOT_SKILLS_DIR",
        "HOMEBOT_FAILPOINT",
        "HOMEBOT_CONTEXT_WINDOW",
        "HOMEBOT_HTTP_LISTEN",
    ] {
        c.env_remove(k);
    }
    c.env("RUST_LOG", "warn").kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), c.output())
        .await
        .expect("the demo ends by itself with --exit")
        .unwrap()
}

fn jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The one cooking session folder.
fn session_dir(ws: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(ws.join("modes/sessions/cooking"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_plays_a_cooking_session_across_three_channels() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("demo-ws");
    let out = demo(&ws).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n--- stderr\n{stderr}"
    );
    let ws = ws.canonicalize().unwrap();

    // what it printed: the model named for what it is, each step, the timer ringing
    assert!(
        stdout.contains("homebot-demo-script") && stdout.contains("not a language model"),
        "{stdout}"
    );
    for step in 1..=5 {
        assert!(
            stdout.contains(&format!("[{step}/5]")),
            "step {step}:\n{stdout}"
        );
    }
    for line in [
        "妈妈 (QQ): @homebot 开始做饭模式，今天做红烧肉",
        "妈妈 (voice): 盐放多少",
        "爸爸 (terminal): /status",
        "妈妈 (voice): 三秒后提醒我关火",
        "⏰ kitchen satellite rang: 提醒：关火",
        "妈妈 (QQ): @homebot 红烧肉做好了，退出做饭模式",
        "summary written:",
        "demo finished; workspace",
    ] {
        assert!(stdout.contains(line), "missing {line:?}:\n{stdout}");
    }
    // the dashboard runs from the start, its link carrying the demo's owner token
    let dash = stdout
        .lines()
        .find_map(|l| l.strip_prefix("dashboard: "))
        .unwrap_or_else(|| panic!("no dashboard line:\n{stdout}"));
    assert!(
        dash.starts_with("http://127.0.0.1:") && dash.contains("/?token="),
        "{dash}"
    );
    assert!(
        stdout.contains("模式: 做饭模式 (cooking) 活动中"),
        "/status showed the mode:\n{stdout}"
    );
    let bot_lines: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("homebot: "))
        .filter(|t| !t.starts_with("homebot ·")) // the /status text is homebot's own
        .collect();
    assert_eq!(bot_lines.len(), 5, "{stdout}");
    for t in &bot_lines {
        assert!(t.trim_start().starts_with(LABEL), "unlabelled answer {t:?}");
    }

    // the mode session: turns from qq, voice and cli, every answer labelled
    let session = session_dir(&ws);
    let turns = jsonl(&session.join("conversation.jsonl"));
    let mut channels: Vec<&str> = turns
        .iter()
        .map(|t| t["channel"].as_str().unwrap())
        .collect();
    channels.dedup();
    assert_eq!(channels, ["qq", "voice", "cli", "voice", "qq"], "{turns:?}");
    for t in &turns {
        assert!(t.get("error").is_none(), "{t}");
        assert!(
            t["assistant"].as_str().unwrap().starts_with(LABEL),
            "unlabelled: {t}"
        );
    }
    assert!(turns
        .iter()
        .any(|t| t["user"] == "盐放多少" && t["speaker_id"] == "mom"));

    // ended by the model's exit, with its summary
    let summary = std::fs::read_to_string(session.join("summary.md")).unwrap();
    assert!(summary.contains("做了红烧肉"), "{summary}");
    let action: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("modes/action.json")).unwrap())
            .unwrap();
    assert_eq!(action["active"], false, "{action}");
    assert_eq!(action["exit_reason"], "user", "{action}");

    // the timer: set by the satellite turn, delivered there, recorded as fired
    let book: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("reminders.json")).unwrap()).unwrap();
    let reminders = book["reminders"].as_array().unwrap();
    assert_eq!(reminders.len(), 1, "{book}");
    let r = &reminders[0];
    assert_eq!(r["state"], "fired", "{r}");
    assert_eq!(r["text"], "关火");
    assert_eq!(r["origin"]["channel"], "voice");
    assert_eq!(r["origin"]["target"], "kitchen");
    let due = chrono::DateTime::parse_from_rfc3339(r["due_at"].as_str().unwrap()).unwrap();
    let set = chrono::DateTime::parse_from_rfc3339(r["created_at"].as_str().unwrap()).unwrap();
    assert_eq!((due - set).num_seconds(), 3, "the --exit timer is 3 s: {r}");

    // the provider path was the real one: every call audited under the script's name
    let calls = jsonl(&ws.join("logs/usage.jsonl"));
    assert!(calls.len() >= 7, "{calls:?}");
    for c in &calls {
        assert_eq!(c["model"], "homebot-demo-script", "{c}");
    }
}

#[tokio::test]
async fn the_demo_never_writes_over_a_workspace_in_use() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[household]\nname = \"家\"\n",
    )
    .unwrap();
    let out = demo(dir.path()).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.toml")).unwrap(),
        "[household]\nname = \"家\"\n",
        "the household's config is untouched"
    );
}
