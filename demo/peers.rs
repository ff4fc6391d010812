//! The demo's household devices, each a real client of the gateway's real servers:
//!
//! - [`OneBot`] — a OneBot v11 implementation (the NapCat side) on the reverse
//!   WebSocket: the spec's handshake headers, a `lifecycle` meta event, group `message`
//!   events, and every action the gateway sends answered `status: ok` with its `echo`;
//! - [`wyoming_transcript`] — Home Assistant's side of a Wyoming handle service: one TCP
//!   connection per utterance, a `transcript`, read until `handled` / `not-handled`;
//! - [`Satellite`] — a native voice satellite on `/voice/ws`: `transcript` → `reply`,
//!   and `announce` frames the gateway sends unasked (a timer ringing).
//!
//! What the gateway sends them is bounded: WebSocket messages of at most
//! [`MAX_FRAME_BYTES`], Wyoming frames by the channel's own reader limits, and every
//! wait by a deadline.

use crate::channels::voice::wyoming::{self, Event, Limits};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// Largest message a demo peer accepts from the gateway.
pub const MAX_FRAME_BYTES: usize = 1 << 20;
/// Frames kept waiting for the story to read them; beyond this the peer stops reading.
const QUEUE: usize = 64;

type AnyError = Box<dyn std::error::Error + Send + Sync>;

fn ws_config() -> WebSocketConfig {
    WebSocketConfig {
        max_message_size: Some(MAX_FRAME_BYTES),
        max_frame_size: Some(MAX_FRAME_BYTES),
        ..Default::default()
    }
}

/// A OneBot v11 implementation connected to homebot's reverse WebSocket.
pub struct OneBot {
    out: mpsc::Sender<Value>,
    /// The text of each `send_group_msg` / `send_private_msg` homebot made.
    sent: mpsc::Receiver<String>,
    pub self_id: u64,
    next_message_id: i64,
}

