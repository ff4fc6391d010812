//! The QQ actor: the one owner of the channel's state — who is connected
//! ([`Connections`]), the actions waiting for their response ([`Actions`]) and the
//! delivery queues ([`Deliveries`]). It runs on its own actix arbiter thread
//! (`homebot-qq`); the connections' read loops, the delivery workers and the outbound
//! door reach it through [`super::handle::Qq`].
//!
//! Handlers never wait: what takes time (a reply being written by the model, the
//! throttle, a send and its response) runs in the delivery workers, tasks on the
//! gateway's runtime that the actor starts for each queue. Inbound messages become
//! turns here, in arrival order, submitted to the kernel on the gateway's runtime (so
//! the turn runs there, not on this thread).
//!
//! Supervised ([`crate::actor::Supervised`]): a panic in a handler is caught, the request gets an
//! error, and the state is rebuilt from its defaults (it is not on disk: who is connected
//! is known only from the live connections) — every connection closed, so the
//! implementations reconnect into the fresh state, the actions waiting failed, the
//! queued replies dropped, the links reported down. Nothing the panic left half-changed
//! survives.

use super::conns::{AlreadyConnected, Connections, Role};
use super::delivery::{Deliveries, Delivery, NewQueue, QueueFull};
use super::events::{ActionResponse, MessageEvent};
use super::inbound::{self, Incoming};
use super::rpc::Actions;
use super::target::Target;
use crate::actor::{Supervised, Unavailable};
use crate::channels::ctx::ChannelCtx;
use crate::config::QqConfig;
use crate::kernel::PendingReply;
use crate::presence::Link;
use crate::turn::Reply;
use actix::prelude::*;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

/// Starts a queue's worker (given the actor's address), on the gateway's runtime.
pub type StartWorker = Box<dyn Fn(Addr<QqActor>, NewQueue) + Send>;

/// What the actor owns.
#[derive(Default)]
struct State {
    conns: Connections,
    actions: Actions,
    deliveries: Deliveries,
}

impl State {
    /// The state after a panic: the defaults. Dropping the old one closes its connections
    /// (their writers end with the senders it held), fails the actions waiting and drops
    /// the queued replies (their workers end); the links it had up are reported down.
    fn rebuilt(&mut self, presence: &crate::presence::Presence, hit: &str) -> State {
        let up = self.conns.accounts_up();
        warn!(
            hit,
            connections = up.len(),
            "qq: the channel's state is rebuilt after a panic; its connections are closed and reconnect"
        );
        for self_id in up {
            presence.report(Link::new(inbound::CHANNEL, Some(self_id)), false);
        }
        State::default()
    }
}

pub struct QqActor {
    state: Supervised<State>,
    cfg: Arc<QqConfig>,
    ctx: ChannelCtx,
    /// The gateway's runtime: turns are submitted on it.
    runtime: tokio::runtime::Handle,
    start_worker: StartWorker,
}

impl QqActor {
    pub fn new(
        cfg: Arc<QqConfig>,
        ctx: ChannelCtx,
        runtime: tokio::runtime::Handle,
        start_worker: StartWorker,
    ) -> Self {
        let presence = ctx.presence().clone();
        let rebuild = move |old: &mut State, hit: &str| old.rebuilt(&presence, hit);
        Self {
            state: Supervised::rebuilt_by("the QQ channel", State::default(), rebuild),
            cfg,
            ctx,
            runtime,
            start_worker,
        }
    }

    fn cap(&self) -> usize {
        super::delivery::queue_cap(self.ctx.config().agent.max_queued_per_chat)
    }

    /// Queue a delivery; start the worker of a queue opened for it.
    fn enqueue(
        &mut self,
        key: String,
        job: Delivery,
        ctx: &mut Context<Self>,
    ) -> Result<(), Refused> {
        let cap = self.cap();
        let opened = self
            .state
            .run("enqueue", |s| s.deliveries.enqueue(key, job, cap))?
            .map_err(|QueueFull| Refused::Full)?;
        if let Some(q) = opened {
            (self.start_worker)(ctx.address(), q);
        }
        Ok(())
    }
}

impl Actor for QqActor {
    type Context = Context<Self>;
}

