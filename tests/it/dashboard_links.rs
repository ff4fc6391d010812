//! The channels' links on the dashboard's status: a QQ implementation (the OneBot
//! simulator) and Home Assistant (simulated) coming up and going down, each with its
//! since-when, reported by the channels into the kernel's presence registry — on the
//! status API and on `/metrics`.

use crate::common;
use crate::ha_fake;

use common::gateway::Gateway;
use common::FakeLlm;
use homebot::metrics::parse::{parse_strict, value, Parsed};
use serde_json::Value;
use std::time::Duration;

/// Poll `url` until `ok` holds for its JSON.
async fn poll_json(url: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let client = reqwest::Client::new();
    let what = format!("{url} to answer as expected");
    common::eventually_async(&what, Duration::from_secs(30), || async {
        let r = client.get(url).send().await.unwrap();
        assert!(r.status().is_success(), "{url}");
        let v: Value = r.json().await.unwrap();
        if ok(&v) {
            Ok(v)
        } else {
            Err(v)
        }
    })
    .await
}

/// The channels' links on the status: a QQ implementation per account and Home
/// Assistant, each with its since-when, as they come up and go down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_links_show_with_their_since() {
    use common::onebot::{self, BOT};
    let ws = common::workspace();
    let ws = ws.path();
    let fake = FakeLlm::scripted().await;
    let ha = ha_fake::SimHa::start("sim-ha-token", 0).await;
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[voice]\nwyoming_listen = \"127.0.0.1:0\"\n\n[home_assistant]\nurl = \"{}\"\n",
            ha.url()
        ),
    )
    .unwrap();
    let gw = Gateway::start(
        ws,
        &fake,
        &[
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_HA_TOKEN", "sim-ha-token"),
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", "qq-token"),
        ],
        &["qq", "wyoming"],
    )
    .await;
    let addr = gw.dashboard_addr().await;
    let status = format!("http://{addr}/api/status");
    let link = |st: &Value, channel: &str| -> Option<Value> {
        st["channels"]
            .as_array()?
            .iter()
            .find(|c| c["channel"] == channel)
            .cloned()
    };

    let st = poll_json(&status, |s| {
        link(s, "home_assistant").is_some_and(|c| c["connected"] == true)
    })
    .await;
    let ha_link = link(&st, "home_assistant").unwrap();
    assert!(ha_link["id"].is_null());
    assert!(
        chrono::DateTime::parse_from_rfc3339(ha_link["since"].as_str().unwrap()).is_ok(),
        "{ha_link}"
    );
    assert!(link(&st, "qq").is_none(), "no QQ account has connected yet");

    let sim = onebot::connect(gw.addr("qq"), Some(BOT), Some("qq-token"), "Universal")
        .await
        .unwrap();
    let st = poll_json(&status, |s| {
        link(s, "qq").is_some_and(|c| c["connected"] == true)
    })
    .await;
    let up = link(&st, "qq").unwrap();
    assert_eq!(up["id"], BOT.to_string());

    // /metrics says the same, and its turn counters move with a turn
    let metrics = format!("http://{addr}/metrics");
    let bot = BOT.to_string();
    let page = scrape(&metrics).await;
    assert_eq!(
        value(
            &page,
            "homebot_channel_connected",
            &[("channel", "qq"), ("link", &bot)]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &page,
            "homebot_channel_connected",
            &[("channel", "home_assistant"), ("link", "")]
        ),
        Some(1.0)
    );
    let answered = |p: &[Parsed]| {
        value(
            p,
            "homebot_turns_total",
            &[("channel", "cli"), ("outcome", "answered")],
        )
        .unwrap_or(0.0)
    };
    let before = answered(&page);
    let o = common::homebot(ws, Some(&fake))
        .args(["chat", "-m", "你好"])
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(answered(&scrape(&metrics).await), before + 1.0);
    sim.close().await;
    let st = poll_json(&status, |s| {
        link(s, "qq").is_some_and(|c| c["connected"] == false)
    })
    .await;
    let down = link(&st, "qq").unwrap();
    assert_eq!(down["id"], BOT.to_string());
    assert!(down["since"].as_str().unwrap() >= up["since"].as_str().unwrap());
    // Home Assistant stayed up all along, since the same moment
    assert_eq!(link(&st, "home_assistant").unwrap(), ha_link);
    let page = scrape(&metrics).await;
    assert_eq!(
        value(
            &page,
            "homebot_channel_connected",
            &[("channel", "qq"), ("link", &bot)]
        ),
        Some(0.0)
    );
}

/// `GET url` as Prometheus text, parsed strictly (every line valid, no series twice).
async fn scrape(url: &str) -> Vec<Parsed> {
    let r = reqwest::get(url).await.unwrap();
    assert!(r.status().is_success(), "{url}");
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    parse_strict(&r.text().await.unwrap()).unwrap()
}
