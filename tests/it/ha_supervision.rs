//! A panic in the Home Assistant actor leaves nothing half-changed (against the simulated
//! Home Assistant of tests/it/ha_fake): with the failpoint `ha.registries.panic` the actor
//! panics once while applying the registries — the rooms replaced, the list of entities
//! exposed to Assist and the home view not yet. Its state is rebuilt from its defaults,
//! the connection closed and a new one opened, which reads the registries again: the
//! status then shows the house whole, the link up, and a command goes through the new
//! connection.

use crate::common;
use crate::ha_fake;

use common::gateway::Gateway;
use common::*;
use ha_fake::SimHa;
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "sim-token-for-supervision";

async fn homebot_says(ws: &Path, args: &[&str]) -> (bool, String) {
    let o = homebot(ws, None).args(args).output().await.unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), out)
}

#[tokio::test]
async fn after_a_panic_the_home_assistant_state_is_rebuilt_and_the_client_reconnects() {
    let ha = SimHa::start(TOKEN, 0).await;
    let fake = FakeLlm::start(|_, _| text("好的")).await;
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("config.toml"),
        format!("[home_assistant]\nurl = \"{}\"\n", ha.url()),
    )
    .unwrap();
    let gw = Gateway::start(
        &ws,
        &fake,
        &[
            ("HOMEBOT_HA_TOKEN", TOKEN),
            ("HOMEBOT_HTTP_LISTEN", "127.0.0.1:0"),
            ("HOMEBOT_FAILPOINT", "ha.registries.panic"),
        ],
        &[],
    )
    .await;
    gw.wait_log("failpoint ha.registries.panic", 30).await;
    gw.wait_log("rebuilt after a panic", 10).await;
    // the registries, read again on the new connection, are applied whole this time
    gw.wait_log("Home Assistant registries read", 30).await;
    assert_eq!(ha.connections(), 2, "one new connection:\n{}", gw.log());
    eventually(
        "the old connection is closed",
        Duration::from_secs(10),
        || ha.open_connections() == 1,
    )
    .await;
    let (ok, st) = homebot_says(&ws, &["status"]).await;
    assert!(ok, "{st}");
    assert!(
        st.contains("Home Assistant: connected · 版本 2025.4.4"),
        "{st}"
    );
    assert!(
        st.contains("Home Assistant 实体: 3（1 个开放给 Assist）"),
        "the rooms and the exposed list, read together: {st}"
    );
    assert!(
        st.contains("assist_satellite.kitchen（厨房）")
            && st.contains("assist_satellite.bedroom（卧室）"),
        "{st}"
    );
    // the link went down with the old connection and is up with the new one
    let status = format!("http://{}/api/status", gw.dashboard_addr().await);
    eventually_async(
        "Home Assistant shows as connected",
        Duration::from_secs(10),
        || async {
            let st: serde_json::Value = reqwest::get(&status).await.unwrap().json().await.unwrap();
            let up = st["channels"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["channel"] == "home_assistant" && c["connected"] == true);
            if up {
                Ok(())
            } else {
                Err(st)
            }
        },
    )
    .await;
    // a command goes through the new connection
    let (ok, out) = homebot_says(
        &ws,
        &[
            "announce",
            "--channel",
            "home_assistant",
            "--to",
            "厨房",
            "水开了",
        ],
    )
    .await;
    assert!(ok, "{out}");
    assert_eq!(
        ha.service_calls("assist_satellite", "announce").len(),
        1,
        "{out}"
    );
}
