//! The voice channel: kitchen speakers and satellites. Every wake is a new voice session
//! (`chat_id` = the session id), so outside a mode a wake starts with no history; inside
//! a run mode the mode's history continues it (the kernel does that, not this file).
//!
//! Two front doors:
//! - a **Wyoming handle service** (TCP) for Home Assistant Assist and Wyoming satellites:
//!   `describe` → `info` (one handle program, languages zh/en), `transcript` → `handled`
//!   or `not-handled`, `ping` → `pong`. Home Assistant opens a connection per utterance;
//!   any number are served at once, and a bad frame closes only its own connection;
//! - a **native WebSocket** (`/voice/ws`, JSON) for custom satellites, token-protected:
//!   `transcript` → `reply` with `dialogue_state`, and server-initiated `announce` to the
//!   satellite a proactive message is for.
//!
//! `dialogue_state`: the model is told (in the dynamic tail, never the system prompt) to
//! end with a question and the marker `[[继续]]` when it needs an answer. The marker is
//! stripped; a reply ending in a question also counts as `continue`. For Wyoming the
//! state travels in `handled.context.dialogue_state`, and because the reply then ends with
//! a question mark, Home Assistant keeps the conversation open on its side as well.

pub mod wyoming;

use crate::channels::contract::{Channel, StartError, Started};
use crate::config::VoiceConfig;
use crate::kernel::{Kernel, PendingReply};
use crate::outbound::{DeliveryError, Outbound};
use crate::turn::Turn;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use wyoming::{Event, FrameError, Limits};

pub const CHANNEL: &str = "voice";
pub const WS_PATH: &str = "/voice/ws";
const CONTINUE_MARKERS: &[&str] = &["[[继续]]", "[[continue]]", "［［继续］］"];

/// Voice reply rules, put in the dynamic tail of voice turns.
pub const VOICE_HINT: &str = "这是语音对话，回答会被念出来：要短（一到三句，约六十字以内），不用 Markdown、列表、表情和链接；\
数字和单位写成念得出来的样子（“两百克”“中火三分钟”）。如果需要用户回答或确认，用一个问句结尾，并在最后加上标记 [[继续]]；\
不需要回答时不要提问，也不要加标记。";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogueState {
    Continue,
    End,
}

impl DialogueState {
    pub fn as_str(self) -> &'static str {
        match self {
            DialogueState::Continue => "continue",
            DialogueState::End => "end",
        }
    }
}

