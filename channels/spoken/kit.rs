//! The kit's handle, [`Spoken`], and every method of it but delivery's (`deliver`):
//! starting the kit, what is held for a front end, and waiting until a held message is
//! said — a proactive message (a reminder) for a front end that cannot be spoken to now
//! waits for that front end's next turn, or for Home Assistant to be back, to announce it
//! at once, and goes to the fallback chat (`voice.fallback`) when nothing said it in time.

use super::actor;
use super::held::{self, NotHeld};
use super::reply::{self, VoiceReply};
use super::{Satellites, WYOMING_TARGET};
use crate::channels::ctx::ChannelCtx;
use crate::channels::ports::Ports;
use crate::outbound::DeliveryError;
use actix::Addr;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, warn};

/// Says a held message at once, when its front end can be reached again (the voice
/// channel's door; Home Assistant's announce).
#[async_trait::async_trait]
pub trait SayNow: Send + Sync {
    async fn say_now(&self, front: &str, text: &str) -> Result<(), DeliveryError>;
}

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

    /// Hold `text` for `front`'s next turn and wait until it is said: only then is it
    /// delivered (a reminder stays pending meanwhile, so a restart rings it again). A turn
    /// that took it and ended before saying it (its connection dropped) did not say it:
    /// it is held again. When Home Assistant comes back meanwhile (connected, its rooms
    /// read) and the front is one it may speak on, the message is taken back and said by
    /// `say` at once — said by one or the other, never both. If nothing says it within
    /// `voice.fallback_after_secs`, it goes to `voice.fallback` instead; without a
    /// fallback it waits as long as the caller lets it (the Cron's budget).
    pub async fn hold_until_said(
        &self,
        front: &str,
        text: String,
        say: &dyn SayNow,
    ) -> Result<(), DeliveryError> {
        let cfg = &self.inner.ctx.config().voice;
        let fallback = cfg.fallback.clone();
        let wait = match &fallback {
            Some(_) => Duration::from_secs(cfg.fallback_after_secs),
            None => held::MAX_AGE,
        };
        let deadline = tokio::time::Instant::now() + wait;
        let Some(id) = self.wait_until_said(front, &text, deadline, say).await? else {
            return Ok(());
        };
        let Some(text) = self.take_back(front, id).await else {
            return Ok(()); // said just now
        };
        let Some(fallback) = fallback else {
            return Err(DeliveryError::Unreachable(format!(
                "voice front end {front:?} (no turn within {} s)",
                wait.as_secs()
            )));
        };
        let sent = self
            .inner
            .ctx
            .deliver(&fallback.channel, &fallback.target, &text)
            .await;
        match &sent {
            Ok(()) => {
                tracing::info!(front, channel = %fallback.channel, "voice message nobody heard went to the fallback chat")
            }
            Err(e) => {
                warn!(front, error = %e, "voice message nobody heard; the fallback chat failed too")
            }
        }
        sent
    }

    /// Hold `text` for `front` until a turn says it or Home Assistant, back, lets `say`
    /// say it (`None`), or until `deadline`: then the id it is held under.
    async fn wait_until_said(
        &self,
        front: &str,
        text: &str,
        deadline: tokio::time::Instant,
        say: &dyn SayNow,
    ) -> Result<Option<u64>, DeliveryError> {
        // a Wyoming speaker whose satellite is unknown has nowhere to be announced
        let mut back = match self.inner.ports.satellites() {
            Some(s) if front != WYOMING_TARGET => Some(s.comebacks()),
            _ => None,
        };
        let mut held = self.hold(front, text.to_string()).await?;
        loop {
            let woke = tokio::select! {
                said = tokio::time::timeout_at(deadline, &mut held.1) => match said {
                    Ok(Ok(())) => return Ok(None),
                    // taken by a turn that did not say it, or forgotten: hold it again
                    Ok(Err(_)) => {
                        held = self.hold(front, text.to_string()).await?;
                        continue;
                    }
                    Err(_) => return Ok(Some(held.0)),
                },
                up = came_back(&mut back) => up,
            };
            if !woke {
                back = None; // Home Assistant's handle is gone: only a turn says it now
                continue;
            }
            if self.take_back(front, held.0).await.is_none() {
                // a turn has it: its answer decides (said, or held again above)
                continue;
            }
            match say.say_now(front, text).await {
                Ok(()) => {
                    tracing::info!(
                        front,
                        "a message held while Home Assistant was unreachable was announced when it came back"
                    );
                    return Ok(None);
                }
                Err(e) => {
                    debug!(front, error = %e, "Home Assistant is back but could not say the held message; it waits again");
                    held = self.hold(front, text.to_string()).await?;
                }
            }
        }
    }

    /// Take back the message held for `front` under `id`; `None` when a turn has it
    /// (or it was said).
    async fn take_back(&self, front: &str, id: u64) -> Option<String> {
        let take_back = actor::TakeBack {
            front: front.to_string(),
            id,
        };
        self.inner.actor.send(take_back).await.ok().flatten()
    }

    /// Hold `text` for `front`: its id and the receiver told when it was said.
    async fn hold(
        &self,
        front: &str,
        text: String,
    ) -> Result<(u64, tokio::sync::oneshot::Receiver<()>), DeliveryError> {
        let hold = actor::Hold {
            front: front.to_string(),
            text,
        };
        self.inner
            .actor
            .send(hold)
            .await
            .unwrap_or(Err(NotHeld::Stopped))
            .map_err(|why| DeliveryError::Failed {
                target: front.to_string(),
                why: why.to_string(),
            })
    }
}

/// Wait until Home Assistant is back (`true`), or its handle is gone (`false`); with no
/// Home Assistant to watch, never.
async fn came_back(back: &mut Option<tokio::sync::watch::Receiver<u64>>) -> bool {
    match back {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}
