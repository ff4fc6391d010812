//! The native satellite WebSocket (`/voice/ws`) and who holds which satellite id.
//!
//! Credentials bind ids: a satellite listed in `[[voice.satellites]]` with its own
//! `token` can be claimed only by a connection that presented that token; the shared
//! `voice.token` claims only ids without their own token. Speaker ids are mapped to
//! members only through the claimed satellite's `speakers` (and only for a connection
//! that presented a token); everything else speaks as `guest`.
//!
//! One live connection per id: the id is reserved in the handshake handler, atomically
//! with the check, so a second connection is refused with 409 — unless it presents the
//! satellite's own token, which proves it *is* that satellite (reconnecting after a
//! network drop): then it takes over and the old connection is closed. The shared token
//! proves no identity, so it never takes over a live id. A reservation whose upgrade
//! never completes is dropped with the upgrade callback.

use super::actor::{Attach, Claim, NotClaimed, Release};
use super::handle::{fallback_session, Voice};
use super::satellites::{ClaimError, Credential, MAX_ID_CHARS};
use super::speaker::speaker_member;
use crate::channels::auth::{presented_token, same_secret};
use crate::channels::contract::StartError;
use crate::channels::net::{listener_limit, HttpLimits};
use crate::config::{SatelliteConfig, VoiceConfig};
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// Where satellites connect.
pub const WS_PATH: &str = "/voice/ws";

/// Satellite ids one connection may speak for.
const MAX_IDS_PER_CONNECTION: usize = 4;

/// Largest WebSocket message accepted from a satellite.
const MAX_MESSAGE: usize = 1 << 20;

fn satellite<'a>(cfg: &'a VoiceConfig, id: &str) -> Option<&'a SatelliteConfig> {
    cfg.satellites.iter().find(|s| s.id == id)
}

/// The credential a presented token is, or the refusal.
fn credential(
    cfg: &VoiceConfig,
    presented: Option<&str>,
) -> Result<Credential, (StatusCode, &'static str)> {
    if !cfg.any_token() {
        return Ok(Credential::Open);
    }
    let Some(t) = presented else {
        return Err((StatusCode::UNAUTHORIZED, "token required"));
    };
    // compare with every configured token, so the time taken says nothing about which
    let mut found = None;
    if cfg
        .token
        .as_ref()
        .is_some_and(|s| same_secret(t, s.expose()))
    {
        found = Some(Credential::Shared);
    }
    for s in &cfg.satellites {
        if s.token.as_ref().is_some_and(|k| same_secret(t, k.expose())) {
            found = Some(Credential::Own(s.id.clone()));
        }
    }
    found.ok_or_else(|| {
        warn!("voice WebSocket: wrong token refused");
        (StatusCode::FORBIDDEN, "wrong token")
    })
}

/// The handshake: token → credential; a satellite id in the query is reserved here.
async fn ws_handler(
    State(ch): State<Voice>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let cred = match credential(
        &ch.shared.cfg,
        presented_token(&headers, &query, "token").as_deref(),
    ) {
        Ok(c) => c,
        Err(refusal) => return refusal.into_response(),
    };
    let conn = ch.conn_id();
    let close = ch.shared.cancel.child_token();
    let reserved = match query.get("satellite_id").filter(|s| !s.is_empty()) {
        None => None,
        Some(id) => {
            // before asking: a handshake dropped while it waits still frees the id
            let reservation = Reservation {
                ch: ch.clone(),
                id: id.clone(),
                conn,
            };
            match ch.claim(&cred, id, conn, None, &close).await {
                Ok(()) => Some(reservation),
                Err(e) => {
                    if let Some(suppressed) = ch.shared.frame_warnings.hit() {
                        warn!(error = %e, suppressed, "voice WebSocket: satellite refused");
                    }
                    let status = match e {
                        NotClaimed::Refused(ClaimError::InUse(_)) => StatusCode::CONFLICT,
                        NotClaimed::Refused(ClaimError::NotYours(_)) => StatusCode::FORBIDDEN,
                        NotClaimed::Refused(ClaimError::BadId(_)) => StatusCode::BAD_REQUEST,
                        NotClaimed::Unavailable(_) | NotClaimed::Stopped => {
                            StatusCode::SERVICE_UNAVAILABLE
                        }
                    };
                    return (status, e.to_string()).into_response();
                }
            }
        }
    };
    ws.max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| async move {
            ch.serve_socket(
                socket,
                Conn {
                    id: conn,
                    cred,
                    close,
                },
                reserved,
            )
            .await
        })
        .into_response()
}