/// Strip the model's continue marker and markdown; decide whether to keep listening.
pub fn shape_reply(reply: &str) -> (String, DialogueState) {
    let mut text = reply.to_string();
    let mut marked = false;
    for m in CONTINUE_MARKERS {
        if text.contains(m) {
            marked = true;
            text = text.replace(m, "");
        }
    }
    let text = crate::channels::text::flatten_markdown(&text).replace('\n', " ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let asks = text.ends_with('？') || text.ends_with('?');
    let state = if marked || asks {
        DialogueState::Continue
    } else {
        DialogueState::End
    };
    (text, state)
}

struct Shared {
    kernel: Kernel,
    cfg: VoiceConfig,
    cancel: CancellationToken,
    satellites: Mutex<HashMap<String, mpsc::Sender<String>>>,
    next_conn: AtomicU64,
}

/// The voice channel before it starts: its configuration.
pub struct VoiceChannel {
    cfg: VoiceConfig,
}

impl VoiceChannel {
    pub fn new(cfg: VoiceConfig) -> Self {
        Self { cfg }
    }
}

/// The running voice channel (cloneable handle); also its outbound door.
#[derive(Clone)]
pub struct Voice {
    shared: Arc<Shared>,
}

/// A voice turn's outcome, ready for either front door.
pub struct VoiceReply {
    pub text: String,
    pub state: DialogueState,
    pub failed: bool,
}

#[async_trait::async_trait]
impl Channel for VoiceChannel {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    /// Start the configured servers: Wyoming (`wyoming`) and the native WebSocket
    /// (`voice-ws`).
    async fn start(
        self: Box<Self>,
        kernel: Kernel,
        cancel: CancellationToken,
    ) -> Result<Started, StartError> {
        let cfg = self.cfg;
        let ch = Voice {
            shared: Arc::new(Shared {
                kernel: kernel.clone(),
                cfg: cfg.clone(),
                cancel: cancel.clone(),
                satellites: Mutex::new(HashMap::new()),
                next_conn: AtomicU64::new(1),
            }),
        };
        let mut started = Started::default();
        if let Some(listen) = &cfg.wyoming_listen {
            let (listener, addr) = crate::channels::net::bind("wyoming", listen).await?;
            if !addr.ip().is_loopback() {
                warn!(%addr, "Wyoming has no authentication: anyone who can reach this address can talk to homebot as a guest");
            }
            started.bound.push(("wyoming", addr));
            let ch2 = ch.clone();
            let cancel = cancel.clone();
            kernel.spawn_service(async move {
                loop {
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        acc = listener.accept() => match acc {
                            Ok((stream, peer)) => {
                                let ch3 = ch2.clone();
                                tokio::spawn(async move { ch3.wyoming_conn(stream, peer).await });
                            }
                            Err(e) => warn!(error = %e, "wyoming accept failed"),
                        }
                    }
                }
            });
        }
        if let Some(listen) = &cfg.ws_listen {
            let (listener, addr) = crate::channels::net::bind("voice-ws", listen).await?;
            started.bound.push(("voice-ws", addr));
            let app = axum::Router::new()
                .route(WS_PATH, axum::routing::get(ws_handler))
                .with_state(ch.clone());
            crate::channels::net::serve_http(&kernel, "voice-ws", listener, app, cancel.clone());
        }
        started.outbound = Some(Arc::new(ch));
        Ok(started)
    }
}

impl Voice {
    /// Admit one utterance to its voice session's FIFO now (call at arrival).
    pub fn submit(&self, session_id: &str, speaker: Option<&str>, text: &str) -> PendingReply {
        let cfg = self.shared.kernel.config();
        let speaker = speaker
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("guest");
        let speaker = cfg
            .member_for(speaker)
            .map(|m| m.id.clone())
            .unwrap_or_else(|| speaker.to_string());
        let mut turn = Turn::new(CHANNEL, session_id, speaker, text);
        turn.reply_hint = Some(VOICE_HINT.to_string());
        self.shared.kernel.submit(turn)
    }

    /// Wait for a submitted utterance's reply and shape it for speech.
    pub async fn finish(pending: PendingReply) -> VoiceReply {
        let reply = pending.reply().await;
        let (text, state) = shape_reply(&reply.text);
        VoiceReply {
            text,
            state,
            failed: reply.error.is_some(),
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            max_json: self.shared.cfg.max_frame_bytes,
            max_payload: 4 << 20,
        }
    }

    async fn wyoming_conn(&self, stream: TcpStream, peer: SocketAddr) {
        let conn = format!(
            "{:x}",
            self.shared.next_conn.fetch_add(1, Ordering::Relaxed)
        );
        // one voice session per connection when the front end names none
        let fallback = fallback_session("wyoming", &conn);
        let (r, mut w) = stream.into_split();
        let mut r = BufReader::new(r);
        debug!(%peer, conn, "wyoming connection");
        loop {
            let ev = match wyoming::read_event(&mut r, self.limits()).await {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(FrameError::Io(e)) => {
                    debug!(%peer, error = %e, "wyoming connection ended");
                    break;
                }
                Err(e) => {
                    warn!(%peer, error = %e, "wyoming: bad frame; closing this connection");
                    let _ = wyoming::write_event(
                        &mut w,
                        &Event::new("error", json!({"text": e.to_string(), "code": "bad-frame"})),
                    )
                    .await;
                    break;
                }
            };
            // a graceful shutdown waits until an answer is written
            let _delivering = self.shared.kernel.hold_delivery();
            let out = match ev.kind.as_str() {
                "describe" => Some(self.info()),
                "ping" => Some(Event::new("pong", json!({"text": ev.data.get("text")}))),
                "transcript" => Some(self.on_transcript(&ev, &fallback).await),
                other => {
                    debug!(%peer, kind = other, "wyoming: event ignored");
                    None
                }
            };
            if let Some(out) = out {
                if let Err(e) = wyoming::write_event(&mut w, &out).await {
                    debug!(%peer, error = %e, "wyoming: peer went away before the answer");
                    break;
                }
            }
        }
    }

