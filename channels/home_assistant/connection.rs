//! The one WebSocket connection to Home Assistant (`{url}/api/websocket`), owned by the
//! Home Assistant actor and run as a task on its thread.
//!
//! This file: connecting and authenticating (`auth_required` → `auth` → `auth_ok`, which
//! names HA's version) and the loop that keeps a session up; `session` is one session's
//! work once authenticated.
//!
//! Failures: a lost or refused connection is retried with capped, jittered backoff
//! (1 s doubling to 60 s, reset once a session was up), calls meanwhile are refused at
//! once. A wrong token (`auth_invalid`) is logged once and retried only every
//! [`AUTH_RETRY`]: Home Assistant bans addresses that fail to log in too often. Every
//! step has the timeout; a message larger than `max_message_bytes` ends the session.
//! The token is sent only in the `auth` message and never logged.

use super::protocol::{self, Incoming};
use super::HaError;
use crate::config::Secret;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tracing::{debug, error, warn};

pub const PING_EVERY: Duration = Duration::from_secs(20);
pub const AUTH_RETRY: Duration = Duration::from_secs(300);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Commands waiting for their `result` at once; more are refused as busy.
pub const MAX_IN_FLIGHT: usize = 64;

pub(super) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A command from the actor and where its result goes.
pub struct Call {
    pub body: Value,
    pub reply: oneshot::Sender<Result<Value, HaError>>,
}

/// What the connection tells the actor.
#[derive(Debug)]
pub enum Report {
    Connected {
        version: Option<String>,
    },
    Down {
        why: String,
    },
    AuthFailed {
        why: String,
    },
    Registries {
        areas: Value,
        devices: Value,
        entities: Value,
    },
    /// The entities exposed to Assist (`conversation: true`), bounded.
    Exposed(Vec<String>),
    /// Watch number `i` of `home_assistant.watch` fired.
    Watch(usize),
    State {
        entity_id: String,
        state: String,
    },
}

#[derive(Clone)]
pub struct Settings {
    pub url: String,
    pub token: Secret,
    pub timeout: Duration,
    pub max_message: usize,
    /// `(entity_id, to)` of each watch, subscribed with `subscribe_trigger`.
    pub watches: Vec<(String, String)>,
}

pub(super) enum Ended {
    AuthInvalid(String),
    Lost { why: String, was_up: bool },
    Closed,
}

/// Keep a session up until `calls` closes (the actor stopped).
pub async fn run(s: Settings, mut calls: mpsc::Receiver<Call>, report: impl Fn(Report)) {
    let mut backoff = FIRST_BACKOFF;
    let mut auth_logged = false;
    let mut down_logged = false;
    loop {
        let (why, wait) = match super::session::session(&s, &mut calls, &report).await {
            Ended::Closed => return,
            Ended::AuthInvalid(why) => {
                if !auth_logged {
                    error!(url = %s.url, reason = %why, retry_secs = AUTH_RETRY.as_secs(), "Home Assistant refused the access token; check the long-lived token (it is not retried sooner: Home Assistant bans addresses after failed logins)");
                    auth_logged = true;
                }
                report(Report::AuthFailed { why: why.clone() });
                (format!("access token refused: {why}"), AUTH_RETRY)
            }
            Ended::Lost { why, was_up } => {
                if was_up {
                    backoff = FIRST_BACKOFF;
                    down_logged = false;
                    warn!(url = %s.url, error = %why, "Home Assistant connection lost; reconnecting");
                } else if !down_logged {
                    warn!(url = %s.url, error = %why, "cannot reach Home Assistant; retrying with backoff (logged once until it comes up)");
                    down_logged = true;
                } else {
                    debug!(url = %s.url, error = %why, "Home Assistant still unreachable");
                }
                report(Report::Down { why: why.clone() });
                let wait = jitter(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                (why, wait)
            }
        };
        // calls meanwhile are refused at once, never queued behind the wait
        let until = Instant::now() + wait;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                c = calls.recv() => match c {
                    Some(c) => {
                        let _ = c.reply.send(Err(HaError::NotConnected(why.clone())));
                    }
                    None => return,
                },
            }
        }
    }
}

/// ±20 %, so many homebots (or restarts) do not knock in step.
fn jitter(d: Duration) -> Duration {
    d.mul_f64(0.8 + rand::random::<f64>() * 0.4)
}

pub(super) fn lost(why: impl ToString, was_up: bool) -> Ended {
    Ended::Lost {
        why: protocol::short(&why.to_string(), 200),
        was_up,
    }
}

/// Connect and authenticate; the Home Assistant version on success.
pub(super) async fn open(s: &Settings) -> Result<(Socket, Option<String>), Ended> {
    let cfg = WebSocketConfig {
        max_message_size: Some(s.max_message),
        max_frame_size: Some(s.max_message),
        ..Default::default()
    };
    let connect = tokio_tungstenite::connect_async_with_config(s.url.as_str(), Some(cfg), true);
    let mut ws = match tokio::time::timeout(s.timeout, connect).await {
        Err(_) => return Err(lost("connecting timed out", false)),
        Ok(Err(e)) => return Err(lost(e, false)),
        Ok(Ok((ws, _))) => ws,
    };
    match next(&mut ws, s.timeout).await? {
        Incoming::AuthRequired => {}
        other => {
            return Err(lost(
                format!("expected auth_required, got {other:?}"),
                false,
            ))
        }
    }
    send(&mut ws, protocol::auth(s.token.expose()), s.timeout).await?;
    match next(&mut ws, s.timeout).await? {
        Incoming::AuthOk { version } => Ok((ws, version)),
        Incoming::AuthInvalid { message } => Err(Ended::AuthInvalid(message)),
        other => Err(lost(format!("expected auth_ok, got {other:?}"), false)),
    }
}

/// The next message (during the handshake, where one message is one text frame).
async fn next(ws: &mut Socket, timeout: Duration) -> Result<Incoming, Ended> {
    loop {
        match tokio::time::timeout(timeout, ws.next()).await {
            Err(_) => return Err(lost("no answer within the timeout", false)),
            Ok(None) => return Err(lost("closed by Home Assistant", false)),
            Ok(Some(Err(e))) => return Err(lost(e, false)),
            Ok(Some(Ok(Message::Text(t)))) => {
                return Ok(protocol::parse(&t)
                    .into_iter()
                    .next()
                    .unwrap_or(Incoming::Other))
            }
            Ok(Some(Ok(Message::Close(_)))) => return Err(lost("closed by Home Assistant", false)),
            Ok(Some(Ok(_))) => {}
        }
    }
}

pub(super) async fn send(ws: &mut Socket, text: String, timeout: Duration) -> Result<(), Ended> {
    match tokio::time::timeout(timeout, ws.send(Message::Text(text))).await {
        Err(_) => Err(lost(
            "sending timed out (Home Assistant does not read)",
            true,
        )),
        Ok(Err(e)) => Err(lost(e, true)),
        Ok(Ok(())) => Ok(()),
    }
}
