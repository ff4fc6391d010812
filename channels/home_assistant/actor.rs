//! The Home Assistant actor: the one owner of what homebot knows of Home Assistant — the
//! connection's state, HA's version, the rooms and satellites, which satellite listens —
//! and the only way to its connection. It runs on its own actix arbiter thread
//! (`homebot-ha`) with its connection task, so parsing a big registry never delays a turn
//! or the ModeManager. Handlers never wait: a command is handed to the connection and
//! answered by a future ([`ResponseFuture`]) bounded by the timeout. Every handler reaches
//! the state through its supervised cell ([`crate::actor::Supervised`]).

use super::connection::{self, Call, Report};
use super::home::{GetView, HomeView};
use super::rooms::{Listening, Rooms};
use super::status::CHANNEL;
use super::{HaError, Located, Status};
use crate::actor::Supervised;
use crate::config::HomeAssistantConfig;
use actix::prelude::*;
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The actor: what it knows, under the one supervision helper — a panic in a handler (a
/// registry that breaks an assumption) fails that message and is logged, and the actor
/// goes on with the state it has (it lives in memory; Home Assistant sends it again).
pub struct HaActor {
    state: Supervised<HaState>,
}

pub struct HaState {
    cfg: HomeAssistantConfig,
    /// The connection task's mailbox (`None`: no token, nothing to connect with).
    calls: Option<mpsc::Sender<Call>>,
    settings: Option<connection::Settings>,
    link: Link,
    version: Option<String>,
    rooms: Rooms,
    listening: Listening,
    exposed: Option<usize>,
    /// The entities exposed to Assist.
    exposed_ids: HashSet<String>,
    /// What the home tools see, rebuilt when the registries or the exposed list change.
    view: std::sync::Arc<HomeView>,
    /// Where fired watches go (the delivery task of the channel holding Home Assistant).
    watch_tx: Option<mpsc::Sender<crate::config::HaWatch>>,
    /// Satellites Home Assistant said cannot start a conversation (logged once each).
    no_listen_again: HashSet<String>,
    /// Where the link coming up and going down is reported.
    presence: crate::presence::Presence,
    /// Counts the connections whose registries were read: a message waiting because Home
    /// Assistant could not be reached watches it to be said when it is back.
    back: tokio::sync::watch::Sender<u64>,
    /// Connected, and the registries not read yet on this connection.
    fresh: bool,
}

#[derive(Debug, Clone)]
pub enum Link {
    Connecting,
    Up,
    Down(String),
    AuthFailed(String),
    NoToken(String),
}

impl HaActor {
    pub fn new(
        cfg: HomeAssistantConfig,
        settings: Result<connection::Settings, super::NotConfigured>,
        watch_tx: Option<mpsc::Sender<crate::config::HaWatch>>,
        presence: crate::presence::Presence,
        back: tokio::sync::watch::Sender<u64>,
    ) -> Self {
        let state = HaState::new(cfg, settings, watch_tx, presence, back);
        Self {
            state: Supervised::in_memory("the Home Assistant actor", state),
        }
    }
}

impl HaState {
    fn new(
        cfg: HomeAssistantConfig,
        settings: Result<connection::Settings, super::NotConfigured>,
        watch_tx: Option<mpsc::Sender<crate::config::HaWatch>>,
        presence: crate::presence::Presence,
        back: tokio::sync::watch::Sender<u64>,
    ) -> Self {
        let rooms = {
            let mut r = Rooms::default();
            r.apply_config(&cfg);
            r
        };
        let (settings, link) = match settings {
            Ok(s) => (Some(s), Link::Connecting),
            Err(why) => (None, Link::NoToken(why.to_string())),
        };
        Self {
            cfg,
            calls: None,
            settings,
            link,
            version: None,
            rooms,
            listening: Listening::default(),
            exposed: None,
            exposed_ids: HashSet::new(),
            view: Default::default(),
            watch_tx,
            no_listen_again: HashSet::new(),
            presence,
            back,
            fresh: false,
        }
    }

    fn rebuild_view(&mut self) {
        self.view = std::sync::Arc::new(HomeView::new(&self.rooms, &self.exposed_ids, &self.cfg));
    }
}

impl Actor for HaActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // a small mailbox: the callers' own timeouts bound the wait, a full one refuses
        let settings = self.state.run("start the connection", |st| {
            let s = st.settings.clone()?;
            let (tx, rx) = mpsc::channel(connection::MAX_IN_FLIGHT);
            st.calls = Some(tx);
            Some((s, rx))
        });
        let Ok(Some((s, rx))) = settings else {
            return;
        };
        let me = ctx.address();
        // the actor's own future: it stops with the actor (and its thread, which the
        // kernel's shutdown joins)
        ctx.spawn(actix::fut::wrap_future(super::session::run(
            s,
            rx,
            move |r| me.do_send(FromConnection(r)),
        )));
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct FromConnection(pub Report);

impl Handler<FromConnection> for HaActor {
    type Result = ();
    fn handle(&mut self, msg: FromConnection, _: &mut Context<Self>) {
        let r = msg.0;
        let _ = self
            .state
            .run("a report from the connection", |s| s.on_report(r));
    }
}

impl HaState {
    fn on_report(&mut self, r: Report) {
        match r {
            Report::Connected { version } => {
                self.link = Link::Up;
                self.fresh = true;
                self.version = version;
                self.presence
                    .report(crate::presence::Link::new(CHANNEL, None), true);
            }
            Report::Down { why } => {
                self.link = Link::Down(why);
                self.fresh = false;
                self.presence
                    .report(crate::presence::Link::new(CHANNEL, None), false);
            }
            Report::AuthFailed { why } => {
                self.link = Link::AuthFailed(why);
                self.fresh = false;
                self.presence
                    .report(crate::presence::Link::new(CHANNEL, None), false);
            }
            Report::Registries {
                areas,
                devices,
                entities,
                exposed,
            } => {
                self.rooms = Rooms::from_registries(&areas, &devices, &entities, &self.cfg);
                if let Some(ids) = exposed {
                    self.exposed = Some(ids.len());
                    self.exposed_ids = ids.into_iter().collect();
                }
                self.rebuild_view();
                tracing::info!(
                    areas = self.rooms.areas.len(),
                    satellites = self.rooms.satellites.len(),
                    entities = self.rooms.entities,
                    exposed = self.exposed_ids.len(),
                    "Home Assistant registries read"
                );
                // back, and its rooms known: what waited for it can be said now
                if std::mem::take(&mut self.fresh) {
                    self.back.send_modify(|n| *n += 1);
                }
            }
            Report::Watch(i) => {
                let (Some(w), Some(tx)) = (self.cfg.watch.get(i), &self.watch_tx) else {
                    return;
                };
                tracing::info!(entity = %w.entity_id, to = %w.to, channel = %w.channel, "a Home Assistant watch fired");
                if tx.try_send(w.clone()).is_err() {
                    tracing::warn!(entity = %w.entity_id, "too many watch messages waiting; this one is dropped");
                }
            }
            Report::State { entity_id, state } => self.listening.update(&entity_id, &state),
        }
    }
}

/// A command for Home Assistant; answered with its `result` (decoded by the caller,
/// which knows its type) or why not.
#[derive(Message)]
#[rtype(result = "Result<Value, HaError>")]
pub struct Command {
    pub body: super::frames::Command,
    /// How long its answer may take (an announcement's answer comes once it was played).
    pub within: Duration,
}

impl Handler<Command> for HaActor {
    type Result = ResponseFuture<Result<Value, HaError>>;
    fn handle(&mut self, msg: Command, _: &mut Context<Self>) -> Self::Result {
        let timeout = msg.within;
        let ready = self
            .state
            .run("command", |st| match (&st.link, &st.calls) {
                (Link::Up, Some(tx)) => Ok(tx.clone()),
                (link, _) => Err(HaError::NotConnected(link_text(link))),
            })
            .unwrap_or_else(|e| Err(HaError::NotConnected(e.to_string())));
        Box::pin(async move {
            let tx = ready?;
            let (reply, rx) = oneshot::channel();
            tx.try_send(Call {
                body: msg.body,
                reply,
            })
            .map_err(|_| HaError::Busy)?;
            match tokio::time::timeout(timeout, rx).await {
                Err(_) => Err(HaError::Timeout(timeout)),
                Ok(Err(_)) => Err(HaError::Disconnected),
                Ok(Ok(r)) => r,
            }
        })
    }
}

pub fn link_text(l: &Link) -> String {
    match l {
        Link::Connecting => "connecting".into(),
        Link::Up => "connected".into(),
        Link::Down(why) => format!("not connected: {why}"),
        Link::AuthFailed(why) => format!("access token refused ({why})"),
        Link::NoToken(why) => why.clone(),
    }
}

#[derive(Message)]
#[rtype(result = "Status")]
pub struct GetStatus;

impl Handler<GetStatus> for HaActor {
    type Result = MessageResult<GetStatus>;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        let status = self.state.run("status", |st| st.status());
        MessageResult(status.unwrap_or_else(|e| Status {
            link: e.to_string(),
            ..Default::default()
        }))
    }
}