    async fn on_transcript(&self, ev: &Event, fallback: &str) -> Event {
        let Some(text) = ev.data.get("text").and_then(Value::as_str) else {
            return Event::new("not-handled", json!({"text": "没有听清楚，请再说一次。"}));
        };
        let ctx = ev.data.get("context").cloned().unwrap_or(Value::Null);
        let get = |k: &str| {
            ctx.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let session = get("conversation_id").unwrap_or_else(|| fallback.to_string());
        let speaker = get("speaker_id").or_else(|| get("speaker"));
        let reply = Self::finish(self.submit(&session, speaker.as_deref(), text)).await;
        let context = json!({"conversation_id": session, "dialogue_state": reply.state.as_str()});
        if reply.failed {
            Event::new(
                "not-handled",
                json!({"text": reply.text, "context": context}),
            )
        } else {
            Event::new("handled", json!({"text": reply.text, "context": context}))
        }
    }

    fn info(&self) -> Event {
        let attribution = json!({"name": "homebot", "url": "https://github.com/homebot"});
        let version = env!("CARGO_PKG_VERSION");
        Event::new(
            "info",
            json!({
                "handle": [{
                    "name": "homebot",
                    "attribution": attribution,
                    "installed": true,
                    "description": "homebot household assistant (run modes, LLM)",
                    "version": version,
                    "models": [{
                        "name": "homebot",
                        "attribution": attribution,
                        "installed": true,
                        "description": "household assistant",
                        "version": version,
                        "languages": self.shared.cfg.languages,
                    }],
                    "supports_handled_streaming": false,
                }]
            }),
        )
    }

    fn register_satellite(&self, id: &str, tx: mpsc::Sender<String>) {
        self.shared
            .satellites
            .lock()
            .expect("satellites lock")
            .insert(id.to_string(), tx);
    }

    async fn serve_socket(self, socket: WebSocket, satellite: Option<String>) {
        let conn = format!(
            "{:x}",
            self.shared.next_conn.fetch_add(1, Ordering::Relaxed)
        );
        let fallback = fallback_session("voice-ws", &conn);
        // every satellite id this connection answered for; released when it closes
        let mut registered: Vec<String> = Vec::new();
        let (sink, mut stream) = socket.split();
        let tx = crate::channels::net::spawn_ws_writer(
            sink,
            32,
            self.shared.cancel.clone(),
            WsMessage::Text,
        );
        if let Some(id) = &satellite {
            self.register_satellite(id, tx.clone());
            registered.push(id.clone());
            info!(satellite = %id, "voice satellite connected");
        }
        while let Some(msg) = stream.next().await {
            let text = match msg {
                Ok(WsMessage::Text(t)) => t,
                Ok(WsMessage::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    let _ = tx
                        .send(
                            json!({"type": "error", "text": format!("bad JSON: {e}")}).to_string(),
                        )
                        .await;
                    continue;
                }
            };
            match v.get("type").and_then(Value::as_str) {
                Some("transcript") => {
                    let s = |k: &str| {
                        v.get(k)
                            .and_then(Value::as_str)
                            .filter(|x| !x.is_empty())
                            .map(str::to_string)
                    };
                    let Some(words) = s("text") else {
                        let _ = tx
                            .send(
                                json!({"type": "error", "text": "transcript without text"})
                                    .to_string(),
                            )
                            .await;
                        continue;
                    };
                    if let Some(sat) = s("satellite_id") {
                        self.register_satellite(&sat, tx.clone());
                        if !registered.contains(&sat) {
                            registered.push(sat);
                        }
                    }
                    let session = s("session_id").unwrap_or_else(|| fallback.clone());
                    // admitted now, in arrival order; only the wait runs in its own task,
                    // so the socket keeps reading meanwhile
                    let pending = self.submit(&session, s("speaker_id").as_deref(), &words);
                    let tx2 = tx.clone();
                    let delivering = self.shared.kernel.hold_delivery();
                    tokio::spawn(async move {
                        let _delivering = delivering;
                        let r = Self::finish(pending).await;
                        let _ = tx2
                            .send(
                                json!({"type": "reply", "session_id": session, "text": r.text,
                                "dialogue_state": r.state.as_str(), "error": r.failed})
                                .to_string(),
                            )
                            .await;
                    });
                }
                Some("ping") => {
                    let _ = tx.send(json!({"type": "pong"}).to_string()).await;
                }
                other => {
                    let _ = tx.send(json!({"type": "error", "text": format!("unknown message type {other:?}")}).to_string()).await;
                }
            }
        }
        let mut sats = self.shared.satellites.lock().expect("satellites lock");
        for id in registered {
            if sats.get(&id).is_some_and(|t| t.same_channel(&tx)) {
                sats.remove(&id);
            }
        }
    }
}

#[async_trait::async_trait]
impl Outbound for Voice {
    /// Announce to a satellite by id (native WebSocket). A full send queue refuses.
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let tx = self
            .shared
            .satellites
            .lock()
            .expect("satellites lock")
            .get(target)
            .cloned();
        let who = format!("satellite {target:?}");
        let Some(tx) = tx else {
            return Err(DeliveryError::Unreachable(who));
        };
        let (text, _) = shape_reply(text);
        match tx.try_send(json!({"type": "announce", "text": text}).to_string()) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(DeliveryError::Busy(who)),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(DeliveryError::Unreachable(who)),
        }
    }
}

