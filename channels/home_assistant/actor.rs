//! The Home Assistant actor: the one owner of what homebot knows of Home Assistant — the
//! connection's state, HA's version, the rooms and satellites, which satellite listens,
//! the services list, the sentences with HA's agent now, where fired watches go — and
//! the only way to its connection. The handle ([`super::HomeAssistant`]) reaches all of
//! it by messages; nothing of it is kept beside the actor. It runs on its own actix arbiter thread
//! (`homebot-ha`) with its connection task, so parsing a big registry never delays a turn
//! or the ModeManager. Handlers never wait: a command is handed to the connection and
//! answered by a future ([`ResponseFuture`]) bounded by the timeout. Every handler reaches
//! the state through its supervised cell ([`crate::actor::Supervised`]).

use super::connection::{self, Call, Report};
use super::home::{Conversed, GetView, KnownServices, ServicesRead, StartConversing};
use super::state::{link_text, HaState, Link};
use super::{HaError, Located, Status};
use crate::actor::{Supervised, Unavailable};
use crate::config::HomeAssistantConfig;
use actix::prelude::*;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The actor: what it knows, under the one supervision helper — a panic in a handler (a
/// registry that breaks an assumption) fails that message and is logged, and the actor
/// goes on with the state it has (it lives in memory; Home Assistant sends it again).
pub struct HaActor {
    state: Supervised<HaState>,
}

impl HaActor {
    pub fn new(
        cfg: HomeAssistantConfig,
        settings: Result<connection::Settings, super::NotConfigured>,
        presence: crate::presence::Presence,
        back: tokio::sync::watch::Sender<u64>,
    ) -> Self {
        let state = HaState::new(cfg, settings, presence, back);
        Self {
            state: Supervised::in_memory("the Home Assistant actor", state),
        }
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

/// Fired watches go to this queue from now on (the channel's delivery task, once).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SendWatchesTo(pub mpsc::Sender<crate::config::HaWatch>);

impl Handler<SendWatchesTo> for HaActor {
    type Result = ();
    fn handle(&mut self, msg: SendWatchesTo, _: &mut Context<Self>) {
        let _ = self
            .state
            .run("route the watches", |st| st.send_watches_to(msg.0));
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
