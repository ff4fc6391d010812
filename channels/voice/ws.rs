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
use super::frames::{SatelliteIn, SatelliteOut, Stop, Transcript};
use super::handle::{fallback_session, Voice};
use super::partial::InFlight;
use super::satellites::{ClaimError, Credential, MAX_ID_CHARS};
use crate::channels::auth::{presented_token, same_secret};
use crate::channels::contract::StartError;
use crate::channels::net::{listener_limit, HttpLimits};
use crate::channels::spoken::speaker_member;
use crate::config::{SatelliteConfig, VoiceConfig};
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
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
    State(ch): State<SatelliteWs>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let cred = match credential(
        &ch.voice.shared.cfg,
        presented_token(&headers, &query, "token").as_deref(),
    ) {
        Ok(c) => c,
        Err(refusal) => return refusal.into_response(),
    };
    let conn = ch.voice.conn_id();
    let close = ch.voice.shared.cancel.child_token();
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
                    if let Some(suppressed) = ch.voice.shared.frame_warnings.hit() {
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
    ch: SatelliteWs,
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

/// The native satellite WebSocket: its server, over the voice channel's handle.
#[derive(Clone)]
pub(super) struct SatelliteWs {
    voice: Voice,
}

impl SatelliteWs {
    pub(super) fn new(voice: Voice) -> Self {
        Self { voice }
    }

    /// Serve the satellite WebSocket on `listen` (up to `voice.ws_max_connections`);
    /// returns what it bound.
    pub(super) async fn serve(
        &self,
        listen: &str,
    ) -> Result<(&'static str, SocketAddr), StartError> {
        let cfg = &self.voice.shared.cfg;
        let (listener, addr) = crate::channels::net::bind("voice-ws", listen).await?;
        let app = axum::Router::new()
            .route(WS_PATH, axum::routing::get(ws_handler))
            .with_state(self.clone());
        let limits = HttpLimits {
            conns: listener_limit("voice-ws", cfg.ws_max_connections),
            handshake: Duration::from_secs(cfg.handshake_timeout_secs),
        };
        crate::channels::net::serve_http(
            self.voice.shared.ctx.tasks(),
            "voice-ws",
            listener,
            app,
            self.voice.shared.cancel.clone(),
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
        self.voice
            .shared
            .actor
            .send(claim)
            .await
            .unwrap_or(Err(NotClaimed::Stopped))
    }

    /// Free `id` if connection `conn` still holds it (ahead of anything sent to the
    /// actor after this).
    fn release(&self, id: String, conn: u64) {
        self.voice.shared.actor.do_send(Release { id, conn });
    }

    /// One satellite connection: read its frames until it closes, goes silent or the
    /// channel stops; then free the ids it held.
    async fn serve_socket(self, socket: WebSocket, conn: Conn, reserved: Option<Reservation>) {
        let idle = Duration::from_secs(self.voice.shared.cfg.ws_idle_timeout_secs);
        let (sink, mut stream) = socket.split();
        let tx = crate::channels::net::spawn_ws_writer(
            self.voice.shared.ctx.tasks(),
            sink,
            32,
            conn.close.clone(),
            WsMessage::Text,
            Some((idle / 3, || WsMessage::Ping(Vec::new()))),
        );
        let mut sock = Socket {
            fallback: fallback_session("voice-ws", &format!("{:x}", conn.id)),
            conn,
            tx,
            held: Vec::new(),
            in_flight: InFlight::default(),
            current: None,
        };
        if let Some(r) = &reserved {
            if !self.attach(&mut sock, &r.id).await {
                debug!(satellite = %r.id, "voice satellite connection superseded before it started");
                return;
            }
        }
        while let Some(text) = sock.next_text(&mut stream, idle).await {
            match SatelliteIn::parse(&text) {
                Err(refused) => sock.say(SatelliteOut::error(refused.to_string())).await,
                Ok(SatelliteIn::Transcript(t)) => self.on_satellite_words(&mut sock, t).await,
                Ok(SatelliteIn::Stop(stop)) => sock.on_stop(stop).await,
                Ok(SatelliteIn::Ping) => sock.say(SatelliteOut::Pong).await,
            }
        }
        for id in std::mem::take(&mut sock.held) {
            self.release(id, sock.conn.id);
        }
        drop(reserved);
        sock.conn.close.cancel();
    }

    /// The satellite id reserved at the handshake is this connection's now, unless a
    /// newer connection took it over meanwhile (`false`).
    async fn attach(&self, sock: &mut Socket, id: &str) -> bool {
        let attach = Attach {
            id: id.to_string(),
            conn: sock.conn.id,
            tx: sock.tx.clone(),
        };
        if !self.voice.shared.actor.send(attach).await.unwrap_or(false) {
            return false;
        }
        info!(satellite = %id, "voice satellite connected");
        sock.held.push(id.to_string());
        sock.current = Some(id.to_string());
        true
    }

    /// Words heard: admitted now, in arrival order; only the wait for the reply runs in
    /// its own task, so the socket keeps reading meanwhile.
    async fn on_satellite_words(&self, sock: &mut Socket, t: Transcript) {
        let Some(words) = t.text else {
            sock.say(SatelliteOut::error("transcript without text"))
                .await;
            return;
        };
        if let Some(sat) = t.satellite_id {
            if !self.speak_for(sock, sat).await {
                return;
            }
        }
        let trusted = match (&sock.conn.cred, &sock.current) {
            (Credential::Open, _) | (_, None) => None,
            (_, Some(id)) => satellite(&self.voice.shared.cfg, id).map(|s| &s.speakers),
        };
        let speaker = speaker_member(trusted, t.speaker_id.as_deref());
        let session = t.session_id.unwrap_or_else(|| sock.fallback.clone());
        // proactive messages for this speaker go to this satellite (or, for a
        // connection that named none, wait for its next turn)
        let front = sock
            .current
            .clone()
            .unwrap_or_else(|| sock.fallback.clone());
        // the satellite speaking again while its reply streams: it stops
        let cancel = sock.in_flight.next(&front, self.voice.shared.streams);
        let (pending, partials) =
            self.voice
                .submit_satellite(&session, &speaker, &words, &front, cancel.clone());
        let tx = sock.tx.clone();
        let delivering = self
            .voice
            .shared
            .ctx
            .tasks()
            .guard(crate::actor::Group::Turn);
        let me = self.clone();
        self.voice
            .shared
            .ctx
            .tasks()
            .spawn_in(crate::actor::Group::Turn, async move {
                let _delivering = delivering;
                me.voice
                    .shared
                    .spoken
                    .deliver(pending, partials, cancel, &front, &session, &tx)
                    .await;
            });
    }

    /// Let this connection speak for satellite `sat` (and make it the current one);
    /// `false`, with the satellite told why, when it may not: the words are not heard,
    /// they came from a satellite this connection cannot be.
    async fn speak_for(&self, sock: &mut Socket, sat: String) -> bool {
        // one speaker box is one satellite; a handful of ids at most, so a connection
        // cannot claim the house
        if !sock.held.contains(&sat) && sock.held.len() >= MAX_IDS_PER_CONNECTION {
            sock.say(SatelliteOut::error(format!(
                "this connection already speaks for {MAX_IDS_PER_CONNECTION} satellite ids"
            )))
            .await;
            return false;
        }
        let c = &sock.conn;
        let claimed = self
            .claim(&c.cred, &sat, c.id, Some(sock.tx.clone()), &c.close)
            .await;
        if let Err(e) = claimed {
            sock.say(SatelliteOut::error(e.to_string())).await;
            return false;
        }
        if !sock.held.contains(&sat) {
            sock.held.push(sat.clone());
        }
        sock.current = Some(sat);
        true
    }
}

/// One satellite connection as its read loop sees it.
struct Socket {
    conn: Conn,
    /// To the connection's writer task.
    tx: mpsc::Sender<String>,
    /// The session (and front) of turns that name none.
    fallback: String,
    /// Every satellite id this connection holds; released when it closes.
    held: Vec<String>,
    /// Their turns in flight (a `stop`, or barging in while a reply streams, cancels).
    in_flight: InFlight,
    /// The satellite the connection last spoke for.
    current: Option<String>,
}

impl Socket {
    /// The next text frame; `None` when the connection closes, errs, stays silent past
    /// `idle`, or the channel stops. Other frames (binary, ping) are skipped.
    async fn next_text<S>(&self, stream: &mut S, idle: Duration) -> Option<String>
    where
        S: futures_util::Stream<Item = Result<WsMessage, axum::Error>> + Unpin,
    {
        loop {
            let next = tokio::select! {
                _ = self.conn.close.cancelled() => return None,
                n = crate::netutil::within(idle, stream.next()) => n,
            };
            let msg = match next {
                Err(e) => {
                    debug!(error = %e, "voice WebSocket: silent connection closed");
                    return None;
                }
                Ok(m) => m,
            };
            match msg {
                Some(Ok(WsMessage::Text(t))) => return Some(t),
                Some(Ok(WsMessage::Close(_))) | Some(Err(_)) | None => return None,
                Some(Ok(_)) => continue,
            }
        }
    }

    /// Send a frame to the satellite (after the frames before it).
    async fn say(&self, frame: SatelliteOut) {
        let _ = self.tx.send(frame.encode()).await;
    }

    /// Cancel the turns in flight of the named satellite if this connection holds it,
    /// else of the current one.
    async fn on_stop(&mut self, stop: Stop) {
        match stop.satellite_id {
            Some(sat) if !self.held.contains(&sat) => {
                let sat: String = sat.chars().take(MAX_ID_CHARS).collect();
                self.say(SatelliteOut::error(format!(
                    "satellite {sat:?} is not spoken for on this connection"
                )))
                .await;
            }
            named => {
                let front = named
                    .or_else(|| self.current.clone())
                    .unwrap_or_else(|| self.fallback.clone());
                self.in_flight.stop(&front);
            }
        }
    }
}