async fn ws_handler(
    State(ch): State<Voice>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    if let Some(expected) = &ch.shared.cfg.token {
        match crate::channels::auth::presented_token(&headers, &query, "token") {
            None => return (StatusCode::UNAUTHORIZED, "token required").into_response(),
            Some(t) if !crate::channels::auth::same_secret(&t, expected.expose()) => {
                warn!("voice WebSocket: wrong token refused");
                return (StatusCode::FORBIDDEN, "wrong token").into_response();
            }
            Some(_) => {}
        }
    }
    let satellite = query.get("satellite_id").cloned();
    ws.max_message_size(1 << 20)
        .on_upgrade(move |socket| ch.serve_socket(socket, satellite))
        .into_response()
}

/// A session id for a front end that sent none: unique across restarts, so a new wake
/// never inherits an old conversation stored under the same id.
fn fallback_session(front: &str, conn: &str) -> String {
    format!("{front}-{conn}-{:08x}", rand::random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialogue_state_from_the_reply() {
        assert_eq!(
            shape_reply("蛋液打好了吗？[[继续]]"),
            ("蛋液打好了吗？".into(), DialogueState::Continue)
        );
        assert_eq!(shape_reply("要放几个番茄？").1, DialogueState::Continue);
        assert_eq!(
            shape_reply("好的，中火三分钟。[[continue]]").1,
            DialogueState::Continue
        );
        assert_eq!(
            shape_reply("好的，**中火**三分钟。"),
            ("好的，中火三分钟。".into(), DialogueState::End)
        );
        assert_eq!(
            shape_reply("第一步：\n- 打蛋\n- 切番茄").0,
            "第一步： · 打蛋 · 切番茄"
        );
    }
}