/// A satellite id reserved at the handshake; freed when dropped (also when the upgrade
/// never completes and axum drops the callback holding it).
struct Reservation {
    ch: Voice,
    id: String,
    conn: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.ch.release(std::mem::take(&mut self.id), self.conn);
    }
}

struct Conn {
    id: u64,
    cred: Credential,
    close: CancellationToken,
}

impl Voice {
    /// Serve the satellite WebSocket on `listen` (up to `voice.ws_max_connections`);
    /// returns what it bound.
    pub(super) async fn serve_satellites(
        &self,
        listen: &str,
    ) -> Result<(&'static str, SocketAddr), StartError> {
        let cfg = &self.shared.cfg;
        let (listener, addr) = crate::channels::net::bind("voice-ws", listen).await?;
        let app = axum::Router::new()
            .route(WS_PATH, axum::routing::get(ws_handler))
            .with_state(self.clone());
        let limits = HttpLimits {
            conns: listener_limit("voice-ws", cfg.ws_max_connections),
            handshake: Duration::from_secs(cfg.handshake_timeout_secs),
        };
        crate::channels::net::serve_http(
            &self.shared.kernel,
            "voice-ws",
            listener,
            app,
            self.shared.cancel.clone(),
            limits,
        );
        Ok(("voice-ws", addr))
    }

    /// Let connection `conn` hold satellite `id` (see `satellites`).
    async fn claim(
        &self,
        cred: &Credential,
        id: &str,
        conn: u64,
        tx: Option<mpsc::Sender<String>>,
        close: &CancellationToken,
    ) -> Result<(), NotClaimed> {
        let claim = Claim {
            cred: cred.clone(),
            id: id.to_string(),
            conn,
            tx,
            close: close.clone(),
        };
        self.shared
            .actor
            .send(claim)
            .await
            .unwrap_or(Err(NotClaimed::Stopped))
    }

    /// Free `id` if connection `conn` still holds it (ahead of anything sent to the
    /// actor after this).
    fn release(&self, id: String, conn: u64) {
        self.shared.actor.do_send(Release { id, conn });
    }

