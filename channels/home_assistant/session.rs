//! One authenticated session with Home Assistant: subscriptions to state and registry
//! changes, the three registry lists and the list of entities exposed to Assist (reported
//! together, once all four are in); then
//! commands from the actor, each numbered and answered by its `result`, and a `ping`
//! every [`PING_EVERY`] that must be answered within the timeout. A registry change
//! refetches the lists (once per second at most). It ends when the connection is lost
//! (every waiting caller then hears so) or the actor stops.

use super::answers::{self, AreaEntry, DeviceEntry, EntityEntry, Exposed};
use super::connection::{
    lost, open, send, Call, Ended, Report, Settings, Socket, AUTH_RETRY, FIRST_BACKOFF,
    MAX_BACKOFF, MAX_IN_FLIGHT, PING_EVERY,
};
use super::frames::{self, Command};
use super::lenient::Items;
use super::protocol::{self, HaFailure, Incoming};
use super::HaError;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tracing::{debug, error, info, warn};

/// What a command's `result` is for.
enum Waiting {
    Caller(oneshot::Sender<Result<Value, HaError>>),
    Subscribed,
    Areas(u64),
    Devices(u64),
    Entities(u64),
    Exposed(u64),
}

/// Entities kept from `homeassistant/expose_entity/list` (a house has hundreds).
pub const MAX_EXPOSED: usize = 5000;

#[derive(Default)]
struct Fetch {
    generation: u64,
    areas: Option<Items<AreaEntry>>,
    devices: Option<Items<DeviceEntry>>,
    entities: Option<Items<EntityEntry>>,
    /// `Some(None)`: HA refused the list.
    exposed: Option<Option<Vec<String>>>,
}

struct Live {
    next_id: u64,
    waiting: HashMap<u64, Waiting>,
    fetch: Fetch,
    /// The id and send time of a ping not answered yet.
    ping: Option<(u64, Instant)>,
    /// Subscription ids: their events are ours.
    subscriptions: Vec<u64>,
    /// `subscribe_trigger` ids → the watch each is for.
    watches: HashMap<u64, usize>,
}

impl Live {
    async fn command(
        &mut self,
        ws: &mut Socket,
        body: Command,
        what: Waiting,
        timeout: Duration,
    ) -> Result<u64, Ended> {
        self.next_id += 1;
        let id = self.next_id;
        self.waiting.insert(id, what);
        send(ws, frames::command(id, body), timeout).await?;
        Ok(id)
    }

    async fn fetch_registries(&mut self, ws: &mut Socket, t: Duration) -> Result<(), Ended> {
        self.fetch = Fetch {
            generation: self.fetch.generation + 1,
            ..Default::default()
        };
        let g = self.fetch.generation;
        for (list, what) in [
            (Command::AreaRegistry, Waiting::Areas(g)),
            (Command::DeviceRegistry, Waiting::Devices(g)),
            (Command::EntityRegistry, Waiting::Entities(g)),
            (Command::ExposedEntities, Waiting::Exposed(g)),
        ] {
            self.command(ws, list, what, t).await?;
        }
        Ok(())
    }
}

pub(super) async fn session(
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
        watches: HashMap::new(),
    };
    for ev in protocol::SUBSCRIBED {
        let body = Command::SubscribeEvents {
            event_type: ev.to_string(),
        };
        match live.command(&mut ws, body, Waiting::Subscribed, t).await {
            Ok(id) => live.subscriptions.push(id),
            Err(e) => return e,
        }
    }
    for (i, (entity_id, to)) in s.watches.iter().enumerate() {
        let body = frames::watch_trigger(entity_id, to);
        match live.command(&mut ws, body, Waiting::Subscribed, t).await {
            Ok(id) => {
                live.watches.insert(id, i);
            }
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
                Some(Ok(Message::Text(text))) if protocol::other_state_change(&text) => {}
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
                    if let Err(e) = send(&mut ws, frames::command(id, Command::Ping), t).await {
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
    /// Once all four lists of this fetch are in, report them together.
    fn fetched(&mut self, report: &impl Fn(Report)) {
        let f = &mut self.fetch;
        if f.areas.is_some() && f.devices.is_some() && f.entities.is_some() && f.exposed.is_some() {
            report(Report::Registries {
                areas: f.areas.take().unwrap_or_default(),
                devices: f.devices.take().unwrap_or_default(),
                entities: f.entities.take().unwrap_or_default(),
                exposed: f.exposed.take().flatten(),
            });
        }
    }

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
                Waiting::Areas(g)
                | Waiting::Devices(g)
                | Waiting::Entities(g)
                | Waiting::Exposed(g)
                    if g != self.fetch.generation => {}
                Waiting::Exposed(_) => {
                    self.fetch.exposed = Some(outcome.ok().map(exposed));
                    self.fetched(report);
                }
                Waiting::Areas(_) => {
                    self.fetch.areas = Some(registry(Command::AreaRegistry, outcome));
                    self.fetched(report);
                }
                Waiting::Devices(_) => {
                    self.fetch.devices = Some(registry(Command::DeviceRegistry, outcome));
                    self.fetched(report);
                }
                Waiting::Entities(_) => {
                    self.fetch.entities = Some(registry(Command::EntityRegistry, outcome));
                    self.fetched(report);
                }
            },
            Incoming::Event { id, .. } if self.watches.contains_key(&id) => {
                report(Report::Watch(self.watches[&id]));
            }
            Incoming::Event { id, event } if self.subscriptions.contains(&id) => {
                let kind = event.event_type();
                if kind == "state_changed" {
                    let (entity, state) = event.state_change();
                    if entity.starts_with("assist_satellite.") && entity.len() <= 255 {
                        let state = state.unwrap_or("unavailable");
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
/// A registry list decoded (empty when HA refused it or sent something else: what cannot
/// be read is left out).
fn registry<T: DeserializeOwned>(list: Command, outcome: Result<Value, HaFailure>) -> Items<T> {
    let read = outcome
        .map_err(HaError::Refused)
        .and_then(|v| answers::decode(list.kind(), v));
    read.unwrap_or_else(|e| {
        warn!(list = list.kind(), error = %e, "a Home Assistant registry list could not be read");
        Items::default()
    })
}

/// The entity ids of `homeassistant/expose_entity/list` exposed to Assist
/// (`conversation: true`), well formed, at most [`MAX_EXPOSED`]; none from an answer
/// that is no such list.
fn exposed(result: Value) -> Vec<String> {
    let list = answers::decode::<Exposed>(Command::ExposedEntities.kind(), result);
    let list = list.unwrap_or_else(|e| {
        warn!(error = %e, "the entities exposed to Assist could not be read");
        Exposed::default()
    });
    list.to_assist()
        .filter(|id| crate::config::is_entity_id(id))
        .map(str::to_string)
        .take(MAX_EXPOSED)
        .collect()
}

/// Keep a session up until `calls` closes (the actor stopped).
pub async fn run(s: Settings, mut calls: mpsc::Receiver<Call>, report: impl Fn(Report)) {
    let mut backoff = FIRST_BACKOFF;
    let mut auth_logged = false;
    let mut down_logged = false;
    let mut tls_logged: Option<String> = None;
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
            Ended::Tls(why) => {
                if tls_logged.as_deref() != Some(why.as_str()) {
                    error!(url = %s.url, reason = %why, "Home Assistant's https connection failed (retried with backoff; logged again only if the reason changes)");
                    tls_logged = Some(why.clone());
                }
                down_logged = true;
                report(Report::Down { why: why.clone() });
                let wait = jitter(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                (why, wait)
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
