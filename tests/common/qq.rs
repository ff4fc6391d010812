//! Helpers for the QQ tests: a household config, `homebot gateway` with the reverse
//! WebSocket on, and a connected OneBot simulator.

use super::gateway::Gateway;
use super::onebot::{self, BOT};
use super::FakeLlm;
use serde_json::json;
use std::path::Path;

pub const TOKEN: &str = "s3cret-token";
pub const GROUP: u64 = 5_550_001;
pub const GROUP2: u64 = 5_550_002;
pub const MOM: u64 = 10_001;
pub const DAD: u64 = 10_002;

/// Config with fast sends, mom as a member, and `extra` lines in `[qq]`.
pub fn config(ws: &Path, extra: &str) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!(
            "[qq]\nsend_interval_ms = 20\n{extra}\n\n[[members]]\nid = \"mom\"\nname = \"妈妈\"\nqq_ids = [\"10001\"]\n"
        ),
    )
    .unwrap();
}

pub async fn gateway(ws: &Path, fake: &FakeLlm) -> Gateway {
    gateway_with(ws, fake, "").await
}

/// The gateway with the reverse WebSocket on, the token set and both groups allowed.
pub async fn gateway_with(ws: &Path, fake: &FakeLlm, extra_qq: &str) -> Gateway {
    config(ws, extra_qq);
    start_gateway(ws, fake).await
}

/// Like [`gateway_with`], on a config.toml already written.
pub async fn start_gateway(ws: &Path, fake: &FakeLlm) -> Gateway {
    Gateway::start(
        ws,
        fake,
        &[
            ("HOMEBOT_QQ_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_QQ_ACCESS_TOKEN", TOKEN),
            ("HOMEBOT_QQ_ALLOW_GROUPS", &format!("{GROUP},{GROUP2}")),
        ],
        &["qq"],
    )
    .await
}

pub async fn sim(gw: &Gateway) -> onebot::OneBotSim {
    let mut s = onebot::connect(gw.addr("qq"), Some(BOT), Some(TOKEN), "Universal")
        .await
        .unwrap();
    s.lifecycle().await;
    s
}

pub fn at_bot() -> serde_json::Value {
    json!({"type": "at", "data": {"qq": BOT.to_string()}})
}

pub fn text(t: &str) -> serde_json::Value {
    json!({"type": "text", "data": {"text": t}})
}
