//! [`HaWs`]: a bare client of Home Assistant's WebSocket API for the tests' set-up —
//! authenticated with the kit's token, one command at a time, its events read as they come.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

use super::TOKEN;

/// A bare WebSocket API client for test set-up.
pub struct HaWs {
    pub(super) ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    pub(super) next: u64,
}

impl HaWs {
    pub async fn connect(port: u16) -> Self {
        let (ws, _) =
            tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/api/websocket"))
                .await
                .unwrap();
        Self::auth(ws).await
    }

    pub(super) async fn auth(
        mut ws: tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
    ) -> Self {
        ws.next().await; // auth_required
        ws.send(Message::Text(
            json!({"type": "auth", "access_token": TOKEN}).to_string(),
        ))
        .await
        .unwrap();
        let ok = ws.next().await.unwrap().unwrap();
        assert!(ok.to_string().contains("auth_ok"), "{ok}");
        Self { ws, next: 0 }
    }

    /// The entity of a config entry whose id starts with `prefix` (`conversation.`, …),
    /// once it is registered.
    pub async fn entity_of(&mut self, entry: &str, prefix: &str) -> Value {
        for _ in 0..300 {
            let all = self
                .call(json!({"type": "config/entity_registry/list"}))
                .await
                .unwrap();
            if let Some(e) = all.as_array().unwrap().iter().find(|e| {
                e["config_entry_id"] == entry
                    && e["entity_id"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with(prefix)
            }) {
                return e.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no {prefix}* entity for config entry {entry}");
    }

    /// Subscribe to `state_changed` (then read them with [`HaWs::state_change`]).
    pub async fn watch_states(&mut self) {
        self.call(json!({"type": "subscribe_events", "event_type": "state_changed"}))
            .await
            .unwrap();
    }

    /// The next `state_changed` of `entity_id` (its new state), within `secs`.
    pub async fn state_change(&mut self, entity_id: &str, secs: u64) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let m = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no state_changed of {entity_id} within {secs} s"))
                .unwrap()
                .unwrap();
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            let events = match v {
                Value::Array(a) => a,
                v => vec![v],
            };
            for e in events {
                let data = &e["event"]["data"];
                if e["type"] == "event" && data["entity_id"] == entity_id {
                    return data["new_state"]["state"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                }
            }
        }
    }

    /// One command; its `result`, or the error.
    pub async fn call(&mut self, mut body: Value) -> Result<Value, Value> {
        self.next += 1;
        body["id"] = json!(self.next);
        self.ws.send(Message::Text(body.to_string())).await.unwrap();
        loop {
            let m = tokio::time::timeout(Duration::from_secs(30), self.ws.next())
                .await
                .expect("HA answers")
                .unwrap()
                .unwrap();
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["type"] == "result" && v["id"] == self.next {
                return match v["success"].as_bool() {
                    Some(true) => Ok(v["result"].clone()),
                    _ => Err(v["error"].clone()),
                };
            }
        }
    }
}
