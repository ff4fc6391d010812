//! The spoken kit's actor: the one owner of the messages held for a front end's next
//! turn ([`Held`]). It runs on its own actix thread (`homebot-spoken`); the voice channel
//! and the Home Assistant channel reach it through [`super::Spoken`]. Handlers never wait:
//! waiting until a held message is said is the handle's.
//!
//! Supervised ([`crate::actor::Supervised`]): a panic in a handler fails that request and
//! the held messages are forgotten (as by a restart, by design: they live in memory
//! only); whoever waited for one hears it was not said and holds it again.

use super::held::{Held, NotHeld, Taken};
use crate::actor::Supervised;
use actix::prelude::*;
use tokio::sync::oneshot;

pub struct SpokenActor {
    held: Supervised<Held>,
}

impl Default for SpokenActor {
    fn default() -> Self {
        let rebuild = |_: &mut Held, hit: &str| {
            tracing::warn!(
                hit,
                "spoken: the held messages are forgotten after a panic; their senders hold them again"
            );
            Held::default()
        };
        Self {
            held: Supervised::rebuilt_by("the held messages", Held::default(), rebuild),
        }
    }
}

impl Actor for SpokenActor {
    type Context = Context<Self>;
}

/// Hold `text` for `front`'s next turn: its id (to take it back) and the receiver told
/// when it was said.
#[derive(Message)]
#[rtype(result = "Result<(u64, oneshot::Receiver<()>), NotHeld>")]
pub struct Hold {
    pub front: String,
    pub text: String,
}

impl Handler<Hold> for SpokenActor {
    type Result = Result<(u64, oneshot::Receiver<()>), NotHeld>;
    fn handle(&mut self, m: Hold, _: &mut Context<Self>) -> Self::Result {
        self.held.run("hold", |h| h.hold(&m.front, m.text))?
    }
}

/// What is held for `front`, for a turn to say ([`Taken::said`] once it did).
#[derive(Message)]
#[rtype(result = "Taken")]
pub struct TakeHeld(pub String);

impl Handler<TakeHeld> for SpokenActor {
    type Result = MessageResult<TakeHeld>;
    fn handle(&mut self, m: TakeHeld, _: &mut Context<Self>) -> Self::Result {
        MessageResult(
            self.held
                .run("take-held", |h| h.take(&m.0))
                .unwrap_or_default(),
        )
    }
}

/// Take message `id` held for `front` back, if nobody heard it yet.
#[derive(Message)]
#[rtype(result = "Option<String>")]
pub struct TakeBack {
    pub front: String,
    pub id: u64,
}

impl Handler<TakeBack> for SpokenActor {
    type Result = Option<String>;
    fn handle(&mut self, m: TakeBack, _: &mut Context<Self>) -> Option<String> {
        self.held
            .run("take-back", |h| h.take_back(&m.front, m.id))
            .ok()
            .flatten()
    }
}