impl HaState {
    fn status(&self) -> Status {
        Status {
            connected: matches!(self.link, Link::Up),
            link: link_text(&self.link),
            version: self.version.clone(),
            entities: self.rooms.entities,
            exposed: self.exposed,
            satellites: self
                .rooms
                .satellites
                .iter()
                .map(|s| {
                    let room = s.area_id.as_deref().map(|a| self.rooms.room_name(a));
                    (s.entity_id.clone(), room)
                })
                .collect(),
        }
    }
}

/// Which satellite (and room) a voice turn comes from: the ids Home Assistant sent, else
/// the satellite listening now, else the configured default.
#[derive(Message)]
#[rtype(result = "Option<Located>")]
pub struct Locate {
    pub satellite_id: Option<String>,
    pub device_id: Option<String>,
}

impl Handler<Locate> for HaActor {
    type Result = MessageResult<Locate>;
    fn handle(&mut self, msg: Locate, _: &mut Context<Self>) -> Self::Result {
        let found = self.state.run("locate", |s| s.locate(msg));
        MessageResult(found.unwrap_or_default())
    }
}

impl HaState {
    fn locate(&self, msg: Locate) -> Option<Located> {
        let r = &self.rooms;
        let sat = msg
            .satellite_id
            .as_deref()
            .and_then(|id| r.satellite(id))
            .or_else(|| {
                msg.device_id
                    .as_deref()
                    .and_then(|d| r.satellite_of_device(d))
            })
            .map(|s| s.entity_id.clone())
            .or_else(|| self.listening.active().map(str::to_string))
            .or_else(|| self.cfg.default_satellite.clone());
        sat.map(|entity_id| {
            let room = r
                .satellite(&entity_id)
                .and_then(|s| s.area_id.as_deref())
                .map(|a| r.room_name(a));
            Located { entity_id, room }
        })
    }
}

