//! The spoken kit: what the two channels that answer by voice — the voice channel
//! (Wyoming, native satellites) and the Home Assistant channel (its conversation agent,
//! its satellites' announcements) — share, so neither reaches into the other:
//!
//! - [`held`] and its actor ([`actor`], thread `homebot-spoken`): messages held for a
//!   front end's next turn (a reminder for a satellite that cannot be spoken to now),
//!   said first by that front end's next turn; [`wait`]: waiting until one is said, or
//!   Home Assistant is back to say it, or the fallback chat takes it;
//! - [`deliver`]: a turn's answer as `partial` frames, then the `reply` frame
//!   ([`frames`]), what was held said first;
//! - [`reply`]: a reply shaped for speech and whether to keep listening;
//!   [`speaker`]: who speaks (only the household's mappings make a member);
//! - [`satellites`]: the port to Home Assistant's satellites (provided by its channel,
//!   resolved by `channels::ports`).
//!
//! Fronts: a message is held under its front end's name — a native satellite's id,
//! [`WYOMING_TARGET`] for Wyoming speakers whose satellite is unknown, `ha:<entity id>`
//! ([`HA_PREFIX`]) for a satellite of Home Assistant.

pub mod actor;
pub mod deliver;
pub mod frames;
pub mod held;
pub mod reply;
pub mod satellites;
pub mod speaker;
pub mod wait;

pub use deliver::unsaid;
pub use frames::{ReplyFrame, SpokenOut};
pub use reply::{shape_reply, DialogueState, VoiceReply};
pub use satellites::{Located, Satellites};
pub use speaker::{or_satellite_member, speaker_member, GUEST};
pub use wait::SayNow;

use crate::channels::ctx::ChannelCtx;
use crate::channels::ports::Ports;
use actix::Addr;
use std::sync::Arc;

/// The front of proactive messages for Wyoming speakers whose satellite is unknown: Home
/// Assistant cannot be spoken to unasked, so they wait for the next Wyoming turn.
pub const WYOMING_TARGET: &str = "wyoming";

/// `ha:<entity id>`: a Home Assistant satellite (the front of a Wyoming turn or an agent
/// turn whose satellite is known).
pub const HA_PREFIX: &str = "ha:";

/// The running kit (a cloneable handle).
#[derive(Clone)]
pub struct Spoken {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: ChannelCtx,
    actor: Addr<actor::SpokenActor>,
    ports: Ports,
}

impl Spoken {
    /// Start the kit's actor on its own thread, stopped when the context's token fires.
    pub fn start(ctx: &ChannelCtx, ports: Ports) -> std::io::Result<Self> {
        let actor = ctx.lifecycle().start_actor_until(
            "homebot-spoken",
            ctx.cancel().clone(),
            actor::SpokenActor::default,
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                ctx: ctx.clone(),
                actor,
                ports,
            }),
        })
    }

    /// What is held for `front`; it counts as said when [`held::Taken::said`] is called.
    pub async fn take_held(&self, front: &str) -> held::Taken {
        self.inner
            .actor
            .send(actor::TakeHeld(front.to_string()))
            .await
            .unwrap_or_default()
    }

    /// Wait for a submitted turn's reply and shape it for speech; anything held for
    /// `front` comes first, and counts as said once the caller calls `held.said()` on the
    /// reply it sent.
    pub async fn finish(&self, pending: crate::kernel::PendingReply, front: &str) -> VoiceReply {
        let reply = pending.reply().await;
        let held = self.take_held(front).await;
        reply::compose(&reply, held)
    }

    /// Home Assistant's satellites, when its channel provides them.
    pub fn satellites(&self) -> Option<Arc<dyn Satellites>> {
        self.inner.ports.satellites()
    }
}