    async fn serve_socket(self, socket: WebSocket, conn: Conn, reserved: Option<Reservation>) {
        let cfg = &self.shared.cfg;
        let idle = Duration::from_secs(cfg.ws_idle_timeout_secs);
        let fallback = fallback_session("voice-ws", &format!("{:x}", conn.id));
        let (sink, mut stream) = socket.split();
        let tx = crate::channels::net::spawn_ws_writer(
            sink,
            32,
            conn.close.clone(),
            WsMessage::Text,
            Some((idle / 3, || WsMessage::Ping(Vec::new()))),
        );
        // every satellite id this connection holds; released when it closes
        let mut held: Vec<String> = Vec::new();
        // their turns in flight (a `stop`, or barging in while a reply streams, cancels)
        let mut in_flight = super::partial::InFlight::default();
        let mut current = None;
        if let Some(r) = &reserved {
            let attach = Attach {
                id: r.id.clone(),
                conn: conn.id,
                tx: tx.clone(),
            };
            if self.shared.actor.send(attach).await.unwrap_or(false) {
                info!(satellite = %r.id, "voice satellite connected");
                held.push(r.id.clone());
                current = Some(r.id.clone());
            } else {
                debug!(satellite = %r.id, "voice satellite connection superseded before it started");
                return;
            }
        }
        let error = |text: String| json!({"type": "error", "text": text}).to_string();
        loop {
            let next = tokio::select! {
                _ = conn.close.cancelled() => break,
                n = crate::netutil::within(idle, stream.next()) => n,
            };
            let msg = match next {
                Err(e) => {
                    debug!(error = %e, "voice WebSocket: silent connection closed");
                    break;
                }
                Ok(m) => m,
            };
            let text = match msg {
                Some(Ok(WsMessage::Text(t))) => t,
                Some(Ok(WsMessage::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => continue,
            };
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    let _ = tx.send(error(format!("bad JSON: {e}"))).await;
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
                        let _ = tx.send(error("transcript without text".into())).await;
                        continue;
                    };
                    if let Some(sat) = s("satellite_id") {
                        // one speaker box is one satellite; a handful of ids at most, so a
                        // connection cannot claim the house
                        if !held.contains(&sat) && held.len() >= MAX_IDS_PER_CONNECTION {
                            let _ = tx
                                .send(error(format!(
                                    "this connection already speaks for {MAX_IDS_PER_CONNECTION} satellite ids"
                                )))
                                .await;
                            continue;
                        }
                        let claimed = self
                            .claim(&conn.cred, &sat, conn.id, Some(tx.clone()), &conn.close)
                            .await;
                        if let Err(e) = claimed {
                            // the words are not heard: they came from a satellite this
                            // connection cannot be
                            let _ = tx.send(error(e.to_string())).await;
                            continue;
                        }
                        if !held.contains(&sat) {
                            held.push(sat.clone());
                        }
                        current = Some(sat);
                    }
                    let trusted = match (&conn.cred, &current) {
                        (Credential::Open, _) | (_, None) => None,
                        (_, Some(id)) => satellite(cfg, id).map(|s| &s.speakers),
                    };
                    let speaker = speaker_member(trusted, s("speaker_id").as_deref());
                    let session = s("session_id").unwrap_or_else(|| fallback.clone());
                    // admitted now, in arrival order; only the wait runs in its own task,
                    // so the socket keeps reading meanwhile
                    // proactive messages for this speaker go to this satellite (or, for a
                    // connection that named none, wait for its next turn)
                    let front = current.clone().unwrap_or_else(|| fallback.clone());
                    // the satellite speaking again while its reply streams: it stops
                    let cancel = in_flight.next(&front, self.shared.streams);
                    let (pending, partials) =
                        self.submit_satellite(&session, &speaker, &words, &front, cancel.clone());
                    let tx2 = tx.clone();
                    let delivering = self.shared.kernel.hold_delivery();
                    let me = self.clone();
                    tokio::spawn(async move {
                        let _delivering = delivering;
                        me.deliver(pending, partials, cancel, &front, &session, &tx2)
                            .await;
                    });
                }
                Some("stop") => {
                    // the named satellite if this connection holds it, else the current one
                    let named = v
                        .get("satellite_id")
                        .and_then(Value::as_str)
                        .filter(|x| !x.is_empty());
                    match named {
                        Some(sat) if !held.iter().any(|h| h == sat) => {
                            let sat: String = sat.chars().take(MAX_ID_CHARS).collect();
                            let _ = tx
                                .send(error(format!(
                                    "satellite {sat:?} is not spoken for on this connection"
                                )))
                                .await;
                        }
                        _ => {
                            let front = named
                                .map(str::to_string)
                                .or_else(|| current.clone())
                                .unwrap_or_else(|| fallback.clone());
                            in_flight.stop(&front);
                        }
                    }
                }
                Some("ping") => {
                    let _ = tx.send(json!({"type": "pong"}).to_string()).await;
                }
                other => {
                    let other: Option<String> = other.map(|o| o.chars().take(64).collect());
                    let _ = tx
                        .send(error(format!("unknown message type {other:?}")))
                        .await;
                }
            }
        }
        for id in held {
            self.release(id, conn.id);
        }
        drop(reserved);
        conn.close.cancel();
    }
}