/// Why a delivery was not queued.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("too many messages are waiting")]
    Full,
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

/// Why a connection may not take its account's place.
#[derive(Debug, thiserror::Error)]
pub enum NotReserved {
    #[error(transparent)]
    Duplicate(#[from] AlreadyConnected),
    #[error("the QQ channel has stopped")]
    Stopped,
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

/// Something found now, or a receiver told when a connection comes up (look again then).
pub enum Found<T> {
    Now(T),
    Later(oneshot::Receiver<()>),
}

impl<T> Found<T> {
    fn or_wait(found: Option<T>, conns: &mut Connections) -> Self {
        match found {
            Some(t) => Found::Now(t),
            None => Found::Later(conns.wait()),
        }
    }
}

/// Reserve the account's place for connection `conn` in `role`.
#[derive(Message)]
#[rtype(result = "Result<(), NotReserved>")]
pub struct Reserve {
    pub self_id: String,
    pub role: Role,
    pub conn: u64,
}

impl Handler<Reserve> for QqActor {
    type Result = Result<(), NotReserved>;
    fn handle(&mut self, msg: Reserve, _: &mut Context<Self>) -> Self::Result {
        Ok(self.state.run("reserve", |s| {
            s.conns.reserve(&msg.self_id, msg.role, msg.conn)
        })??)
    }
}

/// The connection is up, with its writer.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Activate {
    pub self_id: String,
    pub conn: u64,
    pub tx: mpsc::Sender<String>,
}

impl Handler<Activate> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: Activate, _: &mut Context<Self>) {
        let up = self.state.run("activate", |s| {
            let up = s.conns.activate(&msg.self_id, msg.conn, msg.tx);
            // (the supervision test: the connection is up here, its link not yet reported)
            crate::failpoint::panic_once("qq.activate");
            up
        });
        if up == Ok(true) {
            self.ctx
                .presence()
                .report(Link::new(inbound::CHANNEL, Some(msg.self_id.clone())), true);
        }
        if up == Ok(false) {
            warn!(self_id = %msg.self_id, "qq: a connection came up without its reservation");
        }
    }
}

/// The connection ended, or its handshake never completed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Release {
    pub self_id: String,
    pub conn: u64,
}

impl Handler<Release> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: Release, _: &mut Context<Self>) {
        let went_down = self.state.run("release", |s| {
            let was_up = s.conns.is_up(&msg.self_id);
            s.conns.release(&msg.self_id, msg.conn);
            was_up && !s.conns.is_up(&msg.self_id)
        });
        if went_down == Ok(true) {
            self.ctx
                .presence()
                .report(Link::new(inbound::CHANNEL, Some(msg.self_id)), false);
        }
    }
}

/// A message event from `self_id`'s connection: a turn (or a greeting) whose reply joins
/// its target's queue, in arrival order.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Inbound {
    pub self_id: String,
    pub event: MessageEvent,
}

impl Handler<Inbound> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: Inbound, ctx: &mut Context<Self>) {
        let (cfg, channel) = (self.cfg.clone(), self.ctx.clone());
        let self_id = msg.self_id;
        let read = self.state.run("message", |s| {
            inbound::read(&cfg, channel.config(), &self_id, msg.event, |id| {
                s.conns.is_bot_message(&self_id, id)
            })
        });
        let (target, reply) = match read {
            Ok(Some(Incoming { target, turn: None })) => {
                (target, PendingReply::Ready(Reply::ok("在的，请说。")))
            }
            Ok(Some(Incoming {
                target,
                turn: Some(turn),
            })) => {
                // admitted now, at arrival: the chat's FIFO keeps QQ's order; the turn
                // runs on the gateway's runtime, not on this thread
                let _on_gateway = self.runtime.enter();
                (target, self.ctx.submit(turn))
            }
            Ok(None) | Err(_) => return,
        };
        let key = target.key();
        if reply.is_refusal() {
            match self
                .state
                .run("refusal", |s| s.deliveries.refusal_allowed(&key))
            {
                Ok(true) => {}
                _ => {
                    debug!(self_id, target = %key, "qq: refusal dropped (one per burst)");
                    return;
                }
            }
        }
        let job = Delivery {
            self_id: self_id.clone(),
            target,
            reply,
            done: None,
            _guard: self.ctx.tasks().guard(crate::actor::Group::Turn),
        };
        if let Err(e) = self.enqueue(key.clone(), job, ctx) {
            warn!(self_id, target = %key, error = %e, "qq: delivery queue full; reply dropped");
        }
    }
}

