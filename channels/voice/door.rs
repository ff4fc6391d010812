//! The voice channel's outbound door: a proactive message (a reminder, `homebot
//! announce`) goes to a native satellite by its id, to Home Assistant's satellite of a
//! room (`ha:<entity>`, an area), or — for a Wyoming front end, which cannot be spoken to
//! unasked — is held for that speaker's next turn.

use super::*;

/// The target of proactive messages for Wyoming speakers: Home Assistant cannot be spoken
/// to unasked, so they wait for the next Wyoming turn.
pub const WYOMING_TARGET: &str = "wyoming";
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
            frame: json!({"type": "announce", "text": text}).to_string(),
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

    /// Home Assistant's connection, version, entities and satellites, when configured.
    async fn status(&self) -> Vec<String> {
        match &self.shared.ha {
            Some(ha) => ha.status().await.lines(),
            None => Vec::new(),
        }
    }

    /// Home Assistant for the home tools and the fast path, when configured.
    fn home(&self) -> Option<Arc<dyn crate::home::Home>> {
        let ha = self.shared.ha.clone()?;
        Some(Arc::new(ha))
    }
}

/// `ha:<entity id>`: a Home Assistant satellite (the front of a Wyoming turn whose
/// satellite is known).
pub const HA_PREFIX: &str = "ha:";

impl Voice {
    /// Announce through Home Assistant; delivered only when Home Assistant said success.
    async fn say_in_home_assistant(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        use crate::channels::home_assistant::HaError;
        let Some(ha) = &self.shared.ha else {
            return Err(DeliveryError::Unreachable(format!("satellite {target:?}")));
        };
        match ha.announce(target, text).await {
            Ok(_) => Ok(()),
            Err(HaError::UnknownTarget(t)) => Err(DeliveryError::BadTarget {
                channel: CHANNEL.into(),
                target: t,
                why: "neither a connected satellite nor an area or satellite of Home Assistant"
                    .into(),
            }),
            Err(e) => Err(DeliveryError::Unreachable(format!(
                "Home Assistant satellite {target:?} ({e})"
            ))),
        }
    }
}
