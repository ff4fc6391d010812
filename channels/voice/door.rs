//! The voice channel's outbound door: a proactive message (a reminder, `homebot
//! announce`) goes to a native satellite by its id, to Home Assistant's satellite of a
//! room (`ha:<entity>`, an area), or — for a Wyoming front end, which cannot be spoken to
//! unasked — is held for that speaker's next turn in the spoken kit, which waits until a
//! turn says it, Home Assistant is back to announce it, or the fallback chat takes it.

use super::actor;
use super::frames::SatelliteOut;
use super::handle::Voice;
use super::turn::{HA_PREFIX, WYOMING_TARGET};
use crate::channels::spoken::{shape_reply, SayNow};
use crate::outbound::{DeliveryError, Outbound};

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
            return self.shared.spoken.hold_until_said(front, text, self).await;
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
            Err(actor::NotSent::NotConnected) if self.satellites().is_some() => {
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
}

/// A held message, said at once when Home Assistant is back.
#[async_trait::async_trait]
impl SayNow for Voice {
    async fn say_now(&self, front: &str, text: &str) -> Result<(), DeliveryError> {
        Outbound::deliver(self, front, text).await
    }
}
