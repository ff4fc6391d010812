//! [`HaEvents`]: a command's events (`assist_pipeline/run`) over HA's WebSocket API.

use super::HaWs;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// A WebSocket API connection of its own for commands that answer with events after their
/// `result` (`assist_pipeline/run`): HA sends queued messages as one JSON array, which this
/// takes apart. Messages about other commands are dropped.
pub struct HaEvents {
    ws: HaWs,
    queued: std::collections::VecDeque<Value>,
}

impl HaEvents {
    pub fn new(ws: HaWs) -> Self {
        Self {
            ws,
            queued: Default::default(),
        }
    }

    /// Send the command; its id for [`HaEvents::event`] once HA accepted it, or HA's error.
    pub async fn subscribe(&mut self, mut body: Value) -> Result<u64, Value> {
        self.ws.next += 1;
        let id = self.ws.next;
        body["id"] = json!(id);
        self.ws
            .ws
            .send(Message::Text(body.to_string()))
            .await
            .unwrap();
        let mut early = Vec::new();
        loop {
            let v = self.message(id, 30).await;
            if v["type"] == "result" {
                // anything about it before its result is read again first
                for e in early.into_iter().rev() {
                    self.queued.push_front(e);
                }
                return match v["success"].as_bool() {
                    Some(true) => Ok(id),
                    _ => Err(v["error"].clone()),
                };
            }
            early.push(v);
        }
    }

    /// The next event of the command `id` (its `event` object), within `secs`.
    pub async fn event(&mut self, id: u64, secs: u64) -> Value {
        self.message(id, secs).await["event"].clone()
    }

    /// The next message about command `id`, within `secs`.
    async fn message(&mut self, id: u64, secs: u64) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            while let Some(v) = self.queued.pop_front() {
                if v["id"] == id {
                    return v;
                }
            }
            let m = tokio::time::timeout_at(deadline, self.ws.ws.next())
                .await
                .unwrap_or_else(|_| panic!("nothing from HA about command {id} within {secs} s"))
                .unwrap()
                .unwrap();
            let Message::Text(t) = m else { continue };
            match serde_json::from_str(&t).unwrap() {
                Value::Array(a) => self.queued.extend(a),
                v => self.queued.push_back(v),
            }
        }
    }
}
