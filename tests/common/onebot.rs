//! A OneBot v11 implementation simulator (the NapCat side): connects to homebot's
//! reverse WebSocket with the spec's headers, posts events, and answers actions.
#![allow(dead_code)]

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub const BOT: u64 = 3_000_000_001;

pub struct OneBotSim {
    ws: Ws,
    pub self_id: u64,
    next_msg_id: i64,
}

/// Connect; `Err(status)` when the server refused the handshake with an HTTP status.
pub async fn connect(
    addr: &str,
    self_id: Option<u64>,
    token: Option<&str>,
    role: &str,
) -> Result<OneBotSim, u16> {
    let mut req = format!("ws://{addr}/onebot/v11/ws")
        .into_client_request()
        .unwrap();
    let h = req.headers_mut();
    if let Some(id) = self_id {
        h.insert("X-Self-ID", id.to_string().parse().unwrap());
    }
    h.insert("X-Client-Role", role.parse().unwrap());
    if let Some(t) = token {
        h.insert("Authorization", format!("Bearer {t}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(OneBotSim {
            ws,
            self_id: self_id.unwrap_or(0),
            next_msg_id: 9000,
        }),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("unexpected connect error: {e}"),
    }
}

impl OneBotSim {
    pub async fn send(&mut self, v: Value) {
        self.ws.send(Message::Text(v.to_string())).await.unwrap();
    }

    pub async fn send_raw(&mut self, s: &str) {
        self.ws.send(Message::Text(s.to_string())).await.unwrap();
    }

    pub async fn lifecycle(&mut self) {
        let id = self.self_id;
        self.send(json!({"time": 1, "self_id": id, "post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"})).await;
    }

    pub async fn heartbeat(&mut self) {
        let id = self.self_id;
        self.send(json!({"time": 1, "self_id": id, "post_type": "meta_event", "meta_event_type": "heartbeat",
            "status": {"online": true, "good": true}, "interval": 5000})).await;
    }

    pub async fn group_msg(&mut self, group: u64, user: u64, message_id: i64, message: Value) {
        let id = self.self_id;
        self.send(json!({
            "time": 1700000000, "self_id": id, "post_type": "message", "message_type": "group",
            "sub_type": "normal", "message_id": message_id, "group_id": group, "user_id": user,
            "anonymous": null, "message": message, "raw_message": "", "font": 0,
            "sender": {"user_id": user, "nickname": "家人", "card": "", "role": "member"}
        }))
        .await;
    }

    pub async fn private_msg(&mut self, user: u64, message_id: i64, message: Value) {
        let id = self.self_id;
        self.send(json!({
            "time": 1700000000, "self_id": id, "post_type": "message", "message_type": "private",
            "sub_type": "friend", "message_id": message_id, "user_id": user,
            "message": message, "raw_message": "", "font": 0,
            "sender": {"user_id": user, "nickname": "家人"}
        }))
        .await;
    }

    /// The next action frame from homebot, or `None` after `wait`.
    pub async fn next_action(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.ws.next()).await {
                Err(_) => return None,
                Ok(None) => return None,
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v: Value = serde_json::from_str(&t).unwrap();
                    if v.get("action").is_some() {
                        return Some(v);
                    }
                }
                Ok(Some(Ok(Message::Close(_)))) => return None,
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(_))) => return None,
            }
        }
    }

    /// Wait for a send action, answer it `ok` with a fresh message id, return it.
    pub async fn expect_send(&mut self) -> Value {
        let a = self
            .next_action(Duration::from_secs(30))
            .await
            .expect("an action from homebot");
        self.next_msg_id += 1;
        let mid = self.next_msg_id;
        let echo = a["echo"].clone();
        self.send(json!({"status": "ok", "retcode": 0, "data": {"message_id": mid}, "echo": echo}))
            .await;
        let mut a = a;
        a["_message_id"] = json!(mid);
        a
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }

    /// Whether homebot closes this connection within `wait` (whatever it sends before
    /// is read and dropped).
    pub async fn closed_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.ws.next()).await {
                Err(_) => return false,
                Ok(None | Some(Ok(Message::Close(_))) | Some(Err(_))) => return true,
                Ok(Some(Ok(_))) => {}
            }
        }
    }
}

/// The text of an outgoing message (segments' text joined).
pub fn text_of(action: &Value) -> String {
    action["params"]["message"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "text")
        .map(|s| s["data"]["text"].as_str().unwrap())
        .collect::<String>()
}
