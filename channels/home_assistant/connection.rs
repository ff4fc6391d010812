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
//! [`AUTH_RETRY`]: Home Assistant bans addresses that fail to log in too often. A refused
//! certificate is retried like a lost connection, its reason (`tls`) logged once. Every
//! step has the timeout; a message larger than `max_message_bytes` ends the session.
//! The token is sent only in the `auth` message and never logged.

use super::answers::{AreaEntry, DeviceEntry, EntityEntry};
use super::frames::{self, Command};
use super::lenient::Items;
use super::protocol::{self, Incoming};
use super::{tls, HaError};
use crate::config::Secret;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::Connector;

pub const PING_EVERY: Duration = Duration::from_secs(20);
pub const AUTH_RETRY: Duration = Duration::from_secs(300);
pub(super) const FIRST_BACKOFF: Duration = Duration::from_secs(1);
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Commands waiting for their `result` at once; more are refused as busy.
pub const MAX_IN_FLIGHT: usize = 64;

pub(super) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A command from the actor and where its result goes.
pub struct Call {
    pub body: Command,
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
    /// The three registry lists and the entities exposed to Assist (`conversation:
    /// true`, bounded; `None` when HA refused the list), read together: a house is never
    /// known without what Assist may touch in it (a command would be refused meanwhile).
    Registries {
        areas: Items<AreaEntry>,
        devices: Items<DeviceEntry>,
        entities: Items<EntityEntry>,
        exposed: Option<Vec<String>>,
    },
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
    /// The TLS client settings of a `wss://` url (see `tls`).
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

pub(super) enum Ended {
    AuthInvalid(String),
    /// The TLS handshake failed: a refused certificate (with its fingerprint and how to
    /// trust it) or another TLS error, in words.
    Tls(String),
    Lost {
        why: String,
        was_up: bool,
    },
    Closed,
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
    let connector = s.tls.clone().map(Connector::Rustls);
    let connect = tokio_tungstenite::connect_async_tls_with_config(
        s.url.as_str(),
        Some(cfg),
        true,
        connector,
    );
    let mut ws = match tokio::time::timeout(s.timeout, connect).await {
        Err(_) => return Err(lost("connecting timed out", false)),
        Ok(Err(e)) => {
            return Err(match tls::explain(&e) {
                Some(why) => Ended::Tls(why),
                None => lost(e, false),
            })
        }
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
    send(&mut ws, frames::auth(s.token.expose()), s.timeout).await?;
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
