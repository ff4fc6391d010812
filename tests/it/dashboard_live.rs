//! The live conversation pushed (`/api/live/events`, server-sent events) against a
//! running gateway: the stream says the active session at once, and a turn said
//! afterwards arrives on it without the client asking again; a peer address gets two
//! streams at most, the third is refused with 429.

use crate::common;

use common::gateway::Gateway;
use common::{homebot, FakeLlm};
use reqwest::StatusCode;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// One open event stream, read event by event.
struct Events {
    body: reqwest::Response,
    buf: String,
}

impl Events {
    async fn open(url: &str) -> Self {
        let r = reqwest::get(url).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let kind = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Self {
            body: r,
            buf: String::new(),
        }
    }

    /// The next event's data as JSON (keep-alive comments skipped).
    async fn next(&mut self) -> Value {
        loop {
            if let Some(i) = self.buf.find("\n\n") {
                let event: String = self.buf.drain(..i + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if !data.is_empty() {
                    return serde_json::from_str(&data).unwrap();
                }
                continue;
            }
            let chunk = self
                .body
                .chunk()
                .await
                .unwrap()
                .expect("the stream stays open");
            self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

async fn chat(ws: &Path, fake: &FakeLlm, words: &str) {
    let o = homebot(ws, Some(fake))
        .args(["chat", "-m", words, "--speaker", "mom"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_arrives_on_the_stream_without_asking_and_streams_are_bounded() {
    let tmp = common::workspace();
    let ws = tmp.path();
    std::fs::write(
        ws.join("config.toml"),
        "[[members]]\nid = \"mom\"\nname = \"妈妈\"\n",
    )
    .unwrap();
    let fake = FakeLlm::scripted().await;
    let gw = Gateway::start(ws, &fake, &[("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0")], &[]).await;
    let port = gw
        .dashboard_addr()
        .await
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let url = format!("http://127.0.0.1:{port}/api/live/events?after=0");
    chat(ws, &fake, "打开做饭模式，今晚三个人吃番茄炒蛋").await;

    let mut events = Events::open(&url).await;
    let first = events.next().await;
    let sid = first["session_id"]
        .as_str()
        .expect("a mode is active")
        .to_string();
    assert_eq!(first["total"], 1, "{first}");
    // a second turn: pushed, the client asks nothing more (the test's timeout bounds it)
    chat(ws, &fake, "番茄要放几个？").await;
    let next = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("the turn was pushed");
    assert_eq!(next["session_id"], sid.as_str());
    assert_eq!(next["total"], 2, "{next}");
    let records = next["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "only what is new: {next}");
    assert_eq!(records[0]["index"], 1);
    assert_eq!(records[0]["user"], "番茄要放几个？");

    // two streams per address: a third is refused, and a place is free again once one ends
    let _second = Events::open(&url).await;
    let r = reqwest::get(&url).await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().get("retry-after").is_some());
    drop(events);
    common::eventually_async(
        "the place to come back",
        Duration::from_secs(20),
        || async {
            match reqwest::get(&url).await.unwrap().status() {
                StatusCode::OK => Ok(()),
                other => Err(other),
            }
        },
    )
    .await;
}