impl OneBot {
    pub async fn connect(addr: &str, self_id: u64, token: &str) -> Result<Self, AnyError> {
        let mut req = format!("ws://{addr}/onebot/v11/ws").into_client_request()?;
        let h = req.headers_mut();
        h.insert("X-Self-ID", self_id.to_string().parse()?);
        h.insert("X-Client-Role", "Universal".parse()?);
        h.insert("Authorization", format!("Bearer {token}").parse()?);
        let (ws, _) =
            tokio_tungstenite::connect_async_with_config(req, Some(ws_config()), false).await?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut out_rx) = mpsc::channel::<Value>(QUEUE);
        let (sent_tx, sent) = mpsc::channel::<String>(QUEUE);
        let answers = out.clone();
        // reader: answer every action as an implementation would, pass on what was sent
        tokio::spawn(async move {
            let mut message_id = 70_000i64;
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(t) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&t) else {
                    continue;
                };
                let Some(action) = v["action"].as_str() else {
                    continue;
                };
                message_id += 1;
                let data = match action {
                    "send_group_msg" | "send_private_msg" | "send_msg" => {
                        let _ = sent_tx.send(segments_text(&v["params"]["message"])).await;
                        json!({"message_id": message_id})
                    }
                    "get_login_info" => json!({"user_id": self_id, "nickname": "演示QQ号"}),
                    _ => json!({}),
                };
                let reply = json!({"status": "ok", "retcode": 0, "data": data, "echo": v["echo"]});
                if answers.send(reply).await.is_err() {
                    break;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(v) = out_rx.recv().await {
                if sink.send(Message::Text(v.to_string())).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let me = Self {
            out,
            sent,
            self_id,
            next_message_id: 1,
        };
        me.post(
            json!({"time": unix_now(), "self_id": self_id, "post_type": "meta_event",
                       "meta_event_type": "lifecycle", "sub_type": "connect"}),
        )
        .await?;
        Ok(me)
    }

    async fn post(&self, v: Value) -> Result<(), AnyError> {
        self.out
            .send(v)
            .await
            .map_err(|_| "the OneBot connection is closed".into())
    }

    /// A group message that @-mentions the bot.
    pub async fn group_message(
        &mut self,
        group: u64,
        user: u64,
        nickname: &str,
        text: &str,
    ) -> Result<(), AnyError> {
        self.next_message_id += 1;
        let message = json!([
            {"type": "at", "data": {"qq": self.self_id.to_string()}},
            {"type": "text", "data": {"text": format!(" {text}")}}
        ]);
        self.post(json!({
            "time": unix_now(), "self_id": self.self_id, "post_type": "message",
            "message_type": "group", "sub_type": "normal", "message_id": self.next_message_id,
            "group_id": group, "user_id": user, "anonymous": null, "message": message,
            "raw_message": format!("[CQ:at,qq={}] {text}", self.self_id), "font": 0,
            "sender": {"user_id": user, "nickname": nickname, "card": "", "role": "member"}
        }))
        .await
    }

    /// The next message homebot sent, within `wait`.
    pub async fn next_sent(&mut self, wait: Duration) -> Option<String> {
        tokio::time::timeout(wait, self.sent.recv())
            .await
            .ok()
            .flatten()
    }
}

/// The text segments of a OneBot message (an array of segments, or a plain string).
fn segments_text(message: &Value) -> String {
    match message {
        Value::String(s) => s.clone(),
        Value::Array(segs) => segs
            .iter()
            .filter(|s| s["type"] == "text")
            .filter_map(|s| s["data"]["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// One utterance as Home Assistant sends it to a Wyoming handle service: a new
/// connection, a `transcript` with the conversation and satellite in its context; the
/// answer's text and event type (`handled` / `not-handled` / `error`).
pub async fn wyoming_transcript(
    addr: &str,
    text: &str,
    conversation_id: &str,
    speaker_id: &str,
    wait: Duration,
) -> Result<(String, String), AnyError> {
    let run = async {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        let (r, mut w) = stream.into_split();
        let mut r = tokio::io::BufReader::new(r);
        let ev = Event::new(
            "transcript",
            json!({"text": text, "language": "zh", "context": {
                "conversation_id": conversation_id, "satellite_id": "kitchen",
                "device_id": "dev-kitchen", "speaker_id": speaker_id}}),
        );
        wyoming::write_event(&mut w, &ev).await?;
        let limits = Limits {
            max_json: MAX_FRAME_BYTES,
            max_payload: 0,
        };
        loop {
            let Some(ev) = wyoming::read_event(&mut r, limits).await? else {
                return Err::<_, AnyError>("the handle service closed the connection".into());
            };
            if matches!(ev.kind.as_str(), "handled" | "not-handled" | "error") {
                let said = ev.data.get("text").and_then(Value::as_str).unwrap_or("");
                return Ok((ev.kind.clone(), said.to_string()));
            }
        }
    };
    tokio::time::timeout(wait, run)
        .await
        .map_err(|_| format!("no Wyoming answer within {} s", wait.as_secs()))?
}

/// A native voice satellite on `/voice/ws`.
pub struct Satellite {
    out: mpsc::Sender<String>,
    frames: mpsc::Receiver<Value>,
    pub id: String,
}

impl Satellite {
    pub async fn connect(addr: &str, id: &str, token: &str) -> Result<Self, AnyError> {
        let mut req = format!("ws://{addr}/voice/ws?satellite_id={id}").into_client_request()?;
        req.headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse()?);
        let (ws, _) =
            tokio_tungstenite::connect_async_with_config(req, Some(ws_config()), false).await?;
        let (mut sink, mut stream) = ws.split();
        let (frames_tx, frames) = mpsc::channel(QUEUE);
        let (out, mut out_rx) = mpsc::channel::<String>(QUEUE);
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(t) = msg else { continue };
                if let Ok(v) = serde_json::from_str::<Value>(&t) {
                    if frames_tx.send(v).await.is_err() {
                        break;
                    }
                }
            }
        });
        tokio::spawn(async move {
            while let Some(t) = out_rx.recv().await {
                if sink.send(Message::Text(t)).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        Ok(Self {
            out,
            frames,
            id: id.to_string(),
        })
    }

    pub async fn say(&self, text: &str, speaker_id: &str, session: &str) -> Result<(), AnyError> {
        let frame = json!({"type": "transcript", "text": text, "satellite_id": self.id,
                           "speaker_id": speaker_id, "session_id": session});
        self.out
            .send(frame.to_string())
            .await
            .map_err(|_| "the satellite connection is closed".into())
    }

    /// The next frame of one of `kinds` (others, such as `partial`, are skipped), within `wait`.
    pub async fn next_of(&mut self, kinds: &[&str], wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let v = tokio::time::timeout_at(deadline, self.frames.recv())
                .await
                .ok()??;
            if kinds.iter().any(|k| v["type"] == *k) {
                return Some(v);
            }
        }
    }
}
