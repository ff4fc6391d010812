//! The one WebSocket connection to Home Assistant (`{url}/api/websocket`), owned by the
//! Home Assistant actor and run as a task on its thread.
//!
//! A session: connect, `auth_required` → `auth` → `auth_ok` (which names HA's version),
//! then subscriptions to state and registry changes, the three registry lists and
//! the list of entities exposed to Assist; then commands from the actor, each numbered and
//! answered by its `result`, and a `ping` every [`PING_EVERY`] that must be answered
//! within the timeout. A registry change refetches the lists (once per second at most).
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
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tracing::{debug, error, info, warn};

pub const PING_EVERY: Duration = Duration::from_secs(20);
pub const AUTH_RETRY: Duration = Duration::from_secs(300);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Commands waiting for their `result` at once; more are refused as busy.
pub const MAX_IN_FLIGHT: usize = 64;

type Socket =
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
    Exposed(usize),
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
}

enum Ended {
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
        let (why, wait) = match session(&s, &mut calls, &report).await {
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

fn lost(why: impl ToString, was_up: bool) -> Ended {
    Ended::Lost {
        why: protocol::short(&why.to_string(), 200),
        was_up,
    }
}

/// Connect and authenticate; the Home Assistant version on success.
async fn open(s: &Settings) -> Result<(Socket, Option<String>), Ended> {
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

async fn send(ws: &mut Socket, text: String, timeout: Duration) -> Result<(), Ended> {
    match tokio::time::timeout(timeout, ws.send(Message::Text(text))).await {
        Err(_) => Err(lost(
            "sending timed out (Home Assistant does not read)",
            true,
        )),
        Ok(Err(e)) => Err(lost(e, true)),
        Ok(Ok(())) => Ok(()),
    }
}

/// What a command's `result` is for.
enum Waiting {
    Caller(oneshot::Sender<Result<Value, HaError>>),
    Subscribed,
    Areas(u64),
    Devices(u64),
    Entities(u64),
    Exposed,
}

#[derive(Default)]
struct Fetch {
    generation: u64,
    areas: Option<Value>,
    devices: Option<Value>,
    entities: Option<Value>,
}

struct Live {
    next_id: u64,
    waiting: HashMap<u64, Waiting>,
    fetch: Fetch,
    /// The id and send time of a ping not answered yet.
    ping: Option<(u64, Instant)>,
    /// Subscription ids: their events are ours.
    subscriptions: Vec<u64>,
}

impl Live {
    async fn command(
        &mut self,
        ws: &mut Socket,
        body: Value,
        what: Waiting,
        timeout: Duration,
    ) -> Result<u64, Ended> {
        self.next_id += 1;
        let id = self.next_id;
        self.waiting.insert(id, what);
        send(ws, protocol::command(id, body), timeout).await?;
        Ok(id)
    }

    async fn fetch_registries(&mut self, ws: &mut Socket, t: Duration) -> Result<(), Ended> {
        self.fetch = Fetch {
            generation: self.fetch.generation + 1,
            ..Default::default()
        };
        let g = self.fetch.generation;
        for (kind, what) in [
            ("config/area_registry/list", Waiting::Areas(g)),
            ("config/device_registry/list", Waiting::Devices(g)),
            ("config/entity_registry/list", Waiting::Entities(g)),
        ] {
            self.command(ws, json!({ "type": kind }), what, t).await?;
        }
        self.command(
            ws,
            json!({"type": "homeassistant/expose_entity/list"}),
            Waiting::Exposed,
            t,
        )
        .await?;
        Ok(())
    }
}

async fn session(
    s: &Settings,
    calls: &mut mpsc::Receiver<Call>,
    report: &impl Fn(Report),
) -> Ended {
    let (mut ws, version) = match open(s).await {
        Ok(x) => x,
        Err(e) => return e,
    };
    info!(url = %s.url, version = version.as_deref().unwrap_or("?"), "connected to Home Assistant");
    report(Report::Connected { version });
    let t = s.timeout;
    let mut live = Live {
        next_id: 0,
        waiting: HashMap::new(),
        fetch: Fetch::default(),
        ping: None,
        subscriptions: Vec::new(),
    };
    for ev in protocol::SUBSCRIBED {
        let body = json!({"type": "subscribe_events", "event_type": ev});
        match live.command(&mut ws, body, Waiting::Subscribed, t).await {
            Ok(id) => live.subscriptions.push(id),
            Err(e) => return e,
        }
    }
    if let Err(e) = live.fetch_registries(&mut ws, t).await {
        return e;
    }
    let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    let mut refetch: Option<Instant> = None;
    loop {
        let refetch_at = refetch.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            msg = ws.next() => match msg {
                None => return lost("closed by Home Assistant", true),
                Some(Err(e)) => return lost(e, true),
                Some(Ok(Message::Text(text))) => {
                    for inc in protocol::parse(&text) {
                        if let Some(ask) = live.on_message(inc, report) {
                            refetch.get_or_insert(Instant::now() + ask);
                        }
                    }
                }
                Some(Ok(Message::Close(_))) => return lost("closed by Home Assistant", true),
                Some(Ok(_)) => {}
            },
            c = calls.recv() => {
                let Some(c) = c else { return Ended::Closed };
                live.waiting.retain(|_, w| !matches!(w, Waiting::Caller(tx) if tx.is_closed()));
                let callers = live.waiting.values().filter(|w| matches!(w, Waiting::Caller(_))).count();
                if callers >= MAX_IN_FLIGHT {
                    let _ = c.reply.send(Err(HaError::Busy));
                    continue;
                }
                if let Err(e) = live.command(&mut ws, c.body, Waiting::Caller(c.reply), t).await {
                    return e;
                }
            },
            _ = ping.tick() => {
                if let Some((_, at)) = live.ping {
                    if at.elapsed() > t {
                        return lost("no pong within the timeout", true);
                    }
                } else {
                    live.next_id += 1;
                    let id = live.next_id;
                    live.ping = Some((id, Instant::now()));
                    if let Err(e) = send(&mut ws, json!({"id": id, "type": "ping"}).to_string(), t).await {
                        return e;
                    }
                }
                // callers that gave up (their own timeout) free their place
                live.waiting.retain(|_, w| !matches!(w, Waiting::Caller(tx) if tx.is_closed()));
            },
            _ = tokio::time::sleep_until(refetch_at), if refetch.is_some() => {
                refetch = None;
                if let Err(e) = live.fetch_registries(&mut ws, t).await {
                    return e;
                }
            },
        }
    }
}

impl Live {
    /// Handle one message; `Some(delay)` asks for the registries to be fetched again.
    fn on_message(&mut self, inc: Incoming, report: &impl Fn(Report)) -> Option<Duration> {
        match inc {
            Incoming::Pong { id } if self.ping.is_some_and(|(p, _)| p == id) => {
                self.ping = None;
            }
            Incoming::Result { id, outcome } => match self.waiting.remove(&id)? {
                Waiting::Caller(tx) => {
                    let _ = tx.send(outcome.map_err(HaError::Refused));
                }
                Waiting::Subscribed => {
                    if let Err(e) = outcome {
                        warn!(error = %e, "Home Assistant refused a subscription");
                    }
                }
                Waiting::Exposed => {
                    if let Ok(v) = outcome {
                        let n = v
                            .get("exposed_entities")
                            .and_then(Value::as_object)
                            .map(|m| {
                                m.values()
                                    .filter(|e| {
                                        e.get("conversation").and_then(Value::as_bool) == Some(true)
                                    })
                                    .count()
                            })
                            .unwrap_or(0);
                        report(Report::Exposed(n));
                    }
                }
                Waiting::Areas(g) | Waiting::Devices(g) | Waiting::Entities(g)
                    if g != self.fetch.generation => {}
                w => {
                    let v = outcome.unwrap_or_else(|e| {
                        warn!(error = %e, "Home Assistant refused a registry list");
                        Value::Null
                    });
                    match w {
                        Waiting::Areas(_) => self.fetch.areas = Some(v),
                        Waiting::Devices(_) => self.fetch.devices = Some(v),
                        _ => self.fetch.entities = Some(v),
                    }
                    let f = &mut self.fetch;
                    if f.areas.is_some() && f.devices.is_some() && f.entities.is_some() {
                        report(Report::Registries {
                            areas: f.areas.take().unwrap_or_default(),
                            devices: f.devices.take().unwrap_or_default(),
                            entities: f.entities.take().unwrap_or_default(),
                        });
                    }
                }
            },
            Incoming::Event { id, event } if self.subscriptions.contains(&id) => {
                let kind = event
                    .get("event_type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if kind == "state_changed" {
                    let data = event.get("data").unwrap_or(&Value::Null);
                    let entity = data
                        .get("entity_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if entity.starts_with("assist_satellite.") && entity.len() <= 255 {
                        let state = data
                            .pointer("/new_state/state")
                            .and_then(Value::as_str)
                            .unwrap_or("unavailable");
                        report(Report::State {
                            entity_id: entity.to_string(),
                            state: protocol::short(state, 32),
                        });
                    }
                } else if kind.ends_with("_registry_updated") {
                    return Some(Duration::from_secs(1));
                }
            }
            _ => {}
        }
        None
    }
}

/// One connection for `homebot doctor`: authenticate, read the version, the registries
/// and the exposed entities, then close.
pub async fn probe(s: &Settings) -> Result<Probe, String> {
    let (mut ws, version) = match open(s).await {
        Ok(x) => x,
        Err(Ended::AuthInvalid(why)) => return Err(format!("access token refused: {why}")),
        Err(Ended::Lost { why, .. }) => return Err(why),
        Err(Ended::Closed) => return Err("closed".into()),
    };
    let mut out = Probe {
        version,
        ..Default::default()
    };
    let kinds = [
        "config/area_registry/list",
        "config/device_registry/list",
        "config/entity_registry/list",
        "homeassistant/expose_entity/list",
    ];
    for (i, kind) in kinds.iter().enumerate() {
        let id = i as u64 + 1;
        if let Err(Ended::Lost { why, .. }) = send(
            &mut ws,
            protocol::command(id, json!({ "type": kind })),
            s.timeout,
        )
        .await
        {
            return Err(why);
        }
    }
    let mut got = 0;
    while got < kinds.len() {
        let text = match tokio::time::timeout(s.timeout, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => t,
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => return Err(protocol::short(&e.to_string(), 200)),
            Ok(None) => return Err("closed by Home Assistant".into()),
            Err(_) => return Err("no answer within the timeout".into()),
        };
        for inc in protocol::parse(&text) {
            if let Incoming::Result { id, outcome } = inc {
                got += 1;
                let v = outcome.unwrap_or(Value::Null);
                match id {
                    1 => out.areas = v,
                    2 => out.devices = v,
                    3 => out.entities = v,
                    4 => {
                        out.exposed =
                            v.get("exposed_entities")
                                .and_then(Value::as_object)
                                .map(|m| {
                                    m.values()
                                        .filter(|e| {
                                            e.get("conversation").and_then(Value::as_bool)
                                                == Some(true)
                                        })
                                        .count()
                                })
                    }
                    _ => got -= 1,
                }
            }
        }
    }
    let _ = ws.close(None).await;
    Ok(out)
}

/// What `homebot doctor` learned in one connection.
#[derive(Debug, Default)]
pub struct Probe {
    pub version: Option<String>,
    pub areas: Value,
    pub devices: Value,
    pub entities: Value,
    pub exposed: Option<usize>,
}
