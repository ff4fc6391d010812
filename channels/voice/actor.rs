//! The voice actor: the one owner of the voice channel's state — which connection holds
//! which satellite id ([`Registry`]); the messages held for a front end's next turn are
//! the spoken kit's (`channels::spoken`). It runs on its own actix arbiter thread (`homebot-voice`); the
//! Wyoming and satellite connections (tasks on the gateway's runtime) and the outbound
//! door reach it through the [`super::Voice`] handle. Handlers never wait: sending to a
//! satellite is a `try_send` to its writer.
//!
//! Supervised ([`crate::actor::Supervised`]): a panic in a handler fails that request, and the
//! state — in memory only — is rebuilt from its defaults: every satellite connection is
//! closed (the satellites reconnect into the fresh registry) and reported offline.
//! Nothing the panic left half-changed survives.

use super::satellites::{ClaimError, Credential, Registry};
use super::turn::CHANNEL;
use crate::actor::{Supervised, Unavailable};
use crate::config::VoiceConfig;
use crate::presence::{Link, Presence};
use actix::prelude::*;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct State {
    satellites: Registry,
}

pub struct VoiceActor {
    state: Supervised<State>,
    cfg: Arc<VoiceConfig>,
    /// Where satellites coming online and going offline are reported.
    presence: Presence,
}

impl VoiceActor {
    pub fn new(cfg: Arc<VoiceConfig>, presence: Presence) -> Self {
        let offline = presence.clone();
        let rebuild = move |old: &mut State, hit: &str| {
            let up = old.satellites.close_all();
            tracing::warn!(
                hit,
                satellites = up.len(),
                "voice: the channel's state is rebuilt after a panic; its connections are closed and reconnect"
            );
            for id in up {
                offline.report(Link::new(CHANNEL, Some(id)), false);
            }
            State::default()
        };
        Self {
            state: Supervised::rebuilt_by("the voice channel", State::default(), rebuild),
            cfg,
            presence,
        }
    }
}

impl Actor for VoiceActor {
    type Context = Context<Self>;
}

/// Why a satellite id may not be held.
#[derive(Debug, thiserror::Error)]
pub enum NotClaimed {
    #[error(transparent)]
    Refused(#[from] ClaimError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("the voice channel has stopped")]
    Stopped,
}

/// Let connection `conn` hold satellite `id` (see `satellites`).
#[derive(Message)]
#[rtype(result = "Result<(), NotClaimed>")]
pub struct Claim {
    pub cred: Credential,
    pub id: String,
    pub conn: u64,
    pub tx: Option<mpsc::Sender<String>>,
    pub close: CancellationToken,
}

impl Handler<Claim> for VoiceActor {
    type Result = Result<(), NotClaimed>;
    fn handle(&mut self, m: Claim, _: &mut Context<Self>) -> Self::Result {
        let cfg = self.cfg.clone();
        let up = m.tx.is_some();
        let id = m.id.clone();
        self.state.run("claim", |s| {
            s.satellites
                .claim(&cfg, &m.cred, &m.id, m.conn, m.tx, &m.close)
        })??;
        // a claim with its writer is a satellite speaking on a connection already up
        if up {
            self.presence.report(Link::new(CHANNEL, Some(id)), true);
        }
        Ok(())
    }
}

/// The connection that reserved `id` at its handshake is up, with its writer; false when
/// a newer connection of the same satellite took the id over meanwhile.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Attach {
    pub id: String,
    pub conn: u64,
    pub tx: mpsc::Sender<String>,
}

impl Handler<Attach> for VoiceActor {
    type Result = bool;
    fn handle(&mut self, m: Attach, _: &mut Context<Self>) -> bool {
        let up = self
            .state
            .run("attach", |s| s.satellites.attach(&m.id, m.conn, m.tx))
            .unwrap_or(false);
        if up {
            self.presence.report(Link::new(CHANNEL, Some(m.id)), true);
        }
        up
    }
}

/// Free `id` if connection `conn` still holds it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Release {
    pub id: String,
    pub conn: u64,
}

impl Handler<Release> for VoiceActor {
    type Result = ();
    fn handle(&mut self, m: Release, _: &mut Context<Self>) {
        let offline = self
            .state
            .run("release", |s| s.satellites.release(&m.id, m.conn));
        if offline == Ok(true) {
            self.presence.report(Link::new(CHANNEL, Some(m.id)), false);
        }
    }
}

/// Why a frame for a satellite did not go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSent {
    /// No connection holds it.
    NotConnected,
    /// Its writer's queue is full.
    Busy,
    /// Its connection is closing.
    Closed,
    Unavailable(Unavailable),
}

/// Send `frame` to the connection holding satellite `id`, now or not at all.
#[derive(Message)]
#[rtype(result = "Result<(), NotSent>")]
pub struct Announce {
    pub id: String,
    pub frame: String,
}

impl Handler<Announce> for VoiceActor {
    type Result = Result<(), NotSent>;
    fn handle(&mut self, m: Announce, _: &mut Context<Self>) -> Self::Result {
        let tx = self
            .state
            .run("announce", |s| s.satellites.sender(&m.id))
            .map_err(NotSent::Unavailable)?
            .ok_or(NotSent::NotConnected)?;
        tx.try_send(m.frame).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => NotSent::Busy,
            mpsc::error::TrySendError::Closed(_) => NotSent::Closed,
        })
    }
}
