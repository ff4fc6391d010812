//! Home Assistant's satellites: what this channel does with them, and the port it
//! provides to the spoken channels ([`crate::channels::spoken::Satellites`]).
//!
//! Announcing — speaking unasked on Home Assistant speakers: `assist_satellite.announce` on the
//! satellites of a room (or one satellite by entity id); where a satellite cannot, a media
//! player of its room through `tts.speak` (with `home_assistant.tts_entity`). A message
//! counts as said only when Home Assistant's `result` is a success.
//!
//! Listening again after a question: Home Assistant never keeps a satellite listening
//! for a Wyoming conversation agent (it sets no `continue_conversation` for one, whatever
//! `handled` says), so homebot asks for it: once the satellite has said the reply (its
//! state went back to `idle`), `assist_satellite.start_conversation` with no message
//! makes it listen for the answer. Satellites that cannot (Home Assistant refuses: in
//! 2025.4 only ESPHome and VoIP satellites support it, Wyoming satellites do not) are
//! remembered and not asked again; the refusal is logged once.

use super::{actor, frames, protocol, HaError, HomeAssistant, Located};
use crate::channels::spoken::Satellites;
use crate::outbound::DeliveryError;
use serde::de::IgnoredAny;
use std::time::Duration;
use tokio::time::Instant;
use tracing::{info, warn};

/// How long the satellite may take to say the reply before it is asked to listen.
pub const SAY_WITHIN: Duration = Duration::from_secs(60);
/// A satellite that never leaves `idle` within this did not say the reply itself (a
/// typed `conversation/process`); it is asked at once.
const BUSY_WITHIN: Duration = Duration::from_secs(3);
const POLL: Duration = Duration::from_millis(100);

impl HomeAssistant {
    /// In the background: make `entity_id` listen again once it has said the reply.
    pub fn listen_again(&self, entity_id: String) {
        let this = self.clone();
        self.tasks.spawn(async move {
            if let Err(e) = this.listen_again_now(&entity_id).await {
                tracing::debug!(satellite = %entity_id, error = %e, "not listening again");
            }
        });
    }

    /// Wait for the reply to be said, then ask; returns once Home Assistant answered.
    pub async fn listen_again_now(&self, entity_id: &str) -> Result<(), HaError> {
        let ask = |refused| actor::ListenAgain {
            entity_id: entity_id.to_string(),
            refused,
        };
        if !self.ask(ask(false)).await? {
            return Ok(());
        }
        let started = Instant::now();
        let mut busy = false;
        while started.elapsed() < SAY_WITHIN {
            let state = self
                .ask(actor::SatelliteState(entity_id.to_string()))
                .await?;
            match state.as_deref() {
                Some("idle") | None if busy || started.elapsed() >= BUSY_WITHIN => break,
                Some("idle") | None => {}
                Some(_) => busy = true,
            }
            tokio::time::sleep(POLL).await;
        }
        let body = frames::start_conversation(entity_id);
        match self.command::<IgnoredAny>(body).await {
            Ok(_) => {
                info!(satellite = %entity_id, "satellite listens again for the answer");
                Ok(())
            }
            Err(HaError::Refused(f)) => {
                warn!(satellite = %entity_id, error = %f, "Home Assistant cannot make this satellite listen again (not asked again until restart); the answer needs the wake word");
                self.ask(ask(true)).await?;
                Err(HaError::Refused(f))
            }
            Err(e) => Err(e),
        }
    }
}

impl HomeAssistant {
    /// Say `text` in `target` — an area id or name, or a satellite entity id. Returns the
    /// entities that said it; an error when none did.
    pub async fn announce(&self, target: &str, text: &str) -> Result<Vec<String>, HaError> {
        let places = self.ask(actor::Resolve(target.to_string())).await?;
        if places.is_empty() {
            // before the first connection no room is known yet
            let st = self.status().await;
            if !st.connected {
                return Err(HaError::NotConnected(st.link));
            }
            return Err(HaError::UnknownTarget(protocol::short(target, 100)));
        }
        // Home Assistant answers an announcement once it was played
        let within = self.announce_timeout;
        let mut said = Vec::new();
        let mut last = None;
        for (satellite, players) in places {
            if !satellite.is_empty() {
                let body = frames::announce(&satellite, text);
                match self.command_within::<IgnoredAny>(within, body).await {
                    Ok(_) => {
                        info!(satellite = %satellite, "announced on a Home Assistant satellite");
                        said.push(satellite);
                        continue;
                    }
                    // nothing else will get through a connection that is not there
                    Err(e @ HaError::NotConnected(_)) => return Err(e),
                    Err(e) => {
                        warn!(satellite = %satellite, error = %e, "a satellite could not announce; trying its room's media player");
                        last = Some(e);
                    }
                }
            }
            if let Some(player) = self
                .speak_on_players(&players, text, within, &mut last)
                .await
            {
                said.push(player);
            }
        }
        match (said.is_empty(), last) {
            (false, _) => Ok(said),
            (true, Some(e)) => Err(e),
            (true, None) => Err(HaError::UnknownTarget(protocol::short(target, 100))),
        }
    }

    /// `tts.speak` on the first media player that takes it.
    async fn speak_on_players(
        &self,
        players: &[String],
        text: &str,
        within: Duration,
        last: &mut Option<HaError>,
    ) -> Option<String> {
        let tts = self.tts_entity.as_deref()?;
        for p in players {
            let body = frames::tts_speak(tts, p, text);
            match self.command_within::<IgnoredAny>(within, body).await {
                Ok(_) => {
                    info!(media_player = %p, "said through a Home Assistant media player");
                    return Some(p.clone());
                }
                Err(e) => {
                    warn!(media_player = %p, error = %e, "a media player could not speak");
                    *last = Some(e);
                }
            }
        }
        None
    }
}

#[async_trait::async_trait]
impl Satellites for HomeAssistant {
    async fn locate(
        &self,
        satellite_id: Option<String>,
        device_id: Option<String>,
    ) -> Option<Located> {
        HomeAssistant::locate(self, satellite_id, device_id).await
    }

    fn listen_again(&self, entity_id: String) {
        HomeAssistant::listen_again(self, entity_id)
    }

    async fn say(&self, target: &str, text: &str) -> Result<(), DeliveryError> {
        super::say(self, target, text).await
    }

    fn comebacks(&self) -> tokio::sync::watch::Receiver<u64> {
        HomeAssistant::comebacks(self)
    }
}
