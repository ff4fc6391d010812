//! The kit of the scene-memory tests through the channels: a household gateway in this
//! process, started as `homebot gateway` starts it (the channels, then the HTTP server
//! with their routes) on a controlled clock — QQ's reverse WebSocket for a OneBot
//! simulator, Home Assistant's agent endpoint for the integration's turns, and whatever
//! else the test's configuration enables (the Wyoming server) — and a fake
//! model that keeps what it is asked to remember, calls three tools when asked to look
//! something up, and otherwise answers briefly.

use crate::common;
use crate::ha_agent::{frames, AGENT, OWNER};

use chrono::{DateTime, Utc};
use common::onebot::{self, OneBotSim, BOT};
use common::qq::{at_bot, text as seg};
use common::sse::{answer, call, say};
use common::{text, tool_call, user_words, FakeLlm, FakeReply};
use homebot::clock::ManualClock;
use homebot::config::{EnvOverrides, Secret};
use homebot::kernel::{Kernel, KernelOptions};
use serde_json::{json, Value};
use std::time::Duration;

pub(crate) const QQ_TOKEN: &str = "memory-qq-token";
pub(crate) use common::qq::{DAD, GROUP, GROUP2, MOM};

pub(crate) fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// The tools a "查一下" turn calls, one a round.
const LOOKUPS: [(&str, &str); 3] = [
    ("list_files", r#"{}"#),
    ("read_file", r#"{"path": "没有这个文件.md"}"#),
    ("memory_search", r#"{"query": "冰箱"}"#),
];

/// The model's answer to one request: streamed when the request streams (Home
/// Assistant's agent turns always do), else one JSON body.
fn reply(body: &Value) -> FakeReply {
    let stream = body["stream"] == true;
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let tools_done = msgs
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count();
    let words = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(user_words)
        .unwrap_or_default();
    let tool = |name: &str, args: Value| match stream {
        true => answer(vec![call(name, args)]),
        false => tool_call(name, args),
    };
    if let Some(what) = words.strip_prefix("记住：") {
        if tools_done == 0 {
            return tool("memory_commit", json!({ "content": what }));
        }
    }
    if words.starts_with("查一下") && tools_done < LOOKUPS.len() {
        let (name, args) = LOOKUPS[tools_done];
        return tool(name, serde_json::from_str(args).unwrap());
    }
    match stream {
        true => answer(vec![say("好的。")]),
        false => text("好的。"),
    }
}

/// A household gateway in this process on a controlled clock.
pub(crate) struct Home {
    pub(crate) kernel: Kernel,
    pub(crate) fake: FakeLlm,
    pub(crate) clock: ManualClock,
    /// The HTTP server (Home Assistant's agent endpoint).
    pub(crate) base: String,
    /// QQ's reverse WebSocket.
    pub(crate) qq: String,
    /// Where each listening channel bound (`qq`, `wyoming`, …).
    pub(crate) bound: Vec<(&'static str, std::net::SocketAddr)>,
    pub(crate) dir: tempfile::TempDir,
}

/// [`Home`] at `now` with `extra` lines of config.toml (whole tables, such as `[memory]`):
/// mom is a member on QQ (10001) and in Home Assistant (`ha-user-mom`), dad on QQ only
/// as a guest; both groups may reach the bot.
pub(crate) async fn home(now: &str, extra: &str) -> Home {
    home_with(now, extra, EnvOverrides::default()).await
}

/// [`home`] with more of the environment (`env`'s model, agent token and QQ settings are
/// the kit's own).
pub(crate) async fn home_with(now: &str, extra: &str, env: EnvOverrides) -> Home {
    let dir = common::workspace();
    let fake = FakeLlm::start(|body, _| reply(body)).await;
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[provider]\nstream = false\n\n[http]\nlisten = \"127.0.0.1:0\"\ntoken = \"{OWNER}\"\n\n\
             [qq]\nsend_interval_ms = 20\n\n{extra}\n\n\
             [[members]]\nid = \"mom\"\nname = \"妈妈\"\nqq_ids = [\"{MOM}\"]\nha_user_ids = [\"ha-user-mom\"]\n"
        ),
    )
    .unwrap();
    let clock = ManualClock::new(at(now));
    let kernel = Kernel::start(
        dir.path(),
        KernelOptions {
            env: Some(EnvOverrides {
                base_url: Some(fake.url.clone()),
                model: Some("fake-model".into()),
                ha_agent_token: Some(Secret::new(AGENT)),
                qq_listen: Some("127.0.0.1:0".into()),
                qq_access_token: Some(Secret::new(QQ_TOKEN)),
                qq_allow_groups: Some(format!("{GROUP},{GROUP2}")),
                ..env
            }),
            clock: Some(std::sync::Arc::new(clock.clone())),
            ..Default::default()
        },
    )
    .unwrap();
    let running = homebot::channels::start_enabled(&kernel).await.unwrap();
    let qq = running
        .bound
        .iter()
        .find(|(label, _)| *label == "qq")
        .expect("QQ listens")
        .1
        .to_string();
    let addr = homebot::dashboard::start(&kernel, running.routes)
        .await
        .unwrap()
        .unwrap();
    Home {
        kernel,
        fake,
        clock,
        base: format!("http://{addr}"),
        qq,
        bound: running.bound,
        dir,
    }
}

impl Home {
    /// A OneBot simulator connected to QQ's reverse WebSocket.
    pub(crate) async fn onebot(&self) -> OneBotSim {
        let mut s = onebot::connect(&self.qq, Some(BOT), Some(QQ_TOKEN), "Universal")
            .await
            .unwrap();
        s.lifecycle().await;
        s
    }

    /// One Home Assistant agent turn (`ask`: the integration's body), waited for; then
    /// what it observed is written.
    pub(crate) async fn ha(&self, ask: Value) {
        let mut f = frames(&self.base, ask).await;
        let reply = f.until_reply().await.pop().unwrap();
        assert_eq!(reply["error"], false, "{reply}");
        self.kernel.memory().flush().await;
    }

    /// The current user message of the last turn's first request, as sent.
    pub(crate) fn last_message(&self) -> String {
        let r = common::turn_requests(&self.fake)
            .pop()
            .expect("a turn was sent");
        let m = r["messages"].as_array().unwrap();
        m.iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap()
            .to_string()
    }

    /// The tool results of the last request.
    pub(crate) fn last_results(&self) -> String {
        let r = self.fake.requests().pop().unwrap();
        common::tool_results(&r)
            .into_iter()
            .map(|(_, c)| c)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every audit record of a turn written so far, oldest first, once `n` are there.
    pub(crate) async fn turn_audit(&self, n: usize) -> Vec<Value> {
        let dir = self.dir.path().join("logs/audit");
        common::eventually_async("the audit records", Duration::from_secs(30), || {
            let dir = dir.clone();
            async move {
                let mut recs = Vec::new();
                let mut files: Vec<_> = std::fs::read_dir(&dir)
                    .map(|d| d.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default();
                files.sort();
                for f in files {
                    recs.extend(common::jsonl(&f));
                }
                recs.retain(|r| r["purpose"] == "turn");
                if recs.len() >= n {
                    Ok(recs)
                } else {
                    Err(format!("{} of {n}", recs.len()))
                }
            }
        })
        .await
    }
}

impl Home {
    /// A group message for the bot, answered; then what it observed is written.
    pub(crate) async fn in_group(
        &self,
        s: &mut OneBotSim,
        group: u64,
        user: u64,
        id: i64,
        words: &str,
    ) {
        s.group_msg(group, user, id, json!([at_bot(), seg(words)]))
            .await;
        s.expect_send().await;
        self.kernel.memory().flush().await;
    }

    /// A private message for the bot, answered; then what it observed is written.
    pub(crate) async fn in_private(&self, s: &mut OneBotSim, user: u64, id: i64, words: &str) {
        s.private_msg(user, id, json!([seg(words)])).await;
        s.expect_send().await;
        self.kernel.memory().flush().await;
    }

    /// The store's counts (memories, scenes, evidence), read from its file.
    pub(crate) fn counts(&self) -> homebot::memory::Stats {
        homebot::memory::Store::open(
            &self.dir.path().join("memory/memory.db"),
            homebot::config::MemoryConfig::default(),
        )
        .unwrap()
        .stats()
        .unwrap()
    }
}

/// What Home Assistant's integration sends for words heard at a room's satellite.
pub(crate) fn heard(conversation: &str, user: &str, room: (&str, &str), words: &str) -> Value {
    json!({"text": words, "conversation_id": conversation, "user_id": user,
           "language": "zh-cn", "satellite_id": format!("assist_satellite.{}", room.0),
           "area": {"id": room.0, "name": room.1}})
}

/// The body of block `[label]` in `message`, if it has one.
pub(crate) fn block<'a>(message: &'a str, label: &str) -> Option<&'a str> {
    let open = format!("[{label}]\n");
    let start = message.find(&open)? + open.len();
    let end = message[start..].find(&format!("\n[/{label}]"))? + start;
    Some(&message[start..end])
}