/// Where a message for `target` (an area id or name, or a satellite entity id) is said:
/// the satellites, and for each the media players of its area (the fallback).
#[derive(Message)]
#[rtype(result = "Vec<(String, Vec<String>)>")]
pub struct Resolve(pub String);

impl Handler<Resolve> for HaActor {
    type Result = MessageResult<Resolve>;
    fn handle(&mut self, msg: Resolve, _: &mut Context<Self>) -> Self::Result {
        let found = self.state.run("resolve a target", |s| s.resolve(&msg.0));
        MessageResult(found.unwrap_or_default())
    }
}

impl HaState {
    fn resolve(&self, target: &str) -> Vec<(String, Vec<String>)> {
        let r = &self.rooms;
        let mut out: Vec<(String, Vec<String>)> = r
            .targets(target)
            .into_iter()
            .map(|s| {
                let players = s
                    .area_id
                    .as_deref()
                    .map(|a| {
                        r.media_players_in(a)
                            .into_iter()
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                (s.entity_id.clone(), players)
            })
            .collect();
        if out.is_empty() {
            // an area with no satellite may still have a media player
            if let Some(a) = r.area(target) {
                let players: Vec<String> = r
                    .media_players_in(&a.id)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                if !players.is_empty() {
                    out.push((String::new(), players));
                }
            }
        }
        out
    }
}

/// A satellite's last known state (`idle`, `listening`, `processing`, `responding`).
#[derive(Message)]
#[rtype(result = "Option<String>")]
pub struct SatelliteState(pub String);

impl Handler<SatelliteState> for HaActor {
    type Result = Option<String>;
    fn handle(&mut self, msg: SatelliteState, _: &mut Context<Self>) -> Option<String> {
        let state = self.state.run("satellite state", |st| {
            st.listening.state(&msg.0).map(str::to_string)
        });
        state.ok().flatten()
    }
}

/// Whether a satellite may be asked to listen again (`false` once HA refused it), and
/// the record of a refusal.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct ListenAgain {
    pub entity_id: String,
    pub refused: bool,
}

impl Handler<ListenAgain> for HaActor {
    type Result = bool;
    fn handle(&mut self, msg: ListenAgain, _: &mut Context<Self>) -> bool {
        let may = self.state.run("listen again", |st| {
            if msg.refused {
                st.no_listen_again.insert(msg.entity_id.clone());
            }
            st.cfg.listen_again && !st.no_listen_again.contains(&msg.entity_id)
        });
        may.unwrap_or(false)
    }
}

impl Handler<GetView> for HaActor {
    type Result = MessageResult<GetView>;
    fn handle(&mut self, _: GetView, _: &mut Context<Self>) -> Self::Result {
        let view = self.state.run("view", |st| st.view.clone());
        MessageResult(view.unwrap_or_default())
    }
}