/// A response to an action: wakes the caller; a message send's id is remembered as the
/// bot's before anything the connection reads after it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Resolve(pub ActionResponse);

impl Handler<Resolve> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: Resolve, _: &mut Context<Self>) {
        let echo = msg.0.echo.clone();
        let _ = self
            .state
            .run("response", |s| match s.actions.resolve(msg.0) {
                Some(m) => {
                    if let Some(id) = m.sent {
                        s.conns.remember_sent(&m.self_id, id);
                    }
                }
                None => debug!(echo = %echo, "qq: response to an unknown action ignored"),
            });
    }
}

/// A connection of `self_id` that carries actions, and the receiver of the response to
/// the action sent with `echo`.
#[derive(Message)]
#[rtype(result = "Result<Found<Route>, Unavailable>")]
pub struct OpenAction {
    pub self_id: String,
    pub echo: String,
    /// A message send: its id is remembered as the bot's.
    pub sends_message: bool,
    /// The delivery queue (by target) whose worker took its last waiting delivery, and
    /// sends it now: a burst of refusals there is over (see [`Drained`]).
    pub drained: Option<String>,
}

pub struct Route {
    pub tx: mpsc::Sender<String>,
    pub response: oneshot::Receiver<ActionResponse>,
}

impl Handler<OpenAction> for QqActor {
    type Result = Result<Found<Route>, Unavailable>;
    fn handle(&mut self, msg: OpenAction, _: &mut Context<Self>) -> Self::Result {
        self.state.run("action", |s| {
            if let Some(key) = &msg.drained {
                s.deliveries.drained(key);
            }
            let route = s.conns.sender_for(&msg.self_id).map(|tx| {
                let response = s.actions.open(&msg.echo, &msg.self_id, msg.sends_message);
                Route { tx, response }
            });
            Found::or_wait(route, &mut s.conns)
        })
    }
}

/// The caller of an action stopped waiting for its response.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetAction(pub String);

impl Handler<ForgetAction> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: ForgetAction, _: &mut Context<Self>) {
        let _ = self.state.run("forget", |s| s.actions.forget(&msg.0));
    }
}

/// The account connected first among those that can carry actions now.
#[derive(Message)]
#[rtype(result = "Result<Found<String>, Unavailable>")]
pub struct FirstAccount;

impl Handler<FirstAccount> for QqActor {
    type Result = Result<Found<String>, Unavailable>;
    fn handle(&mut self, _: FirstAccount, _: &mut Context<Self>) -> Self::Result {
        self.state.run("first-account", |s| {
            let first = s.conns.first_account();
            Found::or_wait(first, &mut s.conns)
        })
    }
}

/// An announcement for `target` (the outbound door), after the replies waiting there.
#[derive(Message)]
#[rtype(result = "Result<(), Refused>")]
pub struct Announce {
    pub target: Target,
    pub job: Delivery,
}

impl Handler<Announce> for QqActor {
    type Result = Result<(), Refused>;
    fn handle(&mut self, msg: Announce, ctx: &mut Context<Self>) -> Self::Result {
        self.enqueue(msg.target.key(), msg.job, ctx)
    }
}

/// A queue's worker took the last delivery waiting: a burst of refusals there is over.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drained(pub String);

impl Handler<Drained> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: Drained, _: &mut Context<Self>) {
        let _ = self.state.run("drained", |s| s.deliveries.drained(&msg.0));
    }
}

/// A queue's worker has been idle: the queue closes unless a delivery slipped in.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Retire {
    pub key: String,
    pub queue: u64,
}

impl Handler<Retire> for QqActor {
    type Result = ();
    fn handle(&mut self, msg: Retire, _: &mut Context<Self>) {
        let _ = self
            .state
            .run("retire", |s| s.deliveries.retire(&msg.key, msg.queue));
    }
}
