//! The Home Assistant actor: the one owner of what homebot knows of Home Assistant — the
//! connection's state, HA's version, the rooms and satellites, which satellite listens,
//! the services list, the sentences with HA's agent now, where fired watches go — and
//! the only way to its connection. The handle ([`super::HomeAssistant`]) reaches all of
//! it by messages; nothing of it is kept beside the actor. It runs on its own actix
//! arbiter thread (`homebot-ha`) with its connection task, so parsing a big registry
//! never delays a turn or the ModeManager. Handlers never wait: a command is handed to
//! the connection and answered by a future ([`ResponseFuture`]) bounded by the timeout.
//!
//! Supervised ([`crate::actor::Supervised`]): every handler reaches the state through
//! its cell; a panic in one fails that request, and the state — in memory only — is
//! rebuilt from its defaults (`HaState::rebuilt`): its connection closed (the calls
//! waiting fail as on a lost connection) and a new one opened, which reads the
//! registries again; the link reported down, and up again once connected. Nothing the
//! panic left half-changed survives.

use super::connection::{self, Call, Report};
use super::home::{Conversed, GetView, KnownServices, ServicesRead, StartConversing};
use super::state::{link_text, HaState, Link};
use super::{HaError, Located, Status};
use crate::actor::{Supervised, Unavailable};
use crate::config::HomeAssistantConfig;
use actix::prelude::*;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

/// The actor: what it knows, under the one supervision helper (see the module doc).
pub struct HaActor {
    state: Supervised<HaState>,
}

impl HaActor {
    pub fn new(
        cfg: HomeAssistantConfig,
        settings: Result<connection::Settings, super::NotConfigured>,
        presence: crate::presence::Presence,
        back: tokio::sync::watch::Sender<u64>,
        watches: mpsc::Sender<crate::config::HaWatch>,
    ) -> Self {
        let state = HaState::new(cfg, settings, presence, back, watches);
        let rebuild = |old: &mut HaState, hit: &str| old.rebuilt(hit);
        Self {
            state: Supervised::rebuilt_by("the Home Assistant actor", state, rebuild),
        }
    }

    /// Open the state's connection, if it has settings and none yet: a future of the
    /// actor's (it stops with the actor, and with its thread, which the kernel's shutdown
    /// joins) that keeps a session up. The state holds its mailbox and its stop: when
    /// the state is dropped — rebuilt after a panic — the session ends, closing its
    /// socket, and asks the actor to open the new state's.
    fn connect(&mut self, ctx: &mut Context<Self>) {
        let Ok(Some(o)) = self.state.run("open the connection", HaState::open) else {
            return;
        };
        let me = ctx.address();
        let session = o.session;
        let report = {
            let me = me.clone();
            move |report| me.do_send(FromConnection { session, report })
        };
        ctx.spawn(actix::fut::wrap_future(async move {
            tokio::select! {
                // the stop first: a dropped state's session does not take one more step
                biased;
                _ = o.stop.cancelled() => me.do_send(Reconnect),
                _ = super::session::run(o.settings, o.calls, report) => {}
            }
        }));
    }
}

impl Actor for HaActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.connect(ctx);
    }
}

/// The connection of a dropped state ended: open the current state's.
#[derive(Message)]
#[rtype(result = "()")]
struct Reconnect;

impl Handler<Reconnect> for HaActor {
    type Result = ();
    fn handle(&mut self, _: Reconnect, ctx: &mut Context<Self>) {
        self.connect(ctx);
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct FromConnection {
    /// The number of the connection that reports (see `HaState::session`).
    pub session: u64,
    pub report: Report,
}

impl Handler<FromConnection> for HaActor {
    type Result = ();
    fn handle(&mut self, msg: FromConnection, _: &mut Context<Self>) {
        let _ = self.state.run("a report from the connection", |s| {
            if s.session == msg.session {
                s.on_report(msg.report);
            }
        });
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
            .run("command", |st| match (&st.link, &st.connection) {
                (Link::Up, Some(c)) => Ok(c.calls.clone()),
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
            .map_err(|e| match e {
                TrySendError::Full(_) => HaError::Busy,
                // its connection was closed meanwhile (the state rebuilt after a panic)
                TrySendError::Closed(_) => HaError::Disconnected,
            })?;
            match tokio::time::timeout(timeout, rx).await {
                Err(_) => Err(HaError::Timeout(timeout)),
                Ok(Err(_)) => Err(HaError::Disconnected),
                Ok(Ok(r)) => r,
            }
        })
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
        let (satellite, device) = (msg.satellite_id.as_deref(), msg.device_id.as_deref());
        let found = self.state.run("locate", |s| s.locate(satellite, device));
        MessageResult(found.unwrap_or_default())
    }
}

/// Where an agent turn's device is (see [`HaState::place`]).
#[derive(Message)]
#[rtype(result = "super::state::Placed")]
pub struct Place {
    pub satellite_id: Option<String>,
    pub device_id: Option<String>,
}

impl Handler<Place> for HaActor {
    type Result = MessageResult<Place>;
    fn handle(&mut self, msg: Place, _: &mut Context<Self>) -> Self::Result {
        let (satellite, device) = (msg.satellite_id.as_deref(), msg.device_id.as_deref());
        let found = self
            .state
            .run("place a device", |s| s.place(satellite, device));
        MessageResult(found.unwrap_or_default())
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

impl Handler<KnownServices> for HaActor {
    type Result = Option<Option<Vec<String>>>;
    fn handle(&mut self, msg: KnownServices, _: &mut Context<Self>) -> Self::Result {
        let known = self.state.run("services", |st| st.known_services(&msg.0));
        known.ok().flatten()
    }
}

impl Handler<ServicesRead> for HaActor {
    type Result = ();
    fn handle(&mut self, msg: ServicesRead, _: &mut Context<Self>) {
        let _ = self
            .state
            .run("services read", |st| st.services = Some(msg.0));
    }
}

impl Handler<StartConversing> for HaActor {
    type Result = Result<bool, Unavailable>;
    fn handle(&mut self, msg: StartConversing, _: &mut Context<Self>) -> Self::Result {
        self.state.run("start conversing", |st| {
            st.start_conversing(msg.sentence, msg.call)
        })
    }
}

impl Handler<Conversed> for HaActor {
    type Result = ();
    fn handle(&mut self, msg: Conversed, _: &mut Context<Self>) {
        let _ = self
            .state
            .run("conversed", |st| st.conversed(&msg.sentence, msg.call));
    }
}
