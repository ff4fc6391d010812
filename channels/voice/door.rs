//! The voice channel's outbound door: a proactive message (a reminder, `homebot
//! announce`) goes to a native satellite by its id, to Home Assistant's satellite of a
//! room (`ha:<entity>`, an area), or — for a Wyoming front end, which cannot be spoken to
//! unasked — is held for that speaker's next turn; and the wait for a held message: until a
//! turn says it, Home Assistant is back to announce it, or the fallback chat takes it.

use super::actor;
use super::frames::SatelliteOut;
use super::handle::Voice;
use super::held;
use super::reply::shape_reply;
use super::turn::{CHANNEL, HA_PREFIX, WYOMING_TARGET};
use crate::outbound::{DeliveryError, Outbound};
use std::time::Duration;
use tracing::{debug, warn};

/// `next-turn:<front>`: say it before the reply of that front end's next turn.
const NEXT_TURN: &str = "next-turn:";

#[async_trait::async_trait]
impl Outbound for Voice {
    /// Announce to a satellite by id (native WebSocket); a satellite that is not
    /// connected is unreachable. Wyoming ([`WYOMING_TARGET`]) and `next-turn:<front>` hear
    /// it before the reply of their next turn (held in memory, bounded, for a while). A
    /// full send queue refuses.
    async fn deliver(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let (text, _) = shape_reply(text);
        let held_for = match target.strip_prefix(NEXT_TURN) {
            Some(front) => Some(front),
            None => (target == WYOMING_TARGET).then_some(target),
        };
        if let Some(front) = held_for {
            return self.hold_until_said(front, text).await;
        }
        let who = format!("satellite {target:?}");
        if let Some(entity) = target.strip_prefix(HA_PREFIX) {
            return self.say_in_home_assistant(entity, &text).await;
        }
        let announce = actor::Announce {
            id: target.to_string(),
            frame: SatelliteOut::Announce { text: text.clone() }.encode(),
        };
        let sent = self
            .shared
            .actor
            .send(announce)
            .await
            .unwrap_or(Err(actor::NotSent::Closed));
        match sent {
            Ok(()) => Ok(()),
            Err(actor::NotSent::NotConnected) if self.shared.ha.is_some() => {
                // an area or a satellite of Home Assistant (`kitchen`, `assist_satellite.x`)
                self.say_in_home_assistant(target, &text).await
            }
            Err(actor::NotSent::NotConnected | actor::NotSent::Closed) => {
                Err(DeliveryError::Unreachable(who))
            }
            Err(actor::NotSent::Busy) => Err(DeliveryError::Busy(who)),
            Err(actor::NotSent::Unavailable(e)) => Err(DeliveryError::Failed {
                target: who,
                why: e.to_string(),
            }),
        }
    }

    /// A satellite that cannot be reached now hears it on its next turn.
    fn later(&self, target: &str) -> Option<String> {
        (!target.starts_with(NEXT_TURN)).then(|| format!("{NEXT_TURN}{target}"))
    }

    /// This handle: the HTTP server's Home Assistant agent runs its turns through it.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl Voice {
    /// Announce through Home Assistant; delivered only when Home Assistant said success.
    async fn say_in_home_assistant(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        let Some(ha) = &self.shared.ha else {
            return Err(DeliveryError::Unreachable(format!("satellite {target:?}")));
        };
        match crate::channels::home_assistant::say(ha, target, text).await {
            Err(DeliveryError::BadTarget { target, .. }) => Err(DeliveryError::BadTarget {
                channel: CHANNEL.into(),
                target,
                why: "neither a connected satellite nor an area or satellite of Home Assistant"
                    .into(),
            }),
            other => other,
        }
    }
}

/// Home Assistant's door holds here what it cannot say now: for its satellite's next
/// turn (a Wyoming turn or Home Assistant's agent at that satellite), or — no satellite —
/// for the next turn that has none.
#[async_trait::async_trait]
impl crate::channels::home_assistant::Holder for Voice {
    async fn hold(&self, satellite: &str, text: &str) -> Result<(), DeliveryError> {
        let front = match satellite {
            "" => WYOMING_TARGET.to_string(),
            s => format!("{HA_PREFIX}{s}"),
        };
        self.hold_until_said(&front, shape_reply(text).0).await
    }
}

/// Messages held for a front end's next turn, waited for until said.
impl Voice {
    /// Hold `text` for `front`'s next turn and wait until it is said: only then is it
    /// delivered (a reminder stays pending meanwhile, so a restart rings it again). A turn
    /// that took it and ended before saying it (its connection dropped) did not say it:
    /// it is held again. When Home Assistant comes back meanwhile (connected, its rooms
    /// read) and the front is one it may speak on, the message is taken back and
    /// announced there at once — said by one or the other, never both. If nothing says
    /// it within `voice.fallback_after_secs`, it goes to `voice.fallback` instead;
    /// without a fallback it waits as long as the caller lets it (the Cron's budget).
    async fn hold_until_said(&self, front: &str, text: String) -> Result<(), DeliveryError> {
        let fallback = self.shared.cfg.fallback.clone();
        let wait = match &fallback {
            Some(_) => Duration::from_secs(self.shared.cfg.fallback_after_secs),
            None => held::MAX_AGE,
        };
        let deadline = tokio::time::Instant::now() + wait;
        let Some(id) = self.wait_until_said(front, &text, deadline).await? else {
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
            .shared
            .kernel
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

    /// Hold `text` for `front` until a turn says it or Home Assistant, back, announces
    /// it (`None`), or until `deadline`: then the id it is held under.
    async fn wait_until_said(
        &self,
        front: &str,
        text: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Option<u64>, DeliveryError> {
        // a Wyoming speaker whose satellite is unknown has nowhere to be announced
        let mut back = match &self.shared.ha {
            Some(ha) if front != WYOMING_TARGET => Some(ha.comebacks()),
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
            match Outbound::deliver(self, front, text).await {
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
        self.shared.actor.send(take_back).await.ok().flatten()
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
        self.shared
            .actor
            .send(hold)
            .await
            .unwrap_or(Err(held::NotHeld::Stopped))
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
